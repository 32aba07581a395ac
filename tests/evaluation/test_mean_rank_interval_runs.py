"""Issue 23, the rank cells of a mean board: its rank interval is shown from 16 paired runs (rank23).

``benchmarks/bench_coverage.py --ranks-only --reps 1000 --seed 2026`` measured a mean board's rank interval on
its three board shapes (5 entries / a ladder of 10 / 30 close entries): at k = 6, the first k it was shown at,
91.3 / 92.3 / 85.0 %; at 10 96.3 / 95.8 / 90.5 %; at 15 97.6 / 97.6 / 93.2 % (92.8 % on the close board from
another stream, R = 4000); at 16 98.5 / 97.6 / 93.0 % (93.1-93.2 % from two other streams); at 20 98.1 / 98.0 /
94.7 %. Below 16 the close board's interval covers less than 93 %, a false certainty: the board shows none there,
with the reason (:func:`evaluation.report.sections.runs_for_rank_interval`, the one rule). Boo_n's 10n with
n = 1 (10 runs) does not reach it.
"""

from __future__ import annotations

import numpy as np

from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.sections import runs_for_rank_interval


def _recipes(k: int, seed: int = 0) -> list[EntryRuns]:
    rng = np.random.default_rng(seed)
    return [
        EntryRuns(i + 1, f"m{i}", f"t{i}", "recipe", k, np.arange(k), 0.8 + 0.003 * i + 0.01 * rng.standard_normal(k))
        for i in range(4)
    ]


def _board(k: int, statistic: str = "mean", boo_n: int = 5) -> dict:
    return build_report(_recipes(k), ReportSettings(statistic=statistic, boo_n=boo_n, k_runs=k, n_resamples=200))


def test_the_rule_a_mean_board_and_a_boo_1_board_read():
    assert runs_for_rank_interval("mean", 5) == 16 and runs_for_rank_interval("boo_n", 1) == 16
    assert runs_for_rank_interval("boo_n", 2) == 20 and runs_for_rank_interval("boo_n", 5) == 50


def test_a_mean_board_of_15_runs_shows_no_rank_interval_and_says_why():
    """Before: rank intervals from 6 runs, covering 85.0-93.2 % on 30 close entries at k = 6-15."""
    board = _board(15)
    for row in board["entries"]:
        assert row["rank"] is not None and row["rank_interval"] is None
        assert row["mean"]["low"] is not None  # the mean's own interval is shown from 6 runs, as before
    notes = {n["interval"]: n for n in board["settings"]["coverage"]}
    rank = notes["recipe.rank"]
    assert rank["shown"] is False and rank["coverage"] is None and not rank["ok"]
    assert "k = 15 < 16" in rank["reason"] and "ranked by the mean" in rank["reason"]
    assert "81.4-93.2 %" in rank["reason"]  # the measured coverage below the rule, in the reason


def test_a_mean_board_of_16_runs_shows_it_flagged_only_for_over_coverage():
    board = _board(16)
    assert all(row["rank_interval"] is not None for row in board["entries"])
    rank = {n["interval"]: n for n in board["settings"]["coverage"]}["recipe.rank"]
    assert rank["shown"] and rank["k"] == 16 and rank["coverage"] is not None
    assert "many close entries" not in rank["reason"] and "above its level on few distinct entries" in rank["reason"]


def test_a_boo_1_board_of_15_runs_shows_no_rank_interval_either():
    """Boo_1 is the mean of the runs: its board reads the mean board's figures, and its rule."""
    board = _board(15, statistic="boo_n", boo_n=1)
    assert all(row["rank_interval"] is None for row in board["entries"])
    rank = {n["interval"]: n for n in board["settings"]["coverage"]}["recipe.rank"]
    assert rank["shown"] is False and "k = 15 < 16" in rank["reason"]
