"""Leaderboard reports: request (coalesced) and recompute (a pure function of stored runs).

Coalescing: ``report_request`` flips ``Report.recompute_pending`` from False to True with
one conditional UPDATE and enqueues only when it did the flip. Fifty runs finishing in a
second flip it once; the task clears the flag before it reads the runs, so a run landing
during a recomputation triggers exactly one more.
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..models import Challenge, Report

logger = logging.getLogger(__name__)


def _enqueue(challenge_id: int) -> None:
    from tasks.reports import recompute_report

    recompute_report.apply_async((challenge_id,), countdown=settings.VARBOARD["REPORT_DEBOUNCE_S"])


def report_request(*, challenge_id: int) -> bool:
    """Ask for a recomputation; returns True when this call queued one."""
    Report.objects.get_or_create(challenge_id=challenge_id)
    flipped = Report.objects.filter(challenge_id=challenge_id, recompute_pending=False).update(
        recompute_pending=True, requested_at=timezone.now())
    if flipped:
        transaction.on_commit(lambda: _enqueue(challenge_id))
    return bool(flipped)


def report_inputs_version(*, challenge: Challenge) -> str:
    """A hash of everything the report depends on: settings and every run's state."""
    from ..selectors import runs_for_challenge

    digest = hashlib.sha256()
    digest.update(repr((challenge.boo_n, challenge.gamma, challenge.alpha, challenge.bootstrap_resamples,
                        challenge.ranking_statistic, challenge.correction, challenge.k_runs,
                        challenge.higher_is_better, challenge.master_seed,
                        getattr(getattr(challenge, "dataset", None), "version", None))).encode())
    for row in runs_for_challenge(challenge=challenge).values_list(
            "submission_id", "index", "status", "test_score", "valid_score", "submission__status",
            "submission__method_name"):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def report_recompute(*, challenge_id: int, force: bool = False) -> Report:
    """Recompute and cache the report unless the cached one has the same inputs version."""
    from .report_builder import build_report_data

    Report.objects.filter(challenge_id=challenge_id).update(recompute_pending=False)
    challenge = Challenge.objects.get(pk=challenge_id)
    report, _ = Report.objects.get_or_create(challenge=challenge)
    version = report_inputs_version(challenge=challenge)
    if not force and report.inputs_version == version and report.data:
        return report
    started = time.perf_counter()
    data = build_report_data(challenge=challenge)
    report.data = data
    report.inputs_version = version
    report.computed_at = timezone.now()
    report.duration_s = time.perf_counter() - started
    report.save(update_fields=["data", "inputs_version", "computed_at", "duration_s"])
    return report
