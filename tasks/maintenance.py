"""Periodic maintenance: fail runs stuck in ``running`` past their limit (a reaper, as Codabench has)."""

from celery import shared_task

from leaderboard.services.recipes import runs_fail_stuck


@shared_task(name="tasks.maintenance.fail_stuck_runs")
def fail_stuck_runs() -> int:
    return runs_fail_stuck()
