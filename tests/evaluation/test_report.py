"""The leaderboard report (evaluation.report) against evaluation.stats called directly."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from evaluation import stats
from evaluation.report import EntryRuns, ReportSettings, build_report, derive_seed
from evaluation.report.coverage import coverage_notes
from evaluation.report.secondary import MetricInfo

B = 300
RECIPE, PREDICTIONS = 1, 2  # section codes of derive_seed
MEAN, BOO, PAIRS, RANKS = 1, 2, 3, 4  # purposes of derive_seed


def recipe(i, test, *, valid=None, index=None, name=None, team="t"):
    test = np.asarray(test, dtype=float)
    return EntryRuns(
        i,
        name or f"m{i}",
        team,
        "recipe",
        10,
        np.arange(test.size) if index is None else np.asarray(index),
        test,
        valid=None if valid is None else np.asarray(valid, dtype=float),
    )


def prediction(i, outcomes, *, name=None):
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    return EntryRuns(
        i,
        name or f"p{i}",
        "t",
        "predictions",
        outcomes.shape[0],
        np.arange(outcomes.shape[0]),
        outcomes.mean(axis=1),
        outcomes=outcomes,
    )


def settings(**kw):
    base = dict(n_resamples=B, k_runs=10, master_seed=11, boo_n=3)
    base.update(kw)
    return ReportSettings(**base)


@pytest.fixture(scope="module")
def recipes():
    rng = np.random.default_rng(0)
    return [
        recipe(i + 1, 0.70 + 0.012 * i + 0.01 * rng.standard_normal(10), valid=0.7 + 0.01 * rng.standard_normal(10))
        for i in range(4)
    ]


def by_id(report):
    return {row["submission_id"]: row for row in report["entries"]}


def test_recipe_boo_n_intervals_match_stats():
    """Boo_n's intervals (both estimators) are the stats' own, seeded by the entry (20 runs: Boo_2 needs 10n)."""
    rng = np.random.default_rng(1)
    entries = [
        EntryRuns(
            i,
            f"m{i}",
            "t",
            "recipe",
            20,
            np.arange(20),
            0.7 + 0.01 * rng.standard_normal(20),
            valid=0.7 + 0.01 * rng.standard_normal(20),
        )
        for i in (1, 2)
    ]
    rows = by_id(build_report(entries, settings(boo_n=2, k_runs=20)))
    for e in entries:
        for key, estimator, purpose in (("boo_n", "paper", BOO), ("boo_n_unbiased", "unbiased", 5)):
            ci = stats.bootstrap_interval(
                e.test,
                "boo_n",
                n=2,
                valid=e.valid,
                n_resamples=B,
                estimator=estimator,
                rng=derive_seed(11, RECIPE, purpose, e.id),
            )
            assert (rows[e.id][key]["low"], rows[e.id][key]["high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
            assert rows[e.id][key]["estimate"] == pytest.approx(
                stats.boo_n(e.test, 2, valid=e.valid, estimator=estimator)
            )


def test_recipe_section_matches_stats(recipes):
    s = settings(boo_n=1)  # Boo_n's interval needs 10n runs (Boo_1: the mean's 6): these entries have 10
    report = build_report(recipes, s)
    rows = by_id(report)
    for e in recipes:
        row = rows[e.id]
        mean = stats.bootstrap_interval(
            e.test, "mean", n_resamples=B, confidence_level=0.95, rng=derive_seed(11, RECIPE, MEAN, e.id)
        )
        assert row["mean"]["estimate"] == pytest.approx(e.test.mean(), abs=1e-15)
        assert (row["mean"]["low"], row["mean"]["high"]) == pytest.approx((mean.low, mean.high), abs=1e-12)
        assert row["boo_n"]["estimate"] == pytest.approx(stats.boo_n(e.test, 1, valid=e.valid), abs=1e-15)
        assert (row["boo_n"]["low"], row["boo_n"]["high"]) == (row["mean"]["low"], row["mean"]["high"])  # Boo_1
        assert row["std"] == pytest.approx(np.std(e.test, ddof=1)) and row["median"] == np.median(e.test)
        assert row["runs_needed_for_decision"] == stats.runs_needed(4, gamma=0.75).for_power - 10
        assert row["mean"]["se"] == pytest.approx(np.std(e.test, ddof=1) / np.sqrt(10))  # ddof = 1, not 0
        assert row["boo_n_unbiased"]["estimate"] == pytest.approx(
            stats.boo_n(e.test, 1, valid=e.valid, estimator="unbiased")
        )
        assert (row["boo_n_unbiased"]["low"], row["boo_n_unbiased"]["high"]) == (
            row["mean"]["low"],
            row["mean"]["high"],
        )
        curve = [stats.boo_n(e.test, n, valid=e.valid) for n in range(1, 11)]
        np.testing.assert_allclose(row["boo_n_curve"], curve, rtol=1e-12)
    table = np.stack([e.test for e in recipes])
    res = stats.pairwise_comparisons(table, paired=True, n_resamples=B, rng=derive_seed(11, RECIPE, PAIRS))
    ranks = stats.rank_intervals(table, paired=True, n_resamples=B, rng=derive_seed(11, RECIPE, RANKS))
    (section,) = report["sections"]
    assert len(section["comparisons"]) == 6 and section["paired_runs"] == list(range(10))
    for pair in section["comparisons"]:
        i, j = pair["a"] - 1, pair["b"] - 1
        assert (pair["p"], pair["low"], pair["high"]) == (res.p[i, j], res.low[i, j], res.high[i, j])
        assert pair["pvalue"] == res.pvalue[i, j]
        assert (pair["verdict"] == "a_better") == bool(res.better[i, j])
    for e in recipes:  # 10 paired runs: a mean board's rank interval needs 16 (rank23)
        assert rows[e.id]["rank_interval"] is None and ranks.rank[e.id - 1] == rows[e.id]["rank"]
    assert [r["submission_id"] for r in report["entries"]] == [4, 3, 2, 1]  # by mean, best first
    assert report["entries"][0]["groups"].startswith("a")
    assert section["runs_needed"]["entries"] == 4 and report["settings"]["runs_needed"][0]["entries"] == 2


def test_recipe_rank_intervals_match_stats_from_16_runs():
    """From 16 paired runs a mean board shows each entry's rank interval: the stats' own (rank23)."""
    rng = np.random.default_rng(0)
    entries = [recipe(i + 1, 0.70 + 0.012 * i + 0.01 * rng.standard_normal(16)) for i in range(4)]
    rows = by_id(build_report(entries, settings(k_runs=16)))
    table = np.stack([e.test for e in entries])
    ranks = stats.rank_intervals(table, paired=True, n_resamples=B, rng=derive_seed(11, RECIPE, RANKS))
    for e in entries:
        expected = {"rank": ranks.rank[e.id - 1], "low": ranks.low[e.id - 1], "high": ranks.high[e.id - 1]}
        assert rows[e.id]["rank_interval"] == {**expected, "widened": False}


def test_prediction_section_matches_paired_test_bootstrap():
    rng = np.random.default_rng(1)
    entries = [
        prediction(10, rng.random((1, 400)) < 0.80),
        prediction(20, rng.random((3, 400)) < 0.70),
        prediction(30, rng.random((1, 400)) < 0.79),
    ]
    report = build_report(entries, settings(accuracy_like=True, m_total_predictions=25))
    tb = stats.paired_test_bootstrap(
        files=[e.outcomes for e in entries],
        n_resamples=B,
        confidence_level=0.95,
        rng=derive_seed(11, PREDICTIONS, PAIRS),
        priority=[0, 2, 1],
    )
    rows = by_id(report)
    for i, e in enumerate(entries):
        assert rows[e.id]["mean"]["low"] == pytest.approx(tb.low[i])
        assert rows[e.id]["mean"]["high"] == pytest.approx(tb.high[i])
        assert rows[e.id]["runs_needed_for_decision"] is None and not rows[e.id]["too_few_runs"]
    # Three files: the spread between them counts (Welch), not only the test examples.
    assert rows[20]["mean"]["source"] == "test examples and files" and rows[10]["mean"]["source"] == "test examples"
    assert rows[10]["mean"]["method"] == "Wilson score interval"
    pair = next(p for p in report["sections"][0]["comparisons"] if {p["a"], p["b"]} == {10, 30})
    i, j = (0, 2) if pair["a"] == 10 else (2, 0)
    assert pair["p"] == tb.comparisons.p[i, j] and pair["pvalue"] == tb.comparisons.pvalue[i, j]
    sota = report["sections"][0]["sota"]
    best = max(rows[e.id]["mean"]["estimate"] for e in entries)
    estimates = [rows[e.id]["mean"]["estimate"] for e in entries]
    rho, distinct = stats.outcome_dependence([e.outcomes.mean(axis=0) for e in entries])  # eq. 10's dependence
    expected = stats.adjusted_sota(best, 25, n=400, estimates=estimates, rho=rho)
    assert distinct == 3 and sota["rho"] == rho and sota["duplicates"] == 0
    assert (sota["raw"], sota["estimate"], sota["bound"]) == (best, expected.estimate, expected.lower)
    assert sota["method"] == "binomial" and sota["m"] == 25


def test_boo_n_curve_with_tied_validation_scores_and_a_loss():
    e = recipe(1, [0.3, 0.1, 0.4, 0.2, 0.5, 0.6], valid=[1, 1, 2, 0, 2, 3])
    for hib in (True, False):
        row = build_report([e], settings(higher_is_better=hib))["entries"][0]
        curve = [stats.boo_n(e.test, n, valid=e.valid, higher_is_better=hib) for n in range(1, 7)]
        np.testing.assert_allclose(row["boo_n_curve"], curve, rtol=1e-12)
        assert row["boo_n"]["estimate"] == pytest.approx(curve[2])


def test_rmse_of_several_files_shows_the_pooled_score_its_interval_and_ranks_are_of():
    """Two files with RMSE ~1 and ~3 against two of ~2.15: the mean of the files' RMSEs (~2.0) would rank
    the first entry first while its rank interval, its pairs and its interval are of the pooled RMSE (~2.24):
    the board showed rank 1 beside a rank interval of rank 2. Reference: √ of the mean squared error over
    every file's examples (and a secondary RMSE, the same)."""
    rng = np.random.default_rng(3)
    errors = [rng.standard_normal((2, 2000)) * np.array([[1.0], [3.0]]), rng.standard_normal((2, 2000)) * 2.15]
    squared = [e**2 for e in errors]
    rmse = MetricInfo("rmse", "RMSE", False, np.sqrt, (0.0, None))
    entries = [
        EntryRuns(
            i + 1,
            f"r{i}",
            "t",
            "predictions",
            2,
            np.arange(2),
            np.sqrt(sq.mean(axis=1)),
            outcomes=sq,
            secondary={"rmse": (np.sqrt(sq.mean(axis=1)), sq)},
        )
        for i, sq in enumerate(squared)
    ]
    s = settings(k_runs=2, higher_is_better=False, metric_from_mean=np.sqrt, m_total_predictions=2, secondary=(rmse,))
    report = build_report(entries, s)
    rows = {r["submission_id"]: r for r in report["entries"]}
    for sid, sq in zip((1, 2), squared):
        pooled = float(np.sqrt(sq.mean()))
        row = rows[sid]
        assert row["mean"]["estimate"] == pytest.approx(pooled, rel=1e-12)
        assert row["mean"]["low"] <= row["mean"]["estimate"] <= row["mean"]["high"]
        assert row["rank_interval"] is None  # 2 files: no rank interval below 6 (stats20); the order is below
        assert row["secondary"][0]["mean"]["estimate"] == pytest.approx(pooled, rel=1e-12)
    assert float(np.mean(rows[1]["run_scores"])) < 2.05 < rows[1]["mean"]["estimate"]  # the files' mean is not shown
    assert [r["submission_id"] for r in report["entries"]] == [2, 1]  # 2.158 < 2.255


