"""Counterexamples of a sixth property hunt (incremental updates, published boards, letters bounded)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.boards import publish_rounded, shown_entries
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.stats import rank_intervals
from evaluation.stats.bootstrap import rank_intervals_update

#: Eight runs' correct counts of 10 examples: scored as c / n and as c * (1 / n) they differ by an ulp on some runs.
COUNTS = np.array([9, 7, 5, 2, 3, 0, 0, 0])


def test_rank_update_ties_entries_equal_to_rounding_as_the_full_computation():
    """Found by a property hunt (incremental vs full report): two entries of the same runs, scored as c / n and as
    c * (1 / n), tie in every resample under the tie rule (rank 1 both) and a newcomer overlaps them. The full
    computation gives both the rank interval [1, 2]; the exact update compared their resampled means exactly (one
    ulp decided) and gave one of them [1, 3]. The update now ties them as ``competition_rank`` does."""
    a, b = COUNTS / 10, COUNTS * (1 / 10)
    assert (a != b).any()
    newcomer = a.mean() + 0.01 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5])
    kw = dict(n_resamples=200, rng=0)
    old = rank_intervals(np.stack([a, b]), **kw)
    table = np.stack([a, b, newcomer])
    full = rank_intervals(table, **kw)
    got = rank_intervals_update(table, [False, False, True], [True, True, False], [*old.low, 0], [*old.high, 0], **kw)
    assert full.low.tolist() == [1, 1, 1] and full.high.tolist() == [2, 2, 3]
    assert got.low.tolist() == full.low.tolist() and got.high.tolist() == full.high.tolist()


def test_incremental_report_of_a_newcomer_beside_entries_equal_to_rounding_is_the_full_report():
    settings = ReportSettings(n_resamples=200, k_runs=8, master_seed=3)
    entries = [
        EntryRuns(1, "A", "t1", "recipe", 8, np.arange(8), COUNTS / 10),
        EntryRuns(2, "B", "t2", "recipe", 8, np.arange(8), COUNTS * (1 / 10)),
    ]
    spread = 0.01 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5])
    newcomer = EntryRuns(3, "C", "t3", "recipe", 8, np.arange(8), COUNTS.mean() / 10 + spread)
    before = json.loads(json.dumps(build_report(entries, settings)))
    reuse = {row["submission_id"]: row for row in before["entries"]}
    full = json.loads(json.dumps(build_report([*entries, newcomer], settings)))
    incremental = json.loads(json.dumps(build_report([*entries, newcomer], settings, reuse=reuse, previous=before)))
    assert incremental == full


def test_a_rounded_tie_block_s_rank_interval_never_reaches_past_a_published_verdict():
    """Found by a property hunt (published boards): on a rounded board (2 digits) A beats B (published, adjusted
    p = 0.020), and B ties C at a shown 0.68. The tie block's hull gave B C's interval [1, 3]: B could be rank 1,
    above A, beside "A better than B" and A's [1, 2]. The published intervals are now carried along the published
    verdicts as the exact board's are: B's is [2, 3], C's (no verdict against A) stays [1, 3]."""
    runs = {
        "A": [0.7103, 0.7079, 0.7114, 0.7089, 0.7082, 0.7118, 0.7035, 0.7108, 0.7075, 0.7063, 0.7023],
        "B": [0.6457, 0.7092, 0.6736, 0.6784, 0.7102, 0.6731, 0.6628, 0.7008, 0.6597, 0.6716, 0.6768],
        "C": [0.7085, 0.7123, 0.7139, 0.7097, 0.4116, 0.7117, 0.7068, 0.71, 0.7131, 0.7122, 0.7112],
    }
    entries = [  # each run twice: a mean board's rank intervals need 16 paired runs (rank23)
        EntryRuns(i, name, "t" + name, "recipe", 22, np.arange(22), np.tile(x, 2), created=f"2026-01-0{i}")
        for i, (name, x) in enumerate(runs.items(), 1)
    ]
    settings = ReportSettings(n_resamples=200, k_runs=22, master_seed=41, neighbours=2)
    data = publish_rounded(build_report(shown_entries(entries, 2), settings), 2)
    rows = {row["submission_id"]: row for row in data["entries"]}
    assert [rows[sid]["rank_display"] for sid in (1, 2, 3)] == ["1", "=2", "=2"]
    decided = [p for p in data["sections"][0]["comparisons"] if p["verdict"] in ("a_better", "b_better")]
    assert [(p["better"], p["b"] if p["better"] == p["a"] else p["a"]) for p in decided] == [(1, 2)]
    for pair in decided:
        winner, loser = rows[pair["better"]]["rank_interval"], rows[2]["rank_interval"]
        assert winner["low"] < loser["low"] and winner["high"] < loser["high"], (winner, loser)
    assert (rows[2]["rank_interval"]["low"], rows[2]["rank_interval"]["high"]) == (2, 3)
    assert (rows[3]["rank_interval"]["low"], rows[3]["rank_interval"]["high"]) == (1, 3)


