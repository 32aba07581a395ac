"""Issue 23, rows 3 and 6: the board's Boo_n interval (BCa, from 3n runs) and the accuracy of a
prediction entry with several files (Wilson at the design-effect sample size)."""

import numpy as np
import pytest
from scipy import stats

from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.stats import boo_n, bootstrap_interval, paired_test_bootstrap
from evaluation.stats.boon import min_runs_for_interval
from evaluation.stats.bootstrap import seeded_intervals
from evaluation.stats.proportions import wilson


def _runs(k, seed=0):
    rng = np.random.default_rng(seed)
    test = 0.8 + 0.02 * rng.standard_normal(k)
    return test, test + 0.01 * rng.standard_normal(k)


@pytest.mark.parametrize("k,seed", [(15, 0), (30, 1), (20, 2)])
def test_row3_boo_n_bca_is_scipys_bca(k, seed):
    """Reference: scipy.stats.bootstrap(method='BCa') on the (test, valid) pairs, B = 4000 (its own
    resamples): the limits agree to Monte Carlo error, 0.15 σ of the runs (σ = 0.02)."""
    test, valid = _runs(k, seed)
    ours = bootstrap_interval(test, "boo_n", n=5, valid=valid, n_resamples=20_000, rng=seed, method="bca")
    ref = stats.bootstrap(
        (test, valid),
        lambda t, v: boo_n(t, 5, valid=v),
        paired=True,
        vectorized=False,
        method="BCa",
        n_resamples=4000,
        random_state=seed,
    ).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.003) and ours.high == pytest.approx(ref.high, abs=0.003)


@pytest.mark.parametrize("k", [5, 10, 15])
def test_row3_boo_n_interval_lies_in_its_bootstrap_support(k):
    """Before: the bootstrap-t gave 46 σ at k = 5 and upper limits past the best run + 1 sd."""
    rng = np.random.default_rng(k)
    test, valid = 0.8 + 0.02 * rng.standard_normal((2, 200, k))
    ci = bootstrap_interval(test, "boo_n", n=5, valid=valid, n_resamples=1000, rng=3)
    boot = ci.bootstrap_distribution
    assert np.all(boot.min(axis=1) <= ci.low) and np.all(ci.high <= boot.max(axis=1))
    assert np.all(ci.high <= test.max(axis=1))  # a weighted mean of the runs never passes the best one
    assert np.all((ci.low <= ci.estimate) & (ci.estimate <= ci.high))


def test_row3_bca_acceleration_is_the_jackknife_skewness():
    """Zero acceleration would make BCa the bias-corrected percentile interval: on skewed runs the
    limits differ, and equal scipy's BCa (which uses the same jackknife) to Monte Carlo error."""
    from evaluation.stats.bootstrap import _bca_limits

    rng = np.random.default_rng(11)
    test = 0.8 + 0.02 * (rng.gamma(1.0, size=30) - 1.0)
    ci = bootstrap_interval(test, "mean", n_resamples=20_000, rng=1, method="bca")
    bc = _bca_limits(ci.bootstrap_distribution[None], np.array([ci.estimate]), None, 0.95)
    ref = stats.bootstrap((test,), np.mean, method="BCa", n_resamples=20_000, random_state=1).confidence_interval
    assert ci.low == pytest.approx(ref.low, abs=4e-4) and ci.high == pytest.approx(ref.high, abs=4e-4)
    assert abs(ci.high - bc[1][0]) > 4e-4


def test_row3_seeded_intervals_give_the_boards_boo_n_interval():
    test, valid = _runs(20, 4)
    low, high = seeded_intervals(test[None], [7], "boo_n", n=5, valid=valid[None], n_resamples=2000)
    ci = bootstrap_interval(test, "boo_n", n=5, valid=valid, n_resamples=2000, rng=7)
    assert low[0] == pytest.approx(ci.low, abs=1e-12) and high[0] == pytest.approx(ci.high, abs=1e-12)


def _recipe(i, k, rng):
    test = 0.8 + 0.02 * rng.standard_normal(k)
    return EntryRuns(i, f"m{i}", "t", "recipe", k, np.arange(k), test, valid=test + 0.01 * rng.standard_normal(k))