def test_loss_predictions_use_from_mean_and_the_normal_sota():
    rng = np.random.default_rng(3)
    squared = [rng.gamma(2.0, scale, size=(1, 300)) for scale in (0.5, 0.8)]  # squared errors: RMSE
    entries = [
        EntryRuns(i + 1, f"r{i}", "t", "predictions", 1, np.arange(1), np.sqrt(sq.mean(axis=1)), outcomes=sq)
        for i, sq in enumerate(squared)
    ]
    report = build_report(entries, settings(higher_is_better=False, metric_from_mean=np.sqrt, m_total_predictions=9))
    tb = stats.paired_test_bootstrap(
        np.stack([sq[0] for sq in squared], axis=1),
        n_resamples=B,
        higher_is_better=False,
        rng=derive_seed(11, PREDICTIONS, PAIRS),
    )
    top = report["entries"][0]
    assert top["submission_id"] == 1  # the lower RMSE first
    assert (top["mean"]["low"], top["mean"]["high"]) == pytest.approx((np.sqrt(tb.low[0]), np.sqrt(tb.high[0])))
    assert top["mean"]["method"] == "Student t over test examples"
    sota = report["sections"][0]["sota"]
    rows = report["entries"]
    expected = stats.adjusted_sota(
        -top["mean"]["estimate"],
        9,
        standard_error=top["mean"]["se"],
        estimates=[-r["mean"]["estimate"] for r in rows],
        standard_errors=[r["mean"]["se"] for r in rows],
        rho=stats.outcome_dependence([sq[0] for sq in squared])[0],
    )
    assert sota["method"] == "normal" and sota["bound_side"] == "upper"
    assert (sota["estimate"], sota["bound"]) == pytest.approx((-expected.estimate, -expected.lower))
    assert sota["bound"] > sota["estimate"] > sota["raw"]  # a loss: adjusted upward
    assert top["mean"]["se"] == pytest.approx(tb.standard_error[0] / (2 * np.sqrt(tb.estimate[0])), rel=0.05)


