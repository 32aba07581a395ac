"""Benchmark suites: entries compared across several tasks (challenges).

A suite's board aggregates each entry's runs over the tasks, the way Agarwal et al.
(2021) recommend for deep RL (the ``rliable`` library) and Demšar (2006) for classifiers
over data sets:

* :func:`aggregate_interval`: the interquartile mean (IQM) of all runs of all tasks, the
  mean or the median of the task means, with a *stratified* bootstrap (runs resampled
  within each task, tasks kept);
* :func:`performance_profile`: the fraction of runs scoring above τ, for a range of τ;
* :func:`probability_of_improvement`: P(X > Y) averaged over tasks (each task's
  Mann–Whitney probability), with a stratified bootstrap of both entries;
* :func:`critical_difference`: the Friedman test over tasks, average ranks and the
  Nemenyi critical difference (the critical-difference diagram) with pairwise p-values;
* :func:`bayesian_signed_rank`: the Bayesian signed-rank test of two entries over tasks
  with a region of practical equivalence (Benavoli et al. 2014, 2017).

Scores must be comparable across tasks (normalise them first, :func:`normalize_runs`)
and oriented so that higher is better. Runs are given per entry and per task:
``runs[e][t]`` is a 1-D array (tasks may have different numbers of runs), or a 3-D
array of shape (entries, runs, tasks) as rliable has it.

The bootstraps draw the resamples of entry e on task t from their own stream,
``SeedSequence([root, keys[e], task_keys[t]])`` with ``root`` drawn once from ``rng``, over
that task's runs sorted: as the recipe board seeds each entry from its id
(``evaluation.report.derive_seed``), an entry's limits depend on its own runs and keys
only. Reordering entries (with their keys), tasks (with theirs) or runs, or adding an
entry, changes no other entry's number. Without keys, the positions are the keys.

References
----------
Agarwal, R., Schwarzer, M., Castro, P. S., Courville, A. & Bellemare, M. G. (2021). Deep
reinforcement learning at the edge of the statistical precipice. NeurIPS. Demšar, J.
(2006). Statistical comparisons of classifiers over multiple data sets. JMLR 7, 1–30.
Benavoli, A., Corani, G., Mangili, F., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
Wilcoxon signed-rank test based on the Dirichlet process. ICML. Benavoli, A., Corani, G.,
Demšar, J. & Zaffalon, M. (2017). Time for a change: a tutorial for comparing multiple
classifiers through Bayesian analysis. JMLR 18, 1–36. Hesterberg, T. C. (2015). What teachers
should know about the bootstrap: resampling in the undergraduate statistics curriculum. The
American Statistician 69(4), 371–386.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from . import _resample as rs
from ._types import Interval, _freeze_arrays
from ._validation import as_generator, check_choice, check_int, check_open_unit, check_real

__all__ = [
    "BayesianComparison",
    "CriticalDifference",
    "PerformanceProfile",
    "ProbabilityOfImprovement",
    "aggregate_interval",
    "bayesian_signed_rank",
    "critical_difference",
    "normalize_runs",
    "performance_profile",
    "probability_of_improvement",
]

AGGREGATES = ("iqm", "mean", "median")
INTERVAL_METHODS = ("expanded", "percentile")
NORMALIZATIONS = ("none", "minmax")


@dataclass(frozen=True, eq=False)
class PerformanceProfile:
    """Fraction of runs above each threshold: ``estimate``, ``low``, ``high`` (entries, taus)."""

    taus: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence_level: float = 0.95
    standard_error: np.ndarray | None = None
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class ProbabilityOfImprovement:
    """``p[i, j]``: P(entry i > entry j) averaged over tasks; ``low``/``high`` its interval."""

    p: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence_level: float = 0.95
    standard_error: np.ndarray | None = None
    bootstrap_distribution: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True, eq=False)
class CriticalDifference:
    """Friedman test and Nemenyi post hoc over tasks (Demšar 2006).

    ``average_rank`` (1 = best), ``statistic``/``pvalue`` of the Friedman test, the
    critical difference ``cd`` at ``alpha``, the Nemenyi p-value of every pair
    (``pvalue``, k x k) and the ``cliques``: maximal runs of entries, in rank order,
    whose average ranks differ by less than ``cd`` (the bars of the diagram).
    """

    average_rank: np.ndarray
    statistic: float
    pvalue: float
    cd: float
    pairwise_pvalue: np.ndarray
    cliques: list
    alpha: float = 0.05
    n_tasks: int = 0

    def __post_init__(self):
        _freeze_arrays(self)


@dataclass(frozen=True)
class BayesianComparison:
    """Posterior probabilities that A is better, that the two are practically equivalent, that B is."""

    p_a_better: float
    p_rope: float
    p_b_better: float
    rope: float
    prior: float
    n_samples: int


# --------------------------------------------------------------------------- input
def _as_suite(runs, name: str = "runs") -> list[list[np.ndarray]]:
    """``runs[e][t]`` as finite float64 1-D arrays; every entry has the same tasks."""
    if isinstance(runs, np.ndarray) and runs.ndim == 3:
        runs = [[runs[e, :, t] for t in range(runs.shape[2])] for e in range(runs.shape[0])]
    try:
        out = [[np.asarray(task, dtype=np.float64).ravel() for task in entry] for entry in runs]
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must hold, per entry and per task, an array of scores.") from None
    if not out or not out[0]:
        raise ValueError(f"`{name}` needs at least one entry and one task.")
    n_tasks = len(out[0])
    for e, entry in enumerate(out):
        if len(entry) != n_tasks:
            raise ValueError(f"`{name}`: entry {e} has {len(entry)} tasks, entry 0 has {n_tasks}.")
        for t, task in enumerate(entry):
            if task.size == 0 or not np.all(np.isfinite(task)):
                raise ValueError(f"`{name}`: entry {e}, task {t} needs at least one finite score.")
    return out


def normalize_runs(runs, *, method="minmax", higher_is_better=None) -> list[list[np.ndarray]]:
    """Put every task's scores on one scale, higher is better.

    Parameters
    ----------
    runs : sequence or ndarray
        ``runs[e][t]``: the runs of entry e on task t (see the module docstring).
    method : {"minmax", "none"}, default "minmax"
        ``"minmax"``: ``(x - min_t) / (max_t - min_t)`` with the minimum and maximum
        over every run of every entry on task t (a constant task maps to 0.5).
    higher_is_better : sequence of bool, optional
        Per task; a loss is negated first (default: all True).

    Returns
    -------
    list of list of ndarray

    Raises
    ------
    ValueError
        For malformed ``runs``, an unknown ``method`` or a ``higher_is_better`` of the
        wrong length.
    """
    runs = _as_suite(runs)
    method = check_choice(method, "method", NORMALIZATIONS)
    n_tasks = len(runs[0])
    signs = np.ones(n_tasks) if higher_is_better is None else np.where(np.asarray(higher_is_better, bool), 1.0, -1.0)
    if signs.shape != (n_tasks,):
        raise ValueError(f"`higher_is_better` must give one value per task ({n_tasks}).")
    out = [[signs[t] * task for t, task in enumerate(entry)] for entry in runs]
    if method == "none":
        return out
    for t in range(n_tasks):
        pooled = np.concatenate([entry[t] for entry in out])
        lo, hi = pooled.min(), pooled.max()
        for entry in out:
            entry[t] = (entry[t] - lo) / (hi - lo) if hi > lo else np.full_like(entry[t], 0.5)
    return out


def _keys_iv(keys, count: int, name: str) -> np.ndarray:
    if keys is None:
        return np.arange(count, dtype=np.int64)
    try:
        k = np.asarray(keys)
    except (TypeError, ValueError):
        k = np.asarray([None])
    if k.shape != (count,) or not np.issubdtype(k.dtype, np.integer) or np.any(k < 0):
        raise ValueError(f"`{name}` must give one non-negative integer per {name.split('_')[0].rstrip('s')} ({count}).")
    if np.unique(k).size != count:
        raise ValueError(f"`{name}` must be distinct.")
    return k.astype(np.int64)


def _canonical(runs, rng, keys, task_keys):
    """Entries and tasks in the order of their keys, each task's runs sorted, and every (entry, task) stream.

    Returns ``(runs, streams, entry_order)``: ``runs[e][t]`` and ``streams[e][t]`` in key order,
    ``entry_order[i]`` the caller's index of entry i.
    """
    keys = _keys_iv(keys, len(runs), "keys")
    task_keys = _keys_iv(task_keys, len(runs[0]), "task_keys")
    root = int(rng.integers(0, 2**63 - 1))
    entry_order, task_order = np.argsort(keys, kind="stable"), np.argsort(task_keys, kind="stable")
    runs = [[np.sort(runs[e][t]) for t in task_order] for e in entry_order]
    streams = [
        [np.random.default_rng(np.random.SeedSequence([root, int(keys[e]), int(task_keys[t])])) for t in task_order]
        for e in entry_order
    ]
    return runs, streams, entry_order


def _stratified_counts(streams: list[np.random.Generator], entry: list[np.ndarray], rows: int) -> np.ndarray:
    """Counts (rows, N) of a stratified resample: task t's runs resampled from ``streams[t]``."""
    starts = np.cumsum([0] + [task.size for task in entry[:-1]])
    idx = np.concatenate(
        [rs.draw_indices(g, task.size, rows).astype(np.intp) + start for g, task, start in zip(streams, entry, starts)],
        axis=1,
    )
    return rs.counts_from_indices(idx, idx.shape[1], out=np.empty(idx.shape, dtype=np.float64))


