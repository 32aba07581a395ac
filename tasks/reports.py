"""Queue ``scoring``: recompute a challenge's leaderboard report (coalesced by ``report_request``)."""

from leaderboard.services.reports import report_recompute

from . import platform_task


@platform_task(name="tasks.reports.recompute_report")
def recompute_report(challenge_id: int) -> None:
    report_recompute(challenge_id=challenge_id)
