"""Bootstrap intervals over runs: of a statistic, and of each entry's rank.

Three interval methods (Efron & Tibshirani 1993, ch. 12–14):

* ``"studentized"`` (bootstrap-t, the default for the mean, the IQM and Boo_n): each
  resample's statistic is standardised by its own standard error (the mean's
  ``s/sqrt(k)``; a jackknife for the IQM and Boo_n), and the percentiles of that
  t-statistic, scaled by the observed standard error, give the interval, kept inside
  the support of the bootstrap distribution (the runs' range for the mean, the range of
  the resampled values for Boo_n: unclipped, the bootstrap-t of Boo_5 was 3.1x as wide as
  BCa at k = 10 and 46 σ wide at k = 5). At k = 30, Boo_5's covers 93 % at 1.2x BCa's
  width, where BCa covers 88-89 %; the mean's covers 94-96 % from k = 10. The board shows
  Boo_n's interval from 10n runs (``boon.min_runs_for_interval``); see
  ``benchmarks/bench_coverage.py``.
* ``"bca"`` (bias-corrected and accelerated, Efron 1987, which Bajgar et al. 2018, App.
  D.1 point to): percentiles of the resampled statistic at levels moved by the bias
  ``z0`` and the jackknife acceleration ``a``; equal to ``scipy.stats.bootstrap``'s BCa.
* ``"percentile"``: the percentiles of the resampled statistic (as used for Boo_n by
  Bajgar et al. 2018 and for P(A>B) by Bouthillier et al. 2021, App. C); the only
  method for the median, whose jackknife standard error is inconsistent.

Each entry's runs are first sorted (by oriented value ``sign·x``, or for Boo_n by validation
key, then oriented test value), so a result depends on the set of runs and the ``rng`` only,
not on the order in which runs were stored, and a loss's interval is the mirror of the
negated runs' (the same resamples); entries with the same number of runs then share one count
matrix, and every statistic is one matrix product per batch of resamples (see
``_bootstrap_sorted``). Every statistic here is an L-statistic (a weighted sum of
sorted values), so the jackknife of each resample is two cumulative sums.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
from scipy import stats

from . import _resample as rs
from ._types import Interval, RankIntervals
from ._validation import (
    as_generator,
    as_table,
    check_bool,
    check_choice,
    check_int,
    check_open_unit,
)
from .boon import ESTIMATORS, MIN_RUNS_MEAN_INTERVAL, _boo_n_resampled, _boo_weights, _power_table
from .torch_backend import BACKENDS, rank_intervals_from_distribution_torch, rank_intervals_torch, resolve_backend

__all__ = [
    "MIN_RUNS_MEAN_INTERVAL",
    "bootstrap_interval",
    "mean_interval_shown",
    "rank_intervals",
    "rank_intervals_from_distribution",
]


def mean_interval_shown(k: int) -> bool:
    """Whether the board shows an interval of the mean of k runs (and rank intervals on a mean board).

    The mean's interval is kept inside the runs' range (the support of its bootstrap distribution); the
    true median lies outside the range of k runs with probability 2/2^k (every run on one side), so such
    an interval covers at most 1 - 2/2^k: 93.75 % at k = 5 (measured 92.1-92.7 %, and 88-92 % for the
    rank intervals of a mean board; ``benchmarks/bench_coverage.py``). Shown from 6 runs.

    >>> mean_interval_shown(5), mean_interval_shown(6)
    (False, True)
    """
    return int(k) >= MIN_RUNS_MEAN_INTERVAL


STATISTICS = ("mean", "median", "iqm", "boo_n")
METHODS = ("studentized", "percentile", "bca")
_HUGE = 1e300  # stands for an infinite t* (a resample with no spread), finite for the percentiles
# A percentile of t* this large was interpolated towards a _HUGE one (finite t* stay far below: the
# standard errors are at least ``rounding_zero``'s tolerance): the limit is unbounded.
_UNBOUNDED_T = 1e100


def _statistic(x: np.ndarray, statistic: str, n: int, key: np.ndarray, estimator: str = "paper") -> float:
    """The statistic of runs ``x`` in canonical order (``key``: Boo_n's ordering key)."""
    if statistic == "mean":
        return float(np.mean(x))
    if statistic == "median":
        return float(np.median(x))
    if statistic == "iqm":
        return float(stats.trim_mean(x, 0.25))
    return float(_boo_weights(key, n, estimator) @ x)


def l_weights(statistic: str, k: int, n: int, estimator: str) -> np.ndarray:
    """Weights of the k sorted values (no ties) that give the statistic, shape (k,)."""
    if statistic == "mean":
        return np.full(k, 1.0 / k)
    if statistic == "iqm":
        g = int(0.25 * k)
        w = np.zeros(k)
        w[g : k - g] = 1.0 / (k - 2 * g)
        return w
    if statistic == "median":
        w = np.zeros(k)
        w[(k - 1) // 2] += 0.5
        w[k // 2] += 0.5
        return w
    return np.diff(_power_table(k, n, estimator))


def jackknife_values(s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Leave-one-out values ``θ_(i)`` of the L-statistic ``Σ w_j s_(j)`` of each row of sorted ``s``.

    ``w`` holds the statistic's weights for k - 1 values. Leaving out the value at
    sorted position i gives ``Σ_{j<i} w_j s_j + Σ_{j>i} w_{j-1} s_j``: two cumulative
    sums for all i at once. Shape ``s.shape``.
    """
    head = np.cumsum(s[..., :-1] * w, axis=-1)
    tail = np.cumsum((s[..., 1:] * w)[..., ::-1], axis=-1)[..., ::-1]
    zeros = np.zeros(s.shape[:-1] + (1,))
    return np.concatenate([zeros, head], axis=-1) + np.concatenate([tail, zeros], axis=-1)


def jackknife_se(s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Jackknife standard error of the L-statistic ``Σ w_j s_(j)`` of each row of sorted ``s``.

    ``sqrt((k-1)/k Σ_i (θ_(i) - θ_(.))²)`` over the :func:`jackknife_values`, shape
    ``s.shape[:-1]``.
    """
    k = s.shape[-1]
    loo = jackknife_values(s, w)
    dev = loo - loo.mean(axis=-1, keepdims=True)
    return np.sqrt((k - 1) / k * np.einsum("...i,...i->...", dev, dev))


def _as_runs(values, name: str):
    """1-D sample -> (array, None); table -> (None, list of rows)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None  # ragged list: a table
    if arr is not None and arr.ndim == 1:
        return arr, None
    return None, as_table(values, name, paired=False, min_runs=2)


def _bootstrap_interval_iv(
    values, statistic, n, valid, n_resamples, confidence_level, rng, higher_is_better, method, estimator
):
    statistic = check_choice(statistic, "statistic", STATISTICS)
    n = check_int(n, "n", minimum=1)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    higher_is_better = check_bool(higher_is_better, "higher_is_better")
    estimator = check_choice(estimator, "estimator", ESTIMATORS)
    if method is None:
        method = default_method(statistic)
    method = check_choice(method, "method", METHODS)
    if method == "studentized" and statistic == "median":
        raise ValueError("`method` must be 'percentile' for the median (its jackknife standard error is inconsistent).")
    rng = as_generator(rng)
    if valid is not None and statistic != "boo_n":
        raise ValueError("`valid` is only used with statistic='boo_n'.")
    sample, rows = _as_runs(values, "values")
    if sample is not None:
        if sample.size == 0:
            raise ValueError("`values` must not be empty.")
        bad = np.flatnonzero(~np.isfinite(sample))
        if bad.size:
            raise ValueError(f"`values` contains NaN or inf (at index {bad[0]}).")
        if sample.size < 2:
            raise ValueError(f"`values` needs at least 2 runs to estimate a spread (got {sample.size}).")
        rows = [sample]
    if statistic == "boo_n" and estimator == "unbiased" and min(r.size for r in rows) < n:
        raise ValueError(
            f"`n` must be at most the number of runs of every entry for "
            f"estimator='unbiased' (got n={n}, {min(r.size for r in rows)} runs)."
        )
    vrows = None if valid is None else _valid_rows(valid, values, sample, rows)
    return (
        rows,
        sample is not None,
        statistic,
        n,
        vrows,
        n_resamples,
        confidence_level,
        rng,
        higher_is_better,
        method,
        estimator,
    )


def default_method(statistic: str) -> str:
    """The interval the board shows: percentile for the median, bootstrap-t inside the bootstrap's support
    otherwise (:func:`_limits`). For Boo_5 at k = 30 it covers 94.5 % on normal runs at 1.2× BCa's width,
    where BCa covers 90.5 % (``benchmarks/bench_coverage.py``); BCa stays available as ``method="bca"``."""
    return {"median": "percentile"}.get(statistic, "studentized")


def _valid_rows(valid, values, sample, rows):
    """The validation scores as rows aligned with ``rows``; the ValueError names ``valid``."""
    vsample, vrows = _as_runs(valid, "valid")
    if sample is not None:
        if vsample is None:
            raise ValueError("`valid` must have the same shape as `values`.")
        vrows = [vsample]
    if len(vrows) != len(rows):
        raise ValueError(f"`valid` must have one row per entry of `values` (got {len(vrows)} and {len(rows)}).")
    for i, (v, t) in enumerate(zip(vrows, rows)):
        if v.size != t.size or not np.all(np.isfinite(v)):
            raise ValueError(
                f"`valid` must have a finite value for every run of `values` "
                f"(entry {i}: {v.size} valid values for {t.size} runs)."
            )
    if not isinstance(values, list) and not isinstance(valid, list):
        tv, vv = np.asarray(values, float), np.asarray(valid, float)
        if tv.shape != vv.shape or np.any(np.isnan(tv) != np.isnan(vv)):
            raise ValueError("`valid` must have the same shape and missing runs as `values`.")
    return vrows


# long because its docstring states both methods and every parameter
def bootstrap_interval(
    values,
    statistic="mean",
    *,
    n=5,
    valid=None,
    n_resamples=10_000,
    confidence_level=0.95,
    rng=0,
    higher_is_better=True,
    method=None,
    estimator="paper",
) -> Interval:
    """Bootstrap confidence interval of a statistic of runs.

    Parameters
    ----------
    values : array_like, shape (m,) or (entries, m)
        Scores of the runs (test scores for ``boo_n``). A table gives one interval
        per entry (row); it may be ragged (a list of sequences) or NaN-padded, NaN
        marking a missing run. Every entry needs at least 2 runs.
    statistic : {"mean", "median", "iqm", "boo_n"}, default "mean"
        ``"iqm"`` is the interquartile mean, ``scipy.stats.trim_mean(x, 0.25)``;
        ``"boo_n"`` is :func:`~evaluation.stats.boo_n` with pool size ``n``.
    n : int, default 5
        Pool size of ``boo_n`` (ignored otherwise).
    valid : array_like, optional
        Validation scores aligned with ``values`` (``boo_n`` only); the (valid,
        test) pair of a run is resampled together.
    n_resamples : int, default 10000
        Number of bootstrap resamples B.
    confidence_level : float, default 0.95
        Confidence level, in (0, 1).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness, converted once with ``np.random.default_rng``.
    higher_is_better : bool, default True
        Direction used by ``boo_n`` to pick the best run.
    method : {"studentized", "percentile", "bca"}, optional
        Default "percentile" for the median, "studentized" (bootstrap-t inside the
        bootstrap's support) otherwise (:func:`default_method`).
    estimator : {"paper", "unbiased"}, default "paper"
        Boo_n's estimator (see :func:`~evaluation.stats.boo_n`).

    Returns
    -------
    Interval
        ``estimate`` (the statistic of the observed runs), ``low``, ``high``,
        ``standard_error``: floats for a 1-D sample, arrays of shape ``(entries,)``
        for a table; ``bootstrap_distribution``: shape ``(B,)`` or ``(entries, B)``.

    Raises
    ------
    ValueError
        If ``values`` is empty, has NaN/inf (outside NaN padding) or fewer than 2 runs,
        ``valid`` does not match, or a parameter is invalid (the message names it).

    Notes
    -----
    Draw B resamples of the m runs with replacement and compute the statistic θ* of
    each. Percentile: the ``(1-c)/2`` and ``(1+c)/2`` percentiles of θ* (numpy's
    linear interpolation). Studentized: with ``t* = (θ* - θ̂)/se*`` (``se*`` the
    resample's standard error: ``s*/sqrt(m)`` for the mean, the jackknife for the IQM
    and Boo_n, see :func:`jackknife_se`), the interval is
    ``[θ̂ - t*_(1+c)/2 · se, θ̂ - t*_(1-c)/2 · se]`` (Efron & Tibshirani 1993, §12.5).
    A resample with ``se* = 0`` counts as ``t* = ±inf`` (0 if θ* = θ̂); an endpoint
    left infinite (k = 2) falls back to Student's ``θ̂ ± t_(m-1) · se``. Boo_n with
    ``estimator="unbiased"`` and ``n = m`` has no jackknife: its interval is the
    percentile one (BCa: a = 0). BCa (Efron 1987): the percentiles of θ* at
    ``Φ(z0 + (z0 + z)/(1 - a(z0 + z)))`` for ``z = Φ⁻¹((1 ∓ c)/2)``, ``z0`` from the share
    of θ* below θ̂ and ``a`` from the jackknife (``_bca_limits``), as
    ``scipy.stats.bootstrap(method='BCa')``.

    Examples
    --------
    >>> ci = bootstrap_interval([0.61, 0.64, 0.63, 0.66, 0.62], n_resamples=2000, rng=1)
    >>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
    (0.632, True)
    """
    (rows, is_sample, statistic, n, vrows, n_resamples, confidence_level, rng, higher_is_better, method, estimator) = (
        _bootstrap_interval_iv(
            values, statistic, n, valid, n_resamples, confidence_level, rng, higher_is_better, method, estimator
        )
    )
    sign = 1.0 if higher_is_better else -1.0
    # On the oriented runs sign·x, mapped back at the end: a loss's interval is the exact mirror of the
    # negated runs' (the same resamples and arithmetic; issue 23, row 10).
    rows = [sign * r for r in rows]
    vrows = None if vrows is None else [sign * v for v in vrows]
    estimate, low, high, se = (np.empty(len(rows)) for _ in range(4))
    boot_all = np.empty((len(rows), n_resamples))
    lengths = np.array([x.size for x in rows])
    spec = _Spec(statistic, n, estimator, method, confidence_level)
    for k in dict.fromkeys(lengths.tolist()):  # groups in order of first appearance
        members = np.flatnonzero(lengths == k)
        x, key, estimate[members] = _sorted_runs(rows, vrows, members, statistic, n, 1.0, estimator)
        centre = _pivot_centre(x, key, spec, estimate[members])
        boot, tstar = _bootstrap_sorted(x, key, spec, n_resamples, rng, center=centre)
        low[members], high[members] = _limits(x, estimate[members], boot, tstar, spec, key)
        boot_all[members], se[members] = boot, rs.standard_error(boot)
    if sign < 0:
        estimate, low, high, boot_all = -estimate, -high, -low, -boot_all
    if is_sample:
        return Interval(
            float(estimate[0]), float(low[0]), float(high[0]), confidence_level, statistic, float(se[0]), boot_all[0]
        )
    return Interval(estimate, low, high, confidence_level, statistic, se, boot_all)


class _Spec:
    """What to compute: the statistic, its pool size and estimator, the method and level."""

    def __init__(self, statistic, n, estimator, method, confidence_level):
        self.statistic, self.n, self.estimator = statistic, n, estimator
        self.method, self.confidence_level = method, confidence_level

    def studentized(self, k: int) -> bool:
        """Whether entries with k runs get the bootstrap-t (a jackknife needs k - 1 >= n)."""
        no_jackknife = self.statistic == "boo_n" and self.estimator == "unbiased" and k - 1 < self.n
        return self.method == "studentized" and not no_jackknife

    def jackknife_weights(self, k: int) -> np.ndarray:
        return l_weights(self.statistic, k - 1, self.n, self.estimator)


def _pivot_centre(x, key, spec: _Spec, estimate):
    """Where the bootstrap-t centres ``t* = (θ* - θ(F̂))/se*``: the parameter of the resampled population,
    the plug-in value on the runs (Efron & Tibshirani 1993, §12.5). For every statistic here that is the
    estimate, except the unbiased Boo_n, a U-statistic (Hoeffding 1948): a resample's U* has mean
    E*[U*] = eq. 7 on the runs (n draws with replacement), so t* is centred there; centred at U it
    shifted the interval by the estimator's bias correction once more (92.7 % coverage at k = 30)."""
    if spec.statistic != "boo_n" or spec.estimator != "unbiased":
        return estimate
    weights = np.diff(_power_table(x.shape[1], spec.n, "paper"))
    # row by row (einsum's own loop): a matrix product rounds each row by the block it falls in, so a row's
    # limits moved by an ulp with the other rows computed beside it (found by a statistician)
    centre = np.einsum("ek,k->e", x, weights)
    for e in np.flatnonzero(np.any(key[:, 1:] == key[:, :-1], axis=1)):  # ties share their weights
        centre[e] = _statistic(x[e], "boo_n", spec.n, key[e], "paper")
    return centre


@functools.lru_cache(maxsize=256)
def _t_quantile(q: float, df: int) -> float:
    """Student's t quantile (``scipy.stats.t.ppf``), cached: the report asks the same few per entry."""
    return float(stats.t.ppf(q, df))


def _limits(x, estimate, boot, tstar, spec: _Spec, key=None):
    """Interval limits of every row: percentile, BCa, or bootstrap-t with a Student fallback."""
    c = spec.confidence_level
    q = [100 * (1 - c) / 2, 100 * (1 + c) / 2]
    if spec.method == "bca":
        tol = 1e-11 * x.shape[1] * np.max(np.abs(x), axis=1)  # θ* = θ̂ to rounding (as rounding_zero)
        return _bca_limits(boot, estimate, _jackknife_rows(x, key, spec), c, tol)
    if tstar is None:
        return rs.percentiles(boot, q)
    k = x.shape[1]
    se = jackknife_se(x, spec.jackknife_weights(k))
    t_lo, t_hi = rs.percentiles(tstar, q)
    low, high = estimate - t_hi * se, estimate - t_lo * se
    low[np.abs(t_hi) >= _UNBOUNDED_T] = np.nan  # a limit at a zero-spread resample is unbounded
    high[np.abs(t_lo) >= _UNBOUNDED_T] = np.nan
    student = _t_quantile((1 + c) / 2, k - 1) * se
    low = np.where(np.isfinite(low), low, estimate - student)
    high = np.where(np.isfinite(high), high, estimate + student)
    # Inside the support of its own bootstrap distribution (issue 23, row 3): a bootstrap-t limit past
    # every resampled value claims what no resample of the runs reaches (46 σ at k = 5 for Boo_5). The
    # mean's support is the runs' range (a resample of one run repeated reaches it); Boo_n keeps to the
    # range its resamples reached, which covers 93 % at k = 30 with 1.2x BCa's width (bench_coverage.py).
    if spec.statistic == "mean":
        floor, ceiling = x.min(axis=1), x.max(axis=1)
    else:
        floor, ceiling = boot.min(axis=1), boot.max(axis=1)
    low = np.minimum(np.maximum(low, floor), estimate)
    high = np.maximum(np.minimum(high, ceiling), estimate)
    return np.where(se > 0, low, estimate), np.where(se > 0, high, estimate)


def _jackknife_rows(x, key, spec: _Spec):
    """Leave-one-out statistic of every sorted row of ``x`` (entries, k), or None where there is no
    jackknife (unbiased Boo_n with k - 1 < n). Boo_n rows whose ``key`` has ties: weights recomputed."""
    k = x.shape[1]
    if spec.statistic == "boo_n" and spec.estimator == "unbiased" and k - 1 < spec.n:
        return None
    loo = jackknife_values(x, spec.jackknife_weights(k))
    if spec.statistic == "boo_n" and key is not None:
        for e in np.flatnonzero(np.any(key[:, 1:] == key[:, :-1], axis=1)):
            keep = ~np.eye(k, dtype=bool)
            loo[e] = [_boo_weights(key[e][m], spec.n, spec.estimator) @ x[e][m] for m in keep]
    return loo


def _bca_limits(boot, estimate, loo, confidence_level, tol=0.0):
    """BCa limits of every row (Efron 1987; Efron & Tibshirani 1993, §14.3).

    ``z0 = Φ⁻¹(#{θ* < θ̂}/B)`` (ties with θ̂, to ``tol``, counting one half; the share clipped to
    ``[1/2B, 1 - 1/2B]``), the acceleration ``a = Σ d_i³ / (6 (Σ d_i²)^{3/2})`` with
    ``d_i = θ_(.) - θ_(i)`` from the jackknife ``loo`` (entries, k) (0 without one),
    and the limits are the percentiles of θ* at ``Φ(z0 + (z0 + z_α)/(1 - a(z0 + z_α)))``
    (numpy's linear interpolation, as ``scipy.stats.bootstrap(method='BCa')``): always
    inside ``[min θ*, max θ*]``.
    """
    n_rows, b = boot.shape
    diff = boot - estimate[:, None]
    tied = np.abs(diff) <= np.broadcast_to(tol, estimate.shape)[:, None]
    below = ((diff < 0) & ~tied).sum(axis=1) + 0.5 * tied.sum(axis=1)
    z0 = stats.norm.ppf(np.clip(below / b, 0.5 / b, 1 - 0.5 / b))
    accel = np.zeros(n_rows)
    if loo is not None:
        d = loo.mean(axis=1, keepdims=True) - loo
        s2 = np.einsum("ek,ek->e", d, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            accel = np.where(s2 > 0, (d**3).sum(axis=1) / (6 * np.where(s2 > 0, s2, 1.0) ** 1.5), 0.0)
    ordered = np.sort(boot, axis=1)
    out = []
    for z in stats.norm.ppf([(1 - confidence_level) / 2, (1 + confidence_level) / 2]):
        w = z0 + z
        denom = 1 - accel * w
        with np.errstate(invalid="ignore", divide="ignore"):
            level = np.where(
                denom > 0, stats.norm.cdf(z0 + w / np.where(denom > 0, denom, 1.0)), (w > 0).astype(np.float64)
            )  # a·w >= 1: the limit went past the extreme
        pos = level * (b - 1)
        lo = np.clip(np.floor(pos).astype(np.int64), 0, b - 1)
        hi = np.minimum(lo + 1, b - 1)
        frac = pos - lo
        rows = np.arange(n_rows)
        a_, c_ = ordered[rows, lo], ordered[rows, hi]
        out.append(np.where(frac == 0, a_, a_ + frac * (c_ - a_)))
    return out[0], out[1]


def _sorted_runs(rows, vrows, members, statistic, n, sign, estimator="paper"):
    """Runs of the `members` entries (same length k) sorted worst first, their keys and
    the statistic of each: arrays (members, k), (members, k), (members,)."""
    k = rows[members[0]].size
    x = np.empty((members.size, k))
    key = np.empty((members.size, k))
    estimate = np.empty(members.size)
    for row, e in enumerate(members):  # each entry's runs sorted, worst first
        key_e = sign * (rows[e] if vrows is None else vrows[e])
        oriented = sign * rows[e]  # sorted by sign·x: a loss board is the mirror of the accuracy board
        order = np.lexsort((oriented, key_e)) if statistic == "boo_n" else np.argsort(oriented)
        x[row], key[row] = rows[e][order], key_e[order]
        estimate[row] = _statistic(x[row], statistic, n, key[row], estimator)
    return x, key, estimate


def _resample_weights(statistic, counts, table):
    """Weights ``w[b, r]`` of the sorted runs in each resample (see ``_bootstrap_sorted``)."""
    k = counts.shape[1]
    upper = np.cumsum(counts, axis=1)
    lower = upper - counts
    if statistic == "mean":
        return counts / k
    if statistic == "median":
        lo, hi = (k - 1) // 2, k // 2
        return 0.5 * ((lower <= lo) & (lo < upper)) + 0.5 * ((lower <= hi) & (hi < upper))
    if statistic == "iqm":
        g = int(0.25 * k)
        return np.clip(np.minimum(upper, k - g) - np.maximum(lower, g), 0, None) / (k - 2 * g)
    return table[upper] - table[lower]


def _bootstrap_sorted(x, key, spec: _Spec, n_resamples, rng, center=None):
    """Statistic of B resamples of every row of ``x`` (entries, B), and its t* (or None).

    Each row of ``x`` (entries x k) is sorted by its ordering key (the values
    themselves, or Boo_n's validation key, worst first), and all rows share one
    count matrix ``c`` (resamples x k). The runs of a resample then sit in sorted
    order, the copies of run r occupying positions ``[L_r, U_r)`` with
    ``U = cumsum(c)``, ``L = U - c``; every statistic here is a weighted sum
    ``Σ_r w[b, r] x_r`` with weights that depend on ``L`` and ``U`` only:

    * mean: ``c_r / k``;
    * median: ½ for each run holding position ``⌊(k-1)/2⌋`` and ``⌊k/2⌋``;
    * IQM: the overlap of ``[L_r, U_r)`` with ``[g, k-g)``, over ``k - 2g``
      (``g = ⌊k/4⌋``, as ``scipy.stats.trim_mean(x, 0.25)``);
    * Boo_n: ``W(U_r) - W(L_r)`` (eq. 7, or the unbiased estimator's ``W``), where the
      key has no ties.

    So one matrix product per batch gives every entry's statistic. Rows whose
    Boo_n key has ties take the general tie-sharing path. For the bootstrap-t, the
    resample's sorted values are laid out (``np.repeat`` of the positions by their
    counts) and its jackknife standard error read with :func:`jackknife_se`.
    """
    n_entries, k = x.shape
    boot = np.empty((n_entries, n_resamples))
    studentize = spec.studentized(k)
    tstar = np.empty((n_entries, n_resamples)) if studentize else None
    tied = np.zeros(n_entries, dtype=bool)
    table = None
    if spec.statistic == "boo_n":
        tied = np.any(key[:, 1:] == key[:, :-1], axis=1)
        table = _power_table(k, spec.n, spec.estimator)
    plain = ~tied
    xt = np.ascontiguousarray(x[plain].T)
    step = rs.batch_size(max(k, n_entries) * (k if studentize else 1), n_resamples)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        counts = rs.draw_counts(rng, k, stop - start)
        if plain.any():
            boot[plain, start:stop] = (_resample_weights(spec.statistic, counts, table) @ xt).T
        if tied.any():
            boot[tied, start:stop] = _boo_n_resampled(x[tied], key[tied], counts, spec.n, spec.estimator)
        if studentize:
            assert tstar is not None  # allocated above when studentize
            tstar[:, start:stop] = _tstar(x, counts, boot[:, start:stop] - center[:, None], center, spec)
    return boot, tstar


def _tstar(x, counts, diff, centre, spec: _Spec):
    """``(θ* - θ̂) / se*`` of every entry in a batch of resamples (entries, batch)."""
    b, k = counts.shape
    if spec.statistic == "mean":  # s*/sqrt(k) from the counts: no resample laid out
        centred = x - x.mean(axis=1, keepdims=True)
        first, second = centred @ counts.T / k, (centred * centred) @ counts.T / k
        se = resampled_mean_se(first, second, k)  # its own zero, on the centred runs' scale
        se[:, counts.max(axis=1) == k] = 0.0  # one run k times: no spread, whatever the rounding
        return t_from_se(diff, se, centre)
    positions = np.repeat(np.tile(np.arange(k), b), counts.ravel()).reshape(b, k)
    se = jackknife_se(x[:, positions], spec.jackknife_weights(k))  # (entries, b, k), rows sorted
    return t_from_se(diff, rounding_zero(se, x), centre)


def resampled_mean_se(first: np.ndarray, second: np.ndarray, k: int) -> np.ndarray:
    """``s*/√k`` of resamples from the first and second moments of their centred runs.

    ``second - first²`` of a resample whose values are all equal is 0 up to cancellation (a few eps
    times ``second``); left as it was, its ~1e-10 standard error gave a finite, huge t* and limits
    that depended on the rounding (found by a statistician: [0.64, 0.78] against [0.64, 0.686] for
    13 runs at 0.64 and 2 at 0.78). A variance at most ``1e-12·second`` counts as 0. On the centred
    runs' scale: :func:`rounding_zero`'s ``max|x|`` zeroed real spreads of runs far from 0 (1e6 + 1e-4·z).
    """
    var = second - first * first
    return np.sqrt(np.where(var <= 1e-12 * second, 0.0, var) * k / (k - 1)) / np.sqrt(k)


def rounding_zero(se: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``se`` (entries, B) with values at the rounding level of the runs ``x`` (entries, k) set to 0.

    A resample whose leave-one-out values are all equal has a jackknife standard error of
    exactly 0, but the cumulative sums leave about ``k·eps·max|x|``; divided into θ* - θ̂
    that gave a t* of 1e13 and an interval limit at -2e12 instead of the unbounded t* of
    a zero spread. Below ``1e-11·k·max|x|`` a standard error counts as 0.
    """
    tol = 1e-11 * x.shape[1] * np.max(np.abs(x), axis=1, keepdims=True)
    return np.where(se <= tol, 0.0, se)


def t_from_se(diff: np.ndarray, se: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """``diff / se``, a zero spread giving ±_HUGE (an unbounded t*), finite for the percentiles.

    ``diff = θ* - θ̂`` with ``θ̂ = centre`` (entries, broadcast over the resamples). A resample with no spread whose
    statistic ties ``θ̂`` by the board's tie rule (:data:`~evaluation.stats._resample.TIE_RELATIVE`) has t* = 0/0,
    taken as 0: computed, the difference was ±1e-16 and its sign alone made t* ±infinite and one limit unbounded
    (runs [0.81, 0.83, 0.84, 0.84, 0.83, 0.83] resampled as their three runs at 0.83: the mean's interval
    [0.8178, 0.8371], that of their error rates 1 - x mirrored [0.8178, 0.84]; a property hunt's finding).
    """
    centre = np.asarray(centre, dtype=np.float64).reshape(np.shape(centre) + (1,) * (np.ndim(diff) - np.ndim(centre)))
    with np.errstate(divide="ignore", invalid="ignore"):
        none = np.abs(diff) <= rs.TIE_RELATIVE * np.abs(centre)
        t = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(none, 0.0, np.sign(diff) * np.inf))
    return np.nan_to_num(t, nan=0.0, posinf=_HUGE, neginf=-_HUGE)


# --------------------------------------------------------------------------- ranks
RANK_STATISTICS = ("mean", "boo_n")


def _rank_intervals_iv(scores, paired, n_resamples, confidence_level, rng, statistic, n, valid, estimator):
    paired = check_bool(paired, "paired")
    rows = as_table(scores, "scores", paired=paired, min_runs=2)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    rng = as_generator(rng)
    statistic = check_choice(statistic, "statistic", RANK_STATISTICS)
    n = check_int(n, "n", minimum=1)
    estimator = check_choice(estimator, "estimator", ESTIMATORS)
    if valid is not None and statistic != "boo_n":
        raise ValueError("`valid` is only used with statistic='boo_n'.")
    vrows = None
    if valid is not None:
        vrows = as_table(valid, "valid", paired=paired, min_runs=2)
        if [v.size for v in vrows] != [r.size for r in rows]:
            raise ValueError("`valid` must have the same shape and missing runs as `scores`.")
    if statistic == "boo_n" and estimator == "unbiased" and min(r.size for r in rows) < n:
        raise ValueError(f"`n` must be at most the number of runs of every entry for estimator='unbiased' (got n={n}).")
    return rows, paired, n_resamples, confidence_level, rng, statistic, n, vrows, estimator


def rank_intervals_from_distribution(estimate, boot, confidence_level=0.95) -> RankIntervals:
    """Rank intervals from each entry's resampled statistic (higher is better).

    Parameters
    ----------
    estimate : array_like, shape (entries,)
        The observed statistic of each entry.
    boot : array_like, shape (entries, B)
        The statistic in each of B *joint* resamples (one resample of the data gives
        every entry's value in column b), e.g. the ``bootstrap_distribution`` of
        :func:`~evaluation.stats.paired_test_bootstrap`.
    confidence_level : float, default 0.95

    Returns
    -------
    RankIntervals
        Competition ranks (1 = highest) and the percentile interval of the resampled
        ranks widened to whole ranks.

    Raises
    ------
    ValueError
        If the shapes disagree or ``confidence_level`` is outside (0, 1).
    """
    estimate = np.asarray(estimate, dtype=np.float64)
    boot = np.asarray(boot, dtype=np.float64)
    if estimate.ndim != 1 or boot.ndim != 2 or boot.shape[0] != estimate.size or boot.shape[1] < 1:
        raise ValueError("`boot` must have shape (entries, B) with one row per entry of `estimate`.")
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    rank = rs.competition_rank(np.asarray(estimate, dtype=np.float64))
    boot_ranks = rs.competition_rank(boot)
    q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
    lo, hi = rs.percentiles(boot_ranks.astype(np.float64), q)
    low = np.floor(lo + 1e-9).astype(np.int64)
    high = np.ceil(hi - 1e-9).astype(np.int64)
    return RankIntervals(rank, low, high, confidence_level, rs.standard_error(boot_ranks), boot_ranks)


def resampled_boo_n(rows, vrows, paired: bool, n: int, estimator: str, n_resamples: int, rng):
    """Boo_n of B resamples of every entry, shape (entries, B), and the observed Boo_n.

    Paired: one count matrix over the run indices shared by all entries, each entry's
    runs then sorted by its own key (``_boo_n_resampled``); unpaired: each entry
    resampled on its own.
    """
    keys = rows if vrows is None else vrows
    estimate = np.array([_observed_boo(r, v, n, estimator) for r, v in zip(rows, keys)])
    out = np.empty((len(rows), n_resamples))
    if paired:
        test, key = rs.canonical_runs(np.stack(rows), np.stack(keys))
        k = test.shape[1]
        step = rs.batch_size(k * len(rows), n_resamples)
        for start in range(0, n_resamples, step):
            stop = min(n_resamples, start + step)
            out[:, start:stop] = _boo_n_resampled(test, key, rs.draw_counts(rng, k, stop - start), n, estimator)
        return estimate, out
    lengths = np.array([r.size for r in rows])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    step = rs.batch_size(int(lengths.sum()), n_resamples)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        counts = rs.draw_counts_ragged(rng, lengths, stop - start)
        for e, (r, v) in enumerate(zip(rows, keys)):  # entries, not resamples
            out[e, start:stop] = _boo_n_resampled(r[None], v[None], counts[:, starts[e] : starts[e + 1]], n, estimator)[
                0
            ]
    return estimate, out


def _observed_boo(test, key, n, estimator):
    order = np.lexsort((test, key))
    return float(_boo_weights(key[order], n, estimator) @ test[order])


def resampled_means(rows, paired: bool, n_resamples: int, rng) -> np.ndarray:
    """Means of B resamples of every entry, shape (entries, B).

    Paired: one resample index array for all entries; unpaired: each entry resampled
    on its own.
    """
    n_entries = len(rows)
    out = np.empty((n_entries, n_resamples))
    if paired:
        (x,) = rs.canonical_runs(np.stack(rows))
        k = x.shape[1]
        step = rs.batch_size(max(k, n_entries), n_resamples)
        for start in range(0, n_resamples, step):
            stop = min(n_resamples, start + step)
            counts = rs.draw_counts(rng, k, stop - start, dtype=np.float64)
            out[:, start:stop] = x @ counts.T / k
        return out
    lengths = np.array([r.size for r in rows])
    flat = np.concatenate([np.sort(r) for r in rows])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    step = rs.batch_size(flat.size, n_resamples)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        counts = rs.draw_counts_ragged(rng, lengths, stop - start, dtype=np.float64)
        counts *= flat
        out[:, start:stop] = (np.add.reduceat(counts, starts, axis=1) / lengths).T
    return out


# long because its docstring states every parameter (the body is five lines)
def rank_intervals(
    scores,
    *,
    paired=True,
    n_resamples=10_000,
    confidence_level=0.95,
    rng=0,
    statistic="mean",
    n=5,
    valid=None,
    estimator="paper",
    backend="numpy",
    device="auto",
    keep_distribution=True,
) -> RankIntervals:
    """Bootstrap interval of each entry's rank by the board's ranking statistic (1 = best).

    Parameters
    ----------
    scores : array_like, shape (entries, runs)
        Scores, higher is better. Paired: complete and aligned by seed (run i of
        every entry shares its seeds and split). Unpaired: may be ragged or
        NaN-padded.
    paired : bool, default True
        Resample runs jointly across entries (one index array) or each entry alone.
    n_resamples : int, default 10000
        Number of bootstrap resamples.
    confidence_level : float, default 0.95
        Confidence level, in (0, 1).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.
    statistic : {"mean", "boo_n"}, default "mean"
        The statistic that ranks the entries: resampled, not the mean in its place.
    n : int, default 5
        Boo_n's pool size.
    valid : array_like, optional
        Validation scores aligned with ``scores`` (Boo_n chooses by them; oriented
        like ``scores``, higher is better). Each entry is resampled with its own key: give
        an entry without validation scores its ``scores`` row here, as its displayed Boo_n
        chooses by them (Bajgar et al. 2018, eq. 5/7).
    estimator : {"paper", "unbiased"}, default "paper"
        Boo_n's estimator.
    backend : {"numpy", "torch", "auto"}, default "numpy"
        "torch": the joint bootstrap on ``device`` (:mod:`evaluation.stats.torch_backend`) for
        paired entries ranked by the mean, equal within Monte Carlo error (Boo_n and unpaired
        entries stay numpy); "auto": torch on CUDA when there is one and the work is large.
    device : str, default "auto"
    keep_distribution : bool, default True
        False: ``bootstrap_distribution`` None (on a GPU the ranks stay there), the rest the same.

    Returns
    -------
    RankIntervals
        ``rank`` (observed), ``low``, ``high``: integer arrays of shape ``(entries,)``;
        ``bootstrap_distribution`` (ranks, ``(entries, B)``) and ``standard_error``.

    Raises
    ------
    ValueError
        For an invalid table (NaN when paired, entries with fewer than 2 runs), or
        invalid ``n_resamples``, ``confidence_level``, ``rng``, ``statistic``, ``n``,
        ``valid`` or ``estimator``.

    Notes
    -----
    In each resample the entries are ranked by the statistic ("competition" ranking:
    ties share the better rank). The interval is the percentile interval of these
    ranks (linear interpolation) widened to whole ranks: ``low = floor``, ``high =
    ceil``. A board ranked by Boo_n must resample Boo_n: ranking resamples by the mean
    can give the entry shown first the interval [2, 2]. This is the rank display
    recommended alongside significance groups (docs/DESIGN.md §6).

    Examples
    --------
    >>> r = rank_intervals([[0.9, 0.91, 0.92], [0.5, 0.52, 0.51]], n_resamples=200)
    >>> r.rank.tolist(), r.low.tolist(), r.high.tolist()
    ([1, 2], [1, 2], [1, 2])
    """
    rows, paired, n_resamples, confidence_level, rng, statistic, n, vrows, estimator = _rank_intervals_iv(
        scores, paired, n_resamples, confidence_level, rng, statistic, n, valid, estimator
    )
    return _rank_intervals(
        rows,
        paired,
        n_resamples,
        confidence_level,
        rng,
        statistic,
        n,
        vrows,
        estimator,
        check_choice(backend, "backend", BACKENDS),
        device,
        keep_distribution,
    )


def _rank_intervals(
    rows,
    paired,
    n_resamples,
    confidence_level,
    rng,
    statistic,
    n,
    vrows,
    estimator,
    requested,
    device,
    keep_distribution,
) -> RankIntervals:
    """:func:`rank_intervals` of validated inputs: the joint bootstrap (numpy, or torch on the device), ranked."""
    backend, device = rank_intervals_backend(requested, device, rows, paired, statistic, n_resamples)
    if backend == "torch":
        return rank_intervals_torch(
            np.stack(rows),
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            seed=int(rng.integers(2**63)),
            device=device,
            keep_distribution=keep_distribution,
        )
    if statistic == "boo_n":
        estimate, boot = resampled_boo_n(rows, vrows, paired, n, estimator, n_resamples, rng)
    else:
        estimate, boot = np.array([r.mean() for r in rows]), resampled_means(rows, paired, n_resamples, rng)
    return _ranked(estimate, boot, confidence_level, requested, device, keep_distribution)


def _ranked(estimate, boot, confidence_level, backend, device, keep_distribution) -> RankIntervals:
    """:func:`rank_intervals_from_distribution`, on the device when "auto" finds one and the work is large
    (competition ranks are exact, so the intervals are numpy's either way)."""
    ranking, where = resolve_backend(backend, device, boot.size)
    if ranking == "torch":
        return rank_intervals_from_distribution_torch(
            estimate, boot, confidence_level=confidence_level, device=where, keep_distribution=keep_distribution
        )
    result = rank_intervals_from_distribution(estimate, boot, confidence_level)
    return result if keep_distribution else replace(result, bootstrap_distribution=None)


def rank_intervals_backend(
    backend: str, device: str, rows, paired: bool, statistic: str, n_resamples: int
) -> tuple[str, str]:
    """The (backend, device) :func:`rank_intervals` runs on: torch only for paired entries ranked by the mean.

    "auto" is torch on CUDA when a device is present and the joint bootstrap is large
    (:func:`evaluation.stats.torch_backend.resolve_backend`); Boo_n and unpaired entries stay numpy.
    """
    backend = check_choice(backend, "backend", BACKENDS)
    if not (paired and statistic == "mean"):
        return "numpy", "cpu"
    return resolve_backend(backend, device, len(rows) * n_resamples * max(np.size(r) for r in rows))


# --------------------------------------------------------------------------- many entries, own seeds
#: Entries per block of :func:`seeded_intervals`: (entries x B x k) temporaries stay in cache-sized pieces.
SEEDED_BLOCK_ELEMENTS = 1 << 17


def seeded_intervals(
    values,
    seeds,
    statistic="mean",
    *,
    n=5,
    valid=None,
    n_resamples=10_000,
    confidence_level=0.95,
    higher_is_better=True,
    estimator="paper",
) -> tuple[np.ndarray, np.ndarray]:
    """Default-method :func:`bootstrap_interval` of every row, each row with its own seed.

    Row ``e`` of the result is ``bootstrap_interval(values[e], statistic, rng=seeds[e], ...)``
    (to rounding, ~1e-15): the same resamples, drawn from ``np.random.default_rng(seeds[e])``,
    so an entry's interval depends on the entry and its seed only (Efron & Tibshirani 1993,
    §12.5, as :func:`bootstrap_interval`). The rows are computed together, in blocks of
    entries (``SEEDED_BLOCK_ELEMENTS`` values of the (entries x B x k) arrays at a time);
    this removes the per-entry overhead of calling :func:`bootstrap_interval` 3 x entries
    times on a large board. Rows whose Boo_n key has ties take :func:`bootstrap_interval`.

    Parameters
    ----------
    values : array_like, shape (entries, k)
        Finite scores, k >= 2 runs per entry (the same k for every row).
    seeds : sequence of int, length entries
    statistic : {"mean", "boo_n"}
    valid : array_like, shape (entries, k), optional
        Validation scores (``boo_n`` only).

    Returns
    -------
    (low, high) : two arrays of shape (entries,)
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2 or len(seeds) != x.shape[0] or not np.all(np.isfinite(x)):
        raise ValueError("`values` must be a finite (entries, k >= 2) table with one seed per row.")
    statistic = check_choice(statistic, "statistic", RANK_STATISTICS)
    if valid is not None and (statistic != "boo_n" or np.shape(valid) != x.shape):
        raise ValueError("`valid` must have the shape of `values` (statistic='boo_n' only).")
    sign = 1.0 if higher_is_better else -1.0
    spec = _Spec(
        statistic, n, check_choice(estimator, "estimator", ESTIMATORS), default_method(statistic), confidence_level
    )
    k = x.shape[1]
    x = sign * x  # oriented runs, the limits mapped back at the end: a loss mirrors exactly (issue 23, row 10)
    key = x if valid is None else sign * np.asarray(valid, dtype=np.float64)
    oriented = (x, key)
    order = np.lexsort((x, key), axis=1) if statistic == "boo_n" else np.argsort(x, axis=1)
    x, key = np.take_along_axis(x, order, axis=1), np.take_along_axis(key, order, axis=1)
    tied = np.any(key[:, 1:] == key[:, :-1], axis=1) if statistic == "boo_n" else np.zeros(len(x), bool)
    low, high = np.empty(len(x)), np.empty(len(x))
    _tied_intervals(np.flatnonzero(tied), oriented, valid is not None, seeds, spec, n_resamples, low, high)
    plain = np.flatnonzero(~tied)
    weights = (
        _boo_weights(np.arange(k, dtype=np.float64), n, spec.estimator) if statistic == "boo_n" else np.full(k, 1.0 / k)
    )
    step = max(1, SEEDED_BLOCK_ELEMENTS // (n_resamples * k))

    def block(rows):  # independent of the other blocks: each entry draws from its own seed
        counts = _seeded_counts([seeds[e] for e in rows], k, n_resamples, spec.studentized(k))
        estimate = np.einsum("ek,k->e", x[rows], weights)  # row by row (BLAS may round by block position)
        boot, tstar = _seeded_block(x[rows], counts, _pivot_centre(x[rows], key[rows], spec, estimate), spec)
        low[rows], high[rows] = _limits(x[rows], estimate, boot, tstar, spec)

    blocks = [plain[start : start + step] for start in range(0, plain.size, step)]
    with _block_pool(len(blocks)) as pool:
        list(pool.map(block, blocks))
    return (low, high) if sign > 0 else (-high, -low)


def _tied_intervals(rows, oriented, has_valid: bool, seeds, spec: _Spec, n_resamples: int, low, high) -> None:
    """:func:`seeded_intervals` of the rows whose Boo_n key has ties (tie-sharing weights): one
    :func:`bootstrap_interval` each, written into ``low`` and ``high``."""
    for e in rows:
        ci = bootstrap_interval(
            oriented[0][e],
            spec.statistic,
            n=spec.n,
            rng=int(seeds[e]),
            valid=oriented[1][e] if has_valid else None,
            n_resamples=n_resamples,
            confidence_level=spec.confidence_level,
            higher_is_better=True,
            estimator=spec.estimator,
        )
        low[e], high[e] = ci.low, ci.high


def _block_pool(blocks: int):
    """Threads for :func:`seeded_intervals`' blocks (numpy releases the GIL in their loops): one per
    core the process may use, at most 8 and at most one per block; ``VARBOARD_STATS_THREADS`` caps it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cap = int(os.environ.get("VARBOARD_STATS_THREADS", "8") or 8)
    return ThreadPoolExecutor(max_workers=max(1, min(cores, cap, blocks)))


def _seeded_counts(seeds, k: int, n_resamples: int, studentized: bool) -> np.ndarray:
    """Count matrix (k, entries x B), runs first (sums over runs are row adds); entry e's
    columns e*B..(e+1)*B - 1 hold the resamples :func:`_bootstrap_sorted` draws from
    ``default_rng(seeds[e])``, in the same calls (numpy's bounded 32-bit draws buffer
    within one call only)."""
    columns = len(seeds) * n_resamples
    idx = np.empty((len(seeds), n_resamples, k), dtype=np.intp)
    outer = rs.batch_size(k * (k if studentized else 1), n_resamples)
    inner = max(1, rs._BINCOUNT_BINS // k)  # fill_counts' step
    calls = [
        (b, min(b + inner, n_resamples, a + outer))
        for a in range(0, n_resamples, outer)
        for b in range(a, min(a + outer, n_resamples), inner)
    ]
    for row, seed in enumerate(seeds):
        rng = np.random.default_rng(int(seed))
        for start, stop in calls:
            idx[row, start:stop] = rng.integers(0, k, size=(stop - start, k), dtype=np.uint32)
    idx *= columns
    idx += np.arange(columns, dtype=np.intp).reshape(len(seeds), n_resamples, 1)
    return np.bincount(idx.ravel(), minlength=k * columns).reshape(k, columns)


def _seeded_block(x, counts, centre, spec: _Spec):
    """Statistic and t* of B resamples of each sorted row of ``x`` with its own counts: (entries, B) each
    (t* centred at ``centre``, :func:`_pivot_centre`).

    Runs first (``counts``: (k, entries x B)). Boo_n's jackknife needs no resample laid
    out: leaving out one copy of run r (copies at sorted positions [L_r, U_r)) gives, with
    T the cumulative weights of k - 1 values, ``θ_r = Σ_{r'<r} x_r'(T(U_r') - T(L_r')) +
    x_r(T(U_r - 1) - T(L_r)) + Σ_{r'>r} x_r'(T(U_r' - 1) - T(L_r' - 1))``, and the
    jackknife variance is ``(k-1)/k Σ_r c_r (θ_r - θ̄)²`` with ``θ̄ = Σ_r c_r θ_r / k``
    (:func:`jackknife_se` over the k positions, grouped by run).
    """
    k = x.shape[1]
    entries, b = x.shape[0], counts.shape[1] // x.shape[0]
    values = np.repeat(x.T, b, axis=1)  # (k, entries x B)
    if spec.statistic == "mean":
        boot = np.einsum("rn,rn->n", counts, values) / k
    else:  # Boo_n: W(U_r) - W(L_r), see _bootstrap_sorted
        table = _power_table(k, spec.n, spec.estimator)
        upper = _cumsum_runs(counts)
        boot = np.einsum("rn,rn->n", np.diff(np.take(table, upper), axis=0, prepend=0.0), values)
    boot = boot.reshape(entries, b)
    if not spec.studentized(k):
        return boot, None
    diff = boot - centre[:, None]
    if spec.statistic == "mean":
        centred = np.repeat((x - x.mean(axis=1, keepdims=True)).T, b, axis=1)
        first = np.einsum("rn,rn->n", counts, centred) / k
        second = np.einsum("rn,rn->n", counts, centred * centred) / k
        se = resampled_mean_se(first, second, k)
        se[counts.max(axis=0) == k] = 0.0  # one run k times: no spread, whatever the rounding
        return boot, t_from_se(diff, se.reshape(entries, b), centre)  # as _tstar: the same limits
    cum = np.concatenate([[0.0], _power_table(k - 1, spec.n, spec.estimator), [1.0]])  # T(j) at cum[j + 1]
    at_upper, at_upper1 = np.take(cum, upper), np.take(cum, upper + 1)
    at_lower, at_lower1 = _previous_run(at_upper, cum[0]), _previous_run(at_upper1, cum[1])  # L_r = U_(r-1)
    kept = values * (at_upper1 - at_lower1)  # runs before the one left out
    shifted = values * (at_upper - at_lower)  # runs after it
    theta = _cumsum_runs(kept) - kept + shifted.sum(axis=0) - _cumsum_runs(shifted)
    theta += values * (at_upper - at_lower1)
    theta_bar = np.einsum("rn,rn->n", counts, theta) / k
    theta -= theta_bar
    se = np.sqrt((k - 1) / k * np.einsum("rn,rn,rn->n", counts, theta, theta))
    return boot, t_from_se(diff, rounding_zero(se.reshape(entries, b), x), centre)


def _previous_run(a: np.ndarray, first: float) -> np.ndarray:
    """Row r - 1 of ``a`` at row r, ``first`` at row 0."""
    out = np.empty_like(a)
    out[0] = first
    out[1:] = a[:-1]
    return out


def _cumsum_runs(a: np.ndarray) -> np.ndarray:
    """``np.cumsum(a, axis=0)`` for a few long rows: one vector add per row (numpy's axis-0 cumsum
    walks the columns one by one, several times slower here)."""
    out = np.empty_like(a)
    out[0] = a[0]
    for r in range(1, a.shape[0]):
        np.add(out[r - 1], a[r], out=out[r])
    return out


# --------------------------------------------------------------------------- ranks, incrementally
def rank_intervals_update(
    scores,
    new,
    known,
    low,
    high,
    *,
    n_resamples=10_000,
    confidence_level=0.95,
    rng=0,
    statistic="mean",
    n=5,
    valid=None,
    estimator="paper",
) -> RankIntervals:
    """Paired :func:`rank_intervals` of a board when some entries are new, reusing the others' intervals.

    ``low``/``high`` are the intervals of the board without the ``new`` entries (same runs,
    ``rng``, B and level) where ``known``. The count matrix does not depend on the entries
    (one seed, runs in canonical order, checked), so an old entry's statistic is the same
    in every resample and its rank in resample b gains ``#{new j: θ*_jb > θ*_ib}``. An old known
    entry that every new entry is above in every resample or in none (ranges ``[lo_i, hi_i]``
    over the B resamples that do not overlap; or, with up to ``_EXACT_CROSSING_MAX_NEW`` new
    entries, compared resample by resample) has all its ranks moved by the same integer c, and
    so has its interval (exact). The others (set O) get their ranks recomputed exactly: ``1 + #{j in U: θ*_jb > θ*_ib} + #{j not in
    U: lo_j > hi_i}`` with U every entry whose range overlaps one of O (an entry outside U
    is above an entry of O in every resample or in none). Equal to :func:`rank_intervals`
    (``tests/evaluation/test_seeded_intervals.py``); the standard errors are not returned.
    """
    rows, paired, n_resamples, confidence_level, rng, statistic, n, vrows, estimator = _rank_intervals_iv(
        scores, True, n_resamples, confidence_level, rng, statistic, n, valid, estimator
    )
    new, known = np.asarray(new, bool), np.asarray(known, bool) & ~np.asarray(new, bool)
    table = np.stack(rows)
    keys = (table,) if vrows is None else (table, np.stack(vrows))
    if not np.array_equal(_run_order(*keys), _run_order(*(k[~new] for k in keys))):
        known = np.zeros_like(known)  # the canonical order of the runs moved: recompute every rank
    if statistic == "boo_n":
        estimate, boot = resampled_boo_n(rows, vrows, True, n, estimator, n_resamples, rng)
    else:
        estimate, boot = table.mean(axis=1), resampled_means(rows, True, n_resamples, rng)
    lo, hi = boot.min(axis=1), boot.max(axis=1)
    margin = _tie_margin(boot, lo, hi)
    above, crossing = _new_entries_above(boot, lo, hi, np.flatnonzero(new), margin)
    redo = np.flatnonzero(~known | crossing)
    out_low, out_high = np.asarray(low, np.int64) + above, np.asarray(high, np.int64) + above
    if redo.size:
        ranks = _resampled_ranks_of(boot, lo, hi, redo, margin)
        q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
        qlo, qhi = rs.percentiles(ranks.astype(np.float64), q)
        out_low[redo], out_high[redo] = np.floor(qlo + 1e-9), np.ceil(qhi - 1e-9)
    return RankIntervals(rs.competition_rank(estimate), out_low, out_high, confidence_level)


#: Up to this many new entries, each is compared with the entries its range overlaps resample by resample.
_EXACT_CROSSING_MAX_NEW = 16


def _tie_margin(boot, lo=None, hi=None) -> float:
    """A distance beyond which two resampled statistics are in no common tie block of any resample.

    :func:`~evaluation.stats._resample.competition_rank` ties values in chains (sorted neighbours within
    ``TIE_RELATIVE`` of the larger magnitude, :func:`~evaluation.stats._resample.tie_block_starts`), so a block
    spans at most (entries - 1) gaps of at most ``TIE_RELATIVE · max|θ*|`` each; twice (entries + 1) of them is
    beyond any block and any value that could join one. ``lo``/``hi``: each entry's smallest and largest resampled
    statistic, when known: where all are finite, max|θ*| is the larger of |min lo| and |max hi| (the same value,
    read from 2 x entries numbers instead of the (entries, B) matrix: 1.45 s of a 20,000-entry board's update).
    """
    if lo is not None and hi is not None and lo.size and np.isfinite(lo).all() and np.isfinite(hi).all():
        largest = max(abs(float(lo.min())), abs(float(hi.max())))
    else:  # an infinite or undefined statistic somewhere: the finite ones, read from the matrix
        finite = np.abs(boot[np.isfinite(boot)])
        largest = min(float(finite.max()), float(np.finfo(np.float64).max)) if finite.size else 0.0
    return 2.0 * (boot.shape[0] + 1) * rs.TIE_RELATIVE * largest


def _new_entries_above(boot, lo, hi, new: np.ndarray, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """For every entry, how many new entries are above it in every resample, and whether a new entry
    is above it in some resamples only, or ties it (its ranks then move unevenly: recomputed).

    A new entry is above an entry in every resample, and leaves its tie block alone, when it exceeds it
    by more than ``margin`` (:func:`_tie_margin`) in every resample: where its range ``[lo, hi]`` lies that
    far above the entry's, or, with up to :data:`_EXACT_CROSSING_MAX_NEW` new entries, resample by resample
    (paired resamples are correlated: many overlapping ranges never cross); one as far below in every
    resample moves nothing. Any other new entry may cross it or join its tie block: with exact comparisons,
    two entries of the same runs scored as c / n and c · (1 / n) (tied, rank 1 both, in every resample) and a
    newcomer got rank intervals [1, 3] and [1, 2] where the full computation gives [1, 2] to both.
    """
    above = np.zeros(lo.size, dtype=np.int64)
    crossing = np.zeros(lo.size, dtype=bool)
    exact = new.size <= _EXACT_CROSSING_MAX_NEW
    for j in new:
        above += lo[j] - hi > margin
        overlap = np.flatnonzero(~(lo[j] - hi > margin) & ~(lo - hi[j] > margin))
        overlap = overlap[overlap != j]
        if not exact:
            crossing[overlap] = True
            continue
        gap = boot[j][None, :] - boot[overlap]
        times_above, times_below = (gap > margin).sum(axis=1), (-gap > margin).sum(axis=1)
        above[overlap[times_above == boot.shape[1]]] += 1
        crossing[overlap[(times_above < boot.shape[1]) & (times_below < boot.shape[1])]] = True
    return above, crossing


def _resampled_ranks_of(boot, lo, hi, redo: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Competition ranks (1 = highest, ties by the tie rule) of the entries ``redo`` in each resample, shape (redo, B).

    ``#{j not in U: lo_j > hi_i} + competition rank of i among U`` with U the entries whose range comes within
    ``margin`` (:func:`_tie_margin`) of one of ``redo``: an entry outside U is above an entry of ``redo`` in every
    resample or in none, and neither ties it nor any value of its tie block, so the ranks equal
    :func:`~evaluation.stats._resample.competition_rank` over the whole board (as :func:`rank_intervals`).
    """
    near = np.flatnonzero((lo - hi[redo].max() <= margin) & (lo[redo].min() - hi <= margin))
    close = (lo[near][None, :] - hi[redo][:, None] <= margin) & (lo[redo][:, None] - hi[near][None, :] <= margin)
    near = np.union1d(near[close.any(axis=0)], redo)
    outside = np.sort(lo[np.setdiff1d(np.arange(lo.size), near)])
    base = outside.size - np.searchsorted(outside, hi[redo], side="right")  # #{lo_j > hi_i}
    ranks = rs.competition_rank(boot[near])[np.searchsorted(near, redo)]
    return ranks + base[:, None]


def _run_order(*tables):
    """The permutation :func:`~evaluation.stats._resample.canonical_runs` applies to the runs."""
    stacked = np.concatenate([np.atleast_2d(t) for t in tables], axis=0)
    return np.lexsort(stacked[::-1])