def test_letters_as_runs_of_the_order_leave_the_runs_needed_to_the_verdicts(monkeypatch):
    """Found by a property hunt (letters bounded): where the letters are runs of the order (``groups_note``), a pair
    that is not significantly different may share no letter. A beats B, B beats C, and A and C (3 common seeds of
    13 runs each) are not significantly different: the runs of the order are {A}, {B}, {C}, and the hint read from
    the letters told A and C "0 more runs for a decision" beside their undecided pair (51 on the complete display).
    The hint now reads the verdicts there. A board needs dozens of entries to pass the letters' bounds
    (``compact_letters``: 8 letters per entry, k²/2 held); the bound is lowered here to reach the fallback on 3."""
    from evaluation.stats import groups

    monkeypatch.setattr(groups, "_greedy_cover", lambda *args: None)  # as past MAX_LETTERS_PER_ENTRY
    monkeypatch.setattr(groups, "PIEPHO_WORK", -1)
    b = 0.70 + 0.01 * np.random.default_rng(0).standard_normal(23)
    entries = [
        EntryRuns(1, "A", "tA", "recipe", 23, np.arange(13), b[:13] + 0.02),
        EntryRuns(2, "B", "tB", "recipe", 23, np.arange(23), b),
        EntryRuns(3, "C", "tC", "recipe", 23, np.arange(10, 23), b[10:] - 0.02),
    ]
    report = build_report(entries, ReportSettings(n_resamples=200, k_runs=23))
    (section,) = report["sections"]
    assert section.get("groups_note")
    rows = {row["method_name"]: row for row in report["entries"]}
    assert [rows[name]["groups"] for name in "ABC"] == ["a", "b", "c"]
    verdicts = {(p["a"], p["b"]): p["verdict"] for p in section["comparisons"]}
    assert verdicts == {(1, 2): "a_better", (1, 3): "not_significant", (2, 3): "a_better"}
    assert rows["B"]["runs_needed_for_decision"] == 0  # B differs from A and from C
    assert rows["A"]["runs_needed_for_decision"] == rows["C"]["runs_needed_for_decision"] == 51


def test_the_ladder_releases_mirrored_scores_on_a_loss_board_and_its_accuracy_mirror():
    """Found by a property hunt (mirrors): a score half-way between two multiples of η went to Python's even one,
    after the quotient's rounding noise: accuracy 0.925 at η = 0.05 was released as 0.90 and its error 0.075 as 0.05
    (accuracy 0.95); 0.425 at η = 0.01 as 0.42 and 0.575 as 0.57 (0.43). Ties now go to the worse multiple in the
    board's orientation (Blum & Hardt 2015 leave them open)."""
    from evaluation.boards import ladder

    for score, margin, released in ((0.925, 0.05, 0.9), (0.425, 0.01, 0.42), (0.71, 0.02, 0.7), (0.3, 0.1, 0.3)):
        assert ladder([score], margin) == [released]
        (loss,) = ladder([1 - score], margin, higher_is_better=False)
        assert loss == pytest.approx(1 - released, abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(500):
        margin = float(rng.choice([0.01, 0.02, 0.05, 0.001]))
        scores = [float(v) for v in rng.integers(0, 1001, int(rng.integers(1, 10))) / 1000]
        up, down = ladder(scores, margin), ladder([1 - v for v in scores], margin, higher_is_better=False)
        assert all(b == pytest.approx(1 - a, abs=1e-9) for a, b in zip(up, down)), (margin, scores, up, down)
