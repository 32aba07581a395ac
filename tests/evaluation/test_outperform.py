"""P(A>B), compare(), Noether's sample size and all-pairs comparisons."""

import numpy as np
import pytest
from scipy import stats

from evaluation.stats import (
    Comparison,
    compare,
    noether_sample_size,
    pairwise_comparisons,
    prob_outperform,
)
from evaluation.stats._resample import canonical_runs, draw_counts, draw_counts_ragged


# ---------------------------------------------------------------- P(A>B)
def test_unpaired_reference_value_equals_mann_whitney_u():
    a, b = [0.1, 0.2, 0.3, 0.3], [0.3, 0.0, 0.15]
    p = prob_outperform(a, b, paired=False)
    assert p == pytest.approx(0.6667, abs=1e-4)
    u = stats.mannwhitneyu(a, b).statistic
    assert p == pytest.approx(u / (len(a) * len(b)))


def test_paired_counts_ties_as_half():
    assert prob_outperform([1, 2, 3, 4], [0, 2, 5, 1], paired=True) == pytest.approx((1 + 0.5 + 0 + 1) / 4)


def test_unpaired_matches_scipy_on_real_runs(resnet):
    a, b = resnet[:40, 2], resnet[40:, 2]
    u = stats.mannwhitneyu(a, b).statistic
    assert prob_outperform(a, b, paired=False) == pytest.approx(u / (a.size * b.size))


# ---------------------------------------------------------------- compare
def test_compare_clear_winner_paired_and_unpaired():
    rng = np.random.default_rng(0)
    a = 0.72 + 0.01 * rng.standard_normal(30)
    b = 0.70 + 0.01 * rng.standard_normal(30)
    for paired in (True, False):
        c = compare(a, b, paired=paired, n_resamples=2000)
        assert isinstance(c, Comparison)
        assert c.significant and c.meaningful and c.better
        assert c.low <= c.p <= c.high
        assert c.pvalue < 1e-4
        reverse = compare(b, a, paired=paired, n_resamples=2000)
        assert not reverse.better and not reverse.significant


def test_compare_identical_distributions_is_not_better():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 30))
    c = compare(a, b, paired=True, n_resamples=2000)
    assert not c.better
    assert c.low < 0.5 < c.high


def test_significant_but_not_meaningful():
    # P(A>B) just above 0.5 with a narrow interval: significant, not meaningful at γ = 0.75.
    a = np.r_[np.ones(520), np.zeros(480)]
    b = np.r_[np.zeros(520), np.ones(480)]
    c = compare(a, b, paired=True, n_resamples=2000, rng=0)
    assert c.p == pytest.approx(0.52)
    assert c.significant == (c.low > 0.5)
    assert c.high < 0.75 and not c.meaningful and not c.better


def test_paired_pvalue_is_the_score_test_with_ties_as_halves():
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10.0])
    b = np.array([0, 1, 2, 3, 4, 5, 7, 9, 9, 11.0])  # 6 wins, 2 losses, 2 ties: 7 of 10
    c = compare(a, b, paired=True, n_resamples=100)
    assert c.pvalue == pytest.approx(2 * stats.norm.sf(abs(7 - 5) / np.sqrt(10 / 4)), rel=1e-12)
    assert c.p == 0.7


def test_paired_interval_is_wilson_and_dual_to_the_test():
    # statsmodels' Wilson interval (dev dependency) for 7 of 10 at 95 %.
    from statsmodels.stats.proportion import proportion_confint

    a = np.arange(10.0)
    b = a - np.r_[np.ones(7), -np.ones(3)]
    c = compare(a, b, paired=True, n_resamples=50)
    assert (c.low, c.high) == pytest.approx(proportion_confint(7, 10, 0.05, method="wilson"), abs=1e-12)
    for alpha in (0.01, 0.05, 0.2, 0.3):
        d = compare(a, b, paired=True, n_resamples=50, alpha=alpha)
        assert (d.low > 0.5) == (d.pvalue < alpha) == d.significant


