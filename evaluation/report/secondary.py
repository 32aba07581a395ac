"""Secondary metrics: shown on each row with their intervals, never ranked on (issue 26).

The primary metric alone ranks, groups and gives the state of the art. Each secondary metric of
an entry is summarised as the primary's mean is, with the interval the board uses for the
primary's mean:

* an entry with per-example outcomes of the metric on every run (prediction files): the interval
  of :func:`evaluation.stats.testset.entry_mean_intervals` (Wilson, or Student's / Welch's t over
  the test examples and files), mapped through the metric's ``from_mean`` (e.g. √ for RMSE) and
  clipped to the metric's range;
* otherwise, with at least 2 runs: the studentized bootstrap over runs of
  :func:`evaluation.stats.seeded_intervals`, seeded by the entry and the metric
  (:func:`~evaluation.report.settings.derive_seed`), clipped to the metric's range;
* otherwise the mean alone, with ``mean["note"]`` saying why (:data:`NO_INTERVAL_NOTE`): a metric
  without per-example outcomes (a host's non-decomposable metric, e.g. macro-F1) of an entry of one
  file has nothing to draw an interval from.

The estimate is the mean of the runs' scores (the runs that have one). Pure: numpy and
:mod:`evaluation.stats` only.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evaluation import stats
from evaluation.report.entries import EntryRuns
from evaluation.report.rows import mean_warning, runs_std, shown_limits
from evaluation.report.sections import ENTRY_METHODS
from evaluation.report.settings import PURPOSE, SECTION_CODE, ReportSettings, derive_seed
from evaluation.report.values import apply_map, finite, interval, outcomes_are_proportions, score_over_files
from evaluation.stats.bootstrap import MIN_RUNS_MEAN_INTERVAL, mean_interval_shown
from evaluation.stats.testset import entry_mean_intervals

__all__ = ["MetricInfo", "secondary_rows", "secondary_value"]


@dataclass(frozen=True)
class MetricInfo:
    """What the report needs of a metric it shows: a built-in one or one a host's scoring program declares.

    ``from_mean`` maps a mean per-example outcome to the score (None: the identity);
    ``score_range`` bounds the score (None: unbounded on that side).
    """

    name: str
    label: str
    higher_is_better: bool = True
    from_mean: Callable | None = None
    score_range: tuple[float | None, float | None] = (None, None)


#: Why an entry's secondary metric has no interval: one scored run and no per-example outcomes.
NO_INTERVAL_NOTE = (
    "no interval: this metric gives no per-example outcomes (it does not decompose over the test rows), "
    f"and an interval over the entry's files needs at least {MIN_RUNS_MEAN_INTERVAL} files"
)


def _metric_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def secondary_value(e: EntryRuns, metric: MetricInfo, s: ReportSettings) -> dict:
    """One secondary metric of one entry: ``name``, ``label``, ``higher_is_better``, ``runs`` (runs with a
    score) and ``mean`` (``estimate``, ``low``, ``high``, ``source``, ``method``), in the metric's units."""
    scores, outcomes = (e.secondary or {}).get(metric.name, (None, None))
    scores = np.empty(0) if scores is None else np.asarray(scores, dtype=np.float64)
    if scores.shape not in ((e.test.size,), (0,)):
        raise ValueError(f"entry {e.id}: secondary metric {metric.name!r} needs one score per run.")
    scored = scores[np.isfinite(scores)]
    mean: dict = interval(scored.mean() if scored.size else None, se=None, source=None, method=None)
    value = {
        "name": metric.name,
        "label": metric.label,
        "higher_is_better": bool(metric.higher_is_better),
        "runs": int(scored.size),
        "mean": mean,
    }
    if outcomes is not None and scored.size == e.test.size and np.asarray(outcomes).shape[-1] >= 2:
        _from_outcomes(mean, np.asarray(outcomes, dtype=np.float64), metric, 1 - s.alpha)
    elif scored.size >= 2 and not mean_interval_shown(scored.size):
        mean.update(
            se=finite(runs_std(scored)[0] / math.sqrt(scored.size)), source="runs", warning=mean_warning(scored.size)
        )
    elif scored.size >= 2:
        seed = derive_seed(s.master_seed, SECTION_CODE[e.kind], PURPOSE["secondary"], e.id, _metric_key(metric.name))
        low, high = stats.seeded_intervals(
            scored[None, :],
            [seed],
            "mean",
            n_resamples=s.n_resamples,
            confidence_level=1 - s.alpha,
            higher_is_better=metric.higher_is_better,
        )
        low, high = shown_limits(low, high, mean["estimate"], metric.score_range)
        mean.update(
            low=finite(low[0]),
            high=finite(high[0]),
            se=finite(runs_std(scored)[0] / math.sqrt(scored.size)),
            source="runs",
            method="studentized bootstrap",
        )
    elif scored.size == 1:
        mean["note"] = NO_INTERVAL_NOTE
    return value


def _from_outcomes(mean: dict, outcomes: np.ndarray, metric: MetricInfo, confidence: float) -> None:
    """The prediction entries' interval of the mean (as the primary's), from the metric's outcomes."""
    files = np.atleast_2d(outcomes)
    pooled, low, high, method = entry_mean_intervals([files], confidence, outcomes_are_proportions(metric.score_range))
    # Clipped to the metric's range: a macro F1's outcomes exceed 1, so a t interval of them can too.
    estimate = score_over_files(metric.from_mean, float(pooled[0]), mean["estimate"], files.shape[0])
    low, high = shown_limits(
        apply_map(metric.from_mean, low), apply_map(metric.from_mean, high), [estimate], metric.score_range
    )
    mean.update(
        estimate=estimate,
        low=finite(low[0]),
        high=finite(high[0]),
        source="test examples" if files.shape[0] == 1 else "test examples and files",
        method=ENTRY_METHODS[str(method[0])],
    )


def secondary_rows(entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings) -> None:
    """Set each row's ``secondary``: one :func:`secondary_value` per metric of ``s.secondary``, in that order."""
    for e in entries:
        rows[e.id]["secondary"] = [secondary_value(e, metric, s) for metric in s.secondary]
