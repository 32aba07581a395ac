"""Issue 23, the coverage table's last cells: the mean below 6 runs and the unbiased Boo_n's bootstrap-t.

* The mean's interval is kept inside the runs' range, so with k runs it covers at most 1 - 2/2^k of true
  means (93.75 % at k = 5; measured 92.1-92.7 %): the board shows none below 6 runs, and says why, nor
  rank intervals on a board ranked by the mean (88-92 % at k = 5), from one rule
  (:func:`evaluation.stats.bootstrap.mean_interval_shown`).
* The unbiased Boo_n is a U-statistic: a resample's U* has mean eq. 7 on the runs (the V-statistic), so
  the bootstrap-t centres t* there (Efron & Tibshirani 1993, §12.5), not at U (92.7 % at k = 30 before).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation import stats as es
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.coverage import coverage_notes
from evaluation.report.secondary import MetricInfo, secondary_value
from evaluation.stats import _resample as rs
from evaluation.stats.bootstrap import jackknife_se, l_weights, mean_interval_shown, seeded_intervals


def _recipes(k: int, seed: int = 0, secondary: bool = False) -> list[EntryRuns]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(4):
        test = 0.80 + 0.003 * i + (0.005 + 0.01 * i) * rng.standard_normal(k)
        extra = {"f1": (test - 0.1 + 0.01 * rng.standard_normal(k), None)} if secondary else None
        out.append(EntryRuns(i + 1, f"m{i}", f"t{i}", "recipe", k, np.arange(k), test, secondary=extra))
    return out


def test_one_rule_decides_where_the_mean_has_an_interval():
    assert [mean_interval_shown(k) for k in (2, 5, 6, 30)] == [False, False, True, True]


def test_a_board_of_5_runs_shows_the_mean_without_an_interval_and_says_why():
    """Before: [low, high] inside the runs' range at k = 5, covering 92.1-92.7 %, quoted as shown."""
    few = build_report(_recipes(5), ReportSettings(statistic="mean", k_runs=5, n_resamples=300))
    for row in few["entries"]:
        assert row["mean"]["low"] is None and row["mean"]["high"] is None
        assert row["mean"]["estimate"] is not None and row["mean"]["se"] > 0  # the state of the art still has it
        assert "no interval of the mean below 6 runs" in row["mean"]["warning"]
        assert row["rank_interval"] is None and row["rank"] is not None  # ranked, with no rank interval
    notes = {n["interval"]: n for n in few["settings"]["coverage"]}
    assert notes["recipe.mean"]["shown"] is False and notes["recipe.mean"]["coverage"] is None
    assert "93.8%" in notes["recipe.mean"]["reason"]
    assert notes["recipe.rank"]["shown"] is False and "ranked by the mean" in notes["recipe.rank"]["reason"]
    enough = build_report(_recipes(6), ReportSettings(statistic="mean", k_runs=6, n_resamples=300))
    for row in enough["entries"]:
        assert row["mean"]["low"] <= row["mean"]["estimate"] <= row["mean"]["high"]
        assert row["mean"].get("warning") is None
        assert row["rank_interval"] is None  # a mean board's rank interval needs 16 paired runs (rank23)


def test_a_secondary_metric_of_5_runs_has_no_interval_either():
    metric = MetricInfo("f1", "F1", True)
    for k, shown in ((5, False), (6, True)):
        e = _recipes(k, secondary=True)[0]
        value = secondary_value(e, metric, ReportSettings(k_runs=k, n_resamples=300))
        assert (value["mean"]["low"] is not None) == shown
        assert shown or "below 6 runs" in value["mean"]["warning"]


@pytest.mark.parametrize("statistic", ["mean", "boo_n"])
def test_rank_note_quotes_the_board_ranked_by_the_same_statistic(statistic):
    """Before: a mean board quoted the rank coverage measured on a Boo_5 board (and none was measured for it)."""
    (note,) = [n for n in coverage_notes(50, ("recipe.rank",), n=5, statistic=statistic)]
    assert note["interval"] == "recipe.rank" and note["shown"] and note["coverage"] is not None
    other = coverage_notes(50, ("recipe.rank",), n=5, statistic="boo_n" if statistic == "mean" else "mean")
    assert other[0]["coverage"] != note["coverage"]