@pytest.mark.parametrize("sizes", [(5, 6), (12, 15)])
def test_unpaired_pvalue_is_the_mann_whitney_z_test(sizes):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(sizes[0]) + 0.5, rng.standard_normal(sizes[1])
    c = compare(a, b, paired=False, n_resamples=100)
    ref = stats.mannwhitneyu(a, b, method="asymptotic", use_continuity=False).pvalue
    assert c.pvalue == pytest.approx(ref, rel=1e-12)
    assert (c.low > 0.5) == (c.pvalue < 0.05)


def test_unpaired_interval_is_newcombes_score_interval():
    # Newcombe (2006), method 5: the roots of (θ̂ - θ)² = z² V(θ), found here by brute force.
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(8) + 0.8, rng.standard_normal(11)
    c = compare(a, b, paired=False, n_resamples=50)
    grid = np.linspace(0, 1, 200_001)
    nstar = (8 + 11) / 2
    v = grid * (1 - grid) / 88 * (1 + (nstar - 1) * ((1 - grid) / (2 - grid) + grid / (1 + grid)))
    inside = grid[(c.p - grid) ** 2 <= stats.norm.ppf(0.975) ** 2 * v]
    assert (c.low, c.high) == pytest.approx((inside.min(), inside.max()), abs=2e-5)


def test_ten_wins_of_ten_is_not_certainty_and_both_functions_decide_alike():
    # Defect: compare() said "better" with the interval [1, 1] while pairwise_comparisons did not.
    a = np.linspace(0.70, 0.72, 10)
    b = a - 0.01
    c = compare(a, b, paired=True, n_resamples=500, rng=3)
    r = pairwise_comparisons([a, b], paired=True, n_resamples=500, rng=3)
    assert (c.bootstrap_low, c.bootstrap_high) == (1.0, 1.0)  # the percentile interval collapses
    assert c.high == 1.0 and c.low == pytest.approx(10 / (10 + stats.norm.ppf(0.975) ** 2))
    assert (c.p, c.low, c.high, c.pvalue, c.better) == (
        r.p[0, 1],
        r.low[0, 1],
        r.high[0, 1],
        r.pvalue[0, 1],
        r.better[0, 1],
    )
    assert c.better


def test_paired_interval_equals_explicit_resampling():
    # Same counts, explicit resampled pairs -> identical percentile interval.
    rng = np.random.default_rng(3)
    a, b = np.round(rng.standard_normal((2, 15)), 1)
    c = compare(a, b, paired=True, n_resamples=3000, rng=7)
    x = canonical_runs(np.stack([a, b]))[0]
    counts = draw_counts(np.random.default_rng(7), 15, 3000)
    r = (x[0] > x[1]) + 0.5 * (x[0] == x[1])
    boot = counts @ r / 15
    lo, hi = np.percentile(boot, [2.5, 97.5])
    assert (c.bootstrap_low, c.bootstrap_high) == pytest.approx((lo, hi), abs=1e-12)


def test_unpaired_interval_equals_explicit_resampling():
    rng = np.random.default_rng(4)
    a, b = np.sort(np.round(rng.standard_normal(9), 1)), np.sort(np.round(rng.standard_normal(6), 1))
    c = compare(a, b, paired=False, n_resamples=2000, rng=5)
    counts = draw_counts_ragged(np.random.default_rng(5), np.array([9, 6]), 2000)
    w = (a[:, None] > b[None]) + 0.5 * (a[:, None] == b[None])
    boot = np.einsum("br,rs,bs->b", counts[:, :9], w, counts[:, 9:]) / 54
    lo, hi = np.percentile(boot, [2.5, 97.5])
    assert (c.bootstrap_low, c.bootstrap_high) == pytest.approx((lo, hi), abs=1e-12)


def test_compare_percentile_interval_close_to_scipy_bootstrap():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 25)) + [[0.3], [0.0]]
    c = compare(a, b, paired=True, n_resamples=10_000)
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean((x > y) + 0.5 * (x == y), axis=axis),
        paired=True,
        method="percentile",
        n_resamples=10_000,
        confidence_level=0.95,
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert c.bootstrap_low == pytest.approx(ref.low, abs=0.04)
    assert c.bootstrap_high == pytest.approx(ref.high, abs=0.04)


