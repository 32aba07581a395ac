"""Queue ``scoring``: score prediction submissions. Thin wrapper around ``submission_score``."""

from celery import shared_task
from django.db import DatabaseError, InterfaceError

from leaderboard.services.scoring import submission_fail_for_platform, submission_score


@shared_task(bind=True, name="tasks.scoring.score_submission", acks_late=True,
             autoretry_for=(DatabaseError, InterfaceError, OSError), retry_backoff=True, max_retries=5)
def score_submission(self, submission_id: int) -> None:
    try:
        submission_score(submission_id=submission_id)
    except (DatabaseError, InterfaceError, OSError) as exc:
        if self.request.retries >= self.max_retries:
            submission_fail_for_platform(submission_id=submission_id, reason=f"{type(exc).__name__}: {exc}")
            return
        raise
