"""The janitor: compare the database (the source of truth) with what is in flight, and heal.

Called by a thin beat task every ``VARBOARD_JANITOR_INTERVAL_S`` (``tasks.maintenance.janitor``).
One pass, in order:

1. fails runs still ``running`` long past their wall-time limit (a hung worker that keeps its
   lease alive), for the platform's reasons, and settles submissions whose runs have all ended
   but whose own status was not written (the database fell over between the two);
2. puts back in the queue every running run whose lease expired (its worker was lost: killed,
   out of memory, its machine gone) and publishes its task again at once, on the queue stored with
   the run (``Run.queue``, never the recipe read again): a claimed run's
   message was taken off the queue, so nothing else would bring it back. After an absence of the
   janitor (a database outage stops its passes and the heartbeats alike), the lease clock restarts:
   every running run gets a full lease from the janitor's return to renew it in
   (:func:`leases_resume_after_absence`), so only the runs whose workers are really gone are
   queued again, one lease after the database came back. Should a live worker still lose its
   run (a lease judged just before its renewal), its heartbeat takes the run back from the queue
   (``lifecycle.run_renew_lease``); if another worker claimed it first, the first attempt to
   finish stores the result and the other's is dropped (``lifecycle.run_store``);
3. resends work that the database says is queued but that was published more than
   ``VARBOARD_REQUEUE_AFTER_S`` ago, on a queue the broker reports empty: recipe runs, the
   scoring of prediction submissions, report recomputations left pending, started and never
   finished (their lease expired: a recomputation still running is left alone) or given up and due
   for another try (``reports.reports_lost``), and the rescores a host's
   correction asked for (``Submission.rescore_requested_at``); and the runs of
   variance studies that are queued, or running past their limit (their worker was lost: a
   study run's claim takes such a run again), when their queue is empty;
4. records the reveal of private boards whose ``auto_reveal`` phase has closed (for mails and
   webhooks), and resends notification events and webhook deliveries left behind;
5. deletes the stored files that a rollback could not delete, the store being down
   (``StorageOrphan``), once the store answers, never one that a row names (``services.orphans``).

Why "queued for long, and its queue is empty" rather than listing what the broker holds: a
broker cannot cheaply say whether one given task is in it (Redis would need a scan of every
list and of the unacknowledged hash, other transports cannot at all), while every transport
answers a queue's length. A Redis that restarted without persistence, or a message lost in
transit, shows as stale queued rows next to an empty queue; a long backlog shows as stale
rows next to a busy queue, and resending then would only pile duplicates behind it (they would
be harmless, claims are idempotent, but they grow the queue at every pass). A task lost
inside a backlog is resent once the backlog drains, which is when it would have run anyway.
Messages a worker holds (prefetched, or waiting for a retry's countdown) are in no queue:
resending those makes a duplicate that the claim turns away.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from ..choices import SUBMISSION_ENDED, RunQueue, RunStatus, SubmissionKind
from ..models import JANITOR_STATE_PK, JanitorState, Run, StudyRun, Submission
from . import dispatch
from .dispatch import EXECUTE_RUN, EXECUTE_STUDY_RUN, RECOMPUTE_REPORT, RESCORE_SUBMISSION, SCORE_SUBMISSION
from .lifecycle import (
    lease_duration,
    run_is_stuck,
    runs_extend_leases,
    runs_fail_stuck,
    runs_requeue_expired,
    submissions_settle,
)
from .notifications import notifications_heal, reveals_record_due
from .orphans import orphans_delete
from .programs import program_checks_resend
from .queues import queues_unattended_record
from .reports import report_leases_extend, report_resent, reports_lost

logger = logging.getLogger(__name__)
SCORING_QUEUE = RunQueue.SCORING.value


@dataclass(frozen=True)
class JanitorPass:
    """What one pass did: counts of runs and tasks."""

    failed_stuck: int = 0
    settled_submissions: int = 0
    requeued_lost: int = 0
    resent_runs: int = 0
    resent_scorings: int = 0
    resent_reports: int = 0
    resent_rescores: int = 0
    resent_program_checks: int = 0
    notifications: int = 0
    deleted_orphans: int = 0
    broker_unreachable: bool = False


def _publish(runs: list[Run], publisher: dispatch.Publisher, now) -> tuple[int, int]:
    """Publish the task of each run on its stored queue (one scoring per prediction submission); mark
    them enqueued now.

    Returns (recipe runs sent, scorings sent).
    """
    sent_runs, scored, sent_ids = 0, set(), []
    for run in runs:
        submission = run.submission
        queue = run.queue
        if submission.kind == SubmissionKind.PREDICTIONS:
            if submission.pk in scored:
                sent_ids.append(run.pk)
            elif publisher.send(SCORE_SUBMISSION, (submission.pk,), queue=queue):
                scored.add(submission.pk)
                sent_ids.append(run.pk)
        elif publisher.send(EXECUTE_RUN, (run.pk,), queue=queue):
            sent_runs += 1
            sent_ids.append(run.pk)
    Run.objects.filter(pk__in=sent_ids).update(enqueued_at=now)
    return sent_runs, len(scored)


def _resend_study_runs(publisher: dispatch.Publisher, now) -> int:
    """Publish again the study runs left queued or stuck running, on queues the broker reports empty."""
    stale_before = now - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"])
    candidates = [
        run
        for run in StudyRun.objects.filter(
            status__in=(RunStatus.QUEUED, RunStatus.RUNNING), study__created__lt=stale_before
        ).select_related("study__challenge", "study__submission")
        if run.status == RunStatus.QUEUED or run_is_stuck(run, now)
    ]
    if not candidates:
        return 0
    lengths = dispatch.queue_lengths(sorted({run.queue for run in candidates})) or {}
    return sum(
        publisher.send(EXECUTE_STUDY_RUN, (run.pk,), queue=run.queue)
        for run in candidates
        if lengths.get(run.queue) == 0
    )


def _resend_rescores(submission_ids: list[int], publisher: dispatch.Publisher, now) -> int:
    """Publish again the rescores (a host's label or metric correction) still requested long after the request."""
    sent = [pk for pk in submission_ids if publisher.send(RESCORE_SUBMISSION, (pk,), queue=SCORING_QUEUE)]
    Submission.objects.filter(pk__in=sent).update(rescore_requested_at=now)
    return len(sent)


def janitor_run(*, now=None) -> JanitorPass:
    """One reconciliation pass (see the module's docstring); returns what it did."""
    now = now or timezone.now()
    publisher = dispatch.Publisher()  # one refusal ends the pass's publishing
    failed = runs_fail_stuck(now=now)
    settled = submissions_settle()

    leases_resume_after_absence(now=now)
    lost = runs_requeue_expired(now=now)
    lost_runs = list(Run.objects.filter(pk__in=[run.pk for run in lost]).select_related("submission__challenge"))
    for run in lost_runs:
        logger.warning(
            "janitor: run %s of submission %s lost its worker; queued again",
            run.pk,
            run.submission_id,
            extra={"run_id": run.pk, "submission_id": run.submission_id},
        )
    sent_runs, sent_scorings = _publish(lost_runs, publisher, now)

    stale_before = now - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"])
    stale = list(
        Run.objects.filter(status=RunStatus.QUEUED, enqueued_at__lt=stale_before)
        .exclude(submission__status__in=SUBMISSION_ENDED)
        .select_related("submission__challenge")
        .order_by("submission_id", "index")
    )
    stale_reports = reports_lost(now=now)
    stale_rescores = list(Submission.objects.filter(rescore_requested_at__lt=stale_before).values_list("pk", flat=True))
    wanted = {run.queue for run in stale}
    if stale_reports or stale_rescores:
        wanted.add(SCORING_QUEUE)
    lengths = dispatch.queue_lengths(sorted(wanted)) if wanted else {}
    if wanted and lengths is None:
        publisher.down = True
    lengths = lengths or {}
    idle = [run for run in stale if lengths.get(run.queue) == 0]
    queues_unattended_record(runs=[run for run in stale if (lengths.get(run.queue) or 0) > 0], now=now)
    more_runs, more_scorings = _publish(idle, publisher, now)
    resent_reports = 0
    if lengths.get(SCORING_QUEUE) == 0:
        for challenge_id in stale_reports:
            if publisher.send(RECOMPUTE_REPORT, (challenge_id,), queue=SCORING_QUEUE):
                report_resent(challenge_id=challenge_id, now=now)
                resent_reports += 1
    resent_rescores = _resend_rescores(stale_rescores, publisher, now) if lengths.get(SCORING_QUEUE) == 0 else 0
    more_runs += _resend_study_runs(publisher, now)
    program_checks = 0 if publisher.down else program_checks_resend(now=now)
    notified = reveals_record_due(now=now) + (0 if publisher.down else notifications_heal(now=now, publisher=publisher))
    result = JanitorPass(
        failed_stuck=failed,
        settled_submissions=settled,
        requeued_lost=len(lost),
        resent_runs=sent_runs + more_runs,
        resent_scorings=sent_scorings + more_scorings,
        resent_reports=resent_reports,
        resent_rescores=resent_rescores,
        resent_program_checks=program_checks,
        notifications=notified,
        deleted_orphans=orphans_delete(now=now),
        broker_unreachable=publisher.down,
    )
    if result != JanitorPass():
        logger.info("janitor: %s", result)
    janitor_record_pass()
    return result


def janitor_record_pass() -> None:
    """Record that a pass ended now, in the one ``JanitorState`` row that every process reads.

    The row, not a cache: with a per-process cache each process of a worker knew only its own
    passes, so after an outage a process with none saw no gap (and judged the leases at once),
    and one whose own pass was long ago saw a gap without an outage (and restarted every lease).
    A database error here is logged and the pass still returns what it did (its work is written);
    the next pass records its time, and until then the last pass only looks older.
    """
    try:
        with transaction.atomic():
            JanitorState.objects.bulk_create(
                [JanitorState(pk=JANITOR_STATE_PK, last_pass_at=timezone.now())],
                update_conflicts=True,
                unique_fields=["id"],
                update_fields=["last_pass_at"],
            )
    except DatabaseError:
        logger.exception("janitor: could not record the time of this pass")


def leases_resume_after_absence(*, now) -> int:
    """After an absence of the janitor, give every running run a full lease from now; returns how many.

    A database outage stops the heartbeats and the janitor's passes alike, so every running run's
    lease has expired when the database comes back, its worker alive or not; judged at once, live
    runs would be queued again and executed twice. A pass that follows a gap longer than 1.5
    janitor intervals plus a heartbeat (an outage, or beat stopped) restarts the lease clock: each
    running run's lease expires ``LEASE_S`` after the return, as if renewed then, so a live worker
    has a whole lease (several heartbeats, whatever the machine's load) to renew it, and a lost one
    is queued again one lease later. With no pass on record (a first pass) nothing is extended. The
    restart is written to the runs themselves, and the last pass is read from the database
    (``JanitorState``), the same for every process that runs the janitor.
    """
    conf = settings.VARBOARD
    gap = janitor_last_pass_age()
    if gap is None or gap <= 1.5 * conf["JANITOR_INTERVAL_S"] + conf["HEARTBEAT_S"]:
        return 0
    extended = runs_extend_leases(until=now + lease_duration())
    report_leases_extend(until=now + lease_duration())
    logger.warning(
        "janitor: no pass for %.0f s (the database or beat was away): the leases of %d running run(s) "
        "restart now, so that their workers renew them before they are judged",
        gap,
        extended,
    )
    return extended


def janitor_last_pass_age() -> float | None:
    """Seconds since the last janitor pass ended (as the database records it), or None if none is known."""
    last = JanitorState.objects.filter(pk=JANITOR_STATE_PK).values_list("last_pass_at", flat=True).first()
    return None if last is None else max((timezone.now() - last).total_seconds(), 0.0)
