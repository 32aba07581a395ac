"""Probability of outperforming, P(A>B), and the decisions built on it.

Bouthillier et al. (2021), "Accounting for Variance in Machine Learning Benchmarks",
MLSys: eq. 9 and Appendix C (percentile-bootstrap interval, γ = 0.75 decision rule,
Noether's sample size).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from . import _resample as rs
from ._types import Comparison, PairwiseResult
from ._validation import (
    as_generator,
    as_sample,
    as_table,
    check_bool,
    check_choice,
    check_int,
    check_open_unit,
)
from .multiplicity import METHODS, adjust_pvalues

__all__ = ["compare", "noether_sample_size", "pairwise_comparisons", "prob_outperform"]


def _check_gamma(gamma) -> float:
    gamma = check_open_unit(gamma, "gamma")
    if gamma <= 0.5:
        raise ValueError(f"`gamma` must be in (0.5, 1) (got {gamma!r}).")
    return gamma


# --------------------------------------------------------------------------- P(A>B)
def _prob_outperform_iv(a, b, paired):
    paired = check_bool(paired, "paired")
    a = as_sample(a, "a")
    b = as_sample(b, "b")
    if paired and a.size != b.size:
        raise ValueError(
            f"`a` and `b` must have the same length when paired (got {a.size} and {b.size})."
        )
    return a, b, paired


def _mann_whitney_u(a: np.ndarray, b: np.ndarray) -> float:
    """U statistic of ``a`` against ``b``: #(a_i > b_j) + ½ #(a_i = b_j)."""
    sb = np.sort(b)
    below = np.searchsorted(sb, a, side="left")
    at_or_below = np.searchsorted(sb, a, side="right")
    return float(np.sum(below) + 0.5 * np.sum(at_or_below - below))


def prob_outperform(a, b, *, paired) -> float:
    """Probability that A outperforms B, ties counting one half.

    Parameters
    ----------
    a, b : array_like, shape (k_a,), (k_b,)
        Scores of the runs of A and B (higher is better).
    paired : bool
        True when run i of A and run i of B share their seeds and data split
        (``k_a == k_b`` is then required).

    Returns
    -------
    float
        Paired: ``(1/k) Σ_i r(a_i, b_i)``; unpaired: ``U / (k_a k_b)``, the
        Mann–Whitney form over all cross pairs; ``r = 1`` if greater, ½ if equal,
        0 if less.

    Raises
    ------
    ValueError
        If ``a`` or ``b`` is empty or not finite, or lengths differ when paired.

    Notes
    -----
    Bouthillier et al. (2021), eq. 9. ``P(A>B) + P(B>A) = 1``.

    References
    ----------
    Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning
    Benchmarks. MLSys.

    Examples
    --------
    >>> round(prob_outperform([.1, .2, .3, .3], [.3, 0, .15], paired=False), 4)
    0.6667
    >>> prob_outperform([1, 2, 3], [0, 2, 4], paired=True)
    0.5
    """
    a, b, paired = _prob_outperform_iv(a, b, paired)
    if paired:
        return float(np.mean((a > b) + 0.5 * (a == b)))
    return _mann_whitney_u(a, b) / (a.size * b.size)


