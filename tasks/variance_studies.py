"""Queues ``cpu`` and ``gpu``: one task per run of a variance study (routed when enqueued).

Like ``tasks.runs``: a recipe's own errors fail its run inside the service and are never
retried; platform faults are retried by the task policy, then recorded by ``give_up``.
"""

from leaderboard.services.variance_studies import study_run_fail
from leaderboard.worker.study_execution import study_run_execute

from . import platform_task


def _give_up(study_run_id: int, *, reason: str) -> None:
    study_run_fail(study_run_id=study_run_id, reason=reason)


@platform_task(name="tasks.variance_studies.execute_study_run", give_up=_give_up)
def execute_study_run(study_run_id: int) -> None:
    study_run_execute(study_run_id=study_run_id)
