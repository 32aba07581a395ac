"""A recipe entry of too few runs outside the core gets no rank interval, and the others place it as their pair
verdicts do (issue 23: every hint on the page derived from the same verdicts; stats21).

The recipe section's rank bootstrap resamples the core on the runs it shares and every other compared entry alone on
its own runs (``sections._mixed_ranks``). An entry of 2 to 5 runs on a mean board (fewer than 10n on a Boo_n board)
outside the core showed no rank interval, with no reason anywhere: the board's rank note (``recipe.rank``) said
"shown", at the core's paired runs. And the core's intervals were computed against its narrow resamples: on a board of
five entries of 10 runs and one of 3 runs far apart (0.6, 0.7, 0.8), whose pairs (decided on 3 shared seeds) told it
from no entry, the leader read [1, 1], the second [2, 2] ... each certain of an order the pair verdicts leave open.
This is the rule stats20 gave prediction entries of 2 to 5 files (``tests/evaluation/test_prediction_rank_files.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report

FEW = 9  # the few-run entry's submission id


def _board(few_runs: int, higher_is_better: bool, full: int, seed: int = 0, means=(0.9, 0.85, 0.8, 0.6, 0.55)):
    """Entries of ``full`` runs (seeds 0..full-1) and ``few``, whose ``few_runs`` runs spread 0.6-0.8 around 0.7."""
    rng = np.random.default_rng(seed)
    sign = 1.0 if higher_is_better else -1.0
    out = []
    for i, m in enumerate(means, 1):
        t = 0.5 + sign * (m - 0.5) + 0.01 * rng.standard_normal(full)
        v = 0.5 + sign * (m - 0.5) + 0.01 * rng.standard_normal(full)
        out.append(EntryRuns(i, f"e{i}", "t", "recipe", full, np.arange(full), t, valid=v))
    t = 0.5 + sign * 0.2 + sign * np.linspace(0.1, -0.1, few_runs)
    out.append(EntryRuns(FEW, "few", "t", "recipe", full, np.arange(few_runs), t, valid=t.copy()))
    return out


#: (statistic, Boo_n's n, the full entries' runs): a mean board needs 16 runs for a rank interval, Boo_2 10n = 20.
BOARDS = [("mean", 3, 16), ("boo_n", 2, 20)]


def _settings(statistic: str, n: int, full: int, higher_is_better: bool) -> ReportSettings:
    return ReportSettings(
        n_resamples=500, higher_is_better=higher_is_better, statistic=statistic, boo_n=n, k_runs=full, master_seed=5
    )


def _report(statistic, n, full, few_runs, higher_is_better) -> dict:
    return build_report(_board(few_runs, higher_is_better, full), _settings(statistic, n, full, higher_is_better))


def _undecided(report: dict) -> set[frozenset]:
    return {frozenset((c["a"], c["b"])) for c in report["sections"][0]["comparisons"] if c["better"] is None}


@pytest.mark.parametrize("higher_is_better", [True, False])
@pytest.mark.parametrize("few_runs", [2, 3, 5])
@pytest.mark.parametrize(("statistic", "n", "full"), BOARDS)
def test_no_rank_interval_is_certain_of_an_order_the_pair_verdicts_leave_open_with_a_few_runs_recipe_entry(
    statistic, n, full, few_runs, higher_is_better
):
    """Before: e1 [1, 1], e2 [2, 2], e3 [3, 3], e5 [6, 6] beside pairs with ``few`` that no verdict decides."""
    report = _report(statistic, n, full, few_runs, higher_is_better)
    assert len(report["sections"][0]["paired_runs"]) == full  # the core: the five entries of ``full`` runs
    open_pairs = _undecided(report)
    few = next(e for e in report["entries"] if e["submission_id"] == FEW)
    assert few["compared"] and few["rank"] == 4
    for e in report["entries"]:
        iv = e["rank_interval"]
        if iv is None or e is few or frozenset((e["submission_id"], FEW)) not in open_pairs:
            continue
        # ``few`` may lie on either side of e: e's interval holds the rank it has with ``few`` on the other side
        other_side = e["rank"] + (1 if few["rank"] > e["rank"] else -1)
        assert iv["low"] <= other_side <= iv["high"], (e["method_name"], iv)


@pytest.mark.parametrize("higher_is_better", [True, False])
@pytest.mark.parametrize(("statistic", "n", "full"), BOARDS)
def test_a_few_runs_recipe_entry_has_no_rank_interval_and_the_board_says_why(statistic, n, full, higher_is_better):
    from leaderboard.web.presenters import coverage_for_section

    report = _report(statistic, n, full, 3, higher_is_better)
    few = next(e for e in report["entries"] if e["submission_id"] == FEW)
    assert few["compared"] and few["rank_interval"] is None
    assert all(e["rank_interval"] is not None for e in report["entries"] if e is not few)
    notes = report["settings"]["coverage"]
    rank = next(x for x in notes if x["interval"] == "recipe.rank")
    assert rank["shown"] and rank["runs"] == full  # the core's intervals are shown, at its paired runs
    said = [x for x in notes if x["interval"] == "recipe.rank_runs"]
    assert len(said) == 1 and said[0]["shown"] is False and said[0]["coverage"] is None
    need = "16" if statistic == "mean" else f"10n = {10 * n}"
    assert f"fewer than {need} runs" in said[0]["reason"] and "3 runs here" in said[0]["reason"]
    assert coverage_for_section("recipe", report["settings"])["rank_withheld"] == said[0]["reason"]


@pytest.mark.parametrize(("statistic", "n", "full"), BOARDS)
def test_a_board_without_a_few_runs_entry_reads_as_before(statistic, n, full):
    """Every entry of ``full`` runs (``few`` too): no note, no interval moved by the rule."""
    report = _report(statistic, n, full, full, True)
    assert all(e["rank_interval"] is not None for e in report["entries"])
    assert not [x for x in report["settings"]["coverage"] if x["interval"] == "recipe.rank_runs"]


@pytest.mark.parametrize(("statistic", "n", "full"), BOARDS)
def test_the_incremental_update_equals_a_full_report_with_a_few_runs_entry(statistic, n, full):
    """``build_report(..., previous=...)`` (``rank_intervals_update`` where usable) gives the full report, a few-run
    entry in the previous board, in the new one, or arriving."""
    settings = _settings(statistic, n, full, True)
    board = _board(3, True, full)
    newcomer = EntryRuns(20, "new", "t", "recipe", full, np.arange(full), board[2].test + 0.001, valid=board[2].valid)
    few_arrives = (board[:-1], board)
    full_arrives = (board, [*board, newcomer])
    few_joins_a_grown_board = ([*board[:-1], newcomer], [*board, newcomer])
    for before_entries, entries in (few_arrives, full_arrives, few_joins_a_grown_board):
        before = json.loads(json.dumps(build_report(before_entries, settings)))
        reuse = {row["submission_id"]: row for row in before["entries"]}
        full_report = json.loads(json.dumps(build_report(entries, settings)))
        incremental = json.loads(json.dumps(build_report(entries, settings, reuse=reuse, previous=before)))
        assert incremental == full_report
    # the update proper (rank_intervals_update: no entry alone): a newcomer of full runs
    before = json.loads(json.dumps(build_report(board[:-1], settings)))
    reuse = {row["submission_id"]: row for row in before["entries"]}
    full_report = json.loads(json.dumps(build_report([*board[:-1], newcomer], settings)))
    incremental = build_report([*board[:-1], newcomer], settings, reuse=reuse, previous=before)
    assert json.loads(json.dumps(incremental)) == full_report


@pytest.mark.parametrize("dense", [True, False])
def test_beats_of_is_the_converse_of_beaten_by(dense, monkeypatch):
    """The placement reads both sides of the relation the letters read, above 300 entries (windows) too."""
    from evaluation.stats import sparse

    if not dense:
        monkeypatch.setattr(sparse, "DENSE_LETTERS", 3)
    rng = np.random.default_rng(1)
    scores = np.repeat(np.linspace(0.9, 0.6, 6), 2)[:, None] + 0.02 * rng.standard_normal((12, 40))
    res = sparse.sparse_comparisons(scores, neighbours=2)
    assert (res.beats is not None) == dense
    for e in range(12):
        wins = set(res.beats_of(e).tolist())
        assert wins == {x for x in range(12) if e in set(res.beaten_by(x).tolist())}, e
    assert sum(len(res.beats_of(e)) for e in range(12)) > 0


def test_an_entry_shown_below_its_bootstrap_rank_keeps_the_withheld_entries_counts():
    """stats22's reproduction: X is shown 2nd (its mean over all 10 runs, 0.80, below Y's 0.82) while its bootstrap on
    the core's 8 shared seeds puts it first; three entries of 3 runs, undecided with everyone, are withheld. X read
    [1, 4]: its kept-only interval [1, 1] was stretched to its shown rank 2 only after the three were counted, so the
    stretch absorbed one of them; with Y and the three above it, which the verdicts allow, X is 5th. The kept-only
    interval now holds X's place among the kept entries first: [1, 5]. Here on 16 shared seeds and 20 runs."""
    # stats22's board on 16 shared seeds (a mean board's rank intervals need 16, rank23): X averages 0.85 there but
    # beats Y on half of them only, so that pair stays undecided, as on stats22's 8 seeds
    x = np.r_[[0.9, 0.8] * 8, [0.6] * 4]
    entries = [
        EntryRuns(1, "X", "tx", "recipe", 20, np.arange(20), x),
        EntryRuns(2, "Y", "ty", "recipe", 20, np.arange(16), np.full(16, 0.82)),
        EntryRuns(3, "Z", "tz", "recipe", 20, np.arange(16), np.full(16, 0.5)),
    ]
    for k in range(3):
        w = np.array([0.5 + 0.02 * k, 0.72, 0.9 - 0.02 * k])
        entries.append(EntryRuns(4 + k, f"W{k}", f"tw{k}", "recipe", 20, np.arange(3), w))
    report = build_report(entries, ReportSettings(n_resamples=500, master_seed=1, k_runs=20, score_range=(0, 1)))
    rows = {row["method_name"]: row for row in report["entries"]}
    assert rows["X"]["rank"] == 2 and rows["X"]["rank_interval"]["rank"] == 1  # shown below its bootstrap rank
    assert all(rows[f"W{k}"]["rank_interval"] is None for k in range(3))
    assert (rows["X"]["rank_interval"]["low"], rows["X"]["rank_interval"]["high"]) == (1, 5)
