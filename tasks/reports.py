"""Queue ``scoring``: recompute a challenge's leaderboard report (coalesced by ``report_request``)."""

from celery import shared_task
from django.db import DatabaseError, InterfaceError

from leaderboard.services.reports import report_recompute


@shared_task(name="tasks.reports.recompute_report", acks_late=True,
             autoretry_for=(DatabaseError, InterfaceError), retry_backoff=True, max_retries=5)
def recompute_report(challenge_id: int) -> None:
    report_recompute(challenge_id=challenge_id)
