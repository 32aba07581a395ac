"""Whether a worker takes the queues a challenge's submissions wait on (issue 26, GPU honesty).

A submission waits on the ``scoring`` queue (prediction files) or on its runs' queue (recipes: the
challenge's device, ``cpu`` or ``gpu``). When no worker consumes that queue, the challenge's page
and API say so (:func:`challenge_queue_waits`), and the janitor tells the hosts through the audit
log once an hour while runs wait there (:func:`queues_unattended_record`).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from ..choices import RunQueue
from ..models import AuditEntry, Challenge, Run
from . import dispatch
from .audit import audit_record

#: The audit log's action for a queue that runs wait on and no worker takes.
UNATTENDED = "queue_unattended"
#: At most one such entry per challenge and queue in this time.
UNATTENDED_EVERY = timedelta(hours=1)


def queue_wait_message(queue: str, what: str) -> str:
    return f"No worker is taking the {queue} queue now: {what} wait, queued, until one starts."


def challenge_queues(*, challenge: Challenge) -> list[tuple[str, str]]:
    """``(queue, what waits on it)`` for each kind of submission the challenge takes."""
    queues = []
    if challenge.allow_predictions:
        queues.append((RunQueue.SCORING.value, "prediction files"))
    if challenge.allow_recipes and not challenge.results_only:
        queues.append((str(challenge.device), "recipes"))
    return queues


def challenge_queue_waits(*, challenge: Challenge) -> list[dict]:
    """``{"queue", "waiting", "message"}`` for each queue of the challenge that no worker consumes now.

    Empty when every queue has a worker, and when the workers cannot be asked (nothing is claimed then).
    """
    consumers = dispatch.queue_consumers()
    if consumers is None:
        return []
    return [
        {"queue": queue, "waiting": what, "message": queue_wait_message(queue, what)}
        for queue, what in challenge_queues(challenge=challenge)
        if not consumers.get(queue)
    ]


def submission_queue_wait(*, submission) -> str | None:
    """Why a queued submission does not start: the queue it waits on has no worker now (else None, also
    when the workers cannot be asked)."""
    if submission.status != "queued":
        return None
    queue = submission.runs.values_list("queue", flat=True).first() or RunQueue.SCORING.value
    consumers = dispatch.queue_consumers()
    if consumers is None or consumers.get(queue):
        return None
    return queue_wait_message(queue, "this submission's runs")


def queues_unattended_record(*, runs: list[Run], now=None) -> int:
    """Tell the hosts (audit log) of each challenge whose queued ``runs`` wait on a queue no worker takes.

    ``runs``: queued runs that have waited long on a queue holding messages (the janitor's). One
    entry per challenge and queue per :data:`UNATTENDED_EVERY`; returns how many were recorded.
    """
    if not runs:
        return 0
    consumers = dispatch.queue_consumers(wait=True)  # the janitor may wait on the workers; a reader never does
    if consumers is None:
        return 0
    now = now or timezone.now()
    waiting: dict[tuple[int, str], list[int]] = {}
    for run in runs:
        if not consumers.get(run.queue):
            waiting.setdefault((run.submission.challenge_id, run.queue), []).append(run.submission_id)
    recorded = 0
    for (challenge_id, queue), submissions in sorted(waiting.items()):
        recent = AuditEntry.objects.filter(
            challenge_id=challenge_id, action=UNATTENDED, details__queue=queue, created__gte=now - UNATTENDED_EVERY
        )
        if recent.exists():
            continue
        what = "prediction files" if queue == RunQueue.SCORING else "recipes"
        audit_record(
            challenge=Challenge.objects.get(pk=challenge_id),
            actor=None,
            action=UNATTENDED,
            queue=queue,
            submissions=sorted(set(submissions)),
            message=queue_wait_message(queue, what),
        )
        recorded += 1
    return recorded
