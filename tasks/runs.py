"""Queues ``cpu`` and ``gpu``: one task per recipe run (routed when enqueued).

A recipe's own errors fail its run inside ``run_execute`` and are never retried; platform
faults are retried by the task policy (each claim counts an attempt), then recorded by
``give_up``.
"""

from leaderboard.services.lifecycle import run_fail_for_platform
from leaderboard.worker.run_execution import run_execute

from . import platform_task


def _give_up(run_id: int, *, reason: str) -> None:
    run_fail_for_platform(run_id=run_id, reason=reason)


@platform_task(name="tasks.runs.execute_run", give_up=_give_up, counted_by_claim=True)
def execute_run(self, run_id: int, cause: str = "") -> None:
    run_execute(run_id=run_id, delivery=self.request.id or "", cause=cause)
