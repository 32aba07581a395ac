"""Issue 23, the prediction rank rule (predrule23): no rank interval where it was measured to under-cover.

``benchmarks/bench_coverage.py --prediction-ranks-only --reps 1000 --seed 2026 --files-ks F --rank-examples N`` on
the three board shapes (5 entries / a ladder of 10 / 30 close entries 0.001 apart, file-to-file sd 0.02):

* one file, resampled over the test examples alone: the close board covers 87.6 % on 100 examples, 90.3 % on 200,
  91.6 % on 300, 92.6 % on 400, 93.4 % on 500, 94.8 % on 1000, 95.9 % on 2000: shown from 500 examples
  (:data:`evaluation.report.sections.MIN_EXAMPLES_RANK_INTERVAL`);
* several files: on 2000 examples the close board covers 91.9 % at 6 files, 93.8 % at 8, 94.0 % at 10, 95.1 % at 12,
  96.3 % at 16; on 10000 examples 90.1 % at 8, 94.2 % at 16; as the examples grow the files' spread dominates and k files read as k runs of a mean board (93.0 %
  at 16 runs, 90.5 % at 10: ``runs_for_rank_interval``), so several files need the runs a mean board's rank interval
  needs, 16, whatever the examples.

Before, those cells were shown and only flagged (``settings.coverage``'s range, 87.6-99.4 % at one file); now the
board withholds them with the reason (the ``predictions.rank`` note and the page's "No rank interval" line), and the
other entries' intervals place them by their pair verdicts (``sections._placed_ranks``).
"""

from __future__ import annotations

import pytest

from evaluation.report.coverage import coverage_notes
from evaluation.report.sections import MIN_EXAMPLES_RANK_INTERVAL, files_rank_withheld

from .test_prediction_rank_coverage import _board as prediction_board
from .test_prediction_rank_coverage import _rank_notes


def _board(files: list[int], n: int) -> dict:
    return prediction_board(files, n, n_resamples=200)


@pytest.mark.parametrize(
    ("files", "examples", "withheld"),
    [(1, 100, True), (1, 499, True), (1, 500, False), (1, 2000, False), (2, 5000, True), (6, 500, True)]
    + [(8, 2000, True), (15, 2000, True), (16, 100, False), (16, 2000, False), (30, 500, False)],
)
def test_the_rule(files, examples, withheld):
    assert MIN_EXAMPLES_RANK_INTERVAL == 500
    assert files_rank_withheld(files, examples) is withheld


def test_one_file_on_fewer_than_500_examples_shows_no_rank_interval_and_says_why():
    """Before: [low, high] shown on 300 examples, flagged only by the note's range (87.6-99.4 %)."""
    report = _board([1, 1, 1, 1], n=300)
    assert all(e["rank_interval"] is None for e in report["entries"])
    (note,) = _rank_notes(report)
    assert note["shown"] is False and note["coverage"] is None and not note["ok"]
    assert "fewer than 500 test examples (300 here)" in note["reason"], note["reason"]


def test_one_file_on_500_examples_shows_it():
    report = _board([1, 1, 1], n=500)
    assert all(e["rank_interval"] is not None for e in report["entries"])
    (note,) = _rank_notes(report)
    assert note["shown"] and note["k"] == 1


@pytest.mark.parametrize("files", [6, 10, 15])
def test_several_files_below_16_show_none(files):
    """Before: 6 to 15 files shown (6 files 91.9 % on the close board at 2000 examples)."""
    report = _board([files] * 3, n=60)
    assert all(e["rank_interval"] is None for e in report["entries"])
    (note,) = _rank_notes(report)
    assert note["shown"] is False and f"fewer than 16 files ({files} files here)" in note["reason"]


def test_a_mixed_board_places_the_withheld_entries_by_their_verdicts():
    """One file each on 600 examples but one entry of 8 files: the one-file intervals shown (their figures), the
    8-file entry's withheld with its reason, and the others' intervals count it where the verdicts place it."""
    report = _board([1, 1, 8, 1], n=600)
    by_id = {e["submission_id"]: e for e in report["entries"]}
    assert by_id[3]["rank_interval"] is None
    assert all(by_id[i]["rank_interval"] is not None for i in (1, 2, 4))
    notes = _rank_notes(report)
    shown = [n for n in notes if n["shown"]]
    withheld = [n for n in notes if not n["shown"]]
    assert len(shown) == 1 and shown[0]["k"] == 1
    assert len(withheld) == 1 and "fewer than 16 files (8 files here)" in withheld[0]["reason"]


def test_coverage_notes_read_the_rule():
    """From 16 files the 16-file figures; one file's figure only where its examples suffice."""

    def rank(k, examples=None):
        return [
            n for n in coverage_notes(k, ("predictions.",), examples=examples) if n["interval"] == "predictions.rank"
        ]

    assert rank(8) == [] and rank(15) == [] and rank(1, 400) == []
    assert rank(16)[0]["k"] == 16 and rank(20)[0]["k"] == 16 and rank(1, 500)[0]["k"] == 1
    assert all(n["coverage"] >= 0.93 for k in (1, 16, 30) for n in rank(k))