# ---------------------------------------------------------------- Noether
def test_noether_default_is_29():
    assert noether_sample_size() == 29


def test_noether_formula():
    z = stats.norm.ppf(0.99) - stats.norm.ppf(0.2)
    expected = int(np.ceil((z / (np.sqrt(6) * (0.5 - 0.6))) ** 2))
    assert noether_sample_size(0.6, 0.01, 0.2) == expected


# ---------------------------------------------------------------- all pairs
def _scores(k=5, runs=20, seed=0, gap=0.02):
    rng = np.random.default_rng(seed)
    means = 0.7 + gap * np.arange(k)[::-1]
    return means[:, None] + 0.01 * rng.standard_normal((k, runs))


@pytest.mark.parametrize("paired", [True, False])
def test_pairwise_matrices_are_consistent(paired):
    s = _scores()
    r = pairwise_comparisons(s, paired=paired, n_resamples=1000)
    k = s.shape[0]
    off = ~np.eye(k, dtype=bool)
    np.testing.assert_allclose((r.p + r.p.T)[off], 1.0)
    np.testing.assert_allclose(r.low[off], 1 - r.high.T[off])
    assert np.all(np.isnan(np.diag(r.p))) and not r.better.diagonal().any()
    assert np.all(r.low[off] <= r.p[off]) and np.all(r.p[off] <= r.high[off])
    np.testing.assert_array_equal(r.order, np.arange(k))
    np.testing.assert_allclose(r.means, s.mean(axis=1))
    for i in range(k):
        for j in range(k):
            if i != j:
                assert r.p[i, j] == pytest.approx(prob_outperform(s[i], s[j], paired=paired))
    assert not (r.better & r.better.T).any()


@pytest.mark.parametrize("paired", [True, False])
def test_pairwise_of_two_entries_equals_compare(paired):
    s = _scores(k=2, seed=3, gap=0.005)
    r = pairwise_comparisons(s, paired=paired, n_resamples=1500, rng=11)
    c = compare(s[0], s[1], paired=paired, n_resamples=1500, rng=11)
    assert (r.p[0, 1], r.low[0, 1], r.high[0, 1], r.pvalue[0, 1]) == pytest.approx((c.p, c.low, c.high, c.pvalue))


def test_pairwise_pvalues_adjusted_with_holm():
    s = _scores(k=4, gap=0.003)
    r = pairwise_comparisons(s, n_resamples=200, correction="holm")
    none = pairwise_comparisons(s, n_resamples=200, correction="none")
    iu = np.triu_indices(4, 1)
    from statsmodels.stats.multitest import multipletests

    expected = multipletests(none.pvalue[iu], method="holm")[1]
    np.testing.assert_allclose(r.pvalue[iu], expected)
    np.testing.assert_allclose(r.pvalue_raw, none.pvalue, equal_nan=True)


def test_pairwise_better_needs_adjusted_significance():
    s = _scores(k=3, runs=4, gap=0.05)  # 4 of 4 wins: raw p = 0.046, x3 pairs
    r = pairwise_comparisons(s, n_resamples=1000, correction="bonferroni")
    none = pairwise_comparisons(s, n_resamples=1000, correction="none")
    assert none.better[0, 2] and none.pvalue[0, 2] < 0.05
    assert r.pvalue[0, 2] >= 0.05 and not r.significant[0, 2] and not r.better[0, 2]
    assert r.low[0, 2] <= 0.5 < none.low[0, 2]  # the interval widens with the family


def test_intervals_are_drawn_at_the_adjusted_level():
    # Defect: p-values were adjusted for multiplicity, the intervals were not.
    s = _scores(k=5, runs=12, gap=0.004)
    for correction in ("holm", "bonferroni", "bh", "none"):
        r = pairwise_comparisons(s, n_resamples=300, correction=correction)
        off = ~np.eye(5, dtype=bool)
        np.testing.assert_array_equal(r.significant[off] | r.significant.T[off], (r.pvalue < r.alpha)[off])
        np.testing.assert_array_equal((r.low > 0.5)[off], r.significant[off])
    bonf = pairwise_comparisons(s, n_resamples=300, correction="bonferroni")
    np.testing.assert_allclose(bonf.level[~np.eye(5, dtype=bool)], 1 - 0.05 / 10)
    assert np.all(bonf.level[off] > pairwise_comparisons(s, n_resamples=300, correction="none").level[off])