def _restore(values: np.ndarray, entry_order: np.ndarray) -> np.ndarray:
    """Rows in the caller's entry order (``values[i]`` belongs to entry ``entry_order[i]``)."""
    out = np.empty_like(values)
    out[entry_order] = values
    return out


# --------------------------------------------------------------------------- aggregates
def _aggregate_weights(counts: np.ndarray, lengths: np.ndarray, statistic: str, order: np.ndarray | None):
    """Weights (rows, N) of the pooled values giving the statistic of each resample; `order` (the
    pooled values' sort order) is read for "iqm" only."""
    n = int(lengths.sum())
    task = np.repeat(np.arange(lengths.size), lengths)
    if statistic == "iqm":  # trim_mean(all runs of all tasks, 0.25), as rliable's aggregate_iqm ...
        # ... with each task weighing 1/T: a run of task t counts n / (T k_t) runs (1 when every task has as many
        # runs: rliable's runs x tasks matrix, bit for bit). Counted as runs, a task with 10 runs outweighed one
        # with 2 five times: two entries with the same scores on each task but the run counts swapped had IQMs of
        # 0.89 and 0.11, intervals apart, beside equal means of their task means (a statistician's trial).
        mass = n / (lengths.size * lengths[task])
        c = (counts * mass)[:, order]
        upper = np.cumsum(c, axis=1)
        lower = upper - c
        g = int(0.25 * n)
        w_sorted = np.clip(np.minimum(upper, n - g) - np.maximum(lower, g), 0, None) / (n - 2 * g)
        w = np.empty_like(w_sorted)
        w[:, order] = w_sorted
        return w
    return counts / lengths[task] / lengths.size  # the mean of the task means