def test_ties_share_a_rank_and_are_ordered_by_name_not_id():
    runs = [0.80, 0.82, 0.81, 0.79, 0.80]
    entries = [recipe(9, runs, name="alpha"), recipe(3, runs, name="beta"), recipe(5, np.array(runs) - 0.2)]
    report = build_report(entries, settings())
    first, second, third = report["entries"]
    assert (first["method_name"], second["method_name"]) == ("alpha", "beta")
    assert first["rank"] == second["rank"] == 1 and first["rank_display"] == second["rank_display"] == "=1"
    assert first["tied"] and second["tied"] and not third["tied"]
    assert third["rank"] == 3 and third["rank_display"] == "3"


def test_ranking_statistic_boo_n_and_loss_direction():
    low_mean_high_spread = [0.60, 0.90, 0.60, 0.90, 0.60, 0.90]
    steady = [0.76] * 6
    entries = [recipe(1, low_mean_high_spread), recipe(2, steady)]
    assert [r["submission_id"] for r in build_report(entries, settings())["entries"]] == [2, 1]
    by_boo = build_report(entries, settings(statistic="boo_n"))
    assert [r["submission_id"] for r in by_boo["entries"]] == [1, 2]
    assert by_boo["entries"][0]["ranking_value"] == by_boo["entries"][0]["boo_n"]["estimate"]
    loss = build_report(entries, settings(higher_is_better=False))
    assert [r["submission_id"] for r in loss["entries"]] == [1, 2]  # lower mean first
    assert loss["sections"][0]["sota"]["bound_side"] == "upper"


