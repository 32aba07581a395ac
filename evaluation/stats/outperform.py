"""Probability of outperforming, P(A>B), and the decisions built on it.

Bouthillier et al. (2021), "Accounting for Variance in Machine Learning Benchmarks",
MLSys: eq. 9 and Appendix C (γ = 0.75 decision rule, Noether's sample size). The
decision uses score intervals that stay honest at the boundary (Wilson paired,
Newcombe unpaired) and one rule for every pair (:mod:`evaluation.stats.decisions`).

The bootstrap (standard errors, distributions, the paper's percentile interval), all
pairs at once: paired, one resample index array is shared by all pairs and the
resampled P of all pairs is one matrix product (wins matrix x count matrix); unpaired,
each entry is resampled independently and the pairs sharing their first entry are one
batch. Runs are put in a canonical order before resampling (paired: columns sorted
lexicographically; unpaired: each entry sorted), so permuting runs changes nothing.

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys. Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand.
J. Statist. 6, 65–70. Noether, G. E. (1987). JASA 82, 645–647.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from . import _resample as rs
from . import proportions as pr
from . import torch_backend as tb
from ._types import Comparison, PairwiseResult
from ._validation import (
    as_generator,
    as_sample,
    as_table,
    check_bool,
    check_choice,
    check_gamma,
    check_int,
    check_open_unit,
)
from .decisions import decide_pairs
from .multiplicity import METHODS
from .ordering import verdict_order

__all__ = ["compare", "noether_sample_size", "pairwise_comparisons", "prob_outperform"]


# --------------------------------------------------------------------------- P(A>B)
def _prob_outperform_iv(a, b, paired):
    paired = check_bool(paired, "paired")
    a = as_sample(a, "a")
    b = as_sample(b, "b")
    if paired and a.size != b.size:
        raise ValueError(f"`a` and `b` must have the same length when paired (got {a.size} and {b.size}).")
    return a, b, paired


def _mann_whitney_u(a: np.ndarray, b: np.ndarray) -> float:
    """U statistic of ``a`` against ``b``: #(a_i > b_j) + ½ #(a_i = b_j), equal under the board's tie rule
    (:func:`~._resample.tie_bounds`)."""
    sb = np.sort(b)
    low, high = rs.tie_bounds(a)
    below = np.searchsorted(sb, low, side="left")
    at_or_below = np.searchsorted(sb, high, side="right")
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
        0 if less, equal meaning within the board's tie rule (1e-12 of the larger
        magnitude, ``_resample.paired_wins``): rounding decides no pair.

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
        return float(np.mean(rs.paired_wins(a, b)) / 2)
    return _mann_whitney_u(a, b) / (a.size * b.size)


# --------------------------------------------------------------------------- engines
class _Bootstrap:
    """The resampled P(i>j) of every pair (float32) and their standard errors."""

    def __init__(self, npairs: int, n_resamples: int, keep_distribution: bool = True):
        shape = (npairs, n_resamples)
        self.distribution = np.empty(shape, dtype=np.float32) if keep_distribution else None
        self.standard_error = np.empty(npairs)

    def percentiles(self, pairs: slice, resampled: np.ndarray, vmax: int, q, denominator):
        """Percentiles of P for a batch of pairs, storing its distribution and SE.

        ``resampled`` (pairs, B) holds the integer numerators of P (2k·P paired, 2U
        unpaired), ``denominator`` turns them into P. The standard deviation is read
        from the counts that give the percentiles.
        """
        std = np.empty(resampled.shape[0])
        lo, hi = rs.integer_percentiles(resampled, vmax, q, std=std)
        if self.distribution is not None:
            np.divide(resampled, denominator, out=self.distribution[pairs], casting="unsafe")
        scale = np.ravel(denominator)
        self.standard_error[pairs] = std / scale
        return lo / scale, hi / scale


def _paired_engine(x: np.ndarray, n_resamples: int, alpha: float, rng, boot: _Bootstrap):
    """P(i>j), its percentile interval and the bootstrap, pairs i < j.

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
    dtype = np.float32 if 2 * k < 2**24 else np.float64
    counts_t = np.ascontiguousarray(rs.draw_counts(rng, k, n_resamples, dtype=dtype).T)
    q = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    step = rs.batch_size(n_resamples, npairs)
    for start in range(0, npairs, step):
        stop = min(npairs, start + step)
        a, b = x[iu[start:stop]], x[ju[start:stop]]
        w2 = rs.paired_wins(a, b).astype(dtype)  # the board's ties (1e-12 relative), run by run
        p[start:stop] = w2.sum(axis=1, dtype=np.float64) / (2 * k)
        low[start:stop], high[start:stop] = boot.percentiles(slice(start, stop), w2 @ counts_t, 2 * k, q, 2 * k)
    return iu, ju, p, low, high, boot


