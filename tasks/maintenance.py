"""Periodic maintenance: the janitor that heals lost work (leaderboard/services/janitor.py)."""

from dataclasses import asdict

from leaderboard.services.janitor import janitor_run

from . import platform_task


@platform_task(name="tasks.maintenance.janitor", max_retries=0)
def janitor() -> dict:
    """One reconciliation pass; not retried (the next beat does the next pass)."""
    return asdict(janitor_run())