def test_too_few_runs_are_shown_flagged_and_excluded_and_partial_entries_compared(recipes):
    lonely = recipe(50, [0.99])
    partial = recipe(60, [0.95, 0.96, 0.97], index=[0, 1, 2])
    report = build_report([*recipes, lonely, partial], settings())
    rows = by_id(report)
    assert rows[50]["too_few_runs"] and not rows[50]["compared"] and rows[50]["rank"] is None
    assert "at least 2" in rows[50]["excluded_reason"]
    # sized for the board it joins: all six entries shown compared (five are compared now)
    assert rows[50]["runs_needed_for_decision"] == stats.runs_needed(6).for_power - 1
    assert rows[50]["mean"]["estimate"] == 0.99 and rows[50]["mean"]["low"] is None
    assert [r["submission_id"] for r in report["entries"]][-1:] == [50]  # unranked entries follow
    # The entry lacking runs the others share is compared on the seeds it has, ranked by its mean; its rank
    # interval is withheld (3 runs), and so are the others' on the 10 runs they share (a mean board's need 16, rank23).
    assert rows[60]["compared"] and rows[60]["rank"] == 1 and rows[60]["excluded_reason"] is None
    assert rows[60]["rank_interval"] is None
    section = report["sections"][0]
    assert sorted(section["compared"]) == [1, 2, 3, 4, 60] and section["paired_runs"] == list(range(10))
    assert all(rows[i]["rank_interval"] is None for i in (1, 2, 3, 4))
    assert any(60 in (p["a"], p["b"]) for p in section["comparisons"])
    assert all(50 not in (p["a"], p["b"]) for p in section["comparisons"])


def test_a_newcomer_never_evicts_an_entry_from_the_ranking():
    """A statistician's finding: two entries sharing 2 of their seeds were both ranked; a newcomer far below
    with all 10 seeds made the greedy core {newcomer, entry 1} and left the leader, entry 2, unranked ("lacks
    runs"). Every entry of 2 runs or more is now compared; the core only decides how ranks are resampled.
    And on random partial boards: adding an entry never takes one out of the ranking."""
    first = recipe(1, [0.80, 0.79, 0.81, 0.80, 0.78, 0.80, 0.81], index=[0, 2, 3, 6, 7, 8, 9])
    second = recipe(2, [0.80, 0.81, 0.80, 0.79], index=[1, 3, 5, 6])
    newcomer = recipe(99, 0.5 + 0.001 * np.arange(10))
    before = by_id(build_report([first, second], settings()))
    after = by_id(build_report([first, second, newcomer], settings()))
    assert before[2]["rank"] == after[2]["rank"] == 1 and before[1]["rank"] == after[1]["rank"] == 2
    assert after[99]["rank"] == 3 and all(r["compared"] for r in after.values())
    rng = np.random.default_rng(23)
    for _ in range(30):
        board = []
        for j in range(int(rng.integers(2, 6))):
            index = np.sort(rng.choice(10, size=int(rng.integers(2, 11)), replace=False))
            board.append(recipe(j + 1, 0.8 + 0.02 * rng.standard_normal(index.size), index=index))
        index = np.sort(rng.choice(10, size=int(rng.integers(2, 11)), replace=False))
        extra = recipe(77, rng.uniform(0.3, 0.9) + 0.02 * rng.standard_normal(index.size), index=index)
        s = settings(n_resamples=100)
        ranked = {r["submission_id"] for r in build_report(board, s)["entries"] if r["compared"]}
        assert ranked == {e.id for e in board}
        assert ranked <= {r["submission_id"] for r in build_report([*board, extra], s)["entries"] if r["compared"]}


def test_missing_run_shrinks_the_paired_set_when_that_keeps_more_pairs(recipes):
    gappy = recipe(70, recipes[0].test[1:] + 0.5, index=np.arange(1, 10))
    report = build_report([recipes[0], recipes[1], gappy], settings())
    assert report["sections"][0]["paired_runs"] == list(range(1, 10))
    assert all(row["compared"] for row in report["entries"])


