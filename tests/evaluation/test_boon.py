"""Boo_n (Bajgar et al. 2018, eq. 6 and 7) and E[max of n N(0,1)]."""

import boon as boon_pkg  # reference implementation (test dependency only)
import numpy as np
import pytest
from scipy import integrate, stats

from evaluation.stats import boo_n, boo_n_gaussian, expected_max_normal


# ---------------------------------------------------------------- expected max
@pytest.mark.parametrize("n, expected", [(1, 0.0), (2, 1 / np.sqrt(np.pi)), (5, 1.16296), (10, 1.53875)])
def test_expected_max_normal_reference_values(n, expected):
    assert expected_max_normal(n) == pytest.approx(expected, abs=5e-6)


@pytest.mark.parametrize("n", [3, 100, 10**6])
def test_expected_max_normal_matches_density_integral(n):
    # Reference: E[M] = ∫ x n φ(x) Φ(x)^(n-1) dx on a fine grid (trapezoid rule).
    x = np.linspace(-12, 12, 400_001)
    log_pdf = np.log(n) + (n - 1) * stats.norm.logcdf(x) + stats.norm.logpdf(x)
    reference = integrate.trapezoid(x * np.exp(log_pdf), x)
    assert expected_max_normal(n) == pytest.approx(reference, rel=1e-8)


def test_expected_max_normal_matches_simulation():
    z = np.random.default_rng(0).standard_normal((200_000, 5)).max(axis=1)
    assert expected_max_normal(5) == pytest.approx(z.mean(), abs=4 * z.std() / np.sqrt(z.size))


# ---------------------------------------------------------------- Boo_n, eq. 7
def test_boo_n_reference_values():
    assert boo_n([1, 2, 3, 4], 2) == pytest.approx(3.125)
    assert boo_n([1, 2, 3, 4], 1) == pytest.approx(2.5)


def test_boo_n_ties_share_weight():
    assert boo_n([10, 20, 30], 2, valid=[1, 1, 2]) == pytest.approx(70 / 3)
    assert boo_n([10, 20, 30], 2, valid=[1, 1, 2], higher_is_better=False) == pytest.approx(50 / 3)


def test_boo_n_no_integer_overflow():
    # boon 0.1.0 computes m**n in integers and returns 0.72867 here (overflow).
    assert boo_n(np.linspace(0, 1, 100), 10) == pytest.approx(0.9131389755, abs=1e-10)
    assert boon_pkg.boo(np.linspace(0, 1, 100), n=10) == pytest.approx(0.72867, abs=1e-4)


def test_boo_n_large_m_and_n_is_finite_and_bounded():
    x = np.random.default_rng(1).random(5000)
    value = boo_n(x, 200)
    assert np.isfinite(value) and x.min() <= value <= x.max()


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_boo_n_matches_boon_package_with_ties(asreader, n):
    # 370 runs with many tied validation values; 370**5 still fits in int64.
    valid, test = asreader[:, 1], asreader[:, 2]
    assert np.unique(valid).size < valid.size  # the table really has ties
    expected = boon_pkg.boo(valid, test, n=n)
    assert boo_n(test, n, valid=valid) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [1, 5, 10])
def test_boo_n_matches_boon_package_resnet(resnet, n):
    valid, test = resnet[:, 1], resnet[:, 2]
    assert boo_n(test, n, valid=valid) == pytest.approx(boon_pkg.boo(valid, test, n=n), rel=1e-12)
    assert boo_n(test, n, valid=valid, higher_is_better=False) == pytest.approx(
        boon_pkg.boo(valid, test, n=n, best="min"), rel=1e-12
    )


def test_boo_n_without_valid_is_expected_max_of_n_test_scores():
    x = np.array([0.3, 0.1, 0.7, 0.5])
    # E[max of 2 draws with replacement]: enumerate all 16 ordered pairs.
    assert boo_n(x, 2) == pytest.approx(np.maximum.outer(x, x).mean())
    assert boo_n(x, 2, higher_is_better=False) == pytest.approx(np.minimum.outer(x, x).mean())


# ---------------------------------------------------------------- Gaussian, eq. 6
def test_boo_n_gaussian_formula(resnet):
    valid, test = resnet[:, 1], resnet[:, 2]
    rho = np.corrcoef(valid, test)[0, 1]
    expected = test.mean() + rho * test.std(ddof=1) * expected_max_normal(5)
    assert boo_n_gaussian(test, 5, valid=valid) == pytest.approx(expected)
    lower = test.mean() - rho * test.std(ddof=1) * expected_max_normal(5)
    assert boo_n_gaussian(test, 5, valid=valid, higher_is_better=False) == pytest.approx(lower)


def test_boo_n_gaussian_without_valid_uses_rho_one():
    x = [1.0, 2.0, 3.0, 4.0]
    assert boo_n_gaussian(x, 10) == pytest.approx(2.5 + np.std(x, ddof=1) * 1.5387527308)


def test_boo_n_gaussian_constant_valid_means_random_pick():
    assert boo_n_gaussian([1.0, 2.0, 3.0], 5, valid=[0.5, 0.5, 0.5]) == pytest.approx(2.0)


def test_boo_n_gaussian_close_to_nonparametric_on_real_runs(resnet):
    valid, test = resnet[:, 1], resnet[:, 2]
    assert boo_n_gaussian(test, 5, valid=valid) == pytest.approx(boo_n(test, 5, valid=valid), abs=2e-3)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: expected_max_normal(0), r"`n` must be an integer >= 1 \(got 0\)"),
        (lambda: expected_max_normal(2.5), r"`n` must be an integer >= 1"),
        (lambda: expected_max_normal(True), r"`n` must be an integer >= 1"),
        (lambda: boo_n([], 2), r"`test` must not be empty"),
        (lambda: boo_n([1.0, np.nan], 2), r"`test` contains NaN or inf \(at index 1\)"),
        (lambda: boo_n([[1.0, 2.0]], 2), r"`test` must be 1-D"),
        (lambda: boo_n(["a", "b"], 2), r"`test` must be an array of real numbers"),
        (lambda: boo_n([1.0, 2.0], 2, valid=[1.0]), r"`valid` and `test` must have the same length \(got 1 and 2\)"),
        (lambda: boo_n([1.0, 2.0], 2, valid=[1.0, np.inf]), r"`valid` contains NaN or inf"),
        (lambda: boo_n([1.0, 2.0], 2, higher_is_better="yes"), r"`higher_is_better` must be True or False"),
        (lambda: boo_n_gaussian([1.0], 2), r"`test` needs at least 2 values"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
