"""Queue ``scoring``: recompute a challenge's leaderboard report (coalesced by ``report_request``)."""

from leaderboard.services.reports import report_recompute, report_recompute_gave_up

from . import platform_task


def _gave_up(challenge_id: int, *, reason: str) -> None:
    report_recompute_gave_up(challenge_id=challenge_id, reason=reason)


@platform_task(name="tasks.reports.recompute_report", give_up=_gave_up)
def recompute_report(challenge_id: int) -> None:
    report_recompute(challenge_id=challenge_id, reuse=True)  # the worker keeps its last read (issue 27)
