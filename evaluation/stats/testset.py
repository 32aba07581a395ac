"""Bootstrap over test examples for prediction entries (one shared resample set)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import stats

from . import _resample as rs
from ._types import TestBootstrapResult
from ._validation import (
    as_generator,
    check_bool,
    check_choice,
    check_int,
    check_open_unit,
)
from .multiplicity import METHODS
from .outperform import _check_gamma, assemble_pairwise

__all__ = ["paired_test_bootstrap"]

# Count-matrix elements per matrix product (resamples x examples): 160 resamples of
# 100,000 examples, a 64 MB float32 block allocated once; BLAS is more efficient
# with more rows.
_SUM_BATCH_ELEMENTS = 1 << 24


def _paired_test_bootstrap_iv(
    outcomes, n_resamples, seed, confidence, gamma, alpha, correction, higher_is_better
):
    try:
        raw = np.asarray(outcomes)
        x = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError("`outcomes` must be an array of real numbers.") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(
            f"`outcomes` must be 2-D (examples x entries) (got shape {x.shape})."
        )
    if x.size == 0:
        raise ValueError("`outcomes` must not be empty.")
    bad = np.argwhere(~np.isfinite(x))
    if bad.size:
        raise ValueError(
            f"`outcomes` contains NaN or inf (example {bad[0][0]}, entry {bad[0][1]})."
        )
    if x.shape[0] < 2:
        raise ValueError(
            f"`outcomes` needs at least 2 test examples (got {x.shape[0]})."
        )
    integral = raw.dtype.kind in "biu" or bool(np.all(x == np.round(x)))
    return (
        x,
        integral,
        check_int(n_resamples, "n_resamples", minimum=1),
        as_generator(seed),
        check_open_unit(confidence, "confidence"),
        _check_gamma(gamma),
        check_open_unit(alpha, "alpha"),
        check_choice(correction, "correction", METHODS),
        check_bool(higher_is_better, "higher_is_better"),
    )


def _resampled_sums(x: np.ndarray, integral: bool, n_resamples: int, rng) -> np.ndarray:
    """Sums of every entry over B resamples of the examples, shape (B, entries).

    The count matrix of a batch of resamples (batch x examples) times the outcome
    matrix (examples x entries) gives all entries' resampled sums at once; float32
    when that is exact (small integer outcomes), float64 otherwise.
    """
    n_ex = x.shape[0]
    exact32 = integral and np.abs(x).max() * n_ex < 2**24
    dtype = np.float32 if exact32 else np.float64
    xw = x.astype(dtype)
    sums = np.empty((n_resamples, x.shape[1]))
    step = max(1, min(n_resamples, _SUM_BATCH_ELEMENTS // n_ex))
    counts = np.empty((step, n_ex), dtype=dtype)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        block = rs.fill_counts(rng, n_ex, counts[: stop - start])
        sums[start:stop] = block @ xw
    return sums


def _paired_t_pvalues(x: np.ndarray, iu, ju) -> np.ndarray:
    """Two-sided paired t-test of the mean difference, all pairs (scipy's ttest_rel)."""
    n_ex = x.shape[0]
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / (n_ex - 1)
    var = np.diag(cov)
    diff = x.mean(axis=0)[iu] - x.mean(axis=0)[ju]
    var_d = var[iu] + var[ju] - 2 * cov[iu, ju]
    degenerate = var_d <= 1e-14 * (var[iu] + var[ju] + 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / np.sqrt(np.where(degenerate, 1.0, var_d) / n_ex)
    p = 2 * stats.t.sf(np.abs(t), n_ex - 1)
    return np.where(degenerate, np.where(diff == 0, 1.0, 0.0), p)


def paired_test_bootstrap(
    outcomes,
    *,
    n_resamples=10_000,
    seed=0,
    confidence=0.95,
    gamma=0.75,
    alpha=0.05,
    correction="holm",
    higher_is_better=True,
) -> TestBootstrapResult:
    """Bootstrap over test examples, paired across prediction entries.

    Parameters
    ----------
    outcomes : array_like, shape (examples, entries)
        Per-example outcome of each entry (1/0 correctness, a loss, ...); a 1-D
        array is one entry. The entry's score is the mean over examples.
    n_resamples : int, default 10000
        Bootstrap resamples B of the test examples.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.
    confidence : float, default 0.95
        Level of each entry's interval of the mean.
    gamma : float, default 0.75
        Threshold of a meaningful difference, in (0.5, 1).
    alpha : float, default 0.05
        Level of the pairwise intervals (``1 - alpha``) and of the adjusted tests.
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Multiplicity adjustment over all unordered pairs.
    higher_is_better : bool, default True
        False for losses: comparisons then treat the lower mean as better.

    Returns
    -------
    TestBootstrapResult
        ``estimate``, ``low``, ``high``, ``se`` of each entry's mean (original
        units); ``comparisons`` (a PairwiseResult); ``diff_low``/``diff_high``.

    Raises
    ------
    ValueError
        If ``outcomes`` is empty, not finite, not 2-D or has fewer than 2 examples,
        or a parameter is invalid.

    Notes
    -----
    A prediction entry has one source of variation left, the test sample (DESIGN
    §6), so the bootstrap resamples examples, with ONE resample index set shared by
    all entries (a paired bootstrap, as in Koehn 2004 and Berg-Kirkpatrick et al.
    2012). Each resample is a count vector over examples; a batch of count vectors
    times the outcome matrix gives every entry's resampled sum at once.

    Pairwise quantities, for entries i and j with observed (oriented) difference of
    means d and resampled differences ``D*_b``:

    * ``p[i, j]`` = P(i>j) = fraction of resamples in which i's mean beats j's (ties
      ½): the bootstrap estimate of the probability that i scores higher than j on
      a fresh test set of the same size, the analogue of Bouthillier et al.'s
      P(A>B) when the test set is the only source of variation.
    * its interval (our choice): that probability depends on the unknown true
      difference δ; estimating it by ``G(δ) = P*(D* - d + δ > 0)`` (the bootstrap
      distribution re-centred at δ) and mapping the percentile interval
      ``[d_low, d_high]`` of the difference gives ``[G(d_low), G(d_high)]``
      (``G`` is non-decreasing and ``G(d) = p``, so the interval contains ``p``
      whenever ``[d_low, d_high]`` contains d, as it does but in degenerate cases).
    * ``significant``: the ``1 - alpha`` percentile interval of the difference of
      means excludes 0 (``diff_low > 0``); ``meaningful``: ``high > γ``;
      ``better`` adds the adjusted p-value ``< alpha``. P-values come from the
      two-sided paired t-test on the per-example differences (``ttest_rel``; with
      many examples it is the normal test of the mean difference).

    With only the test set varying, a significant difference at ``alpha <=
    2(1-γ)`` has P(i>j) >= 1 - alpha/2 > γ, so the γ rule rarely binds here.

    ``se`` is the standard deviation of the resampled means (ddof=1), to be used as
    :func:`adjusted_sota`'s ``se``.

    References
    ----------
    Koehn, P. (2004). Statistical significance tests for machine translation
    evaluation. EMNLP. Berg-Kirkpatrick, T., Burkett, D. & Klein, D. (2012). An
    empirical investigation of statistical significance in NLP. EMNLP.
    Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning
    Benchmarks. MLSys.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.random((2000, 3)) < [0.80, 0.75, 0.65]
    >>> res = paired_test_bootstrap(correct, n_resamples=1000)
    >>> res.comparisons.order.tolist(), bool(res.comparisons.better[0, 2])
    ([0, 1, 2], True)
    """
    (x, integral, n_resamples, rng, confidence, gamma, alpha, correction,
     higher_is_better) = _paired_test_bootstrap_iv(
        outcomes, n_resamples, seed, confidence, gamma, alpha, correction, higher_is_better
    )
    n_ex, n_entries = x.shape
    sign = 1.0 if higher_is_better else -1.0
    sums = _resampled_sums(x, integral, n_resamples, rng)  # (B, entries)
    means_boot = sums / n_ex
    estimate = x.mean(axis=0)
    q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
    low, high = rs.percentiles(means_boot.T, q)
    se = means_boot.std(axis=0, ddof=1) if n_resamples > 1 else np.zeros(n_entries)

    iu, ju = np.triu_indices(n_entries, 1)
    npairs = iu.size
    p = np.empty(npairs)
    p_low = np.empty(npairs)
    p_high = np.empty(npairs)
    d_low = np.empty(npairs)
    d_high = np.empty(npairs)
    # Differences of resampled sums, oriented (positive: row entry better). With
    # integer outcomes they are integers, exact in float32 (half the memory traffic).
    exact32 = integral and 2 * np.abs(x).max() * n_ex < 2**24
    oriented = (sign * sums.T).astype(np.float32 if exact32 else np.float64)
    observed = sign * x.sum(axis=0)
    qa = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    step = rs.batch_size(n_resamples, npairs)
    for start in range(0, npairs, step):
        stop = min(npairs, start + step)
        i, j = iu[start:stop], ju[start:stop]
        diff = oriented[i] - oriented[j]  # (pairs, B), in units of sums
        p[start:stop] = _fraction_above(diff, 0.0)
        lo, hi = rs.percentiles(diff, qa)
        d = (observed[i] - observed[j])
        # G(δ) = P*(D* - d + δ > 0) = P*(D* > d - δ), at δ = d_low and δ = d_high.
        p_low[start:stop] = _fraction_above(diff, (d - lo)[:, None])
        p_high[start:stop] = _fraction_above(diff, (d - hi)[:, None])
        d_low[start:stop], d_high[start:stop] = lo / n_ex, hi / n_ex
    pvalue = _paired_t_pvalues(sign * x, iu, ju)
    significant = (d_low > 0, d_high < 0)
    comparisons = assemble_pairwise(
        n_entries, iu, ju, p, p_low, p_high, pvalue, estimate * sign, paired=True,
        gamma=gamma, alpha=alpha, correction=correction, n_resamples=n_resamples,
        significant=significant,
    )
    if not higher_is_better:  # report means in original units, order stays by merit
        comparisons = _with_means(comparisons, estimate)
    dl = np.full((n_entries, n_entries), np.nan)
    dh = np.full((n_entries, n_entries), np.nan)
    dl[iu, ju], dl[ju, iu] = d_low, -d_high
    dh[iu, ju], dh[ju, iu] = d_high, -d_low
    return TestBootstrapResult(
        estimate, low, high, se, comparisons, dl, dh, confidence, n_resamples
    )


def _fraction_above(diff: np.ndarray, threshold) -> np.ndarray:
    """Per row: fraction of ``diff > threshold``, ties counting one half."""
    above = np.count_nonzero(diff > threshold, axis=1)
    tied = np.count_nonzero(diff == threshold, axis=1)
    return (above + 0.5 * tied) / diff.shape[1]


def _with_means(result, means):
    return replace(result, means=np.asarray(means, dtype=np.float64))
