"""Percentile-bootstrap intervals over runs: of a statistic, and of each entry's rank."""

from __future__ import annotations

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
from .boon import _boo_n_resampled, _boo_weights, _power_table

__all__ = ["bootstrap_interval", "rank_intervals"]

STATISTICS = ("mean", "median", "iqm", "boo_n")


def _statistic(x: np.ndarray, statistic: str, n: int, key: np.ndarray) -> float:
    """The statistic of runs ``x`` in canonical order (``key``: Boo_n's ordering key)."""
    if statistic == "mean":
        return float(np.mean(x))
    if statistic == "median":
        return float(np.median(x))
    if statistic == "iqm":
        return float(stats.trim_mean(x, 0.25))
    return float(_boo_weights(key, n) @ x)


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
    values, statistic, n, valid, n_resamples, confidence, seed, higher_is_better
):
    statistic = check_choice(statistic, "statistic", STATISTICS)
    n = check_int(n, "n", minimum=1)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    confidence = check_open_unit(confidence, "confidence")
    higher_is_better = check_bool(higher_is_better, "higher_is_better")
    rng = as_generator(seed)
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
            raise ValueError(
                "`values` needs at least 2 runs to estimate a spread "
                f"(got {sample.size})."
            )
        rows = [sample]
    vrows = None
    if valid is not None:
        vsample, vrows = _as_runs(valid, "valid")
        if sample is not None:
            if vsample is None:
                raise ValueError("`valid` must have the same shape as `values`.")
            vrows = [vsample]
        if len(vrows) != len(rows):
            raise ValueError(
                f"`valid` must have one row per entry of `values` "
                f"(got {len(vrows)} and {len(rows)})."
            )
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
    return (
        rows, sample is not None, statistic, n, vrows, n_resamples, confidence, rng,
        higher_is_better,
    )


def bootstrap_interval(
    values,
    statistic="mean",
    *,
    n=5,
    valid=None,
    n_resamples=10_000,
    confidence=0.95,
    seed=0,
    higher_is_better=True,
) -> Interval:
    """Percentile-bootstrap confidence interval of a statistic of runs.

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
    confidence : float, default 0.95
        Confidence level, in (0, 1).
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness, converted once with ``np.random.default_rng``.
    higher_is_better : bool, default True
        Direction used by ``boo_n`` to pick the best run.

    Returns
    -------
    Interval
        ``estimate`` (the statistic of the observed runs), ``low``, ``high``: floats
        for a 1-D sample, arrays of shape ``(entries,)`` for a table.

    Raises
    ------
    ValueError
        If ``values`` is empty, has NaN/inf (outside NaN padding of a table) or fewer
        than 2 runs, ``valid`` does not match, ``statistic`` is unknown, ``n`` or
        ``n_resamples`` is not a positive integer, ``confidence`` is not in (0, 1),
        or ``seed`` is invalid.

    Notes
    -----
    Percentile bootstrap over runs (Efron & Tibshirani 1993, ch. 13; as used for
    Boo_n by Bajgar et al. 2018 and for P(A>B) by Bouthillier et al. 2021, App. C):
    draw B resamples of the m runs with replacement, compute the statistic on each and
    report its ``(1-c)/2`` and ``(1+c)/2`` percentiles (numpy's linear
    interpolation). Each entry's runs are first sorted (by value, or for Boo_n by
    validation key, then test value), so the result depends on the set of runs and
    the seed only, not on the order in which runs were stored; all entries with the
    same number of runs then share one count matrix and every statistic is one
    matrix product per batch of resamples (see ``_bootstrap_sorted``).

    Examples
    --------
    >>> ci = bootstrap_interval([0.61, 0.64, 0.63, 0.66, 0.62], n_resamples=2000, seed=1)
    >>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
    (0.632, True)
    """
    (rows, is_sample, statistic, n, vrows, n_resamples, confidence, rng,
     higher_is_better) = _bootstrap_interval_iv(
        values, statistic, n, valid, n_resamples, confidence, seed, higher_is_better
    )
    sign = 1.0 if higher_is_better else -1.0
    q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
    estimate = np.empty(len(rows))
    low = np.empty(len(rows))
    high = np.empty(len(rows))
    lengths = np.array([x.size for x in rows])
    for k in dict.fromkeys(lengths.tolist()):  # groups in order of first appearance
        members = np.flatnonzero(lengths == k)
        x = np.empty((members.size, k))
        key = np.empty((members.size, k))
        for row, e in enumerate(members):  # each entry's runs sorted, worst first
            key_e = sign * (rows[e] if vrows is None else vrows[e])
            order = np.lexsort((rows[e], key_e)) if statistic == "boo_n" else np.argsort(rows[e])
            x[row], key[row] = rows[e][order], key_e[order]
            estimate[e] = _statistic(x[row], statistic, n, key[row])
        boot = _bootstrap_sorted(x, key, statistic, n, n_resamples, rng)
        low[members], high[members] = rs.percentiles(boot, q)
    if is_sample:
        return Interval(float(estimate[0]), float(low[0]), float(high[0]), confidence, statistic)
    return Interval(estimate, low, high, confidence, statistic)


