"""JSON-ready numbers of the report: finite floats or None, intervals, the metric's map.

The report holds only finite Python floats (``None`` where a value is undefined), so it
serialises with ``allow_nan=False``. ``metric_from_mean`` maps a mean per-example
outcome to the metric's units (e.g. √ for RMSE); :func:`se_through` carries a standard
error through it by the delta method.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["apply_map", "finite", "interval", "outcomes_are_proportions", "score_over_files", "se_through"]


def finite(x) -> float | None:
    """A finite Python float, or None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def interval(estimate, low=None, high=None, **extra) -> dict:
    return {"estimate": finite(estimate), "low": finite(low), "high": finite(high), **extra}


def apply_map(fn: Callable | None, x):
    return x if fn is None else np.asarray(fn(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def se_through(fn: Callable | None, mean: float, se: float) -> float:
    """Standard error after the monotone map ``fn`` (delta method, slope by a difference).

    ``|fn'(mean)| · se`` with the slope taken over ``[mean - se, mean + se]`` (its lower
    end clipped at 0 for a non-negative mean, e.g. a mean squared error under √).
    """
    if fn is None or se == 0:
        return se
    lo = max(mean - se, 0.0) if mean >= 0 else mean - se
    return float(abs(apply_map(fn, mean + se) - apply_map(fn, lo)) * se / (mean + se - lo))


def score_over_files(fn: Callable | None, pooled_mean: float, runs_mean: float | None, files: int) -> float | None:
    """The score a prediction entry shows: ``fn`` of its mean outcome over every file's examples pooled.

    Its interval, rank interval and pairs are of that pooled score. For a metric that is a mean
    (accuracy, MAE; ``fn`` None) it equals the mean of the files' scores; for RMSE (``fn`` = √) it is
    the files' quadratic mean, √(mean of the files' MSEs), which is above the mean of their RMSEs
    (Jensen), so that mean would sit outside the interval and against the ranks.
    """
    if files < 2 or fn is None:
        return runs_mean
    return finite(apply_map(fn, pooled_mean))


def outcomes_are_proportions(score_range: tuple[float | None, float | None]) -> bool:
    """Whether a metric's per-example outcomes of 0 and 1 are correctness indicators (Wilson intervals, McNemar's
    exact test): unless its ``score_range`` reaches past [0, 1] (a loss on [0, ∞): MAE, RMSE, log loss), where 0
    and 1 are values of the loss in one unit. Unknown (``(None, None)``, a scoring program's): they are.

    Read as proportions, absolute errors of 0 or 1 unit took McNemar (p = 0.0625, no verdict) and Wilson
    intervals (an MAE of 0 within [0, 0.037] whatever the unit) where the same board in millimetres took the
    paired t-test (A better, p = 0.025): a property hunt's finding.

    >>> outcomes_are_proportions((0.0, 1.0)), outcomes_are_proportions((0.0, None)), outcomes_are_proportions((None, None))
    (True, False, True)
    """
    lower, upper = score_range
    if lower is None and upper is None:
        return True
    return lower is not None and upper is not None and 0.0 <= lower and upper <= 1.0
