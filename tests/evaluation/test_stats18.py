"""stats18's findings: a row's estimates and intervals lie inside the hull of its runs (issue 23, row 3).

Boo_n (both estimators), its curve and the mean are averages of the runs with weights summing to 1 (Bajgar et al.
2018, eq. 7): mathematically inside [min run, max run]. Computed, the weights sum to 1 to rounding only, so 21
perfect runs (accuracy 1.0 each) showed Boo_2 = 1.0000000000000002, an accuracy above 1, with the interval
[1.0, 1.0000000000000002] past the metric's range, and ten runs of 0.8 the mean's interval [0.8, 0.8000000000000002].
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report

_STATISTICS = ("mean", "boo_n", "boo_n_unbiased")


@pytest.mark.parametrize("higher_is_better", [True, False])
@pytest.mark.parametrize("value", [1.0, 0.8, 0.7, 0.3])
@pytest.mark.parametrize("k", [10, 21, 30])
def test_constant_runs_show_their_value_for_every_statistic(k, value, higher_is_better):
    entry = EntryRuns(1, "constant", "t", "recipe", k, np.arange(k), np.full(k, value))
    report_settings = ReportSettings(
        n_resamples=50, k_runs=k, boo_n=2, higher_is_better=higher_is_better, score_range=(0.0, 1.0)
    )
    (row,) = build_report([entry], report_settings)["entries"]
    for statistic in _STATISTICS:
        shown = row[statistic]
        assert shown["estimate"] == value, (statistic, shown)
        if shown["low"] is not None:
            assert shown["low"] == shown["high"] == value, (statistic, shown)
    assert row["boo_n_curve"] == [value] * len(row["boo_n_curve"])


@pytest.mark.parametrize("higher_is_better", [True, False])
@pytest.mark.parametrize("seed", range(40))
def test_every_estimate_and_limit_lies_inside_the_runs_hull(seed, higher_is_better):
    """Runs at the metric's bound (accuracies of 1.0 beside a few below it), any number of them: no estimate,
    curve point or limit leaves [min run, max run], so none leaves [0, 1]."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(10, 40))
    test = np.where(rng.random(k) < 0.8, 1.0, np.round(rng.uniform(0.9, 1.0, k), 3))
    valid = None if seed % 2 else np.round(rng.uniform(0.9, 1.0, k), 2)
    entry = EntryRuns(1, "near one", "t", "recipe", k, np.arange(k), test, valid=valid)
    report_settings = ReportSettings(
        n_resamples=50,
        k_runs=k,
        boo_n=int(rng.integers(1, 4)),
        higher_is_better=higher_is_better,
        score_range=(0.0, 1.0),
        master_seed=seed,
    )
    (row,) = build_report([entry], report_settings)["entries"]
    for statistic in _STATISTICS:
        values = [row[statistic][key] for key in ("estimate", "low", "high")]
        for value in values:
            assert value is None or test.min() <= value <= test.max(), (statistic, row[statistic])
    assert all(test.min() <= v <= test.max() for v in row["boo_n_curve"]), row["boo_n_curve"]
