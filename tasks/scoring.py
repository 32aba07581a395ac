"""Queue ``scoring``: score prediction submissions; check hosts' scoring programs."""

from leaderboard.services.lifecycle import submission_fail_for_platform
from leaderboard.services.programs import program_check_gave_up
from leaderboard.services.scoring import submission_rescore, submission_rescore_gave_up, submission_score
from leaderboard.worker.program_check import program_check, run_program

from . import platform_task


def _give_up(submission_id: int, *, reason: str) -> None:
    submission_fail_for_platform(submission_id=submission_id, reason=reason)


@platform_task(name="tasks.scoring.score_submission", give_up=_give_up, counted_by_claim=True)
def score_submission(self, submission_id: int, cause: str = "") -> None:
    submission_score(submission_id=submission_id, delivery=self.request.id or "", cause=cause, runner=run_program)


def _rescore_gave_up(submission_id: int, *, reason: str) -> None:
    submission_rescore_gave_up(submission_id=submission_id, reason=reason)


@platform_task(name="tasks.scoring.rescore_submission", give_up=_rescore_gave_up)
def rescore_submission(submission_id: int) -> None:
    submission_rescore(submission_id=submission_id, runner=run_program)


def _check_gave_up(challenge_id: int, *, reason: str) -> None:
    program_check_gave_up(challenge_id=challenge_id, reason=reason)


@platform_task(name="tasks.scoring.check_scoring_program", give_up=_check_gave_up)
def check_scoring_program(challenge_id: int) -> None:
    program_check(challenge_id=challenge_id)