def _reference_unbiased(x, n, counts, level):
    """Bootstrap-t by hand (Efron & Tibshirani 1993, §12.5) from the resamples' counts: t* = (U* - V)/se*,
    V = eq. 7 on the runs (the parameter of the resampled population), limits inside [min U*, max U*]."""
    k = x.size
    x = np.sort(x)
    w_u, w_v = l_weights("boo_n", k, n, "unbiased"), l_weights("boo_n", k, n, "paper")
    u, v = float(w_u @ x), float(w_v @ x)
    resamples = np.stack([np.repeat(x, c) for c in counts])  # sorted, as the runs
    boot = resamples @ w_u
    se_star = jackknife_se(resamples, l_weights("boo_n", k - 1, n, "unbiased"))
    tstar = (boot - v) / se_star
    se = jackknife_se(x[None], l_weights("boo_n", k - 1, n, "unbiased"))[0]
    t_lo, t_hi = np.percentile(tstar, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    low, high = max(u - t_hi * se, boot.min()), min(u - t_lo * se, boot.max())
    return min(low, u), max(high, u)


def test_unbiased_boo_n_bootstrap_t_is_centred_at_the_resampled_populations_boo_n(monkeypatch):
    """Before: t* = (U* - U)/se*, off by U - V (the bias the estimator removes) in every resample."""
    drawn = []
    draw = rs.draw_counts

    def recording(*args, **kwargs):
        drawn.append(draw(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(rs, "draw_counts", recording)
    x = 0.8 + 0.02 * np.random.default_rng(7).standard_normal(14)
    ci = es.bootstrap_interval(x, "boo_n", n=3, n_resamples=400, rng=5, estimator="unbiased")
    counts = np.concatenate(drawn)
    assert counts.shape == (400, 14)
    low, high = _reference_unbiased(x, 3, counts, 0.95)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)
    # the resampled U* average V, not U: that is why t* is centred there
    v = float(l_weights("boo_n", 14, 3, "paper") @ np.sort(x))
    assert abs(ci.bootstrap_distribution.mean() - v) < abs(ci.bootstrap_distribution.mean() - ci.estimate)


def test_the_report_path_centres_the_unbiased_bootstrap_t_the_same_way():
    x = 0.8 + 0.02 * np.random.default_rng(8).standard_normal((3, 16))
    low, high = seeded_intervals(x, [11, 12, 13], "boo_n", n=5, n_resamples=300, estimator="unbiased")
    one = es.bootstrap_interval(x, "boo_n", n=5, n_resamples=300, rng=11, estimator="unbiased")
    assert low[0] == pytest.approx(one.low[0], abs=1e-12) and high[0] == pytest.approx(one.high[0], abs=1e-12)


def test_the_page_names_a_flagged_rank_interval_with_its_range():
    """Before: a mean board at k = 10 quoted its rank interval's 96.3 % (5 entries) as fine, though on 30 close
    entries the same interval covers 90.5 %; the page named the range and which end is outside. From 16 runs, the
    first k a mean board shows it at (rank23), only the upper end is outside."""
    from leaderboard.web.presenters import coverage_for_section

    board = build_report(_recipes(16), ReportSettings(statistic="mean", boo_n=5, k_runs=16, n_resamples=200))
    flags = coverage_for_section("recipe", board["settings"])["coverage_flags"]
    assert [f["label"] for f in flags] == ["rank"]
    assert "covers 93.0-98.5 %" in flags[0]["reason"] and "many close entries" not in flags[0]["reason"]
    at30 = build_report(_recipes(30), ReportSettings(statistic="mean", boo_n=5, k_runs=30, n_resamples=200))
    (flag,) = coverage_for_section("recipe", at30["settings"])["coverage_flags"]
    assert "95.7-99.1 %" in flag["reason"] and "conservative" in flag["reason"] and "close" not in flag["reason"]
    assert "above its level on few distinct entries" in flag["reason"]


def test_a_board_between_the_simulated_ks_quotes_the_first_k_it_shows_intervals_at():
    """Before: a mean board of 7 runs showed rank intervals (and the mean's) with no coverage quoted and no word
    on the page (the nearest simulated k, 5, has none: nothing is shown there); then "has no coverage measured at
    this k". The first k the board shows them at is measured now: the mean's interval at 6 covers 94.7 %; the rank
    interval, shown from 16 (rank23), covers 93.0-98.5 % there, flagged for its upper end."""
    from leaderboard.web.presenters import coverage_for_section

    board = build_report(_recipes(7), ReportSettings(statistic="mean", boo_n=5, k_runs=7, n_resamples=200))
    assert not coverage_for_section("recipe", board["settings"])["coverage_flags"]  # the rank interval: withheld
    notes = {n["interval"]: n for n in board["settings"]["coverage"]}
    assert notes["recipe.mean"]["k"] == 6 and notes["recipe.mean"]["ok"] and not notes["recipe.rank"]["shown"]
    board = build_report(_recipes(17), ReportSettings(statistic="mean", boo_n=5, k_runs=17, n_resamples=200))
    flags = {f["label"]: f["reason"] for f in coverage_for_section("recipe", board["settings"])["coverage_flags"]}
    assert set(flags) == {"rank"} and "covers 93.0-98.5 %" in flags["rank"]
    assert {n["interval"]: n for n in board["settings"]["coverage"]}["recipe.rank"]["k"] == 16


def test_the_rank_range_holds_the_quoted_coverage():
    """RANK_RANGE's ends are the lowest and highest of the benchmark's three board shapes, COVERAGE the 5-entry
    board's: the quoted figure lies in the range, and both are measured where the board shows rank intervals."""
    from evaluation.report.coverage import COVERAGE, RANK_RANGE

    for key, by_k in RANK_RANGE.items():
        assert set(by_k) == {k for k, value in COVERAGE[key].items() if value is not None}
        for k, (low, high) in by_k.items():
            assert low <= COVERAGE[key][k] <= high


def test_a_board_whose_metric_is_not_accuracy_quotes_no_accuracy_coverage():
    """Noticed in a host's trial: a scoring program's board (and an RMSE board) quoted the coverage measured for
    accuracy's intervals as its own. The prediction figures are quoted on accuracy-like boards only."""

    accuracy = {n["interval"]: n for n in coverage_notes(10)}
    other = {n["interval"]: n for n in coverage_notes(10, accuracy_like=False)}
    assert accuracy["predictions.accuracy"]["coverage"] == 0.963 and accuracy["predictions.accuracy"]["ok"]
    for key in ("predictions.accuracy", "predictions.accuracy_files"):
        assert other[key]["coverage"] is None and not other[key]["ok"]
        assert "measured it on accuracy only, not on this board" in other[key]["reason"]
    assert other["recipe.mean"] == accuracy["recipe.mean"]  # the runs' figures do not depend on the metric