def _bootstrap_sorted(x, key, statistic, n, n_resamples, rng) -> np.ndarray:
    """Statistic of B resamples of every row of ``x``, shape (entries, B).

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
    * Boo_n: ``(U_r/k)^n - (L_r/k)^n`` (eq. 7), where the key has no ties.

    So one matrix product per batch gives every entry's statistic. Rows whose
    Boo_n key has ties take the general tie-sharing path.
    """
    n_entries, k = x.shape
    boot = np.empty((n_entries, n_resamples))
    tied = np.zeros(n_entries, dtype=bool)
    if statistic == "boo_n":
        tied = np.any(key[:, 1:] == key[:, :-1], axis=1)
        table = _power_table(k, n)
    plain = ~tied
    xt = np.ascontiguousarray(x[plain].T)
    step = rs.batch_size(max(k, n_entries), n_resamples)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        counts = rs.draw_counts(rng, k, stop - start)
        upper = np.cumsum(counts, axis=1)
        lower = upper - counts
        if statistic == "mean":
            w = counts / k
        elif statistic == "median":
            lo, hi = (k - 1) // 2, k // 2
            w = 0.5 * ((lower <= lo) & (lo < upper)) + 0.5 * ((lower <= hi) & (hi < upper))
        elif statistic == "iqm":
            g = int(0.25 * k)
            w = np.clip(np.minimum(upper, k - g) - np.maximum(lower, g), 0, None) / (k - 2 * g)
        else:
            w = table[upper] - table[lower]
        if plain.any():
            boot[plain, start:stop] = (w @ xt).T
        if tied.any():
            boot[tied, start:stop] = _boo_n_resampled(x[tied], key[tied], counts, n)
    return boot


# --------------------------------------------------------------------------- ranks
def _rank_intervals_iv(scores, paired, n_resamples, confidence, seed):
    paired = check_bool(paired, "paired")
    rows = as_table(scores, "scores", paired=paired, min_runs=2)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    confidence = check_open_unit(confidence, "confidence")
    rng = as_generator(seed)
    return rows, paired, n_resamples, confidence, rng


def _competition_rank(means: np.ndarray) -> np.ndarray:
    """Rank along axis 0, 1 = highest; ties share the better rank ("1224")."""
    return stats.rankdata(-means, method="min", axis=0).astype(np.int64)


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


def rank_intervals(
    scores, *, paired=True, n_resamples=10_000, confidence=0.95, seed=0
) -> RankIntervals:
    """Bootstrap interval of each entry's rank (rank of the mean, 1 = best).

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
    confidence : float, default 0.95
        Confidence level, in (0, 1).
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.

    Returns
    -------
    RankIntervals
        ``rank`` (observed), ``low``, ``high``: integer arrays of shape ``(entries,)``.

    Raises
    ------
    ValueError
        For an invalid table (NaN when paired, entries with fewer than 2 runs), or
        invalid ``n_resamples``, ``confidence`` or ``seed``.

    Notes
    -----
    In each resample the entries are ranked by mean ("competition" ranking: ties
    share the better rank). The interval is the percentile interval of these ranks
    (linear interpolation) widened to whole ranks: ``low = floor``, ``high = ceil``.
    This is the rank display recommended alongside significance groups (DESIGN §6).

    Examples
    --------
    >>> r = rank_intervals([[0.9, 0.91, 0.92], [0.5, 0.52, 0.51]], n_resamples=200)
    >>> r.rank.tolist(), r.low.tolist(), r.high.tolist()
    ([1, 2], [1, 2], [1, 2])
    """
    rows, paired, n_resamples, confidence, rng = _rank_intervals_iv(
        scores, paired, n_resamples, confidence, seed
    )
    means = np.array([r.mean() for r in rows])
    rank = _competition_rank(means)
    boot_ranks = _competition_rank(resampled_means(rows, paired, n_resamples, rng))
    q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
    lo, hi = rs.percentiles(boot_ranks.astype(np.float64), q)
    low = np.floor(lo + 1e-9).astype(np.int64)
    high = np.ceil(hi - 1e-9).astype(np.int64)
    return RankIntervals(rank, low, high, confidence)
