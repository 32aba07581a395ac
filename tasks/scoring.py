"""Queue ``scoring``: score prediction submissions."""

from leaderboard.services.lifecycle import submission_fail_for_platform
from leaderboard.services.scoring import submission_rescore, submission_score

from . import platform_task


def _give_up(submission_id: int, *, reason: str) -> None:
    submission_fail_for_platform(submission_id=submission_id, reason=reason)


@platform_task(name="tasks.scoring.score_submission", give_up=_give_up, counted_by_claim=True)
def score_submission(self, submission_id: int, cause: str = "") -> None:
    submission_score(submission_id=submission_id, delivery=self.request.id or "", cause=cause)


@platform_task(name="tasks.scoring.rescore_submission")
def rescore_submission(submission_id: int) -> None:
    submission_rescore(submission_id=submission_id)
