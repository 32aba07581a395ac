"""Queues ``cpu`` and ``gpu``: one task per recipe run. Thin wrapper around ``run_execute``.

Retries only for platform faults (a lost database connection, a full disk); a recipe's own
errors fail its run and are not retried.
"""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, InterfaceError

from leaderboard.services.recipes import PlatformError, run_execute, run_fail_for_platform

TRANSIENT = (DatabaseError, InterfaceError, PlatformError)


@shared_task(bind=True, name="tasks.runs.execute_run", acks_late=True, max_retries=3, retry_backoff=True)
def execute_run(self, run_id: int) -> None:
    try:
        run_execute(run_id=run_id)
    except SoftTimeLimitExceeded:
        run_fail_for_platform(run_id=run_id, reason="the worker's task time limit was reached")
    except TRANSIENT as exc:
        if self.request.retries >= self.max_retries:
            run_fail_for_platform(run_id=run_id, reason=f"{type(exc).__name__}: {exc}")
            return
        from leaderboard.models import Run

        Run.objects.filter(pk=run_id, status="running").update(status="queued")
        raise self.retry(exc=exc, countdown=min(60, 2 ** (self.request.retries + 1)))