def test_pairwise_unpaired_ragged_and_nan_padded_agree():
    rows = [[0.9, 0.91, 0.92, 0.93], [0.8, 0.81, 0.82], [0.85, 0.86, 0.84, 0.83, 0.85]]
    padded = np.full((3, 5), np.nan)
    for i, row in enumerate(rows):
        padded[i, : len(row)] = row
    a = pairwise_comparisons(rows, paired=False, n_resamples=500)
    b = pairwise_comparisons(padded, paired=False, n_resamples=500)
    for name in ("p", "low", "high", "pvalue"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(a.order, [0, 2, 1])
    for i in range(3):
        for j in range(3):
            if i != j:
                p = np.mean(np.asarray(rows[i])[:, None] > np.asarray(rows[j])[None, :])
                p += 0.5 * np.mean(np.asarray(rows[i])[:, None] == np.asarray(rows[j])[None, :])
                n1, n2 = len(rows[i]), len(rows[j])
                z = abs(p - 0.5) / np.sqrt((n1 + n2 + 1) / (12 * n1 * n2))
                assert a.pvalue_raw[i, j] == pytest.approx(2 * stats.norm.sf(z), rel=1e-12)


def test_pairwise_single_entry():
    r = pairwise_comparisons([[0.1, 0.2, 0.3]], n_resamples=10)
    assert r.p.shape == (1, 1) and r.order.tolist() == [0]


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: prob_outperform([1.0, 2.0], [1.0], paired=True),
            r"`a` and `b` must have the same length when paired \(got 2 and 1\)",
        ),
        (lambda: prob_outperform([], [1.0], paired=False), r"`a` must not be empty"),
        (lambda: prob_outperform([1.0], [np.nan], paired=False), r"`b` contains NaN or inf"),
        (lambda: prob_outperform([1.0], [2.0], paired=None), r"`paired` must be True or False"),
        (lambda: compare([1.0], [2.0], paired=False), r"`a` needs at least 2 runs to estimate a spread"),
        (lambda: compare([1.0, 2.0], [2.0, 3.0], paired=True, gamma=0.4), r"`gamma` must be in \(0.5, 1\)"),
        (lambda: compare([1.0, 2.0], [2.0, 3.0], paired=True, alpha=0), r"`alpha` must be in \(0, 1\)"),
        (
            lambda: compare([1.0, 2.0], [2.0, 3.0], paired=True, n_resamples=-5),
            r"`n_resamples` must be an integer >= 1",
        ),
        (lambda: compare([1.0, 2.0], [2.0, 3.0], paired=True, rng="x"), r"`rng` must be a non-negative integer"),
        (lambda: noether_sample_size(gamma=1.2), r"`gamma` must be in \(0.5, 1\)"),
        (lambda: noether_sample_size(beta=1.0), r"`beta` must be in \(0, 1\)"),
        (
            lambda: pairwise_comparisons([[1.0, 2.0], [1.0, 2.0]], correction="tukey"),
            r"`correction` must be one of 'holm', 'bonferroni', 'bh', 'none'",
        ),
        (lambda: pairwise_comparisons([1.0, 2.0]), r"`scores` must be 2-D \(entries x runs\)"),
        (lambda: pairwise_comparisons([]), r"`scores` needs at least 1 entry \(got 0\)"),
        (lambda: pairwise_comparisons(np.empty((3, 0))), r"`scores`: entry 0 has 0 runs"),
        (
            lambda: pairwise_comparisons([[1.0, 2.0], [1.0, 2.0, 3.0]]),
            r"same number of runs for every entry when paired \(entry 0 has 2, entry 1 has 3\)",
        ),
        (
            lambda: pairwise_comparisons([[1.0, np.nan, 2.0], [1.0]], paired=False),
            r"entry 1 has 1 run; at least 2 are needed",
        ),
        (lambda: pairwise_comparisons([[1.0, "a"], [1.0, 2.0]]), r"`scores\[0\]` must be an array of real numbers"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
