"""Gather a challenge's stored runs and build its statistical report (``evaluation.report``).

One query reads every scored run of the challenge joined to its submission and team
(``values_list``: no model instances, no N+1); per-example outcomes are read for
prediction runs only. The report itself is the pure function
:func:`evaluation.report.build_report`.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

import numpy as np
from django.db.models import BinaryField, Case, F, Value, When

from evaluation.report import REPORT_FORMAT, EntryRuns, ReportSettings, build_report

from ..choices import RunStatus, SubmissionKind, SubmissionStatus
from ..models import Challenge, Report, Run
from .errors import ServiceError

#: Query parameters that may override the challenge's settings, and the field they set.
OVERRIDABLE = {"n": "boo_n", "gamma": "gamma", "alpha": "alpha", "statistic": "statistic"}

_COLUMNS = ("submission_id", "index", "test_score", "valid_score", "prediction_outcomes", "submission__kind",
            "submission__status", "submission__method_name", "submission__team__name",
            "submission__runs_expected", "submission__created")


def report_settings(*, challenge: Challenge, overrides: dict[str, Any] | None = None,
                    m_total_predictions: int | None = None, m_total_recipes: int | None = None) -> ReportSettings:
    """The challenge's statistical settings, with ``n``/``gamma``/``alpha``/``statistic`` overridden."""
    metric = challenge.metric_info
    fields = dict(boo_n=challenge.boo_n, gamma=challenge.gamma, alpha=challenge.alpha,
                  statistic=challenge.ranking_statistic)
    for key, value in (overrides or {}).items():
        fields[OVERRIDABLE[key]] = value
    return ReportSettings(
        higher_is_better=challenge.higher_is_better, n_resamples=challenge.bootstrap_resamples,
        seed=challenge.master_seed, correction=challenge.correction, k_runs=challenge.k_runs,
        m_total_predictions=m_total_predictions, m_total_recipes=m_total_recipes,
        accuracy_like=metric.name == "accuracy", metric_from_mean=metric.from_mean, **fields)


def report_entries(*, challenge: Challenge) -> tuple[list[EntryRuns], dict[str, int]]:
    """Entries shown on the leaderboard, and how many entries of each kind were ever scored.

    Shown: submissions that are not cancelled, with at least one succeeded run. Counted
    (``m`` of the multiplicity-adjusted state of the art): every submission with at least
    one scored run, failed and cancelled ones included.
    """
    rows = (Run.objects.filter(submission__challenge=challenge, status=RunStatus.SUCCEEDED,
                               test_score__isnull=False)
            .annotate(prediction_outcomes=Case(When(submission__kind=SubmissionKind.PREDICTIONS, then=F("outcomes")),
                                               default=Value(None), output_field=BinaryField()))
            .order_by("submission_id", "index").values_list(*_COLUMNS))
    runs: dict[int, list[tuple]] = defaultdict(list)
    ever: dict[str, set[int]] = {SubmissionKind.PREDICTIONS: set(), SubmissionKind.RECIPE: set()}
    for row in rows:
        ever[row[5]].add(row[0])
        if row[6] != SubmissionStatus.CANCELLED:
            runs[row[0]].append(row)
    entries = [_entry(group) for group in runs.values()]
    return entries, {kind: len(ids) for kind, ids in ever.items()}


def _entry(group: list[tuple]) -> EntryRuns:
    first = group[0]
    valid = np.array([np.nan if r[3] is None else r[3] for r in group], dtype=np.float64)
    blobs = [r[4] for r in group]
    outcomes = None
    if all(b is not None for b in blobs):
        arrays = [np.frombuffer(bytes(b), dtype="<f4") for b in blobs]
        if len({a.size for a in arrays}) == 1 and arrays[0].size:
            outcomes = np.stack(arrays).astype(np.float64)
    return EntryRuns(
        id=first[0], name=first[7], team=first[8], kind=first[5], runs_expected=first[9],
        run_index=np.array([r[1] for r in group], dtype=np.int64),
        test=np.array([r[2] for r in group], dtype=np.float64),
        valid=None if np.isnan(valid).any() else valid, outcomes=outcomes,
        created=first[10].isoformat(),
        in_progress=first[6] in (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING))


def build_report_data(*, challenge: Challenge, overrides: dict[str, Any] | None = None) -> dict:
    """The report of ``challenge`` as JSON-ready data (see :func:`evaluation.report.build_report`).

    Parameters
    ----------
    challenge : Challenge
    overrides : dict, optional
        Keys of :data:`OVERRIDABLE` (``n``, ``gamma``, ``alpha``, ``statistic``),
        already validated: the report is computed with them instead of the challenge's.

    Raises
    ------
    ServiceError
        When the challenge's settings cannot produce a report (the message says why).
    """
    entries, ever = report_entries(challenge=challenge)
    settings = report_settings(challenge=challenge, overrides=overrides,
                               m_total_predictions=ever[SubmissionKind.PREDICTIONS],
                               m_total_recipes=ever[SubmissionKind.RECIPE])
    try:
        data = build_report(entries, settings)
    except ValueError as exc:  # e.g. a challenge saved with gamma = 1, which the decision rule cannot use
        raise ServiceError(f"The report of {challenge.slug!r} cannot be computed: {exc}") from exc
    data["challenge"] = {"slug": challenge.slug, "metric": challenge.metric,
                         "higher_is_better": challenge.higher_is_better}
    data["settings"]["m_total"] = {str(kind): count for kind, count in ever.items()}
    data["overrides"] = dict(overrides or {})
    data["settings_key"] = None if overrides else report_settings_key(challenge)
    return data


def report_settings_key(challenge: Challenge) -> str:
    """A digest of the challenge settings the report depends on (cheap: no query)."""
    fields = (challenge.metric, challenge.higher_is_better, challenge.boo_n, challenge.gamma, challenge.alpha,
              challenge.bootstrap_resamples, challenge.ranking_statistic, challenge.correction,
              challenge.k_runs, challenge.master_seed, REPORT_FORMAT)
    return hashlib.sha256(repr(fields).encode()).hexdigest()[:32]


def report_current(*, challenge: Challenge) -> Report:
    """The cached report, recomputed synchronously when missing or made with other settings.

    When runs changed, ``report_request`` has already queued a recomputation: the cached
    report is served meanwhile (``recompute_pending`` says so).
    """
    from .reports import report_recompute

    report = Report.objects.filter(challenge=challenge).first()
    if (report is None or not report.data or report.computed_at is None
            or report.data.get("settings_key") != report_settings_key(challenge)):
        report = report_recompute(challenge_id=challenge.pk, force=True)
    return report