def test_pairing_keeps_entries_rather_than_the_longest_run_set(recipes):
    long = recipe(80, np.linspace(0.6, 0.7, 40), name="long")  # e.g. k raised after the others ran
    report = build_report([*recipes, long], settings())
    assert report["sections"][0]["paired_runs"] == list(range(10))
    assert all(row["compared"] for row in report["entries"])


def test_report_is_deterministic_and_json_safe(recipes):
    rng = np.random.default_rng(2)
    preds = [prediction(100 + i, rng.random((2, 300)) < 0.7 + 0.05 * i) for i in range(3)]
    entries = [*recipes, *preds]
    a = build_report(entries, settings())
    b = build_report(list(reversed(entries)), settings())
    assert json.dumps(a, allow_nan=False, sort_keys=True) == json.dumps(b, allow_nan=False, sort_keys=True)
    assert [s["kind"] for s in a["sections"]] == ["recipe", "predictions"]
    assert build_report(entries, settings(master_seed=12)) != a
    # An entry's own intervals do not move when another entry arrives.
    more = build_report([*entries, recipe(99, np.linspace(0.5, 0.6, 10))], settings())
    assert by_id(more)[1]["mean"] == by_id(a)[1]["mean"]


def test_invalid_settings_and_entries_name_the_problem(recipes):
    with pytest.raises(ValueError, match="`statistic`"):
        build_report(recipes, settings(statistic="max"))
    with pytest.raises(ValueError, match="`gamma`"):
        build_report(recipes, settings(gamma=0.5))
    with pytest.raises(ValueError, match="appears twice"):
        build_report([recipes[0], recipes[0]], settings())
    with pytest.raises(ValueError, match="finite"):
        build_report([recipe(1, [0.5, np.nan])], settings())


# ---------------------------------------------------------------- the defects of the audit
def test_rank_intervals_resample_the_ranking_statistic():
    # Defect 1: ranked by Boo_n, the entry shown first got the rank interval [2, 2] (of the mean).
    rng = np.random.default_rng(4)
    spread = np.r_[np.full(10, 0.95), np.full(20, 0.50)] + 0.001 * rng.standard_normal(30)  # mean 0.65, Boo_3 0.82
    steady = 0.73 + 0.002 * rng.standard_normal(30)  # wins 20 of 30 seeds: not a verdict
    entries = [recipe(1, spread), recipe(2, steady)]
    report = build_report(entries, settings(statistic="boo_n", boo_n=3, n_resamples=1000))  # 10n = 30 runs
    first, second = report["entries"]
    assert report["sections"][0]["comparisons"][0]["verdict"] == "not_significant"
    assert first["submission_id"] == 1 and first["rank"] == 1
    assert first["rank_interval"]["low"] == 1 and not first["rank_interval"]["widened"]  # of Boo_3, not the mean's
    by_mean = stats.rank_intervals(np.stack([spread, steady]), n_resamples=1000)
    assert by_mean.low[0] == by_mean.high[0] == 2  # what resampling the mean said


def test_order_never_contradicts_a_verdict():
    # Defect 3: an outlier seed puts A first by the mean although B wins 29 of 30 seeds.
    rng = np.random.default_rng(8)
    b = 0.80 + 0.01 * rng.standard_normal(30)
    a = b - 0.01
    a[0] = 2.0  # one seed far off
    c = b - 0.2
    report = build_report([recipe(1, a, name="A"), recipe(2, b, name="B"), recipe(3, c, name="C")], settings())
    section = report["sections"][0]
    rows = by_id(report)
    assert rows[1]["mean"]["estimate"] > rows[2]["mean"]["estimate"]
    pair = next(p for p in section["comparisons"] if {p["a"], p["b"]} == {1, 2})
    assert pair["better"] == 2 and pair["inversion"]
    assert section["compared"][0] == 2 and rows[2]["rank"] == 1  # B first: it beats A
    assert section["inversions"] == [
        {"above": 2, "below": 1, "kind": "statistic", "reason": section["inversions"][0]["reason"]}
    ]
    assert 1 not in section["leader_group"]  # the leader group holds no entry beaten by another
    for p in section["comparisons"]:
        if p["better"] is not None:
            loser = p["b"] if p["better"] == p["a"] else p["a"]
            assert rows[p["better"]]["rank"] < rows[loser]["rank"]
            assert loser not in section["leader_group"]


def test_letters_after_z_are_compared_as_letters():
    # Defect 7: "a1" and "b1" were compared character by character and found to share "1".
    from evaluation.report.ranking import assign_ranks

    rows = [
        {"ranking_value": 0.5, "groups": "a1", "tied": False},
        {"ranking_value": 0.5, "groups": "b1", "tied": False},
    ]
    assign_ranks(rows)
    assert [r["rank_display"] for r in rows] == ["1", "2"]
    rows = [
        {"ranking_value": 0.5, "groups": "a1b1", "tied": False},
        {"ranking_value": 0.5, "groups": "b1", "tied": False},
    ]
    assign_ranks(rows)
    assert [r["rank_display"] for r in rows] == ["=1", "=1"]