def test_row3_board_shows_no_boo_n_interval_below_10n_and_says_why():
    """Below 10n runs the board's Boo_n interval covers less than its level (84-88 % at 3n, the rule until
    2026-12-01: ``benchmarks/bench_coverage.py``): no interval, and why."""
    rng = np.random.default_rng(2)
    assert min_runs_for_interval(5) == 50
    few = build_report([_recipe(1, 30, rng), _recipe(2, 30, rng)], ReportSettings(k_runs=30, boo_n=5, n_resamples=300))
    for row in few["entries"]:
        assert row["boo_n"]["low"] is None and row["boo_n_unbiased"]["low"] is None
        assert "no interval" in row["boo_n"]["warning"] and "50" in row["boo_n"]["warning"]
        assert row["mean"]["low"] is not None
    enough = build_report(
        [_recipe(1, 50, rng), _recipe(2, 50, rng)], ReportSettings(k_runs=50, boo_n=5, n_resamples=300)
    )
    for row in enough["entries"]:
        assert row["boo_n"]["method"] == "studentized bootstrap" and row["boo_n"]["warning"] is None
        assert row["boo_n"]["low"] <= row["boo_n"]["estimate"] <= row["boo_n"]["high"] <= max(row["run_scores"])


def test_row3_settings_coverage_flags_width_and_coverage():
    from evaluation.report.coverage import coverage_notes

    notes = {n["interval"]: n for n in coverage_notes(30, n=5)}
    assert notes["recipe.boo_n"]["shown"] is False and notes["recipe.boo_n"]["coverage"] is None
    at30 = {n["interval"]: n for n in coverage_notes(50, n=5)}
    assert at30["recipe.boo_n"]["shown"] and at30["recipe.boo_n"]["ok"]  # 93.9 % at 1.16x BCa's width
    at5 = {n["interval"]: n for n in coverage_notes(5, n=5)}
    assert not at5["recipe.mean"]["ok"] and "93.8%" in at5["recipe.mean"]["reason"]  # the runs' range bound
    assert all(
        n["ok"] == (0.93 <= n["coverage"] <= 0.97 and (n["width_ratio"] or 0) <= 1.5)
        for n in at30.values()
        if n["shown"]
    )


@pytest.mark.parametrize("value", [1.0, 0.0])
def test_row6_files_all_equal_get_a_score_interval_not_a_point(value):
    """Before: Welch t gave 5 files all correct [1, 1]; one such file gets Wilson [0.987, 1]."""
    files = np.full((5, 300), value)
    res = paired_test_bootstrap(files=[files, files[:1]], n_resamples=50, rng=0)
    assert list(res.entry_method) == ["wilson-deff", "wilson"]
    assert res.high[0] - res.low[0] > 0.01
    pooled = wilson(np.array([value * 1500]), np.array([1500]), 0.05)
    assert res.low[0] <= pooled[0][0] + 1e-15 and res.high[0] >= pooled[1][0] - 1e-15
    assert (res.low[0], res.high[0]) == pytest.approx((res.low[1], res.high[1]))  # every file counted once


def test_row6_files_interval_is_wilson_at_kish_effective_n_and_never_narrower_than_pooled():
    rng = np.random.default_rng(6)
    p = rng.beta(8, 2, 400)
    for tau in (0.0, 0.05):  # no seed effect, then a strong one
        files = (rng.random((5, 400)) < np.clip(p + tau * rng.standard_normal((5, 1)), 0, 1)).astype(float)
        res = paired_test_bootstrap(files=[files], n_resamples=50, rng=0)
        phat = files.mean()
        var = files.mean(axis=0).var(ddof=1) / 400 + files.mean(axis=1).var(ddof=1) / 5  # examples + files
        n_eff = min(phat * (1 - phat) / var, 2000)
        ref = wilson(np.array([phat * n_eff]), np.array([n_eff]), 0.05)
        assert (res.low[0], res.high[0]) == pytest.approx((ref[0][0], ref[1][0]), abs=1e-12)
        pooled = wilson(np.array([files.sum()]), np.array([2000]), 0.05)
        assert res.high[0] - res.low[0] >= pooled[1][0] - pooled[0][0] - 1e-15


def test_row6_board_labels_the_files_interval():
    rng = np.random.default_rng(8)
    e = EntryRuns(9, "p", "t", "predictions", 5, np.arange(5), np.ones(5), outcomes=np.ones((5, 200)))
    other = EntryRuns(
        10,
        "q",
        "t",
        "predictions",
        1,
        np.arange(1),
        np.array([0.8]),
        outcomes=(rng.random((1, 200)) < 0.8).astype(float),
    )
    rows = {
        r["submission_id"]: r for r in build_report([e, other], ReportSettings(k_runs=5, n_resamples=200))["entries"]
    }
    assert rows[9]["mean"]["method"].startswith("Wilson score interval at the design-effect")
    assert rows[9]["mean"]["low"] < 0.99 and rows[9]["mean"]["high"] == 1.0
