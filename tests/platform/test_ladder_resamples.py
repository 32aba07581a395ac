"""The Ladder's η on a board where recipe runs are scored on resamples of the public rows (a ninth attack).

Out of bootstrap, recipe run i is scored on a bootstrap resample of the public rows, drawn within classes from its
published split seed: a row drawn c times counts c times, so one row's prediction moves that run's score by c times
the move :func:`evaluation.row_moves.largest_row_move` bounds (a row was drawn 6 times in one run's resample of the
attack's 154 public rows). An entry's score is the mean of the runs it scored, and a recipe reads its seeds
(``spec.json``): failing every run but one, or cancelled after one, its entry is released from that run alone.
Probing every public row from run 0 alone, the Ladder (η = 2/154, raised from 0.01) released right probes of rows
drawn twice or more: 36 of 154 labels read against 16 by chance. The board's η now takes the runs' draws into account
(``services.boards.ladder_margin``: twice the largest c x one-row move over runs and rows).
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.boards import ladder
from leaderboard.models import Run, Submission
from leaderboard.services.boards import board_ladder, board_public_mask, ladder_margin
from leaderboard.services.challenges import DatasetUpload, challenge_create, challenge_warnings
from leaderboard.services.dataset_files import dataset_hidden_labels
from leaderboard.services.submissions import run_seed_plan
from leaderboard.services.teams import team_personal_for
from leaderboard.worker.run_data import recipe_data, run_split, run_test_parts

from .factories import csv_bytes, digits_frame, make_user

pytestmark = pytest.mark.django_db


def _board(host, **overrides):
    """The attack test's board: 300 hidden digits, half public, the Ladder with the host's η = 0.01, 10 runs."""
    fields = dict(
        title="Resampled Ladder",
        metric="accuracy",
        k_runs=10,
        allow_recipes=True,
        allow_predictions=True,
        master_seed=7,
        feedback="ladder",
        ladder_margin=0.01,
        public_fraction=0.5,
    )
    fields.update(overrides)
    upload = DatasetUpload(
        data=csv_bytes(digits_frame(1000, 0.3)),
        filename="digits.csv",
        id_column="id",
        label_column="label",
        test_column="is_test",
    )
    return challenge_create(created_by=host, dataset=upload, **fields)


def _public_draws(challenge) -> tuple[np.ndarray, np.ndarray]:
    """The public labels, and how often each run's resample drew each public row (runs x rows), as the worker draws
    them (``leaderboard.worker.run_data``), apart from the code that bounds them."""
    mask = board_public_mask(dataset=challenge.dataset)
    public = recipe_data(challenge=challenge)[2][mask]
    counts = []
    for seeds in run_seed_plan(challenge=challenge):
        _, split = run_split(challenge=challenge, seeds=seeds)
        drawn = split.test[run_test_parts(challenge=challenge, split=split, phase=None)["public"]]
        counts.append(np.bincount(np.searchsorted(public, drawn), minlength=public.size))
    return dataset_hidden_labels(dataset=challenge.dataset)[mask], np.array(counts)


def _single_run_attack(truth: np.ndarray, counts: np.ndarray, margin: float, run: int = 0) -> int:
    """A recipe that predicts the baseline (every row "0") with one row changed, scored on run ``run`` alone (it fails
    the others: it reads its seeds), each public row probed class by class, a released probe kept as the next
    baseline (the adaptive attack of tests/platform/test_leaks_v8.py). How many public labels it then guesses."""
    weights = counts[run] / counts[run].sum()

    def score(predictions: np.ndarray) -> float:
        return float(weights @ (predictions == truth))

    baseline = np.full(truth.size, "0", dtype=truth.dtype)
    scores = [score(baseline)]
    for row in range(truth.size):
        for c in map(str, range(1, 10)):
            probe = baseline.copy()
            probe[row] = c
            scores.append(score(probe))
            releases = ladder(scores, margin, anchor=1.0)
            if releases[-1] != releases[-2]:  # the release moved: the probed class is the row's label
                baseline = probe
                break
    return int(np.sum(baseline == truth))


def test_a_recipe_run_s_resample_moves_its_score_by_the_draws_of_a_row(host):
    challenge = _board(host)
    truth, counts = _public_draws(challenge)
    assert truth.size == 154 and counts.max() >= 4  # a row drawn 4 times or more in a run
    margin = ladder_margin(challenge).value
    assert counts.max() / truth.size <= margin / 2 + 1e-12, (counts.max(), truth.size, margin)
    warnings = challenge_warnings(challenge=challenge, user=host)  # the host reads why
    assert any("a recipe run's resample draws it" in w and f"{margin:g}" in w for w in warnings), warnings


def test_single_row_probes_scored_on_one_run_s_resample_release_nothing(host):
    challenge = _board(host)
    truth, counts = _public_draws(challenge)
    chance = int(np.sum(truth == "0"))  # the baseline's right guesses
    recovered = _single_run_attack(truth, counts, ladder_margin(challenge).value)
    assert recovered - chance <= 3, f"{recovered} of {truth.size} public labels read (chance: {chance})"


def test_a_recipe_entry_that_failed_every_run_but_one_is_released_from_that_run(host):
    """What the attack above relies on: the board releases a submission from the runs it scored."""
    challenge = _board(host)
    alice = make_user("alice")
    submission = Submission.objects.create(
        challenge=challenge,
        team=team_personal_for(user=alice),
        submitted_by=alice,
        kind="recipe",
        method_name="probe",
        status="failed",
        runs_expected=10,
    )
    Run.objects.create(submission=submission, index=0, status="succeeded", public_score=0.6, test_score=0.6)
    for i in range(1, 10):
        Run.objects.create(submission=submission, index=i, status="failed")
    released = board_ladder(challenge=challenge)[submission.pk]
    assert released == ladder([0.6], ladder_margin(challenge).value, anchor=1.0)[0]
    assert released is not None and abs(released - 0.6) <= ladder_margin(challenge).value / 2


def test_a_board_without_recipes_or_resamples_keeps_twice_one_row_s_move(host):
    for overrides in ({"allow_recipes": False}, {"split_scheme": "fixed"}):
        challenge = _board(host, title=f"No resample {overrides}", **overrides)
        n = int(board_public_mask(dataset=challenge.dataset).sum())
        assert ladder_margin(challenge).value == pytest.approx(2 / n), overrides