def test_boo_n_with_fewer_than_10n_runs_is_flagged():
    report = build_report([recipe(1, np.linspace(0.6, 0.7, 29))], settings(boo_n=3, k_runs=29))
    row = report["entries"][0]
    assert "at least 10n = 30" in row["boo_n"]["warning"] and report["settings"]["boo_n_warning"]
    enough = build_report([recipe(1, np.linspace(0.6, 0.7, 30))], settings(boo_n=3, k_runs=30))
    assert enough["entries"][0]["boo_n"]["warning"] is None and not enough["settings"]["boo_n_warning"]


def test_boo_1_is_the_mean_and_gets_an_interval_when_the_mean_does():
    """Boo_1 weighs every run alike: it is the mean. With 5 runs the board showed Boo_1 = 0.9600 in
    [0.9500, 0.9878] beside the same mean without an interval (a new user's finding, 2026-11-30)."""
    five = build_report([recipe(1, np.linspace(0.94, 0.98, 5))], settings(boo_n=1, k_runs=5))["entries"][0]
    assert five["boo_n"]["estimate"] == pytest.approx(five["mean"]["estimate"])
    assert five["mean"]["low"] is None and five["boo_n"]["low"] is None
    assert "as for the mean" in five["boo_n"]["warning"]
    six = build_report([recipe(1, np.linspace(0.94, 0.98, 6))], settings(boo_n=1, k_runs=6))["entries"][0]
    assert six["mean"]["low"] is not None and six["boo_n"]["low"] is not None and six["boo_n"]["warning"] is None


def test_the_report_says_which_intervals_cover_less_than_they_claim():
    notes = {
        n["interval"]: n
        for n in build_report([recipe(1, np.linspace(0.6, 0.7, 10))], settings())["settings"]["coverage"]
    }
    assert notes["recipe.mean"]["k"] == 10 and notes["recipe.mean"]["ok"]
    # a board ranked by the mean shows no rank interval below 16 runs (rank23: on 30 close entries it covered 90.5 %
    # at 10), and says why; from 16 it quotes the mean board's rank coverage, flagged for over-covering
    assert not notes["recipe.rank"]["shown"] and "k = 10 < 16" in notes["recipe.rank"]["reason"]
    (rank,) = [n for n in coverage_notes(16, n=5, statistic="mean") if n["interval"] == "recipe.rank"]
    assert rank["coverage"] == 0.985 and not rank["ok"] and "93.0-98.5 %" in rank["reason"]
    by_boo = {n["interval"]: n for n in coverage_notes(50, n=5, statistic="boo_n")}
    assert not by_boo["recipe.rank"]["ok"] and "conservative" in by_boo["recipe.rank"]["reason"]


def test_intervals_are_clipped_to_the_values_the_score_can_take():
    """Five runs near accuracy 1: the bootstrap-t of the mean reached past 1 (1.02) until it was kept inside
    the runs' range (issue 23, row 3); the metric's range clips what remains."""
    from evaluation.report import EntryRuns, ReportSettings, build_report

    test = np.array([0.93, 0.95, 0.96, 0.99, 0.995, 0.999])  # 6 runs: the fewest with an interval of the mean
    entry = EntryRuns(1, "near one", "t", "recipe", 6, np.arange(6), test, valid=test.copy())
    loose = build_report([entry], ReportSettings(k_runs=6, boo_n=5, n_resamples=500))["entries"][0]
    clipped = build_report([entry], ReportSettings(k_runs=6, boo_n=5, n_resamples=500, score_range=(0.0, 1.0)))[
        "entries"
    ][0]
    assert test.min() <= loose["mean"]["low"] <= loose["mean"]["high"] <= test.max()  # inside the runs' range
    assert loose["boo_n"]["low"] is None and "no interval" in loose["boo_n"]["warning"]  # k = 6 < 3n: none
    for key in ("mean", "boo_n", "boo_n_unbiased"):
        if clipped[key]["low"] is not None:
            assert 0.0 <= clipped[key]["low"] <= clipped[key]["high"] <= 1.0, (key, clipped[key])
    assert clipped["mean"]["estimate"] == loose["mean"]["estimate"]


