"""A prediction entry of fewer than 6 files gets no rank interval (a new user's finding, stats20); since predrule23
fewer than 16 (``tests/evaluation/test_prediction_rank_rule.py``).

On a loss board (the host's cost of examples/scoring/macro_f1_and_cost.py), bob's entry of 2 files showed the rank
interval "4" ([4, 4], certainly 4th) beside a mean interval over its 2 files (Welch t, 1 degree of freedom) and pairs
that could not tell it from any entry, the leader included (P = 1.000 in [0.000, 1.000]). The rank interval resamples
the entry's files (3 multisets of 2 files): like the mean of fewer than 6 runs, a bootstrap over so few files spreads
too little to reach its level, while the pair test sees the spread between files. The entry's rank interval is
withheld with the reason (``settings.coverage``, ``predictions.rank``), and every other entry's interval places it
only where the pair verdicts do, so that no interval shown is certain of an order the verdicts leave open.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report


def _entry(sid: int, name: str, outcomes) -> EntryRuns:
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    files = len(outcomes)
    return EntryRuns(sid, name, "t", "predictions", files, np.arange(files), outcomes.mean(axis=1), outcomes=outcomes)


def _board(files: int, higher_is_better: bool, n: int = 1000) -> list[EntryRuns]:
    """Five entries of one file and bob, whose ``files`` files score far apart, fourth by its pooled score."""
    rng = np.random.default_rng(0)
    if higher_is_better:  # accuracy: 0/1 outcomes
        draw = lambda p: (rng.random(n) < p).astype(float)  # noqa: E731
        means, middle = [0.9, 0.85, 0.8, None, 0.5, 0.45], 0.65
    else:  # the cost: 0 when right, 1 or 5 when wrong
        draw = lambda p: np.where(rng.random(n) < p, np.where(rng.random(n) < 0.2, 5.0, 1.0), 0.0)  # noqa: E731
        means, middle = [0.2, 0.3, 0.4, None, 0.95, 1.05], 0.66
    bob = np.array([draw(p) for p in np.linspace(middle + 0.15, middle - 0.15, files)])
    return [_entry(s, "bob" if p is None else f"e{s}", bob if p is None else draw(p)) for s, p in enumerate(means, 1)]


def _report(files: int, higher_is_better: bool) -> dict:
    return build_report(
        _board(files, higher_is_better), ReportSettings(n_resamples=2000, higher_is_better=higher_is_better)
    )


def _undecided(report: dict) -> set[frozenset]:
    return {frozenset((c["a"], c["b"])) for c in report["sections"][0]["comparisons"] if c["better"] is None}


@pytest.mark.parametrize("higher_is_better", [False, True])
@pytest.mark.parametrize("files", [2, 3, 4, 5, 6, 15])
def test_an_entry_of_fewer_than_16_files_has_no_rank_interval_and_the_board_says_why(files, higher_is_better):
    """2-5 files since stats20; 6-15 since predrule23 (6 files covered 91.9 % on 30 close entries, 2000 examples)."""
    report = _report(files, higher_is_better)
    bob = next(e for e in report["entries"] if e["method_name"] == "bob")
    assert bob["compared"] and bob["rank"] == 4 and bob["mean"]["low"] is not None  # its mean's interval stays
    assert bob["rank_interval"] is None
    notes = [n for n in report["settings"]["coverage"] if n["interval"] == "predictions.rank" and not n["shown"]]
    assert len(notes) == 1 and notes[0]["shown"] is False and notes[0]["coverage"] is None
    assert "fewer than 16 files" in notes[0]["reason"] and f"{files} files" in notes[0]["reason"]
    others = [e for e in report["entries"] if e["method_name"] != "bob"]
    assert all(e["rank_interval"] is not None for e in others)


@pytest.mark.parametrize("higher_is_better", [False, True])
@pytest.mark.parametrize("files", [2, 3, 4, 5])
def test_no_rank_interval_is_certain_of_an_order_the_pair_verdicts_leave_open_with_a_few_files_entry(
    files, higher_is_better
):
    """The contradiction itself: bob's [4, 4] (and the others' single ranks, computed against bob's narrow
    resamples) beside pairs with bob that no verdict decides."""
    report = _report(files, higher_is_better)
    open_pairs = _undecided(report)
    bob = next(e for e in report["entries"] if e["method_name"] == "bob")
    for e in report["entries"]:
        iv = e["rank_interval"]
        if iv is None or e is bob or frozenset((e["submission_id"], bob["submission_id"])) not in open_pairs:
            continue
        # bob may lie on either side of e: e's interval holds the rank it has with bob on the other side
        other_side = e["rank"] + (1 if bob["rank"] > e["rank"] else -1)
        assert iv["low"] <= other_side <= iv["high"], (files, e["method_name"], iv)


@pytest.mark.parametrize("higher_is_better", [False, True])
@pytest.mark.parametrize("files", [1, 16])
def test_an_entry_of_one_file_or_of_16_files_keeps_its_rank_interval(files, higher_is_better):
    report = _report(files, higher_is_better)
    assert all(e["rank_interval"] is not None for e in report["entries"])
    notes = [n for n in report["settings"]["coverage"] if n["interval"] == "predictions.rank"]
    assert [n["shown"] for n in notes] == [True]  # the figures of the intervals shown (predrank23), no reason


def test_a_withheld_entrys_own_narrow_interval_does_not_narrow_the_others_through_its_verdicts():
    """Two entries of 2 files: F (0.76, 0.74), which beats e, and U (0.9, 0.8), which the pairs tell from neither e
    nor B. F's interval, never shown, came from its narrow resamples ([3, 3]: U above it in every one), and the
    verdicts' carry (ranking.verdict_consistent_ranks: a loser's low end past its winner's) pushed e's low end past
    it: e read [4, 4] and B [5, 5], each certain that U lies above it, which no verdict says (a statistician's
    random boards, stats22). Only the verdicts may place a withheld entry: e [3, 4], B [4, 5]."""
    rng = np.random.default_rng(0)
    board = [
        _entry(sid, name, [(rng.random(2000) < p).astype(float) for p in ps])
        for sid, name, ps in [
            (1, "A", [0.95]),
            (2, "e", [0.6]),
            (3, "F", [0.76, 0.74]),
            (4, "U", [0.9, 0.8]),
            (5, "B", [0.5]),
        ]
    ]
    report = build_report(board, ReportSettings(n_resamples=1000))
    rows = {e["method_name"]: e for e in report["entries"]}
    ids = {name: row["submission_id"] for name, row in rows.items()}
    open_pairs = _undecided(report)
    assert rows["U"]["rank_interval"] is None and rows["F"]["rank_interval"] is None
    assert {frozenset((ids["U"], ids["e"])), frozenset((ids["U"], ids["B"]))} <= open_pairs
    assert frozenset((ids["F"], ids["e"])) not in open_pairs and rows["U"]["rank"] < rows["e"]["rank"]
    for name in ("e", "B"):  # U may lie below it: the rank it then has is in its interval
        iv = rows[name]["rank_interval"]
        assert iv["low"] <= rows[name]["rank"] - 1 and iv["widened"], (name, iv)
