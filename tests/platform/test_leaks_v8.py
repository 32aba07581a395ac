"""What a contestant still read about others' submissions nobody else may open (an eighth attack).

* **The challenge's warnings.** ``GET /api/challenges/{slug}/`` publishes ``warnings`` (what the settings cost the
  board) to anyone; its advice changed from "Raise k to 6" to "k is fixed now that submissions exist" the moment any
  submission existed, a rival's first try still queued or failed, which nobody else may open: a reader polling the
  challenge read when the first hidden submission was made. The advice now follows the submissions the reader may
  open (the hosts: all of them).
"""

from __future__ import annotations

import numpy as np
import pytest
from rest_framework.test import APIClient

from leaderboard.models import Submission

from .factories import PASSWORD, digits_challenge, stored_recipe

pytestmark = pytest.mark.django_db


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_challenge_s_warnings_do_not_tell_that_a_hidden_submission_exists(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Warned", k_runs=5)  # k < 6: the board's costs are said
    url = f"/api/challenges/{challenge.slug}/"
    readers = {"anonymous": APIClient(), "alice": client_for(alice)}
    before = {name: reader.get(url).json()["warnings"] for name, reader in readers.items()}
    assert before["anonymous"] and all("Raise k" in w for w in before["anonymous"][:1])

    queued = stored_recipe(challenge, bob, "first try", runs_expected=5)
    Submission.objects.filter(pk=queued.pk).update(status="queued")  # nobody else may open it
    assert APIClient().get(f"/api/submissions/{queued.pk}/").status_code == 404
    for name, reader in readers.items():
        assert reader.get(url).json()["warnings"] == before[name], name

    hosts = client_for(host).get(url).json()["warnings"]  # the hosts read that k is frozen now
    assert "k is fixed now that submissions exist" in hosts[0]
    shown = stored_recipe(challenge, bob, "scored", runs_expected=1, scores=[0.8])  # one anyone may open
    assert APIClient().get(f"/api/submissions/{shown.pk}/").status_code == 200
    assert "k is fixed now that submissions exist" in APIClient().get(url).json()["warnings"][0]


def _log_loss_probes(margin_factor: float = 1.0, uniform_rows: int = 0) -> int:
    """The attack of the test below, η the board's (:func:`evaluation.row_moves.ladder_margin_for`, the host's 0.01
    raised) times ``margin_factor``; ``uniform_rows`` rows of the baseline predict every class alike (a known,
    label-free log(10) each), which moves its score off the grid of η. How many of 20 attacked labels were read."""
    from evaluation.boards import ladder, ladder_anchor
    from evaluation.metrics import get_metric, score_predictions
    from evaluation.row_moves import ladder_margin_for

    rng = np.random.default_rng(0)
    classes = [str(c) for c in range(10)]
    truth = rng.choice(classes, size=150)
    metric = get_metric("log_loss")
    margin = ladder_margin_for(0.01, "log_loss", truth, classes=classes) * margin_factor
    assert margin == pytest.approx(0.4806 * margin_factor, abs=1e-4)  # 2 x 36.04 / 150: raised from 0.01
    baseline = np.zeros((150, 10))
    baseline[:, 0] = 1.0
    baseline[150 - uniform_rows :] = 0.1
    anchor = ladder_anchor(metric.score_range, higher_is_better=False)
    scores = [score_predictions("log_loss", truth, baseline, classes=classes).score]
    guessed = {row: "0" for row in range(20)}
    for row in range(20):  # the attacker's adaptive sequence: each row probed class by class on its best file
        for c in range(1, 10):
            probe = baseline.copy()
            probe[row] = 0.0
            probe[row, c] = 1.0
            scores.append(score_predictions("log_loss", truth, probe, classes=classes).score)
            releases = ladder(scores, margin, higher_is_better=False, anchor=anchor)
            if releases[-1] != releases[-2]:  # the release moved: the probed class is the row's label
                guessed[row], baseline = classes[c], probe
                break
    return sum(guessed[row] == truth[row] for row in range(20))


def test_single_row_probes_release_nothing_under_the_ladder_on_a_log_loss_board():
    """docs/integrity.md: "one changed row moves the score by 1/n_public; while that is below eta, single-row probes
    release nothing". On a log-loss board one row moves it by up to -log(eps)/n_public: a contestant's baseline puts
    every row's probability on one class, each probe moves one row's probability to another class, and the Ladder
    (eta = 0.01, 150 public rows, the attack test's setting) released exactly the probes that were right (20 of 20).
    The board's η is now raised to twice the largest one-row move (0.48)."""
    recovered = _log_loss_probes()
    assert recovered <= 6, f"{recovered} of 20 labels read off the Ladder's releases (chance: about 2)"


@pytest.mark.parametrize("uniform_rows", [0, 4, 8, 12])
def test_single_row_probes_release_nothing_from_a_baseline_off_the_ladder_s_grid(uniform_rows):
    """The best release is rounded to the grid of η, so a baseline scoring up to η/2 better than its release let a
    right single-row probe (gain = the largest move <= η) beat the release by more than η: with η = the largest move,
    8 uniform rows put the baseline 0.49η above its release and every right probe was released (20 of 20). The board's
    η is now at least twice the largest move (evaluation.row_moves.ROW_MOVE_FACTOR): back to chance."""
    recovered = _log_loss_probes(uniform_rows=uniform_rows)
    assert recovered <= 6, f"{recovered} of 20 labels read off the Ladder's releases (chance: about 2)"


def test_the_largest_move_alone_left_the_off_grid_baseline_open():
    """What the factor of two closes, measured: η = the largest one-row move (half the board's η) reads every label
    of the attack from the off-grid baseline (a test that the attack above can see a leak where there is one)."""
    assert _log_loss_probes(0.5, uniform_rows=8) >= 18
