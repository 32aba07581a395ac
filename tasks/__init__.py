"""Celery tasks: thin adapters that take ids and call one service each.

Every task gets the same policy from :func:`platform_task` (as Sentry's
``instrumented_task`` does): acknowledged after it ran (a killed worker's task is
redelivered), retried with exponential backoff and jitter on transient platform errors
only (a lost database or broker connection, a database read-only for a failover's window
(``leaderboard.database_faults``, the rule the web answers 503 by), a sandbox that could not start), and, when it
fails for good, handed to the task's ``give_up`` service so the failure is recorded with
its true cause instead of leaving work "running".

The error path touches nothing: a retry publishes the same task again with the error as
``cause`` and writes no row (the database may be what failed). One counter bounds the
attempts of a run: ``Run.attempts``, counted by the claim (``leaderboard.services.lifecycle``),
which fails a worn-out run with the last ``cause``; tasks that claim runs retry without a
Celery limit (``counted_by_claim=True``). Tasks with nothing to claim (reports, the janitor)
retry ``PLATFORM_RETRIES`` times; the janitor resends what they leave pending, and a report
recomputation that gives up is sent again after an interval that doubles with each give-up in a
row (``reports.report_recompute_gave_up``), not at every pass.

Backoff (:func:`backoff_countdown`): 2, 4, 8, 16, 32, 60, 60 s..., each drawn in [¾, 1] of its
step ("equal jitter", never the near-zero waits of full jitter), so the retries of a task with
nothing to claim span at least a minute: a 1 s database blip or a storage outage cannot use
them up in a fraction of a second. A retry is published to the queue again (any worker may
take it, preferably another one after a local fault such as a full temporary disk). Storage
faults (an unreachable or hung object store, a full disk) are retried like the others and
the claim does not count them against the run's attempts (``lifecycle.run_claim``).
When ``give_up`` itself cannot reach the database, the janitor settles the run later (its lease
expires).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from celery import Task, shared_task
from celery.signals import celeryd_after_setup, worker_process_init, worker_process_shutdown
from django.db import DatabaseError
from kombu.exceptions import OperationalError as BrokerError

from execution.devices import pin_this_process
from execution.readiness import may_run_recipes, readiness
from leaderboard.database_faults import DATABASE_AWAY_ERRORS, database_away
from leaderboard.services.errors import PlatformError
from leaderboard.storage import STORAGE_DOWN

logger = logging.getLogger(__name__)

#: Errors worth retrying: the platform's, and passing (database away or read-only, broker, object store, a disk).
#: Celery's ``autoretry_for`` takes classes only: a database error among them that ``database_away`` refuses
#: (an InternalError other than the read-only one) is not retried (``PlatformTask.retry``).
TRANSIENT_ERRORS = (*DATABASE_AWAY_ERRORS, BrokerError, PlatformError, *STORAGE_DOWN)

#: Retries of a task with nothing to claim: 2+4+8+16+32+60 s, at least 93 s with the jitter.
PLATFORM_RETRIES = 6
BACKOFF_FACTOR_S = 2
BACKOFF_MAX_S = 60


def backoff_countdown(retries: int) -> float:
    """Seconds before retry number ``retries`` (0 first): exponential, capped, equal jitter."""
    step = min(BACKOFF_MAX_S, BACKOFF_FACTOR_S * 2 ** min(retries, 16))
    return step * random.uniform(0.75, 1.0)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


class PlatformTask(Task):
    """A task whose final failure is recorded by its ``give_up(*args, reason=...)`` service.

    Tasks declared with ``counted_by_claim`` take a ``cause`` keyword: a retry passes the
    error that caused it, and the claim records it on the run.
    """

    give_up: Callable | None = None
    counted_by_claim = False

    def retry(self, args=None, kwargs=None, exc=None, **options):
        if isinstance(exc, DatabaseError) and not database_away(exc):
            raise exc  # a bug, not an outage: the task fails (and gives up) at once
        if exc is not None and kwargs is None and self.counted_by_claim:
            kwargs = {**(self.request.kwargs or {}), "cause": describe(exc)}
        if exc is not None and "eta" not in options:
            options["countdown"] = backoff_countdown(self.request.retries)
        return super().retry(args=args, kwargs=kwargs, exc=exc, **options)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        if self.give_up is None:
            return
        try:
            self.give_up(*args, reason=describe(exc))
        except Exception:  # the database may be what failed: the janitor settles it later
            logger.exception("could not record the failure of %s%r", self.name, tuple(args))


def platform_task(*, name: str, give_up: Callable | None = None, counted_by_claim: bool = False, **options):
    """Declare a Celery task with varboard's one retry and failure policy.

    ``counted_by_claim``: the task claims runs, whose claims count and bound the attempts; the
    task is bound (its first argument is the task, ``self.request.id`` names the delivery).
    """
    options.setdefault("max_retries", None if counted_by_claim else PLATFORM_RETRIES)

    def decorate(function):
        return shared_task(
            name=name,
            base=PlatformTask,
            acks_late=True,
            bind=counted_by_claim,
            counted_by_claim=counted_by_claim,
            give_up=staticmethod(give_up) if give_up else None,
            autoretry_for=TRANSIENT_ERRORS,
            retry_backoff=BACKOFF_FACTOR_S,
            retry_backoff_max=BACKOFF_MAX_S,
            retry_jitter=True,
            **options,
        )(function)

    return decorate


@worker_process_init.connect
def _pin_gpu(**_kwargs) -> None:
    """Each pool process of a GPU worker uses one device (see execution/devices.py)."""
    from billiard.process import current_process

    pin_this_process(getattr(current_process(), "index", 0) or 0)


@worker_process_shutdown.connect
def _discard_waiting_sandbox(**_kwargs) -> None:
    """A pool process that ends takes its waiting sandbox and its template with it, reaped (see
    execution.warm.discard_waiting, execution.forked.discard_template)."""
    from execution.forked import discard_template
    from execution.warm import discard_waiting

    discard_waiting()
    discard_template()


#: Queues whose tasks execute contestants' code.
RECIPE_QUEUES = ("cpu", "gpu")


@celeryd_after_setup.connect
def _refuse_recipe_queues_without_isolation(sender, instance, **_kwargs) -> None:
    """Fail closed: a worker that cannot isolate recipe runs does not consume the recipe queues.

    Its other queues (scoring) go on; ``python -m execution.probe`` (the readiness check)
    fails with the same words, so the orchestrator sees what is missing.
    """
    queues = instance.app.amqp.queues
    consumed = queues.consume_from if queues.consume_from is not None else queues
    recipe_queues = [name for name in RECIPE_QUEUES if name in consumed]
    if not recipe_queues:
        return
    found = readiness()
    if found.ok:
        logger.info("recipe runs are isolated: %s", "; ".join(found.isolation))
    elif may_run_recipes(found):
        logger.warning(
            "recipe runs are NOT isolated (%s): VARBOARD_ALLOW_UNSANDBOXED=1 lets them run, marked unsandboxed",
            found.missing,
        )
    else:
        queues.deselect(recipe_queues)
        logger.error(
            "refusing to consume the recipe queues %s: recipe runs cannot be isolated here: %s",
            ", ".join(recipe_queues),
            found.missing,
        )