def test_a_comparison_table_holds_the_same_comparisons_as_the_rows(recipes):
    """``comparison_table=True`` (the service's form) changes the layout only: expanded, the table gives the rows
    (recipe and prediction sections), and the rest of the report is the same."""
    from evaluation.report import section_pairs
    from evaluation.report.comparisons import TABLE_COLUMNS

    rng = np.random.default_rng(3)
    entries = [
        *recipes,
        prediction(50, rng.random((2, 300)) < 0.8),
        prediction(60, rng.random((1, 300)) < 0.7),
        prediction(70, rng.random((1, 300)) < 0.79),
    ]
    rows_form = build_report(entries, settings(accuracy_like=True))
    table_form = build_report(entries, settings(accuracy_like=True, comparison_table=True))
    names = {row["submission_id"]: row["method_name"] for row in rows_form["entries"]}
    assert len(rows_form["sections"]) == 2
    for rows_section, table_section in zip(rows_form["sections"], table_form["sections"]):
        table = table_section.pop("comparison_table")
        assert set(TABLE_COLUMNS) < set(table) and all(len(table[c]) == table["size"] for c in TABLE_COLUMNS)
        assert table["size"] == len(rows_section["comparisons"]) > 0
        assert section_pairs({"comparison_table": table}, names) == rows_section.pop("comparisons")
        some = set(list(names)[:3])
        assert section_pairs({"comparison_table": table}, names, among=some) == [
            p for p in section_pairs({"comparison_table": table}, names) if p["a"] in some and p["b"] in some
        ]
        assert "comparisons" not in table_section
    assert table_form == rows_form


def test_checked_entries_are_kept_as_they_are_or_repaired_one_by_one():
    """Well-formed entries come back as the same objects (checked all at once); one entry with unsorted
    runs, a NaN validation score or integer scores sends every entry through the one-by-one check."""
    from evaluation.report.entries import check_entries

    good = [
        recipe(i, 0.7 + 0.01 * np.arange(4), index=np.arange(4), valid=0.6 + 0.01 * np.arange(4)) for i in (1, 2, 3)
    ]
    assert all(a is b for a, b in zip(check_entries(good), good))
    unsorted = recipe(4, np.array([0.9, 0.8, 0.7]), index=np.array([2, 0, 1]))
    nan_valid = recipe(5, np.array([0.5, 0.6]), valid=[np.nan, 0.6])
    integers = EntryRuns(6, "m6", "t", "recipe", 2, np.arange(2), np.array([1, 0]))
    checked = {e.id: e for e in check_entries([*good, unsorted, nan_valid, integers])}
    assert checked[4].run_index.tolist() == [0, 1, 2] and checked[4].test.tolist() == [0.8, 0.7, 0.9]
    # Issue 23, row 2: the run without a finite validation score is left out (named), not the whole column.
    assert checked[5].valid.tolist() == [0.6] and checked[5].test.tolist() == [0.6]
    assert checked[5].left_out == ((0, "validation score is NaN"),) and checked[6].test.dtype == np.float64
    assert all(checked[e.id] is e for e in good)
    with pytest.raises(ValueError, match="entry 7: `test` must be a non-empty 1-D array of finite scores"):
        check_entries([*good, recipe(7, np.array([0.5, np.inf]))])
    with pytest.raises(ValueError, match="one distinct index per test score"):
        check_entries([*good, recipe(8, np.array([0.5, 0.6]), index=[1, 1])])


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_rows_of_many_entries_equal_the_entry_by_entry_figures(higher_is_better):
    """entry_rows (one sort and one set of weights per run count) gives stats.boo_n's and boo_n_curve's figures."""
    from evaluation.report.rows import boo_n_curve, entry_row, entry_rows

    rng = np.random.default_rng(21)
    entries = []
    for i in range(60):
        k = (6, 9, 15)[i % 3]
        test = np.round(0.7 + 0.02 * rng.standard_normal(k), 4 if i % 4 else 2)  # every 4th: tied keys
        valid = None if i % 2 else test + np.round(0.01 * rng.standard_normal(k), 3)
        entries.append(EntryRuns(i + 1, f"m{i}", "t", "recipe", k, np.arange(k), test, valid=valid))
    s = ReportSettings(n_resamples=100, k_runs=9, boo_n=5, higher_is_better=higher_is_better)
    rows = entry_rows(entries, s, noether_n=None)
    for e in entries:
        alone = entry_row(e, s, None, intervals=False)
        assert rows[e.id] == alone
        assert rows[e.id]["boo_n"]["estimate"] == stats.boo_n(
            e.test, 5, valid=e.valid, higher_is_better=higher_is_better
        )
        assert rows[e.id]["boo_n_curve"] == [float(v) for v in boo_n_curve(e, min(20, e.test.size), higher_is_better)]