def _aggregate_iv(runs, statistic, n_resamples, confidence_level, rng, keys=None, task_keys=None, method="expanded"):
    runs = _as_suite(runs)
    statistic = check_choice(statistic, "statistic", AGGREGATES)
    check_choice(method, "method", INTERVAL_METHODS)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    runs, streams, entry_order = _canonical(runs, as_generator(rng), keys, task_keys)
    return runs, statistic, n_resamples, confidence_level, streams, entry_order


def aggregate_interval(
    runs,
    statistic="iqm",
    *,
    n_resamples=10_000,
    confidence_level=0.95,
    rng=0,
    keys=None,
    task_keys=None,
    method="expanded",
) -> Interval:
    """Each entry's aggregate over the suite's tasks, with a stratified-bootstrap interval.

    Parameters
    ----------
    runs : sequence or ndarray
        ``runs[e][t]``: normalised scores (higher is better) of entry e's runs on task t,
        or an array of shape (entries, runs, tasks).
    statistic : {"iqm", "mean", "median"}, default "iqm"
        ``"iqm"``: the interquartile mean of all runs of all tasks (25 % trimmed from
        each end, ``scipy.stats.trim_mean``; a task's runs weigh 1/T together when tasks
        have different numbers of runs); ``"mean"``/``"median"``: of the task means.
    n_resamples : int, default 10000
    confidence_level : float, default 0.95
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
    keys, task_keys : sequence of int, optional
        A stable, distinct, non-negative identity per entry (e.g. a database id) and per
        task; entry e's resamples on task t come from ``(keys[e], task_keys[t])``
        (default: the positions; see the module docstring).
    method : {"expanded", "percentile"}, default "expanded"
        ``"percentile"``: rliable's interval; ``"expanded"``: the percentile interval at the
        level that widens it for small samples (:func:`expanded_level`).

    Returns
    -------
    Interval
        Arrays of shape (entries,): ``estimate``, ``low``, ``high``,
        ``standard_error``; ``bootstrap_distribution`` (entries, B).

    Raises
    ------
    ValueError
        For malformed ``runs`` or an invalid parameter.

    Notes
    -----
    Agarwal et al. (2021): the stratified bootstrap resamples the runs of every task
    independently and keeps the tasks; ``method="percentile"`` is the percentile interval of
    ``rliable.library.get_interval_estimates``. With few runs it is too narrow (the bootstrap's
    spread is the plug-in's, and normal rather than t quantiles): 90 % coverage of the IQM at
    k = 5 runs on 3 tasks, 92 % at k = 10 (``benchmarks/bench_coverage.py``); the default
    expanded percentile interval (Hesterberg 2015) corrects both. Every statistic is a weighted sum of the
    pooled sorted runs whose weights come from the resample's counts, so a batch of
    resamples is one matrix product.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ci = aggregate_interval(rng.random((2, 10, 3)), n_resamples=500)
    >>> ci.estimate.shape, bool(np.all(ci.low <= ci.high))
    ((2,), True)
    """
    runs, statistic, n_resamples, confidence_level, streams, entry_order = _aggregate_iv(
        runs, statistic, n_resamples, confidence_level, rng, keys, task_keys, method
    )
    estimate, boot = np.empty(len(runs)), np.empty((len(runs), n_resamples))
    levels = np.array(
        [
            confidence_level
            if method == "percentile"
            else expanded_level(confidence_level, sum(t.size for t in entry), len(entry))
            for entry in runs
        ]
    )
    for e, entry in enumerate(runs):  # entries, not resamples
        estimate[e] = _aggregate_entry(entry, statistic, streams[e], boot[e])
    estimate, boot, levels = _restore(estimate, entry_order), _restore(boot, entry_order), _restore(levels, entry_order)
    estimate, low, high = _holding(estimate, *_level_limits(boot, levels))
    return _within_runs(runs, entry_order, estimate, low, high, confidence_level, statistic, boot)


