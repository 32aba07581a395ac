"""The one seam between the services and the task queue: enqueue a task by name, after commit.

Services never import tasks (the import contracts in the test suite check this): they name
the task here, as Zulip's ``queue_event_on_commit`` does, and Celery routes it (see
``leaderboard/celery.py``). Sending after the transaction commits means a worker never sees
a row that is not there yet, and a rolled-back request enqueues nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from kombu.pools import ProducerPool

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
    if settings.EMBEDDED_BROKER:
        current_app.send_task(task_name, args=list(args), **options)
        return
    # A publishing connection of its own, with connect and reply timeouts: a broker that accepts connections and
    # never answers held the request (after its commit) for minutes; each try now gives up within
    # CELERY_BROKER_TIMEOUT_S (and CELERY_TASK_PUBLISH_RETRY_POLICY bounds the tries). Only here: on a worker's
    # consuming connection such a timeout would reconnect, which restores its unacknowledged runs to the queue.
    # The bounded connections are pooled per process (as Celery pools its own): one opened per message cost two
    # Redis connections and 12 ms a publish where the pool's took 1.4 ms, on loops of thousands (a label
    # correction's rescores, a janitor's pass).
    with _bounded_producers().acquire(block=True) as producer:
        current_app.send_task(task_name, args=list(args), producer=producer, **options)


#: Per process id (a forked worker builds its own): the producers of the publishes' bounded connections.
_producer_pools: dict[int, ProducerPool] = {}


def _bounded_producers() -> ProducerPool:
    pool = _producer_pools.get(os.getpid())
    if pool is None:
        bounded = {
            "socket_connect_timeout": settings.CELERY_BROKER_TIMEOUT_S,
            "socket_timeout": settings.CELERY_BROKER_TIMEOUT_S,
        }
        limit = current_app.conf.broker_pool_limit or 10
        connections = current_app.connection_for_write(transport_options=bounded).Pool(limit=limit)
        pool = _producer_pools.setdefault(os.getpid(), ProducerPool(connections, limit=limit))
    return pool


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


#: Seconds the workers have to answer an inspection (an inspection always waits this long: Celery
#: cannot know how many workers will answer), seconds an answer is fresh, and seconds a stale one
#: may still be served while a new one is asked for.
INSPECT_TIMEOUT_S = 1.0
CONSUMERS_CACHE_S = 30
CONSUMERS_STALE_S = 600
_CONSUMERS_KEY = "varboard:queue-consumers:v2"  # {"counts", "at"}; v1 held the counts alone
_asking = threading.Lock()  # one inspection at a time in this process


def queue_consumers(*, wait: bool = False) -> dict[str, int] | None:
    """How many workers consume each queue (Celery's ``inspect().active_queues()``); None when unknown.

    A queue no worker answers for is absent. A request never waits on the workers (stale while
    revalidate): an answer younger than :data:`CONSUMERS_CACHE_S` is returned; an older one (up to
    :data:`CONSUMERS_STALE_S`) is returned too while one background thread asks again; with none,
    None ("unknown": nothing is claimed) while it asks. Before, one request every 30 s waited the
    inspection's second and more (2 s pages, found by a new user). A failed inspection is an answer
    too ("unknown", kept as long), and the last answer is also kept in the process, so a cache or a
    broker that is down costs no inspection per request. ``wait``: ask now when the answer is not
    fresh (the janitor, which is not a reader's request).
    """
    known = _last_answer()
    if known is not None and time.time() - known["at"] < CONSUMERS_CACHE_S:
        return known["counts"]
    if wait:
        with _asking:
            return _ask_workers()
    if _asking.acquire(blocking=False):
        try:
            threading.Thread(target=_ask_in_background, name="varboard-queue-consumers", daemon=True).start()
        except RuntimeError:  # no thread could be started: ask again at the next request
            _asking.release()
            logger.warning("could not start the thread that asks the workers", exc_info=True)
    return None if known is None else known["counts"]


#: The last answer this process got or read ({"counts", "at"}): the fallback when the cache has none.
_last: dict[str, dict] = {}


def _last_answer() -> dict | None:
    """The newer of the cache's answer (shared by the processes) and this process's own."""
    answers = [a for a in (cache.get(_CONSUMERS_KEY), _last.get("answer")) if a is not None]
    return max(answers, key=lambda a: a["at"], default=None)


def _ask_in_background() -> None:
    try:
        _ask_workers()
    finally:
        _asking.release()


def _ask_workers() -> dict[str, int] | None:
    """Ask the workers which queues they consume and keep the answer (None when they cannot be asked)."""
    counts: dict[str, int] | None = {}
    try:
        replies = _active_queues()
    except Exception:  # noqa: BLE001 - kombu and the transports raise many kinds: all mean "unknown"
        logger.warning("could not ask the workers which queues they consume", exc_info=True)
        counts = None
    else:
        for queues in (replies or {}).values():
            for name in {queue.get("name") for queue in queues or ()}:
                counts[name] = counts.get(name, 0) + 1
    answer = {"counts": counts, "at": time.time()}
    _last["answer"] = answer
    cache.set(_CONSUMERS_KEY, answer, CONSUMERS_STALE_S)
    return counts


def _active_queues() -> dict | None:
    """Celery's ``inspect().active_queues()``: each answering worker's queues."""
    with current_app.connection_for_read() as connection:
        connection.ensure_connection(max_retries=1, timeout=2)
        return current_app.control.inspect(timeout=INSPECT_TIMEOUT_S, connection=connection).active_queues()


class Publisher:
    """The breaker of one batch of publishes (one transaction's, one janitor pass's): after the first refusal the
    others are not tried.

    A broker that refuses or never answers fails each try after up to ~2 ``CELERY_BROKER_TIMEOUT_S``; a request
    that queued k messages after its commit waited for each (a submission of 5 runs 20 s, a label correction of n
    submissions 4n s). The first refusal says the broker is away; the messages not tried are in the database as
    queued work, which the janitor (``services.janitor``) sends again once the broker answers, as it does the
    refused one. The one rule for every batch: the request path's (:func:`enqueue_on_commit`) and the janitor's.
    """

    def __init__(self) -> None:
        self.down = False

    def send(self, task_name: str, args: tuple, *, queue: str | None = None, countdown: float | None = None) -> bool:
        """Publish ``task_name(*args)`` unless an earlier one of the batch was refused; True when it was sent."""
        if self.down:
            logger.debug("not tried: %s%r (the broker refused this batch's earlier message)", task_name, args)
            return False
        try:
            send(task_name, args, queue=queue, countdown=countdown)
        except Exception:  # noqa: BLE001 - kombu raises OperationalError and friends: anything means "not queued"
            logger.exception(
                "could not queue %s%r; the janitor will send it again, and the batch's later messages are not tried",
                task_name,
                args,
            )
            self.down = True
            return False
        return True


#: Per thread (a thread's database connection and its transaction are its own): the :class:`Publisher` of the
#: transaction now open, made by its first :func:`enqueue_on_commit` and dropped when its publishes start.
_open = threading.local()


def _transaction_publisher() -> Publisher:
    """The publisher of the current transaction's on-commit publishes (a new one outside a transaction).

    A publisher is left here until the first publish of its transaction runs (after the commit): one left by a
    transaction rolled back has published nothing, so the next transaction may take it over as new.
    """
    if not transaction.get_connection().in_atomic_block:
        return Publisher()  # on_commit publishes at once: a transaction of its own
    publisher = getattr(_open, "publisher", None)
    if publisher is None:
        publisher = _open.publisher = Publisher()
    return publisher


def enqueue_on_commit(task_name: str, *args, queue: str | None = None, countdown: float | None = None) -> None:
    """Send ``task_name(*args)`` once the current transaction commits (at once outside one).

    When the broker refuses the message, the error is logged and nothing else happens: the
    database still says the work is queued (or a report pending), and the janitor
    (``services.janitor``) sends it again once the broker answers. Nothing is lost and the
    request that queued it does not fail. After a refusal the transaction's later messages are
    not tried (:class:`Publisher`): the request waits for one refusal, not one per message.
    """
    publisher = _transaction_publisher()

    def publish() -> None:
        if getattr(_open, "publisher", None) is publisher:
            _open.publisher = None  # its transaction has ended: the next one gets a publisher of its own
        publisher.send(task_name, args, queue=queue, countdown=countdown)

    transaction.on_commit(publish)
