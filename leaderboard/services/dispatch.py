"""The one seam between the services and the task queue: enqueue a task by name, after commit.

Services never import tasks (the import contracts in the test suite check this): they name
the task here, as Zulip's ``queue_event_on_commit`` does, and Celery routes it (see
``leaderboard/celery.py``). Sending after the transaction commits means a worker never sees
a row that is not there yet, and a rolled-back request enqueues nothing.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

SCORE_SUBMISSION = "tasks.scoring.score_submission"
EXECUTE_RUN = "tasks.runs.execute_run"
RECOMPUTE_REPORT = "tasks.reports.recompute_report"
EXECUTE_STUDY_RUN = "tasks.variance_studies.execute_study_run"
RESCORE_SUBMISSION = "tasks.scoring.rescore_submission"
CHECK_SCORING_PROGRAM = "tasks.scoring.check_scoring_program"
PROCESS_EVENT = "tasks.notifications.process_event"
DELIVER_WEBHOOK = "tasks.notifications.deliver_webhook"


def send(task_name: str, args: tuple, *, queue: str | None = None, countdown: float | None = None) -> None:
    """Publish ``task_name(*args)`` now (raises when the broker cannot take it)."""
    options = {"queue": queue} if queue else {}
    if countdown:
        options["countdown"] = countdown
    current_app.send_task(task_name, args=list(args), **options)


def queue_lengths(queues: list[str]) -> dict[str, int] | None:
    """How many messages wait in each named queue, as the broker reports it; None when it cannot be reached.

    Every Kombu transport answers a queue declaration with the queue's length (Redis: the
    length of its lists, priorities included). Messages a worker has taken and not yet
    acknowledged are not counted.
    """
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
            channel = connection.default_channel
            return {
                name: channel.queue_declare(queue=name, durable=True, auto_delete=False).message_count
                for name in queues
            }
    except Exception:  # noqa: BLE001 - kombu and the transports raise many kinds: all mean "unknown"
        logger.warning("could not read the length of queues %s from the broker", queues, exc_info=True)
        return None


#: Seconds the workers have to answer an inspection, and seconds their answer is kept for every request.
INSPECT_TIMEOUT_S = 1.0
CONSUMERS_CACHE_S = 30
_CONSUMERS_KEY = "varboard:queue-consumers"


def queue_consumers() -> dict[str, int] | None:
    """How many workers consume each queue now (Celery's ``inspect().active_queues()``); None when unknown.

    A queue no worker answers for is absent. The answer is cached for :data:`CONSUMERS_CACHE_S`
    seconds, so a page or an API call waits :data:`INSPECT_TIMEOUT_S` at most once in that time.
    """
    cached = cache.get(_CONSUMERS_KEY)
    if cached is not None:
        return cached
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            replies = current_app.control.inspect(timeout=INSPECT_TIMEOUT_S, connection=connection).active_queues()
    except Exception:  # noqa: BLE001 - kombu and the transports raise many kinds: all mean "unknown"
        logger.warning("could not ask the workers which queues they consume", exc_info=True)
        return None
    counts: dict[str, int] = {}
    for queues in (replies or {}).values():
        for name in {queue.get("name") for queue in queues or ()}:
            counts[name] = counts.get(name, 0) + 1
    cache.set(_CONSUMERS_KEY, counts, CONSUMERS_CACHE_S)
    return counts


def enqueue_on_commit(task_name: str, *args, queue: str | None = None, countdown: float | None = None) -> None:
    """Send ``task_name(*args)`` once the current transaction commits (at once outside one).

    When the broker refuses the message, the error is logged and nothing else happens: the
    database still says the work is queued (or a report pending), and the janitor
    (``services.janitor``) sends it again once the broker answers. Nothing is lost and the
    request that queued it does not fail.
    """

    def publish() -> None:
        try:
            send(task_name, args, queue=queue, countdown=countdown)
        except Exception:  # kombu raises OperationalError and friends: anything means "not queued"
            logger.exception("could not queue %s%r; the janitor will send it again", task_name, args)

    transaction.on_commit(publish)
