"""Issue 23, the rank cells of a prediction board (predrank23): their coverage, measured and quoted.

``benchmarks/bench_coverage.py --prediction-ranks-only --reps 1000 --seed 2026`` measured the prediction section's
rank interval (``paired_test_bootstrap``'s joint resamples: examples shared, files within each entry) on the three
board shapes of the recipe rank rows (5 entries / a ladder of 10 / 30 close entries 0.001 apart, file-to-file sd
0.02), each entry's files of 0/1 outcomes on 500 examples: one file 97.5 / 96.2 / 93.4 %; 6 files 98.0 / 98.3 /
94.5 %; 10 files 99.0 / 98.8 / 96.2 %; 30 files 99.7 / 99.8 / 98.5 % (2 and 5 files, withheld: 92.1 / 94.0 / 87.8 %
and 97.7 / 97.9 / 93.9 %). No cell shown covers less than 93 % on 500 examples; they over-cover on few distinct
entries, as a mean board's do. On 100 examples one file covers 87.6 % on the close board, on 2000 six files 91.9 %
(``--rank-examples``): the range the note flagged held those ends, until predrule23 withheld them (one file below
500 examples, several below 16 files: ``test_prediction_rank_rule.py``). Before, ``settings.coverage`` quoted no figure for them (only the withheld entries' reason): now
the ``predictions.rank`` note quotes the 5-entry board at the fewest files an entry showing one has, flagged with
both ends where the range over the shapes leaves 93-97 % (``evaluation.report.coverage.RANK_RANGE``).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.coverage import coverage_notes


def _entry(sid: int, outcomes: np.ndarray) -> EntryRuns:
    files = len(outcomes)
    return EntryRuns(
        sid, f"e{sid}", "t", "predictions", files, np.arange(files), outcomes.mean(axis=1), outcomes=outcomes
    )


def _board(files: list[int], n: int = 500, accuracy_like: bool = True, n_resamples: int = 300) -> dict:
    """A prediction board: entry i of ``files[i]`` files of 0/1 outcomes on ``n`` shared examples (accuracy 0.8 - 0.02 i)."""
    rng = np.random.default_rng(0)
    entries = [_entry(i + 1, (rng.random((f, n)) < 0.8 - 0.02 * i).astype(float)) for i, f in enumerate(files)]
    settings = ReportSettings(n_resamples=n_resamples, accuracy_like=accuracy_like, score_range=(0.0, 1.0))
    return build_report(entries, settings)


def _rank_notes(report: dict) -> list[dict]:
    return [n for n in report["settings"]["coverage"] if n["interval"] == "predictions.rank"]


@pytest.mark.parametrize(
    ("files", "k", "coverage", "ends"), [(1, 1, 0.975, "93.4-99.4 %"), (16, 16, 0.993, "94.2-99.5 %")]
)
def test_a_prediction_board_quotes_its_rank_intervals_coverage_flagged_for_over_coverage(files, k, coverage, ends):
    """Before: no ``predictions.rank`` note where the board shows the intervals (it quoted none of their figures)."""
    report = _board([files] * 4)
    assert all(e["rank_interval"] is not None for e in report["entries"])
    (note,) = _rank_notes(report)
    assert note["shown"] and note["k"] == k and note["coverage"] == pytest.approx(coverage)
    assert not note["ok"] and ends in note["reason"] and "above its level on few distinct entries" in note["reason"]
    # none below 93 % since predrule23 (one file from 500 examples, 16 files: test_prediction_rank_rule.py)
    assert "below its level" not in note["reason"]


def test_a_board_with_withheld_and_shown_rank_intervals_has_both_notes():
    """One file each but one entry of 3 files: the shown intervals' figures (one file's), and the withheld reason."""
    notes = _rank_notes(_board([1, 1, 3, 1]))
    shown = [n for n in notes if n["shown"]]
    withheld = [n for n in notes if not n["shown"]]
    assert len(shown) == 1 and shown[0]["k"] == 1 and shown[0]["coverage"] == pytest.approx(0.975)
    assert len(withheld) == 1 and "fewer than 16 files" in withheld[0]["reason"]


def test_a_board_whose_entries_all_withhold_it_quotes_no_figure():
    notes = _rank_notes(_board([3, 2, 5]))
    assert len(notes) == 1 and notes[0]["shown"] is False and notes[0]["coverage"] is None


def test_the_figure_is_not_quoted_for_a_metric_it_was_not_measured_on():
    (note,) = _rank_notes(_board([1, 1, 1], accuracy_like=False))
    assert note["coverage"] is None and "accuracy only" in note["reason"] and not note["ok"]


def test_coverage_notes_read_the_files_rule():
    """At 2-15 files no figure (the board withholds the interval); from 16 files the 16-file figures (predrule23)."""
    by_k = {
        k: [n for n in coverage_notes(k, ("predictions.",)) if n["interval"] == "predictions.rank"]
        for k in (1, 5, 8, 20)
    }
    assert by_k[5] == by_k[8] == [] and by_k[1][0]["k"] == 1 and by_k[20][0]["k"] == 16