def test_a_prediction_entry_interval_stays_inside_the_metrics_range():
    """Macro-F1's linearized outcomes exceed 1 (here up to 1.05): near a perfect score its t interval
    reached 1.036, a value the metric cannot take; it is clipped to [0, 1] like the runs' intervals."""
    from evaluation.metrics import METRICS, score_predictions

    rng = np.random.default_rng(0)
    truth = np.array(list("abc") * 10)
    guess = np.where(rng.random(truth.size) < 0.97, truth, "a")
    result = score_predictions("macro_f1", truth, guess, classes=list("abc"))
    assert result.outcomes.max() > 1  # the premise: outcomes past the metric's bound
    metric = METRICS["macro_f1"]
    s = settings(k_runs=1, metric_from_mean=metric.from_mean, score_range=metric.score_range)
    (row,) = build_report([prediction(1, result.outcomes)], s)["entries"]
    assert row["mean"]["estimate"] == pytest.approx(result.score)
    assert row["mean"]["low"] < row["mean"]["estimate"] < row["mean"]["high"] == 1.0


def test_entries_short_of_the_runs_an_interval_needs_do_not_take_the_others_intervals():
    """A statistician's finding: three entries of 10 runs had rank intervals; four of runs 0-4 joined the core
    (most pairs x runs) on 5 shared runs, below the 6 a mean board's rank interval needed, and every rank
    interval went. The core now shares at least the runs a rank interval needs (16 since rank23: here the three have
    16); the four are resampled alone, without interval. Their pairs
    with the three, on 5 shared seeds, decide nothing (adjusted p 0.4563): the three's intervals place them where those
    verdicts do, below or above (stats21: before, [1, 1], [2, 2], [3, 3] from the four's narrow resamples)."""
    rng = np.random.default_rng(3)
    full = [recipe(i + 1, 0.80 + 0.01 * i + 0.005 * rng.standard_normal(16)) for i in range(3)]  # 16: rank23
    part = [recipe(10 + i, 0.75 + 0.005 * rng.standard_normal(5), index=np.arange(5)) for i in range(4)]
    report = build_report(full + part, settings())
    rows = by_id(report)
    assert report["sections"][0]["paired_runs"] == list(range(16))
    undecided = {frozenset((c["a"], c["b"])) for c in report["sections"][0]["comparisons"] if c["better"] is None}
    assert all(frozenset((a, b)) in undecided for a in (1, 2, 3) for b in (10, 11, 12, 13))
    assert [(rows[i]["rank_interval"]["low"], rows[i]["rank_interval"]["high"]) for i in (3, 2, 1)] == [
        (1, 5),
        (2, 6),
        (3, 7),
    ]
    assert all(rows[i]["rank_interval"]["widened"] for i in (3, 2, 1))
    assert all(rows[i]["rank_interval"] is None and rows[i]["compared"] for i in (10, 11, 12, 13))


def test_a_pair_sharing_no_seed_is_neither_decided_nor_inferred():
    """A statistician's finding: A (seeds 0-5) > B (0-11) > C (6-11) decided, A and C sharing no seed: the pair
    was "not significant" (p = 1, P = 0.5), a test that was never run. It is not compared (compare() refuses it
    likewise). Its difference was then inferred from the chain (letters a, b, c); a later hunt found the same
    inference on a board where C is undecided against B (A "0 more runs" beside no test of A and C), and no difference
    is inferred for a pair no test can decide (P(A>B) is not transitive): A and C share a letter and keep their hint,
    and C, beaten by B, is not in the leader group (tests/evaluation/test_board_verdicts.py, issue 23)."""
    rng = np.random.default_rng(0)
    a = recipe(1, 0.90 + 0.002 * rng.standard_normal(6), index=np.arange(6))
    b = recipe(2, 0.80 + 0.002 * rng.standard_normal(12))
    c = recipe(3, 0.70 + 0.002 * rng.standard_normal(6), index=np.arange(6, 12))
    report = build_report([a, b, c], settings(k_runs=12))
    rows, section = by_id(report), report["sections"][0]
    assert {(p["a"], p["b"]): p["better"] for p in section["comparisons"]} == {(1, 2): 1, (2, 3): 2}
    assert section["entries"] == [1, 2, 3] and section["leader_group"] == [1]
    assert [rows[i]["groups"] for i in (1, 2, 3)] == ["a", "b", "a"]
    assert rows[2]["runs_needed_for_decision"] == 0  # B differs from both, by its own verdicts
    assert rows[1]["runs_needed_for_decision"] > 0 and rows[3]["runs_needed_for_decision"] > 0


def test_renaming_entries_moves_no_number():
    """A statistician's finding: the core broke ties by name, so renaming entries changed rank intervals."""
    rng = np.random.default_rng(3014)
    for _ in range(40):
        board = []
        for j in range(int(rng.integers(3, 8))):
            index = np.sort(rng.choice(10, size=int(rng.integers(6, 10)), replace=False))
            board.append(recipe(j + 1, 0.8 + 0.01 * rng.standard_normal(index.size), index=index, name=f"n{j}"))
        renamed = [replace(e, name=f"z{9 - e.id}") for e in board]
        s = settings(n_resamples=100)
        first, second = by_id(build_report(board, s)), by_id(build_report(renamed, s))
        for i, row in first.items():
            assert (row["rank_interval"], row["groups"]) == (second[i]["rank_interval"], second[i]["groups"])