def _within_runs(runs, entry_order, estimate, low, high, confidence_level, statistic, boot) -> Interval:
    """The interval with each entry's estimate and limits clipped to its runs' range: every aggregate is a weighted
    mean of them, but its sum rounds (runs all 1 gave an IQM of 0.9999999999999999 in [0.9999999999999998,
    1.0000000000000002], above 1 on a normalised scale; found by suites19)."""
    lo = _restore(np.array([min(task.min() for task in entry) for entry in runs]), entry_order)
    hi = _restore(np.array([max(task.max() for task in entry) for entry in runs]), entry_order)
    estimate, low, high = (np.clip(x, lo, hi) for x in (estimate, low, high))
    return Interval(estimate, low, high, confidence_level, statistic, rs.standard_error(boot), boot)


def _level_limits(boot: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's percentile limits at its own level."""
    low, high = np.empty(len(levels)), np.empty(len(levels))
    for e, level in enumerate(levels):
        low[e], high[e] = rs.percentiles(boot[e], [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return low, high


def _holding(estimate, low, high, bounds: tuple[float, float] | None = None):
    """Limits that hold their estimate and stay in ``bounds``: a resampled weighted sum and the estimate's own sum
    round apart (one run per task gave IQM 0.5267652544005125 in [0.5267652544005124, 0.5267652544005124], a profile
    1.0000000000000002; found by a statistician). Returns ``(estimate, low, high)``: the estimate clipped to ``bounds``
    too (a profile of 1.0000000000000002 in [0.9999999999999999, 1.0], the same statistician's second finding)."""
    if bounds is not None:
        estimate = np.clip(estimate, *bounds)
    low, high = np.minimum(low, estimate), np.maximum(high, estimate)
    if bounds is not None:
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    return estimate, low, high


def _aggregate_entry(entry, statistic: str, stream, boot: np.ndarray) -> float:
    """One entry's aggregate over its tasks; its stratified resamples are written into ``boot`` (B,)."""
    values = np.concatenate(entry)
    lengths = np.array([task.size for task in entry])
    order = np.argsort(values, kind="stable")
    if statistic == "median":
        estimate = float(np.median([task.mean() for task in entry]))
    else:
        estimate = float((_aggregate_weights(np.ones((1, values.size)), lengths, statistic, order) @ values)[0])
    n_resamples = boot.size
    step = rs.batch_size(values.size * 2, n_resamples)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        counts = _stratified_counts(stream, entry, stop - start)
        if statistic == "median":
            means = np.add.reduceat(counts * values, np.r_[0, np.cumsum(lengths)[:-1]], axis=1) / lengths
            boot[start:stop] = np.median(means, axis=1)
        else:
            boot[start:stop] = _aggregate_weights(counts, lengths, statistic, order) @ values
    return estimate


def expanded_level(confidence_level: float, runs: int, tasks: int) -> float:
    """The level of the expanded percentile interval of a stratified bootstrap (Hesterberg 2015, §5).

    The percentile interval at level ``1 - 2 Φ(-z)``, ``z = sqrt(N / (N - T)) · t_{(1+c)/2, N-T}``
    for N runs over T tasks: ``sqrt(N / (N - T))`` undoes the plug-in variance each task's
    resampling has (``(n_t - 1) / n_t``), and the t quantile on N - T degrees of freedom the normal
    quantile's optimism with few runs. ``confidence_level`` when every task has one run (no spread).

    >>> round(expanded_level(0.95, 15, 3), 4)  # 5 runs on each of 3 tasks
    0.9851
    """
    df = runs - tasks
    if df < 1:
        return confidence_level
    z = np.sqrt(runs / df) * stats.t.ppf((1 + confidence_level) / 2, df)
    return float(1 - 2 * stats.norm.sf(z))


def performance_profile(
    runs, taus, *, n_resamples=2_000, confidence_level=0.95, rng=0, keys=None, task_keys=None
) -> PerformanceProfile:
    """Fraction of runs scoring above each τ (a score distribution), with stratified intervals.

    Parameters
    ----------
    runs : sequence or ndarray
        ``runs[e][t]`` (see :func:`aggregate_interval`).
    taus : array_like, shape (n_taus,)
        Thresholds.
    n_resamples : int, default 2000
    confidence_level : float, default 0.95
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
    keys, task_keys : sequence of int, optional
        As :func:`aggregate_interval`'s.

    Returns
    -------
    PerformanceProfile
        ``estimate``, ``low``, ``high``: shape (entries, n_taus).

    Raises
    ------
    ValueError
        For malformed ``runs``, non-finite ``taus`` or an invalid parameter.

    Notes
    -----
    Agarwal et al. (2021), §4.2: the run-score distribution ``F(τ) = (1/T) Σ_t (1/k_t)
    Σ_r 1[x_tr > τ]`` (with equal runs per task, the fraction of all runs above τ, as
    ``rliable.library.create_performance_profile``); percentile intervals of the
    stratified bootstrap.

    Examples
    --------
    >>> p = performance_profile(np.random.default_rng(0).random((1, 20, 2)), [0.25, 0.5, 0.75], n_resamples=200)
    >>> p.estimate.shape
    (1, 3)
    """
    runs, _, n_resamples, confidence_level, streams, entry_order = _aggregate_iv(
        runs, "mean", n_resamples, confidence_level, rng, keys, task_keys
    )
    taus = np.asarray(taus, dtype=np.float64)
    if taus.ndim != 1 or taus.size == 0 or not np.all(np.isfinite(taus)):
        raise ValueError("`taus` must be a non-empty 1-D array of finite thresholds.")
    q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
    estimate = np.empty((len(runs), taus.size))
    boot = np.empty((len(runs), taus.size, n_resamples))
    for e, entry in enumerate(runs):
        values = np.concatenate(entry)
        lengths = np.array([task.size for task in entry])
        above = (values[:, None] > taus[None, :]).astype(np.float64)  # (N, taus)
        estimate[e] = _aggregate_weights(np.ones((1, values.size)), lengths, "mean", None)[0] @ above
        step = rs.batch_size(values.size + taus.size, n_resamples)
        for start in range(0, n_resamples, step):
            stop = min(n_resamples, start + step)
            counts = _stratified_counts(streams[e], entry, stop - start)
            boot[e, :, start:stop] = (_aggregate_weights(counts, lengths, "mean", None) @ above).T
    estimate, boot = _restore(estimate, entry_order), _restore(boot, entry_order)
    low, high = rs.percentiles(boot, q)
    estimate, low, high = _holding(estimate, low, high, bounds=(0.0, 1.0))
    return PerformanceProfile(taus, estimate, low, high, confidence_level, rs.standard_error(boot), boot)


def _add_task_improvement(runs, streams, t, iu, ju, p_upper, boot, n_tasks) -> None:
    """Add task ``t``'s share of every pair's P(X > Y) and of its resamples (``c_x W c_yᵀ``) in place."""
    k, n_resamples = len(runs), boot.shape[1]
    sizes = np.array([runs[e][t].size for e in range(k)])
    kmax = int(sizes.max())
    counts = _stratified_counts([streams[e][t] for e in range(k)], [runs[e][t] for e in range(k)], n_resamples)
    starts = np.r_[0, np.cumsum(sizes)]
    padded = np.full((k, kmax), np.nan)  # runs padded with NaN (never > or == anything)
    c = np.zeros((k, n_resamples, kmax))  # counts padded with 0
    for e in range(k):  # entries: lay each one's runs and counts out once
        padded[e, : sizes[e]] = runs[e][t]
        c[e, :, : sizes[e]] = counts[:, starts[e] : starts[e + 1]]
    scale = (sizes[iu] * sizes[ju]).astype(np.float64)
    step = rs.batch_size(n_resamples * kmax + kmax * kmax, iu.size)
    for a in range(0, iu.size, step):  # batches of pairs
        i, j = iu[a : a + step], ju[a : a + step]
        x, y = padded[i][:, :, None], padded[j][:, None, :]
        # (pairs, kmax, kmax): the board's pair rule, runs within TIE_RELATIVE tie (NaN padding counts for neither).
        # With ``>`` and ``==``, the same runs scored as c / n and as c * (1 / n), 1 ulp apart, were P = 0.458
        w = 0.5 * rs.paired_wins(x, y)
        p_upper[a : a + step] += w.sum(axis=(1, 2)) / scale[a : a + step] / n_tasks
        boot[a : a + step] += np.einsum("pbi,pij,pbj->pb", c[i], w, c[j]) / scale[a : a + step, None] / n_tasks


def _pair_resamples_in_caller_order(boot, back, iu, ju):
    """The resamples of the caller's pairs (i < j), oriented as P(caller's i > caller's j)."""
    if not iu.size:
        return boot
    k = back.size
    ci, cj = np.triu_indices(k, 1)
    a, b = back[ci], back[cj]
    pair = np.full((k, k), -1)
    pair[iu, ju] = np.arange(iu.size)
    pair[ju, iu] = np.arange(iu.size)
    return np.where((a < b)[:, None], boot[pair[a, b]], 1.0 - boot[pair[a, b]])


def probability_of_improvement(
    runs, *, n_resamples=2_000, confidence_level=0.95, rng=0, keys=None, task_keys=None
) -> ProbabilityOfImprovement:
    """P(X > Y) averaged over tasks for every pair of entries, with stratified intervals.

    Parameters
    ----------
    runs : sequence or ndarray
        ``runs[e][t]`` (see :func:`aggregate_interval`).
    n_resamples : int, default 2000
    confidence_level : float, default 0.95
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
    keys, task_keys : sequence of int, optional
        As :func:`aggregate_interval`'s: the interval of a pair depends on the two
        entries' runs and keys only.

    Returns
    -------
    ProbabilityOfImprovement
        k x k matrices ``p``, ``low``, ``high`` (``p[i, j] + p[j, i] = 1``).

    Raises
    ------
    ValueError
        For malformed ``runs`` or an invalid parameter.

    Notes
    -----
    Agarwal et al. (2021), §4.3: on task t, ``P(X_t > Y_t) = U_t / (k_x k_y)``, the
    Mann–Whitney statistic with ties (runs within the board's tie rule, ``_resample.paired_wins``) counting one half; the average over tasks is
    ``rliable.metrics.probability_of_improvement``. Both entries' runs are resampled
    independently within each task (rliable's ``StratifiedIndependentBootstrap``); the
    resampled U of all pairs of a task is one contraction of count vectors with the
    wins matrix, ``c_x W c_yᵀ``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> r = probability_of_improvement(rng.random((3, 8, 2)) + [[[0.3]], [[0]], [[0]]], n_resamples=200)
    >>> bool(r.p[0, 1] > 0.5)
    True
    """
    runs, _, n_resamples, confidence_level, streams, entry_order = _aggregate_iv(
        runs, "mean", n_resamples, confidence_level, rng, keys, task_keys
    )
    k, n_tasks = len(runs), len(runs[0])
    iu, ju = np.triu_indices(k, 1)
    p_upper = np.zeros(iu.size)
    boot = np.zeros((iu.size, n_resamples))
    for t in range(n_tasks):  # tasks; every pair at once within a task
        _add_task_improvement(runs, streams, t, iu, ju, p_upper, boot, n_tasks)
    q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
    lo, hi = rs.percentiles(boot, q) if iu.size else (np.empty(0), np.empty(0))
    p_upper, lo, hi = _holding(p_upper, lo, hi, bounds=(0.0, 1.0))
    p, low, high, se = (np.full((k, k), np.nan) for _ in range(4))
    p[iu, ju], p[ju, iu] = p_upper, 1 - p_upper
    low[iu, ju], low[ju, iu] = lo, 1 - hi
    high[iu, ju], high[ju, iu] = hi, 1 - lo
    se[iu, ju] = se[ju, iu] = rs.standard_error(boot) if iu.size else np.empty(0)
    back = np.argsort(entry_order)  # the caller's entry e is row back[e] here
    p, low, high, se = (x[np.ix_(back, back)] for x in (p, low, high, se))
    boot = _pair_resamples_in_caller_order(boot, back, iu, ju)
    return ProbabilityOfImprovement(p, low, high, confidence_level, se, boot)


# --------------------------------------------------------------------------- ranks over tasks
def _critical_difference_iv(scores, alpha):
    try:
        x = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`scores` must be an array of real numbers (entries x tasks).") from None
    if x.ndim != 2 or x.shape[0] < 3 or x.shape[1] < 2:
        raise ValueError(
            f"`scores` must be 2-D with at least 3 entries (for 2, use the signed-rank test) and 2 "
            f"tasks (got shape {x.shape})."
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("`scores` contains NaN or inf.")
    return x, check_open_unit(alpha, "alpha")


def critical_difference(scores, *, alpha=0.05) -> CriticalDifference:
    """Friedman test, average ranks and Nemenyi's critical difference over tasks.

    Parameters
    ----------
    scores : array_like, shape (entries, tasks)
        One score per entry and task (e.g. the mean of its runs), higher is better.
    alpha : float, default 0.05
        Significance level of the Nemenyi critical difference.

    Returns
    -------
    CriticalDifference

    Raises
    ------
    ValueError
        If ``scores`` is not a finite 2-D array with at least 3 entries and 2 tasks, or
        ``alpha`` is outside (0, 1).

    Notes
    -----
    Demšar (2006), §3.2.2: entries are ranked on each task (1 = best, ties sharing the
    mean rank); with ``R_j`` the average ranks of k entries over N tasks, Friedman's
    statistic (``scipy.stats.friedmanchisquare``, tie-corrected) tests that all are
    alike (0, with p-value 1, where every task ties every entry: scipy's tie correction is then
    0/0); two entries differ when ``|R_i - R_j| > CD = q_α sqrt(k(k+1)/(6N))`` with
    ``q_α`` the studentized range quantile over sqrt(2) (Nemenyi 1963). The pairwise
    p-value is the studentized range's survival function at
    ``|R_i - R_j| sqrt(2) / sqrt(k(k+1)/(6N))``, as ``scikit_posthocs.posthoc_nemenyi_friedman``.

    Examples
    --------
    >>> cd = critical_difference([[0.9, 0.8, 0.85, 0.7], [0.6, 0.5, 0.55, 0.4], [0.8, 0.7, 0.8, 0.75]])
    >>> cd.average_rank.tolist(), round(cd.cd, 3)
    ([1.25, 3.0, 1.75], 1.657)
    """
    x, alpha = _critical_difference_iv(scores, alpha)
    k, n = x.shape
    ranks = stats.rankdata(-x, axis=0)  # per task, 1 = best
    average = ranks.mean(axis=1)
    if np.all(ranks == ranks[:1]):  # every task ties every entry: no evidence of a difference (scipy: 0/0)
        statistic, friedman_p = 0.0, 1.0
    else:
        friedman = stats.friedmanchisquare(*x)
        statistic, friedman_p = float(friedman.statistic), float(friedman.pvalue)
    scale = np.sqrt(k * (k + 1) / (6.0 * n))
    cd = float(stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2) * scale)
    diff = np.abs(average[:, None] - average[None, :])
    pvalue = stats.studentized_range.sf(diff * np.sqrt(2) / scale, k, np.inf)
    np.fill_diagonal(pvalue, 1.0)
    order = np.argsort(average, kind="stable")
    cliques, last_end = [], -1
    for a in range(k):  # maximal groups within CD of their first member, in rank order
        end = a
        while end + 1 < k and average[order[end + 1]] - average[order[a]] < cd:
            end += 1
        if end > a and end > last_end:
            cliques.append(order[a : end + 1].tolist())
            last_end = end
    return CriticalDifference(average, statistic, friedman_p, cd, pvalue, cliques, alpha, n)


def _bayesian_signed_rank_iv(x, y, rope, prior, n_samples, rng):
    try:
        x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError("`x` and `y` must be arrays of real numbers.") from None
    if x.size != y.size or x.size < 2:
        raise ValueError(f"`x` and `y` must have the same length, at least 2 tasks (got {x.size} and {y.size}).")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("`x` and `y` must be finite.")
    rope = check_real(rope, "rope")
    if rope < 0:
        raise ValueError(f"`rope` must be >= 0 (got {rope!r}).")
    prior = check_real(prior, "prior")
    if prior <= 0:
        raise ValueError(f"`prior` must be positive (got {prior!r}).")
    return x, y, rope, prior, check_int(n_samples, "n_samples", minimum=1), as_generator(rng)


def bayesian_signed_rank(x, y, *, rope=0.0, prior=0.5, n_samples=50_000, rng=0) -> BayesianComparison:
    """Bayesian signed-rank test of two entries over tasks, with a region of practical equivalence.

    Parameters
    ----------
    x, y : array_like, shape (tasks,)
        The two entries' scores on each task (e.g. the mean of their runs).
    rope : float, default 0
        Half-width of the region of practical equivalence: differences within ±rope
        count as equal.
    prior : float, default 0.5
        Strength of the Dirichlet process prior, a pseudo-observation at difference 0.
    n_samples : int, default 50000
        Posterior samples.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0

    Returns
    -------
    BayesianComparison
        ``p_a_better`` (x better by more than the rope), ``p_rope``, ``p_b_better``.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` differ in length, have fewer than 2 tasks or non-finite
        values, ``rope < 0``, ``prior <= 0``, or ``n_samples``/``rng`` is invalid.

    Notes
    -----
    Benavoli et al. (2014; 2017, §4): with the differences ``d = (0, y - x)`` (the first
    the prior's pseudo-observation, weight ``prior``) and weights ``w ~ Dirichlet(prior,
    1, ..., 1)``, a posterior sample of the probability that y beats x by more than the
    rope is ``Σ_ij w_i w_j H(d_i + d_j - 2 rope)`` (H the Heaviside function, one half
    at 0), of x beating y ``Σ_ij w_i w_j H(-d_i - d_j - 2 rope)``; each sample falls in
    the region with the largest of the three, and the result is the share of samples in
    each (``baycomp.SignedRankTest.probs``). A sample whose largest values tie (within
    1e-12) is shared equally by those regions: with identical entries and ``rope=0``
    every sample is (½, 0, ½), which baycomp's ``argmax`` gives to A (P(A better) = 1);
    here it is ½ each, and swapping x and y swaps the answer.

    Examples
    --------
    >>> r = bayesian_signed_rank([0.8, 0.82, 0.79, 0.9], [0.7, 0.71, 0.72, 0.8], rope=0.01, n_samples=2000)
    >>> r.p_a_better > 0.9
    True
    """
    x, y, rope, prior, n_samples, rng = _bayesian_signed_rank_iv(x, y, rope, prior, n_samples, rng)
    d = np.r_[0.0, y - x]
    sums = d[:, None] + d[None, :]

    def heaviside(a):
        return (a > 0) + 0.5 * (a == 0)

    above, below = heaviside(sums - 2 * rope), heaviside(-sums - 2 * rope)
    weights = np.r_[prior, np.ones(x.size)]
    counts = np.zeros(3)
    step = rs.batch_size(d.size * d.size, n_samples)
    for start in range(0, n_samples, step):
        w = rng.dirichlet(weights, size=min(step, n_samples - start))
        b_better = np.einsum("si,ij,sj->s", w, above, w)
        a_better = np.einsum("si,ij,sj->s", w, below, w)
        regions = np.stack([a_better, 1.0 - (a_better + b_better), b_better], axis=1)  # symmetric in a, b
        top = regions >= regions.max(axis=1, keepdims=True) - 1e-12
        counts += (top / top.sum(axis=1, keepdims=True)).sum(axis=0)  # a tie shared by its regions
    p = counts / n_samples
    return BayesianComparison(float(p[0]), float(p[1]), float(p[2]), rope, prior, n_samples)
