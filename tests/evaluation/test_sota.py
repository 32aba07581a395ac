"""Multiplicity-adjusted state of the art (Møllersen & Holsbø, §3–4)."""

import numpy as np
import pytest
from scipy import stats

from evaluation.stats import (
    SotaDistribution,
    adjusted_sota,
    expected_max_normal,
    sota_distribution,
    sota_distribution_dependent,
    sota_distribution_nonidentical,
    sota_exceedance,
)


def test_paper_table_1_values():
    d = sota_distribution(1000, 3000, 0.9)
    assert isinstance(d, SotaDistribution)
    assert d.expected == pytest.approx(0.9173, abs=5e-5)
    assert d.sd == pytest.approx(0.001817, abs=5e-7)
    assert d.lower == pytest.approx(0.9143, abs=5e-5)
    assert d.upper == pytest.approx(0.9213, abs=5e-5)
    assert d.pmf.sum() == pytest.approx(1.0)


def test_coin_flip_examples():
    assert sota_exceedance(100, 20, 0.5, 0.75) == pytest.approx(0.8765, abs=5e-5)
    assert sota_exceedance(1000, 20, 0.5, 0.90) == pytest.approx(0.1823, abs=5e-5)
    assert sota_distribution(100, 20, 0.5).exceedance(0.75) == pytest.approx(0.8765, abs=5e-5)


def test_exceedance_edges_and_cdf():
    d = sota_distribution(10, 50, 0.6)
    assert d.exceedance(0.0) == pytest.approx(1.0)
    assert d.exceedance(1.01) == 0.0
    assert sota_exceedance(10, 50, 0.6, -1) == 1.0 and sota_exceedance(10, 50, 0.6, 1.5) == 0.0
    for x in (0.62, 0.7, 0.8):
        assert d.exceedance(x) == pytest.approx(sota_exceedance(10, 50, 0.6, x), rel=1e-9)
        assert d.cdf(x - 1e-6) == pytest.approx(1 - d.exceedance(x), abs=1e-12)
    assert d.quantile(0.5) == pytest.approx(float(np.median(_simulate_best(10, 50, 0.6))), abs=0.021)


