"""Result types of :mod:`evaluation.stats`: frozen dataclasses, arrays read-only.

Scalar results (:class:`Interval` of a 1-D sample, :class:`Comparison`,
:class:`AdjustedSota`) compare equal field by field. Results that hold arrays are
declared with ``eq=False`` (compare their fields with ``numpy.testing``), and their
arrays are made read-only so a cached report cannot be changed in place.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = [
    "AdjustedSota",
    "Comparison",
    "Interval",
    "PairwiseResult",
    "RankIntervals",
    "SotaDistribution",
    "TestBootstrapResult",
]


def _freeze_arrays(obj) -> None:
    """Replace every array field by a read-only view (the caller's array is untouched)."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, np.ndarray):
            view = value.view()
            view.setflags(write=False)
            object.__setattr__(obj, f.name, view)


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile-bootstrap confidence interval.

    ``estimate``, ``low`` and ``high`` are floats for a 1-D sample of runs and arrays
    of shape ``(entries,)`` for a table of runs.
    """

    estimate: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    confidence: float = 0.95
    statistic: str = "mean"

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True)
class Comparison:
    """Outcome of :func:`evaluation.stats.compare` (Bouthillier et al. 2021, App. C.6).

    ``p`` is P(A>B), ``[low, high]`` its percentile-bootstrap interval at level
    ``1 - alpha``; ``significant = low > 0.5``, ``meaningful = high > gamma``,
    ``better = significant and meaningful``; ``pvalue`` is the two-sided test of
    P(A>B) = 0.5 (exact sign test when paired, Mann-Whitney otherwise).
    """

    p: float
    low: float
    high: float
    significant: bool
    meaningful: bool
    better: bool
    pvalue: float
    paired: bool = True
    gamma: float = 0.75
    alpha: float = 0.05


@dataclass(frozen=True, eq=False)
class PairwiseResult:
    """All-pairs comparison of k entries (``k x k`` matrices, row i against column j).

    ``p[i, j]`` = P(entry i > entry j); ``low``/``high`` its interval at level
    ``1 - alpha``; ``pvalue`` the two-sided p-value adjusted over the family of all
    unordered pairs (``pvalue_raw`` before adjustment); ``significant``,
    ``meaningful`` the decision rule of each direction; ``better[i, j]``: i beats j
    (decision rule and adjusted ``pvalue < alpha``). Diagonals are NaN / False.
    ``order`` lists the entries best first by ``means``.
    """

    p: np.ndarray
    low: np.ndarray
    high: np.ndarray
    pvalue: np.ndarray
    better: np.ndarray
    order: np.ndarray
    means: np.ndarray
    significant: np.ndarray
    meaningful: np.ndarray
    pvalue_raw: np.ndarray
    paired: bool = True
    gamma: float = 0.75
    alpha: float = 0.05
    correction: str = "holm"
    n_resamples: int = 10_000

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class RankIntervals:
    """Each entry's observed rank of the mean (1 = best) and its bootstrap interval."""

    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float = 0.95

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class TestBootstrapResult:
    """Outcome of :func:`evaluation.stats.paired_test_bootstrap`.

    ``estimate``/``low``/``high``/``se``: each entry's mean over test examples, its
    percentile interval at ``confidence`` and its bootstrap standard error (shape
    ``(entries,)``, original units). ``comparisons``: all pairs in the
    :class:`PairwiseResult` shape. ``diff_low``/``diff_high``: percentile interval at
    level ``1 - alpha`` of the difference of means, row minus column, oriented so that
    positive means the row entry is better.
    """

    __test__ = False  # not a pytest test class despite the name

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    comparisons: PairwiseResult
    diff_low: np.ndarray
    diff_high: np.ndarray
    confidence: float = 0.95
    n_resamples: int = 10_000

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class SotaDistribution:
    """Distribution of the best accuracy among m entries on one test set of n examples.

    ``accuracy`` holds the support ``0/n, 1/n, ..., n/n`` and ``pmf`` the probability
    of each value of the sample maximum (Møllersen & Holsbø, §3–4). ``expected`` and
    ``sd`` are its mean and standard deviation; ``[lower, upper]`` are its
    ``alpha/2`` and ``1 - alpha/2`` quantiles, the multiplicity-adjusted limits.
    """

    expected: float
    sd: float
    lower: float
    upper: float
    accuracy: np.ndarray
    pmf: np.ndarray
    m: int
    n: int
    alpha: float = 0.05
    method: str = "exact"

    def __post_init__(self):
        _freeze_arrays(self)

    def cdf(self, x) -> float | np.ndarray:
        """P(max accuracy <= x)."""
        x = np.asarray(x, dtype=float)
        cum = np.cumsum(self.pmf)
        k = np.floor(x * self.n + 1e-9).astype(np.int64)
        out = np.where(k < 0, 0.0, cum[np.clip(k, 0, self.n)])
        return float(out) if out.ndim == 0 else out

    def exceedance(self, x) -> float | np.ndarray:
        """P(max accuracy >= x), e.g. the chance that the best of m reaches ``x``."""
        x = np.asarray(x, dtype=float)
        sf = np.cumsum(self.pmf[::-1])[::-1]  # sf[k] = P(max >= k / n)
        k = np.ceil(x * self.n - 1e-9).astype(np.int64)
        out = np.where(k > self.n, 0.0, sf[np.clip(k, 0, self.n)])
        out = np.minimum(out, 1.0)
        return float(out) if out.ndim == 0 else out

    def quantile(self, q) -> float | np.ndarray:
        """Smallest accuracy a with P(max accuracy <= a) >= q."""
        q = np.asarray(q, dtype=float)
        cum = np.cumsum(self.pmf)
        k = np.searchsorted(cum, q * (1 - 1e-12), side="left")
        out = np.clip(k, 0, self.n) / self.n
        return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class AdjustedSota:
    """Multiplicity-adjusted state of the art (Møllersen & Holsbø).

    ``naive`` is the observed best score, ``estimate`` the debiased estimate of the
    best entry's true score and ``lower`` a lower confidence bound that accounts for
    the ``m`` entries ever scored. ``method`` is ``"binomial"`` (exact, accuracy on
    ``n`` examples) or ``"normal"`` (normal approximation with standard error ``se``).
    """

    naive: float
    estimate: float
    lower: float
    method: str
    m: int
    alpha: float = 0.05
    n: int | None = None
    se: float | None = None
