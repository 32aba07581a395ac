"""stats19: boards built from real published runs (Bajgar et al. 2018, shared/data/boon-runs).

On a Boo_n board an entry without validation scores picks its best run by *test* score (the optimistic selection),
beside entries that pick by validation. The same 74 ResNet-32 runs submitted twice, once with validation scores and
once without, show Boo_3 0.6899 [0.6884, 0.6915] (rank 1, rank interval [1, 1]) and 0.6854 [0.6834, 0.6876] (rank 2,
[2, 2]), while their pair is P(A>B) = 1/2 and they share the letter "a"; nothing on the row said so (the column's
title said "the best picked on validation data"). The row now says which scores picked (``boo_n.picked_on``) and the
board's note counts such entries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report

RUNS = Path(__file__).resolve().parents[2] / "../shared/data/boon-runs/resnet32_cifar100.csv"


def _board(statistic: str, boo_n: int = 3):
    runs = np.loadtxt(RUNS, delimiter=",", skiprows=1)
    k = len(runs)
    with_valid = EntryRuns(1, "with-valid", "t", "recipe", k, np.arange(k), runs[:, 2], valid=runs[:, 1])
    no_valid = EntryRuns(2, "no-valid", "t", "recipe", k, np.arange(k), runs[:, 2])
    settings = ReportSettings(n_resamples=300, score_range=(0.0, 1.0), statistic=statistic, boo_n=boo_n, k_runs=k)
    report = build_report([with_valid, no_valid], settings)
    return {r["submission_id"]: r for r in report["entries"]}, report["settings"]


@pytest.mark.skipif(not RUNS.exists(), reason="the shared real runs are not here")
def test_a_boo_n_chosen_by_test_score_says_so_on_its_row_and_in_the_board_note():
    rows, settings = _board("boo_n")
    assert rows[2]["boo_n"]["estimate"] > rows[1]["boo_n"]["estimate"] + 0.004  # 0.6899 against 0.6854
    assert rows[2]["boo_n"]["picked_on"] == "test" and rows[1]["boo_n"]["picked_on"] == "validation"
    note = settings["boo_n_picked_note"]
    assert note.startswith("1 entry has no validation scores: its Boo_3 picks the best run on the test scores")
    assert "against the 1 entry whose best run is picked on validation scores" in note


@pytest.mark.skipif(not RUNS.exists(), reason="the shared real runs are not here")
def test_the_note_is_for_boo_n_boards_and_boo_1_picks_nothing():
    rows, settings = _board("mean")
    assert settings["boo_n_picked_note"] is None  # ranked by the mean: the row's mark still says how Boo_n was picked
    assert rows[2]["boo_n"]["picked_on"] == "test"
    rows, settings = _board("boo_n", boo_n=1)  # Boo_1 is the mean of the runs: no run is picked
    assert rows[1]["boo_n"]["picked_on"] is None and rows[2]["boo_n"]["picked_on"] is None
    assert settings["boo_n_picked_note"] is None


def test_the_coverage_notes_are_of_the_kinds_of_entries_the_board_holds():
    """A board of prediction entries read the recipes' notes too ("5 runs: no interval of the mean below 6 runs",
    "no rank interval on a board ranked by the mean"): noticed and left by the sixteenth session, now its kinds only; a
    board without entries keeps both, at the challenge's k."""
    rng = np.random.default_rng(0)
    predictions = []
    for i in range(4):
        out = (rng.random((1, 200)) < 0.7 + 0.05 * i).astype(float)
        predictions.append(
            EntryRuns(i + 1, f"p{i}", f"t{i}", "predictions", 1, np.arange(1), out.mean(1), outcomes=out)
        )
    recipe = EntryRuns(9, "r", "t9", "recipe", 5, np.arange(5), 0.8 + 0.01 * rng.standard_normal(5))
    settings = ReportSettings(n_resamples=200, score_range=(0, 1), boo_n=3, k_runs=5, accuracy_like=True)

    def kinds(entries):
        return {note["interval"].split(".")[0] for note in build_report(entries, settings)["settings"]["coverage"]}

    assert kinds(predictions) == {"predictions"}
    assert kinds([*predictions, recipe]) == {"predictions", "recipe"}
    assert kinds([recipe]) == {"recipe"}
    assert kinds([]) == {"predictions", "recipe"}