def _unpaired_engine(rows, n_resamples: int, alpha: float, rng, boot: _Bootstrap):
    """P(i>j) = U/(k_i k_j), its percentile interval and the bootstrap, pairs i < j.

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
    cdtype: type[np.number]
    if n_resamples * flat.size <= 1 << 26:
        cdtype = wdtype
    else:
        cdtype = np.uint8 if kmax < 2**8 else np.uint16 if kmax < 2**16 else np.uint32
    counts = rs.draw_counts_ragged(rng, lengths, n_resamples, dtype=cdtype)
    q = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    pair = 0
    for i in range(n_entries - 1):
        ka = int(lengths[i])
        tail = flat[starts[i + 1] :]
        kb = lengths[i + 1 :]
        nj = kb.size
        seg = starts[i + 1 : -1] - starts[i + 1]
        perm = np.argsort(rows[i], kind="stable")
        a_sorted = rows[i][perm]
        low_t, high_t = rs.tie_bounds(tail)  # the board's ties (1e-12 relative)
        below = np.searchsorted(a_sorted, low_t, side="left")  # #(a < t)
        at_or_below = np.searchsorted(a_sorted, high_t, side="right")  # #(a <= t)
        ties = bool(np.any(below != at_or_below))
        denom = 2.0 * ka * kb
        # 2U = Σ_t [2 #(a > t) + #(a = t)] = 2 ka kb - Σ_t [#(a <= t) + #(a < t)]
        p[pair : pair + nj] = (denom - np.add.reduceat((below + at_or_below).astype(np.float64), seg)) / denom
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
            ct = counts[b0:b1, starts[i + 1] :].astype(wdtype, copy=False)
            if equal:
                s = np.einsum(
                    "bjs,bjs->jb",
                    g.reshape(b1 - b0, nj, -1),
                    ct.reshape(b1 - b0, nj, -1),  # type: ignore[arg-type]  # numpy stubs: astype(float32 | float64)
                )
            else:
                g *= ct
                s = np.add.reduceat(g, seg, axis=1).T
            u2[:, b0:b1] = (2 * ka) * kb[:, None] - s
        low[pair : pair + nj], high[pair : pair + nj] = boot.percentiles(
            slice(pair, pair + nj), u2, int(2 * ka * kb.max()), q, denom[:, None]
        )
        pair += nj
    return iu, ju, p, low, high, boot


def _torch_engine(rows, paired, n_resamples, alpha, rng, boot: _Bootstrap, device):
    """:func:`_engine` with the resampling on torch (:func:`evaluation.stats.torch_backend.pairs_p_bootstrap`)."""
    iu, ju = np.triu_indices(len(rows), 1)
    seed = int(rng.integers(2**63))
    if paired:
        x = np.stack(rows)
        p = ((2.0 * (x[iu] > x[ju]) + (x[iu] == x[ju])).sum(axis=1)) / (2.0 * x.shape[1])
    else:
        p = np.array([_mann_whitney_u(rows[a], rows[b]) / (rows[a].size * rows[b].size) for a, b in zip(iu, ju)])
    summary = tb.pairs_p_bootstrap(
        rows,
        iu,
        ju,
        paired=paired,
        n_resamples=n_resamples,
        seed=seed,
        q=[100 * alpha / 2, 100 * (1 - alpha / 2)],
        device=device,
        keep_distribution=boot.distribution is not None,
    )
    low, high = summary.percentiles
    boot.standard_error[:] = summary.standard_error
    if boot.distribution is not None:
        boot.distribution[:] = summary.distribution
    return iu, ju, p, low, high, boot


def _engine(rows, paired, n_resamples, alpha, rng, keep_distribution=True, backend="numpy", device="auto"):
    """Upper-triangle P(i>j), percentile interval and bootstrap; runs in canonical order first."""
    npairs = len(rows) * (len(rows) - 1) // 2
    boot = _Bootstrap(npairs, n_resamples, keep_distribution)
    backend, device = tb.resolve_backend(backend, device, npairs * n_resamples)
    # the device's engines tie exact equality: where two runs differ by rounding only, numpy's (the board's ties)
    if backend == "torch" and not rs.has_near_ties(np.concatenate(rows)):
        return _torch_engine(rows, paired, n_resamples, alpha, rng, boot, device)
    if paired:
        (x,) = rs.canonical_runs(np.stack(rows))
        return _paired_engine(x, n_resamples, alpha, rng, boot)
    return _unpaired_engine([np.sort(r) for r in rows], n_resamples, alpha, rng, boot)


# --------------------------------------------------------------------------- decisions
def score_tests(rows, paired: bool, iu: np.ndarray, ju: np.ndarray, p: np.ndarray, shared=None):
    """The dual test and interval of every pair: (raw p-values, interval(level) function).

    Paired: P(i>j) is a proportion of k seeds (ties one half), tested and bounded by
    the Wilson score method; ``shared`` (pairs,) gives each pair its own k, the seeds
    both entries have (eq. 9 of Bouthillier et al. 2021 is defined per pair; default:
    every run). Unpaired: the Mann–Whitney probability, tested by the Mann–Whitney
    z-test and bounded by Newcombe's score interval.
    """
    if paired:
        k = np.full(p.size, rows[0].size, dtype=np.float64) if shared is None else np.asarray(shared, dtype=np.float64)
        x = p * k
        return pr.score_pvalue(x, k), lambda level: pr.wilson(x, k, level)
    sizes = np.array([r.size for r in rows], dtype=np.float64)
    m, n = sizes[iu], sizes[ju]
    return pr.mann_whitney_pvalue(p, m, n), lambda level: pr.mann_whitney_interval(p, m, n, level)


def _compare_iv(a, b, paired, gamma, alpha, n_resamples, rng):
    a, b, paired = _prob_outperform_iv(a, b, paired)
    for name, x in (("a", a), ("b", b)):
        if x.size < 2:
            raise ValueError(f"`{name}` needs at least 2 runs to estimate a spread (got {x.size}).")
    gamma = check_gamma(gamma)
    alpha = check_open_unit(alpha, "alpha")
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    rng = as_generator(rng)
    return a, b, paired, gamma, alpha, n_resamples, rng


def compare(a, b, *, paired, gamma=0.75, alpha=0.05, n_resamples=10_000, rng=0) -> Comparison:
    """Compare two entries with P(A>B), its score interval and the γ rule.

    Parameters
    ----------
    a, b : array_like, shape (k_a,), (k_b,)
        Run scores of A and B (higher is better), at least 2 runs each.
    paired : bool
        True when runs share seeds and splits (run i of A with run i of B).
    gamma : float, default 0.75
        Threshold of a meaningful difference, in (0.5, 1).
    alpha : float, default 0.05
        Significance level of the decision rule, in (0, 1): the interval of P(A>B) at
        level ``1 - alpha`` is its test (Bouthillier et al. 2021, App. C.6), hence a
        significance level rather than a ``confidence_level``.
    n_resamples : int, default 10000
        Bootstrap resamples (for ``standard_error`` and ``bootstrap_distribution``).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.

    Returns
    -------
    Comparison
        ``p`` = P(A>B); ``low``, ``high`` its score interval at level ``1 - alpha``;
        ``significant`` (``pvalue < alpha`` in A's favour, equivalently ``low > 0.5``);
        ``meaningful = high > gamma``; ``better = significant and meaningful``;
        ``pvalue``: the two-sided test dual to the interval (score test of P = 1/2
        paired, Mann–Whitney z-test unpaired); ``standard_error`` and
        ``bootstrap_distribution`` (P(A>B) in each bootstrap resample, shape ``(B,)``);
        ``bootstrap_low``/``bootstrap_high``: the percentile interval of the paper.

    Raises
    ------
    ValueError
        On empty, non-finite or too short inputs, mismatched lengths when paired,
        ``gamma`` outside (0.5, 1), ``alpha`` outside (0, 1), or bad
        ``n_resamples``/``rng``.

    Notes
    -----
    The decision rule of Bouthillier et al. (2021), eq. 9 and App. C.6, on an interval
    that stays honest at the boundary: paired, P(A>B) is the share of the k seeds A
    wins (ties one half) and its interval is Wilson's score interval (ten wins of ten
    give [0.72, 1], not the percentile bootstrap's [1, 1]); unpaired, P(A>B) is the
    Mann–Whitney probability and its interval Newcombe's (2006) score interval. Each
    interval is the set of values its test does not reject, so ``significant`` and
    ``low > 0.5`` are the same statement. This is :func:`pairwise_comparisons` of
    the two entries: both decide alike (see :mod:`evaluation.stats.decisions`).
    :func:`~evaluation.stats.runs_needed` gives the runs the rule needs.

    References
    ----------
    Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning
    Benchmarks. MLSys. Wilson, E. B. (1927). JASA 22, 209–212. Newcombe, R. G. (2006).
    Statist. Med. 25, 559–573.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = 0.70 + 0.01 * rng.standard_normal(30)
    >>> b = 0.68 + 0.01 * rng.standard_normal(30)
    >>> compare(a, b, paired=True, n_resamples=2000).better
    True
    """
    return _compare(*_compare_iv(a, b, paired, gamma, alpha, n_resamples, rng))


def _compare(a, b, paired, gamma, alpha, n_resamples, rng) -> Comparison:
    """:func:`compare` of validated inputs: :func:`pairwise_comparisons` of the two entries."""
    res = _pairwise([a, b], paired, gamma, alpha, "none", n_resamples, rng, True, None)
    return Comparison(
        float(res.p[0, 1]),
        float(res.low[0, 1]),
        float(res.high[0, 1]),
        bool(res.significant[0, 1]),
        bool(res.meaningful[0, 1]),
        bool(res.better[0, 1]),
        float(res.pvalue[0, 1]),
        paired,
        gamma,
        alpha,
        float(res.standard_error[0, 1]),
        res.distribution(0, 1),
        float(res.bootstrap_low[0, 1]),
        float(res.bootstrap_high[0, 1]),
    )


# --------------------------------------------------------------------------- Noether
def _noether_sample_size_iv(gamma, alpha, beta):
    return check_gamma(gamma), check_open_unit(alpha, "alpha"), check_open_unit(beta, "beta")


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
def _pairwise_comparisons_iv(scores, paired, gamma, alpha, correction, n_resamples, rng, keep_distribution, priority):
    check_bool(keep_distribution, "keep_distribution")
    paired = check_bool(paired, "paired")
    rows = as_table(scores, "scores", paired=paired, min_runs=2)
    gamma = check_gamma(gamma)
    alpha = check_open_unit(alpha, "alpha")
    correction = check_choice(correction, "correction", METHODS)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=1)
    rng = as_generator(rng)
    if priority is not None:
        priority = np.asarray(priority)
        if priority.shape != (len(rows),) or sorted(priority.tolist()) != list(range(len(rows))):
            raise ValueError(f"`priority` must be a permutation of the {len(rows)} entries.")
    return rows, paired, gamma, alpha, correction, n_resamples, rng, priority


def _order(means: np.ndarray) -> np.ndarray:
    """Entries best first by mean; ties keep their index order."""
    return np.argsort(-means, kind="stable")


def assemble_pairwise(
    n_entries,
    iu,
    ju,
    p,
    pvalue_raw,
    interval,
    means,
    *,
    paired,
    gamma,
    alpha,
    correction,
    n_resamples,
    effect=None,
    boot=None,
    boot_interval=None,
    priority=None,
    method="wilson",
    decisions=None,
) -> PairwiseResult:
    """Decide every pair and fill the k x k matrices (shared with the test bootstrap).

    ``p``, ``pvalue_raw`` (and ``effect``, default ``p - 1/2``) are upper-triangle
    arrays; ``interval(level)`` gives the dual interval of P(i>j) at per-pair levels.
    The lower triangle is the reverse comparison: ``P(j>i) = 1 - P(i>j)``, the
    interval ``[1 - high, 1 - low]``. ``priority`` (best first by the ranking
    statistic, default by ``means``) becomes a verdict-consistent ``order``.
    ``decisions`` (from :func:`~evaluation.stats.decisions.decide_pairs`) may be
    given instead of being computed from ``effect``, ``pvalue_raw`` and ``interval``.
    """
    d = (
        decisions
        if decisions is not None
        else decide_pairs(
            p - 0.5 if effect is None else effect, pvalue_raw, interval, alpha=alpha, gamma=gamma, correction=correction
        )
    )
    shape = (n_entries, n_entries)

    def mirror(upper, lower, fill=np.nan, dtype=np.float64):
        out = np.full(shape, fill, dtype=dtype)
        out[iu, ju], out[ju, iu] = upper, lower
        return out

    sig = mirror(d.significant[0], d.significant[1], False, bool)
    meaningful = mirror(d.meaningful[0], d.meaningful[1], False, bool)
    better = sig & meaningful
    se = None if boot is None else mirror(boot.standard_error, boot.standard_error)
    blo = bhi = None
    if boot_interval is not None:
        blo, bhi = mirror(boot_interval[0], 1.0 - boot_interval[1]), mirror(boot_interval[1], 1.0 - boot_interval[0])
    priority = _order(np.asarray(means, dtype=np.float64)) if priority is None else np.asarray(priority)
    return PairwiseResult(
        mirror(p, 1.0 - p),
        mirror(d.low, 1.0 - d.high),
        mirror(d.high, 1.0 - d.low),
        mirror(d.pvalue, d.pvalue),
        better,
        verdict_order(better, priority),
        np.asarray(means, dtype=np.float64),
        sig,
        meaningful,
        mirror(pvalue_raw, pvalue_raw),
        paired,
        gamma,
        alpha,
        correction,
        n_resamples,
        se,
        None if boot is None else boot.distribution,
        mirror(1.0 - d.level, 1.0 - d.level),
        priority,
        method,
        blo,
        bhi,
    )


def _pairwise(
    rows,
    paired,
    gamma,
    alpha,
    correction,
    n_resamples,
    rng,
    keep_distribution,
    priority,
    backend="numpy",
    device="auto",
):
    iu, ju, p, low, high, boot = _engine(rows, paired, n_resamples, alpha, rng, keep_distribution, backend, device)
    pvalue, interval = score_tests(rows, paired, iu, ju, p)
    means = np.array([r.mean() for r in rows])
    return assemble_pairwise(
        len(rows),
        iu,
        ju,
        p,
        pvalue,
        interval,
        means,
        paired=paired,
        gamma=gamma,
        alpha=alpha,
        correction=correction,
        n_resamples=n_resamples,
        boot=boot,
        boot_interval=(low, high),
        priority=priority,
        method="wilson" if paired else "newcombe",
    )


# long because its docstring states every parameter
def pairwise_comparisons(
    scores,
    *,
    paired=True,
    gamma=0.75,
    alpha=0.05,
    correction="holm",
    n_resamples=10_000,
    rng=0,
    keep_distribution=True,
    priority=None,
    backend="numpy",
    device="auto",
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
        Family-wise significance level of the decisions (of the adjusted p-values, and
        of the intervals, each drawn at its pair's adjusted level).
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Multiplicity adjustment over the family of all k(k-1)/2 unordered pairs.
    n_resamples : int, default 10000
        Bootstrap resamples (standard errors, distribution, ``bootstrap_low/high``).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.
    keep_distribution : bool, default True
        Keep the k(k-1)/2 x B resampled P(i>j) (float32: 198 MB for k = 100, B = 10,000);
        False leaves ``bootstrap_distribution`` None, every other field the same.
    priority : array_like of int, optional
        The entries best first by the board's ranking statistic (default: by mean);
        ``order`` follows it except where a verdict forces a winner above its loser.
    backend : {"numpy", "torch", "auto"}, default "numpy"
        Where the bootstrap (standard errors, distribution, percentile interval) runs:
        "torch" on ``device`` ("auto": CUDA when available, else the CPU), equal within
        Monte Carlo error (:mod:`evaluation.stats.torch_backend`); "auto" is torch on CUDA
        when a device is present and the work is large, numpy otherwise. Decisions are
        closed form and identical.
    device : str, default "auto"

    Returns
    -------
    PairwiseResult
        k x k matrices ``p``, ``low``, ``high`` (the interval at ``level``),
        ``pvalue`` (adjusted), ``pvalue_raw``, ``better`` (``better[i, j]``: i beats
        j), ``significant``, ``meaningful``, ``level``, ``standard_error``,
        ``bootstrap_low``/``bootstrap_high``; ``order`` (verdict-consistent, best
        first), ``priority``, ``means``, and the ``bootstrap_distribution``.

    Raises
    ------
    ValueError
        For an invalid table or parameter, naming it (see :func:`compare`).

    Notes
    -----
    One rule for every pair (:mod:`evaluation.stats.decisions`): the score test of
    :func:`compare` gives each pair's raw p-value; the family is adjusted (Holm 1979
    by default; Benjamini–Hochberg 1995 controls the false discovery rate instead);
    each pair's score interval is drawn at the level its adjusted test uses, so it
    excludes 1/2 exactly when the adjusted p-value is below ``alpha``. i beats j when
    that holds in i's favour and the upper end exceeds γ (Bouthillier et al. 2021,
    App. C.6). For two entries the numbers equal :func:`compare` with the same ``rng``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scores = np.array([0.70, 0.69, 0.60])[:, None] + 0.01 * rng.standard_normal((3, 30))
    >>> res = pairwise_comparisons(scores, n_resamples=2000)
    >>> res.order.tolist(), bool(res.better[0, 2]), bool(res.better[0, 1])
    ([0, 1, 2], True, False)
    """
    rows, paired, gamma, alpha, correction, n_resamples, rng, priority = _pairwise_comparisons_iv(
        scores, paired, gamma, alpha, correction, n_resamples, rng, keep_distribution, priority
    )
    backend = check_choice(backend, "backend", tb.BACKENDS)
    return _pairwise(
        rows, paired, gamma, alpha, correction, n_resamples, rng, keep_distribution, priority, backend, device
    )