def _simulate_best(m, n, theta, n_sim=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.binomial(n, theta, size=(n_sim, m)).max(axis=1) / n


def test_matches_monte_carlo_simulation_of_best_of_m():
    m, n, theta = 50, 200, 0.7
    sim = _simulate_best(m, n, theta)
    d = sota_distribution(m, n, theta)
    assert d.expected == pytest.approx(sim.mean(), abs=4 * sim.std() / np.sqrt(sim.size))
    assert d.sd == pytest.approx(sim.std(), rel=0.03)
    emp = np.bincount(np.round(sim * n).astype(int), minlength=n + 1) / sim.size
    assert np.abs(np.cumsum(emp) - np.cumsum(d.pmf)).max() < 0.015


def test_stable_for_huge_m():
    d = sota_distribution(10**7, 10_000, 0.95)
    assert np.isfinite([d.expected, d.sd]).all()
    assert d.expected > sota_distribution(10**4, 10_000, 0.95).expected > 0.95


def test_nonidentical_with_equal_thetas_equals_identical():
    a = sota_distribution_nonidentical(3000, np.full(1000, 0.9))
    b = sota_distribution(1000, 3000, 0.9)
    np.testing.assert_allclose(a.pmf, b.pmf, atol=1e-12)
    assert (a.lower, a.upper) == (b.lower, b.upper)


def test_nonidentical_matches_simulation():
    thetas = np.r_[np.full(20, 0.70), np.full(5, 0.74), 0.76]
    n = 300
    rng = np.random.default_rng(1)
    sim = rng.binomial(n, thetas, size=(20_000, thetas.size)).max(axis=1) / n
    d = sota_distribution_nonidentical(n, thetas)
    assert d.m == thetas.size
    assert d.expected == pytest.approx(sim.mean(), abs=4 * sim.std() / np.sqrt(sim.size))


def test_dependent_rho_zero_matches_independent():
    d = sota_distribution_dependent(500, 0.8, 40, 0.0, n_sim=20_000, seed=0)
    ref = sota_distribution(40, 500, 0.8)
    assert d.method == "simulation"
    assert d.expected == pytest.approx(ref.expected, abs=4 * ref.sd / np.sqrt(20_000))


def test_dependent_rho_one_is_a_single_classifier():
    d = sota_distribution_dependent(500, 0.8, 40, 1.0, n_sim=20_000, seed=0)
    assert d.expected == pytest.approx(0.8, abs=4 * np.sqrt(0.16 / 500) / np.sqrt(20_000))
    assert d.sd == pytest.approx(np.sqrt(0.8 * 0.2 / 500), rel=0.03)


def test_dependent_per_example_simulation_agrees():
    # Brute-force check of the conditional-binomial shortcut: simulate outcomes per example.
    n, m, rho, theta = 100, 5, 0.6, 0.7
    rng = np.random.default_rng(3)
    sims = 20_000
    lead = rng.random((sims, n)) < theta
    copy = rng.random((sims, m - 1, n)) < rho
    own = rng.random((sims, m - 1, n)) < theta
    followers = np.where(copy, lead[:, None, :], own).sum(axis=2)
    best = np.maximum(lead.sum(axis=1), followers.max(axis=1)) / n
    d = sota_distribution_dependent(n, theta, m, rho, n_sim=sims, seed=4)
    assert d.expected == pytest.approx(best.mean(), abs=5 * best.std() / np.sqrt(sims))
    assert d.sd == pytest.approx(best.std(), rel=0.05)


def test_dependent_is_seeded():
    a = sota_distribution_dependent(300, [0.7, 0.72, 0.71], rho=0.3, n_sim=500, seed=9)
    b = sota_distribution_dependent(300, [0.7, 0.72, 0.71], rho=0.3, n_sim=500, seed=9)
    np.testing.assert_array_equal(a.pmf, b.pmf)


# ---------------------------------------------------------------- adjusted SOTA
def test_adjusted_sota_binomial_inverts_the_distribution():
    best, m, n = 0.9173130830485143, 1000, 3000
    a = adjusted_sota(best, m, n=n)
    assert a.method == "binomial" and a.naive == best and a.m == m
    assert a.estimate == pytest.approx(0.9, abs=1e-6)  # E[θ̂_max](0.9) = best
    assert sota_distribution(m, n, a.estimate).expected == pytest.approx(best, abs=1e-9)
    # P(θ̂_max >= best) = α/2 at the lower bound.
    assert sota_exceedance(m, n, a.lower, round(best * n) / n) == pytest.approx(0.025, rel=1e-6)


def test_adjusted_sota_lower_is_clopper_pearson_at_adjusted_level():
    best, m, n, alpha = 0.85, 200, 1000, 0.05
    level = 1 - (1 - alpha / 2) ** (1 / m)
    ci = stats.binomtest(850, n).proportion_ci(confidence_level=1 - 2 * level, method="exact")
    assert adjusted_sota(best, m, n=n, alpha=alpha).lower == pytest.approx(ci.low, rel=1e-9)


def test_adjusted_sota_single_entry_is_not_adjusted():
    a = adjusted_sota(0.8, 1, n=3000)
    assert a.estimate == pytest.approx(0.8, abs=1e-9)
    b = adjusted_sota(0.8, 1, se=0.01)
    assert b.estimate == 0.8
    assert b.lower == pytest.approx(0.8 - stats.norm.ppf(0.975) * 0.01)


def test_adjusted_sota_normal_approximation():
    a = adjusted_sota(71.2, 500, se=0.4, alpha=0.1)
    assert a.method == "normal"
    assert a.estimate == pytest.approx(71.2 - expected_max_normal(500) * 0.4)
    assert a.lower == pytest.approx(71.2 - stats.norm.ppf(0.95 ** (1 / 500)) * 0.4)


def test_adjusted_sota_more_entries_more_correction():
    estimates = [adjusted_sota(0.9, m, n=2000).estimate for m in (1, 10, 100, 10_000)]
    assert all(np.diff(estimates) < 0)


def test_adjusted_sota_extremes():
    assert adjusted_sota(1.0, 10, n=100).estimate == 1.0
    assert adjusted_sota(0.0, 10, n=100).lower == 0.0


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sota_distribution(0, 100, 0.9), r"`m` must be an integer >= 1"),
        (lambda: sota_distribution(10, 0, 0.9), r"`n` must be an integer >= 1"),
        (lambda: sota_distribution(10, 100, 1.0), r"`theta` must be an accuracy strictly between 0 and 1"),
        (lambda: sota_distribution(10, 100, 0.9, alpha=2), r"`alpha` must be in \(0, 1\)"),
        (lambda: sota_exceedance(10, 100, 0.9, np.nan), r"`x` must be finite"),
        (lambda: sota_distribution_nonidentical(100, []), r"`thetas` must be a non-empty 1-D array"),
        (lambda: sota_distribution_nonidentical(100, [0.5, 1.2]), r"`thetas` must hold accuracies strictly between 0 and 1 \(index 1"),
        (lambda: sota_distribution_dependent(100, 0.9, None, 0.5), r"`m` is required"),
        (lambda: sota_distribution_dependent(100, [0.9, 0.8], 3, 0.5), r"`m` must equal the number of accuracies"),
        (lambda: sota_distribution_dependent(100, 0.9, 3, 1.5), r"`rho` must be in \[0, 1\]"),
        (lambda: sota_distribution_dependent(100, 0.9, 3, 0.5, n_sim=0), r"`n_sim` must be an integer >= 1"),
        (lambda: adjusted_sota(0.9, 10), r"Give exactly one of `n` \(accuracy-like metric\) or `se`"),
        (lambda: adjusted_sota(0.9, 10, n=100, se=0.1), r"Give exactly one of"),
        (lambda: adjusted_sota(1.2, 10, n=100), r"`best` must be an accuracy in \[0, 1\]"),
        (lambda: adjusted_sota(0.9, 10, se=0.0), r"`se` must be positive"),
        (lambda: adjusted_sota(np.inf, 10, se=0.1), r"`best` must be finite"),
        (lambda: adjusted_sota(0.9, 0, se=0.1), r"`m` must be an integer >= 1"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
