"""Result types of :mod:`evaluation.stats`: frozen dataclasses, arrays read-only.

Scalar results (:class:`Interval` of a 1-D sample, :class:`Comparison`,
:class:`AdjustedSota`) compare equal field by field, their bootstrap distribution
aside. Results that hold arrays are declared with ``eq=False`` (compare their fields
with ``numpy.testing``), and their arrays are made read-only so a cached report cannot
be changed in place.

The results of bootstrap functions carry, as ``scipy.stats.bootstrap``'s do, their
``bootstrap_distribution`` (the statistic of every resample, resamples on the last
axis) and ``standard_error`` (its standard deviation, ``ddof=1``; 0 with a single
resample).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

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

    ``estimate``, ``low``, ``high`` and ``standard_error`` are floats for a 1-D sample
    of runs and arrays of shape ``(entries,)`` for a table of runs;
    ``bootstrap_distribution`` has shape ``(B,)`` or ``(entries, B)``.
    """

    estimate: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    confidence_level: float = 0.95
    statistic: str = "mean"
    standard_error: float | np.ndarray | None = None
    bootstrap_distribution: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True)
class Comparison:
    """Outcome of :func:`evaluation.stats.compare` (Bouthillier et al. 2021, App. C.6).

    ``p`` is P(A>B), ``[low, high]`` its score interval at level ``1 - alpha``
    (Wilson paired, Newcombe unpaired); ``significant``: the dual test's ``pvalue <
    alpha`` in A's favour (equivalently ``low > 0.5``), ``meaningful = high > gamma``,
    ``better = significant and meaningful``; ``pvalue`` is the two-sided test of
    P(A>B) = 0.5 dual to the interval (score test paired, Mann–Whitney z-test
    unpaired). ``bootstrap_distribution``: P(A>B) in each bootstrap resample, shape
    ``(B,)``; ``bootstrap_low``/``bootstrap_high``: its percentile interval (the
    paper's, which collapses to [1, 1] when A wins every seed).
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
    standard_error: float | None = None
    bootstrap_distribution: np.ndarray | None = field(default=None, compare=False, repr=False)
    bootstrap_low: float | None = None
    bootstrap_high: float | None = None

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class PairwiseResult:
    """All-pairs comparison of k entries (``k x k`` matrices, row i against column j).

    ``p[i, j]`` = P(entry i > entry j); ``low``/``high`` its dual interval at the
    pair's multiplicity-adjusted confidence ``level[i, j]`` (``interval_method``:
    "wilson", "newcombe", or the test-set methods); ``pvalue`` the two-sided p-value
    adjusted over the family of all unordered pairs (``pvalue_raw`` before
    adjustment); ``significant[i, j]``: adjusted ``pvalue < alpha`` in i's favour
    (equivalently ``low[i, j] > 0.5``); ``meaningful[i, j] = high[i, j] > gamma``;
    ``better[i, j]``: i beats j (both). Diagonals are NaN / False. ``priority``
    lists the entries best first by the ranking statistic (``means`` unless the
    caller gave another); ``order`` follows it except that a winner is placed above
    its loser (:func:`evaluation.stats.ordering.verdict_order`).
    ``bootstrap_low``/``bootstrap_high``: the percentile-bootstrap interval at
    ``1 - alpha`` (Bouthillier et al.'s, unadjusted), when a bootstrap was run.

    ``standard_error[i, j]``: bootstrap standard error of P(i>j) (symmetric).
    ``bootstrap_distribution``: P(i>j) in each resample for the pairs i < j in the
    order of ``np.triu_indices(k, 1)``, shape ``(k(k-1)/2, B)``, in float32 (half the
    memory of k(k-1)/2 x B values; the resampled values are multiples of 1/(2k), or
    of 1/(2 k_i k_j) unpaired); :meth:`distribution` reads one pair in either
    direction. Both are None for :func:`~evaluation.stats.paired_test_bootstrap`'s
    comparisons, whose P(i>j) is a fraction of resamples, not a resampled statistic.
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
    standard_error: np.ndarray | None = None
    bootstrap_distribution: np.ndarray | None = None
    level: np.ndarray | None = None
    priority: np.ndarray | None = None
    interval_method: str = "wilson"
    bootstrap_low: np.ndarray | None = None
    bootstrap_high: np.ndarray | None = None

    def __post_init__(self):
        _freeze_arrays(self)

    def distribution(self, i: int, j: int) -> np.ndarray:
        """P(entry i > entry j) in each resample, shape ``(B,)``, float64."""
        if self.bootstrap_distribution is None:
            raise ValueError("this result has no bootstrap distribution of P(i>j)")
        k = self.p.shape[0]
        if not (0 <= i < k and 0 <= j < k) or i == j:
            raise ValueError(f"`i` and `j` must be distinct entries in [0, {k}) (got {i}, {j}).")
        a, b = min(i, j), max(i, j)
        row = self.bootstrap_distribution[a * (2 * k - a - 1) // 2 + b - a - 1].astype(np.float64)
        return row if i < j else 1.0 - row


@dataclass(frozen=True, eq=False)
class RankIntervals:
    """Each entry's observed rank by the ranking statistic (1 = best) and its bootstrap interval.

    ``bootstrap_distribution``: each entry's rank in each resample, shape
    ``(entries, B)``; ``standard_error``: its standard deviation, shape ``(entries,)``.
    """

    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence_level: float = 0.95
    standard_error: np.ndarray | None = None
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class TestBootstrapResult:
    """Outcome of :func:`evaluation.stats.paired_test_bootstrap`.

    ``estimate``/``low``/``high``/``standard_error``: each entry's mean over its files
    and the test examples, its interval at ``confidence_level`` (``entry_method``:
    "wilson", "wilson-deff", "t" or "welch-t") and its bootstrap standard error (shape
    ``(entries,)``, original units). ``comparisons``: all pairs in the
    :class:`PairwiseResult` shape. ``diff_low``/``diff_high``: the interval of the
    difference of means dual to the pair's test (``pair_method``: "mcnemar",
    "paired-t", "welch-t") at the pair's adjusted level, row minus column, oriented so
    that positive means the row entry is better. ``bootstrap_distribution``: each
    entry's mean in each resample, shape ``(entries, B)``. ``files``: files per entry. ``effective_n``: the
    trials each entry's interval reads (Kish's effective sample size for several files of 0/1 outcomes).
    """

    __test__ = False  # not a pytest test class despite the name

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    standard_error: np.ndarray
    comparisons: PairwiseResult
    diff_low: np.ndarray
    diff_high: np.ndarray
    confidence_level: float = 0.95
    n_resamples: int = 10_000
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False)
    entry_method: np.ndarray | None = None
    pair_method: np.ndarray | None = None
    files: np.ndarray | None = None
    effective_n: np.ndarray | None = None

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class SotaDistribution:
    """Distribution of the best accuracy among m entries on one test set of n examples.

    ``accuracy`` holds the support ``0/n, 1/n, ..., n/n`` and ``pmf`` the probability
    of each value of the sample maximum (Møllersen & Holsbø, §3–4). ``expected`` and
    ``sd`` are its mean and standard deviation; ``[lower, upper]`` are its
    ``(1 - confidence_level)/2`` and ``(1 + confidence_level)/2`` quantiles, the
    multiplicity-adjusted limits.
    """

    expected: float
    sd: float
    lower: float
    upper: float
    accuracy: np.ndarray
    pmf: np.ndarray
    m: int
    n: int
    confidence_level: float = 0.95
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
    the ``m`` entries ever scored, at family-wise significance level ``alpha``.
    ``method`` is ``"binomial"`` (exact, accuracy on ``n`` examples) or ``"normal"``
    (normal approximation with ``standard_error``); ``model`` is ``"identical"``
    (all m entries equally good), ``"nonidentical"`` (the entries' own scores,
    shrunk by ``shrinkage`` toward their mean; None when the identical form applied) or
    ``"dependent"`` (equally good entries whose outcomes correlate at ``rho`` with a
    leading classifier, eq. 10).
    """

    naive: float
    estimate: float
    lower: float
    method: str
    m: int
    alpha: float = 0.05
    n: int | None = None
    standard_error: float | None = None
    model: str = "identical"
    shrinkage: float | None = None
    rho: float | None = None