# --------------------------------------------------------------------------- engines
def _sign_test_pvalues(wins: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """Exact two-sided sign test of P = ½ (ties dropped), vectorized."""
    n = wins + losses
    tail = stats.binom.cdf(np.minimum(wins, losses), n, 0.5)
    return np.where(n == 0, 1.0, np.minimum(1.0, 2.0 * tail))


def _mann_whitney_pvalues(rows, iu, ju) -> np.ndarray:
    """Two-sided Mann–Whitney p-value of every pair (i, j), as scipy's default.

    scipy's ``method='auto'`` picks the exact test when a sample has <= 8 values and
    the pair has no ties, else the normal approximation with tie and continuity
    corrections. The choice is made here per pair, then pairs of the same sizes and
    method are tested in one vectorized call.
    """
    lengths = np.array([r.size for r in rows])
    padded = np.full((len(rows), lengths.max()), np.nan)
    for e, r in enumerate(rows):
        padded[e, : r.size] = r
    pvalue = np.empty(iu.size)
    size_key = lengths[iu] * (lengths.max() + 1) + lengths[ju]
    for key in np.unique(size_key):  # one vectorized call per pair of run counts
        sel = np.flatnonzero(size_key == key)
        x = padded[iu[sel], : lengths[iu[sel[0]]]]
        y = padded[ju[sel], : lengths[ju[sel[0]]]]
        exact = np.zeros(sel.size, dtype=bool)
        if min(x.shape[1], y.shape[1]) <= 8:
            both = np.sort(np.concatenate([x, y], axis=1), axis=1)
            exact = ~np.any(both[:, 1:] == both[:, :-1], axis=1)
        for method, part in (("exact", exact), ("asymptotic", ~exact)):
            if part.any():
                res = stats.mannwhitneyu(
                    x[part], y[part], alternative="two-sided", method=method, axis=-1
                )
                pvalue[sel[part]] = res.pvalue
    return np.where(np.isnan(pvalue), 1.0, pvalue)


def _paired_engine(x: np.ndarray, n_resamples: int, alpha: float, rng):
    """P(i>j), its interval and the sign-test p-value for every pair i < j.

    One resample index array (B, k) is shared by all pairs. With the wins matrix
    ``w[pair, r] = 2 r(x_i_r, x_j_r)`` (integers 0, 1, 2) and the count matrix
    ``c[b, r]``, the resampled P(i>j) of all pairs is ``w @ c.T / 2k``: one matrix
    product per batch of pairs, exact in float32.
    """
    n_entries, k = x.shape
    iu, ju = np.triu_indices(n_entries, 1)
    npairs = iu.size
    p = np.empty(npairs)
    low = np.empty(npairs)
    high = np.empty(npairs)
    wins = np.empty(npairs, dtype=np.int64)
    losses = np.empty(npairs, dtype=np.int64)
    dtype = np.float32 if 2 * k < 2**24 else np.float64
    counts_t = np.ascontiguousarray(rs.draw_counts(rng, k, n_resamples, dtype=dtype).T)
    q = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    step = rs.batch_size(n_resamples, npairs)
    for start in range(0, npairs, step):
        stop = min(npairs, start + step)
        a, b = x[iu[start:stop]], x[ju[start:stop]]
        gt, eq = a > b, a == b
        w2 = (2 * gt + eq).astype(dtype)
        p[start:stop] = w2.sum(axis=1, dtype=np.float64) / (2 * k)
        wins[start:stop] = gt.sum(axis=1)
        losses[start:stop] = (a < b).sum(axis=1)
        lo, hi = rs.integer_percentiles(w2 @ counts_t, 2 * k, q)
        low[start:stop] = lo / (2 * k)
        high[start:stop] = hi / (2 * k)
    return iu, ju, p, low, high, _sign_test_pvalues(wins, losses)


def _unpaired_engine(rows, n_resamples: int, alpha: float, rng):
    """P(i>j) = U/(k_i k_j), its interval and the Mann–Whitney p-value, pairs i < j.

    Each entry is resampled on its own (count matrix ``C_e``, shape (B, k_e)). For a
    pair, the resampled ``2U = Σ_s C_j[b, s] (2 #(a* > x_j_s) + #(a* = x_j_s))``
    where ``#(a* <= t)`` is a cumulative sum of entry i's sorted counts read at the
    position of t (``searchsorted``, fixed across resamples). Pairs sharing their
    first entry i form one batch: one gather from the cumulative counts for all
    later entries' values, then a segment-wise product with their counts.
    """
    n_entries = len(rows)
    lengths = np.array([r.size for r in rows])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.concatenate(rows)
    iu, ju = np.triu_indices(n_entries, 1)
    npairs = iu.size
    p = np.empty(npairs)
    low = np.empty(npairs)
    high = np.empty(npairs)
    kmax = int(lengths.max())
    wdtype = np.float32 if 2 * kmax * kmax < 2**24 else np.float64
    # Keep all counts in the working dtype when they fit in ~256 MB; else compactly.
    if n_resamples * flat.size <= 1 << 26:
        cdtype = wdtype
    else:
        cdtype = np.uint8 if kmax < 2**8 else np.uint16 if kmax < 2**16 else np.uint32
    counts = rs.draw_counts_ragged(rng, lengths, n_resamples, dtype=cdtype)
    q = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    pair = 0
    for i in range(n_entries - 1):
        ka = int(lengths[i])
        tail = flat[starts[i + 1]:]
        kb = lengths[i + 1:]
        nj = kb.size
        seg = starts[i + 1:-1] - starts[i + 1]
        perm = np.argsort(rows[i], kind="stable")
        a_sorted = rows[i][perm]
        below = np.searchsorted(a_sorted, tail, side="left")  # #(a < t)
        at_or_below = np.searchsorted(a_sorted, tail, side="right")  # #(a <= t)
        ties = bool(np.any(below != at_or_below))
        denom = 2.0 * ka * kb
        # 2U = Σ_t [2 #(a > t) + #(a = t)] = 2 ka kb - Σ_t [#(a <= t) + #(a < t)]
        p[pair:pair + nj] = (
            denom - np.add.reduceat((below + at_or_below).astype(np.float64), seg)
        ) / denom
        u2 = np.empty((nj, n_resamples), dtype=wdtype)
        equal = bool(np.all(kb == kb[0]))
        cols = starts[i] + perm
        step = rs.batch_size(tail.size, n_resamples)
        for b0 in range(0, n_resamples, step):
            b1 = min(n_resamples, b0 + step)
            cum = np.zeros((b1 - b0, ka + 1), dtype=wdtype)
            np.cumsum(counts[b0:b1, cols], axis=1, out=cum[:, 1:])
            # resampled #(a* <= t) + #(a* < t) for every value t of the later entries
            g = np.take(cum, at_or_below, axis=1)
            if ties:
                g += np.take(cum, below, axis=1)
            else:
                g *= 2
            ct = counts[b0:b1, starts[i + 1]:].astype(wdtype, copy=False)
            if equal:
                s = np.einsum(
                    "bjs,bjs->jb", g.reshape(b1 - b0, nj, -1), ct.reshape(b1 - b0, nj, -1)
                )
            else:
                g *= ct
                s = np.add.reduceat(g, seg, axis=1).T
            u2[:, b0:b1] = (2 * ka) * kb[:, None] - s
        lo, hi = rs.integer_percentiles(u2, int(2 * ka * kb.max()), q)
        low[pair:pair + nj] = lo / denom
        high[pair:pair + nj] = hi / denom
        pair += nj
    return iu, ju, p, low, high, _mann_whitney_pvalues(rows, iu, ju)


def _engine(rows, paired, n_resamples, alpha, rng):
    """Upper-triangle P(i>j), interval and p-value; runs in canonical order first."""
    if paired:
        (x,) = rs.canonical_runs(np.stack(rows))
        return _paired_engine(x, n_resamples, alpha, rng)
    return _unpaired_engine([np.sort(r) for r in rows], n_resamples, alpha, rng)


# --------------------------------------------------------------------------- compare
def _compare_iv(a, b, paired, gamma, alpha, n_resamples, seed):
    a, b, paired = _prob_outperform_iv(a, b, paired)
    for name, x in (("a", a), ("b", b)):
        if x.size < 2:
            raise ValueError(
                f"`{name}` needs at least 2 runs to estimate a spread (got {x.size})."
            )
    gamma = _check_gamma(gamma)
    alpha = check_open_unit(alpha, "alpha")
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    rng = as_generator(seed)
    return a, b, paired, gamma, alpha, n_resamples, rng


def compare(
    a, b, *, paired, gamma=0.75, alpha=0.05, n_resamples=10_000, seed=0
) -> Comparison:
    """Compare two entries with P(A>B), its bootstrap interval and the γ rule.

    Parameters
    ----------
    a, b : array_like, shape (k_a,), (k_b,)
        Run scores of A and B (higher is better), at least 2 runs each.
    paired : bool
        True when runs share seeds and splits (run i of A with run i of B).
    gamma : float, default 0.75
        Threshold of a meaningful difference, in (0.5, 1).
    alpha : float, default 0.05
        The interval has level ``1 - alpha``.
    n_resamples : int, default 10000
        Bootstrap resamples.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.

    Returns
    -------
    Comparison
        ``p`` = P(A>B); ``low``, ``high``; ``significant = low > 0.5``;
        ``meaningful = high > gamma``; ``better = significant and meaningful``;
        ``pvalue``: exact two-sided sign test (paired, ties dropped) or two-sided
        Mann–Whitney test (unpaired; scipy's default method).

    Raises
    ------
    ValueError
        On empty, non-finite or too short inputs, mismatched lengths when paired,
        ``gamma`` outside (0.5, 1), ``alpha`` outside (0, 1), or bad
        ``n_resamples``/``seed``.

    Notes
    -----
    Bouthillier et al. (2021), eq. 9 and App. C.6 ("bound" form of the decision):
    the percentile-bootstrap interval ``[low, high]`` of P(A>B) at level
    ``1 - alpha`` resamples the pairs (paired) or each side independently
    (unpaired). A is *better* than B when the difference is significant
    (``low > 0.5``) and meaningful (``high > γ``). :func:`noether_sample_size` gives
    the number of runs needed to detect ``P(A>B) = γ``.

    References
    ----------
    Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning
    Benchmarks. MLSys.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = 0.70 + 0.01 * rng.standard_normal(30)
    >>> b = 0.68 + 0.01 * rng.standard_normal(30)
    >>> compare(a, b, paired=True, n_resamples=2000).better
    True
    """
    a, b, paired, gamma, alpha, n_resamples, rng = _compare_iv(
        a, b, paired, gamma, alpha, n_resamples, seed
    )
    _, _, p, low, high, pvalue = _engine([a, b], paired, n_resamples, alpha, rng)
    significant = bool(low[0] > 0.5)
    meaningful = bool(high[0] > gamma)
    return Comparison(
        float(p[0]), float(low[0]), float(high[0]), significant, meaningful,
        significant and meaningful, float(pvalue[0]), paired, gamma, alpha,
    )


# --------------------------------------------------------------------------- Noether
def _noether_sample_size_iv(gamma, alpha, beta):
    return _check_gamma(gamma), check_open_unit(alpha, "alpha"), check_open_unit(beta, "beta")


def noether_sample_size(gamma=0.75, alpha=0.05, beta=0.05) -> int:
    """Runs per entry needed to detect P(A>B) = γ (Noether 1987).

    Parameters
    ----------
    gamma : float, default 0.75
        Probability of outperforming to detect, in (0.5, 1).
    alpha : float, default 0.05
        Type I error rate (one-sided), in (0, 1).
    beta : float, default 0.05
        Type II error rate (1 - power), in (0, 1).

    Returns
    -------
    int
        ``ceil(((Φ⁻¹(1-α) - Φ⁻¹(β)) / (√6 (½ - γ)))²)``; 29 for the defaults.

    Raises
    ------
    ValueError
        If ``gamma`` is outside (0.5, 1) or ``alpha``/``beta`` outside (0, 1).

    Notes
    -----
    Noether's sample size for the Mann–Whitney test, as used by Bouthillier et al.
    (2021), App. C.

    References
    ----------
    Noether, G. E. (1987). Sample size determination for some common nonparametric
    tests. JASA 82, 645–647.

    Examples
    --------
    >>> noether_sample_size()
    29
    """
    gamma, alpha, beta = _noether_sample_size_iv(gamma, alpha, beta)
    z = stats.norm.ppf(1 - alpha) - stats.norm.ppf(beta)
    size = (z / (np.sqrt(6.0) * (0.5 - gamma))) ** 2
    return int(np.ceil(size - 1e-9))


# --------------------------------------------------------------------------- all pairs
def _pairwise_comparisons_iv(scores, paired, gamma, alpha, correction, n_resamples, seed):
    paired = check_bool(paired, "paired")
    rows = as_table(scores, "scores", paired=paired, min_runs=2)
    gamma = _check_gamma(gamma)
    alpha = check_open_unit(alpha, "alpha")
    correction = check_choice(correction, "correction", METHODS)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    rng = as_generator(seed)
    return rows, paired, gamma, alpha, correction, n_resamples, rng


def _order(means: np.ndarray) -> np.ndarray:
    """Entries best first by mean; ties keep their index order."""
    return np.argsort(-means, kind="stable")


def assemble_pairwise(
    n_entries, iu, ju, p, low, high, pvalue_raw, means, *, paired, gamma, alpha,
    correction, n_resamples, significant=None,
) -> PairwiseResult:
    """Fill the k x k matrices from upper-triangle results (shared with the test bootstrap).

    The lower triangle is the reverse comparison: ``P(j>i) = 1 - P(i>j)`` and the
    interval ``[1 - high, 1 - low]`` (percentiles of ``1 - X`` mirror those of X).
    ``significant`` (optional, upper-triangle rows, shape (2, pairs)) overrides the
    rule ``low > 0.5`` for the (i>j, j>i) directions.
    """
    shape = (n_entries, n_entries)
    pm, lo, hi, pr = (np.full(shape, np.nan) for _ in range(4))
    pm[iu, ju], pm[ju, iu] = p, 1.0 - p
    lo[iu, ju], lo[ju, iu] = low, 1.0 - high
    hi[iu, ju], hi[ju, iu] = high, 1.0 - low
    pr[iu, ju] = pr[ju, iu] = pvalue_raw
    padj = np.full(shape, np.nan)
    padj[iu, ju] = padj[ju, iu] = adjust_pvalues(pvalue_raw, correction)
    with np.errstate(invalid="ignore"):
        if significant is None:
            sig = lo > 0.5
        else:
            sig = np.zeros(shape, dtype=bool)
            sig[iu, ju], sig[ju, iu] = significant
        meaningful = hi > gamma
        better = sig & meaningful & (padj < alpha)
    return PairwiseResult(
        pm, lo, hi, padj, better, _order(means), np.asarray(means, dtype=np.float64),
        sig, meaningful, pr, paired, gamma, alpha, correction, n_resamples,
    )


def pairwise_comparisons(
    scores,
    *,
    paired=True,
    gamma=0.75,
    alpha=0.05,
    correction="holm",
    n_resamples=10_000,
    seed=0,
) -> PairwiseResult:
    """P(A>B) with intervals, adjusted p-values and decisions for all pairs of entries.

    Parameters
    ----------
    scores : array_like, shape (entries, runs)
        Run scores, higher is better, at least 2 runs per entry. Paired: complete and
        aligned by seed. Unpaired: may be a ragged list of sequences or NaN-padded.
    paired : bool, default True
        Whether run i of every entry shares seeds and split.
    gamma : float, default 0.75
        Threshold of a meaningful difference, in (0.5, 1).
    alpha : float, default 0.05
        Level of the intervals (``1 - alpha``) and of the adjusted tests.
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Multiplicity adjustment over the family of all k(k-1)/2 unordered pairs.
    n_resamples : int, default 10000
        Bootstrap resamples.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.

    Returns
    -------
    PairwiseResult
        k x k matrices ``p``, ``low``, ``high``, ``pvalue`` (adjusted), ``better``
        (``better[i, j]``: i beats j), ``significant``, ``meaningful``,
        ``pvalue_raw``; ``order`` (best first by mean) and ``means``.

    Raises
    ------
    ValueError
        For an invalid table or parameter (see :func:`compare`), or an unknown
        ``correction``.

    Notes
    -----
    For every pair the quantities of :func:`compare` (Bouthillier et al. 2021, eq. 9,
    App. C.6). i beats j when the decision rule says so (``low > 0.5`` and
    ``high > γ``) *and* the two-sided p-value (exact sign test when paired,
    Mann–Whitney otherwise) stays below ``alpha`` after the correction (Holm 1979 by
    default; Benjamini–Hochberg 1995 controls the false discovery rate instead).

    Paired: one resample index array is shared by all pairs and the resampled P of
    all pairs is one matrix product (wins matrix x count matrix). Unpaired: each
    entry is resampled independently and pairs sharing their first entry are one
    batch. For two entries the numbers equal :func:`compare` with the same seed.
    Runs are put in a canonical order before resampling (paired: columns sorted
    lexicographically; unpaired: each entry sorted), so permuting runs changes
    nothing.

    References
    ----------
    Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning
    Benchmarks. MLSys. Holm, S. (1979). Scand. J. Statist. 6, 65–70.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scores = np.array([0.70, 0.69, 0.60])[:, None] + 0.01 * rng.standard_normal((3, 30))
    >>> res = pairwise_comparisons(scores, n_resamples=2000)
    >>> res.order.tolist(), bool(res.better[0, 2]), bool(res.better[0, 1])
    ([0, 1, 2], True, False)
    """
    rows, paired, gamma, alpha, correction, n_resamples, rng = _pairwise_comparisons_iv(
        scores, paired, gamma, alpha, correction, n_resamples, seed
    )
    iu, ju, p, low, high, pvalue = _engine(rows, paired, n_resamples, alpha, rng)
    means = np.array([r.mean() for r in rows])
    return assemble_pairwise(
        len(rows), iu, ju, p, low, high, pvalue, means, paired=paired, gamma=gamma,
        alpha=alpha, correction=correction, n_resamples=n_resamples,
    )
