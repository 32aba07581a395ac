"""The Ladder's η on a board is at least the largest move one public row's prediction makes to its metric.

Blum & Hardt's argument ("one changed row moves the score by 1/n_public; below η, single-row probes release nothing")
is an accuracy's: log loss moves by up to -log(eps)/n_public per row (0.24 at 150 rows), so a Ladder board of η = 0.01
released every right single-row probe (tests/platform/test_leaks_v8.py). The board now raises η to twice that move (a
release is rounded to η's grid) and says so; MAE and RMSE, unbounded per row, refuse the Ladder (a stored one releases each person's first score alone).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Challenge
from leaderboard.services.boards import board_public_mask, ladder_margin
from leaderboard.services.dataset_files import dataset_hidden_labels
from leaderboard.services.errors import ServiceError

from .factories import PASSWORD, csv_bytes, digits_challenge, digits_frame, regression_challenge, stored_recipe

pytestmark = pytest.mark.django_db

REFUSAL = (
    "The Ladder protects only metrics one row moves by a bounded amount (Blum & Hardt 2015); rmse is unbounded per "
    "row: choose rounded or exact feedback, or a bounded metric."
)


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def test_a_log_loss_ladder_board_releases_with_the_largest_one_row_move_and_says_why(host, alice):
    challenge, _ = digits_challenge(
        host, title="Log loss", metric="log_loss", feedback="ladder", ladder_margin=0.01, split_scheme="fixed"
    )  # a fixed split: recipe runs score every public row once (resamples: test_ladder_resamples.py)
    n_public = int(board_public_mask(dataset=challenge.dataset).sum())
    move = 2 * -math.log(np.finfo(np.float64).eps) / n_public  # twice one row's move (ROW_MOVE_FACTOR)
    margin = ladder_margin(challenge)
    assert margin.host == 0.01 and margin.value == pytest.approx(move, rel=1e-9) and margin.raised
    stored_recipe(challenge, alice, "first", runs_expected=1, scores=[1.0])
    from leaderboard.services.reports import report_recompute

    report_recompute(challenge_id=challenge.pk)
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert board["feedback"]["margin"] == pytest.approx(move, rel=1e-9)
    note = board["entries"][0]["excluded_reason"]
    assert (
        f"η = {move:g}, raised from the host's 0.01 to twice the largest move one of the {n_public} public rows" in note
    )
    assert "log_loss" in note
    warnings = client_for(host).get(f"/api/challenges/{challenge.slug}/").json()["warnings"]
    assert any("η = 0.01 is below twice the largest move" in w for w in warnings), warnings
    assert not any("η = 0.01" in w for w in APIClient().get(f"/api/challenges/{challenge.slug}/").json()["warnings"])


def test_an_accuracy_board_whose_eta_exceeds_one_row_keeps_the_host_s_eta(host):
    challenge, _ = digits_challenge(host, title="Accuracy", feedback="ladder", ladder_margin=0.05, split_scheme="fixed")
    labels = dataset_hidden_labels(dataset=challenge.dataset)[board_public_mask(dataset=challenge.dataset)]
    assert 2 / labels.size < 0.05
    assert ladder_margin(challenge).value == 0.05 and not ladder_margin(challenge).raised
    assert not any("η" in w for w in client_for(host).get(f"/api/challenges/{challenge.slug}/").json()["warnings"])


def test_the_ladder_is_refused_on_rmse_at_creation(host, alice):
    with pytest.raises(ServiceError) as refused:
        regression_challenge(host, feedback="ladder")
    assert str(refused.value) == REFUSAL and refused.value.field == "feedback"
    frame = digits_frame(60)
    data = {
        "title": "Ladder on MAE",
        "dataset": SimpleUploadedFile("d.csv", csv_bytes(frame.assign(label=frame.label.astype(float)))),
        "id_column": "id",
        "label_column": "label",
        "test_column": "is_test",
        "metric": "mae",
        "feedback": "ladder",
    }
    response = client_for(alice).post("/api/challenges/", data, format="multipart")
    assert response.status_code == 400, response.content
    assert "mae is unbounded per row" in response.content.decode()
    assert not Challenge.objects.filter(title="Ladder on MAE").exists()


def test_the_ladder_is_refused_on_rmse_at_update_and_a_stored_one_releases_first_scores_only(host, alice):
    challenge, _, _ = regression_challenge(host, feedback="rounded")
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", {"feedback": "ladder"}, format="json")
    assert response.status_code == 400 and response.json()["detail"] == REFUSAL, response.content
    Challenge.objects.filter(pk=challenge.pk).update(feedback="ladder")  # older data, stored before the refusal
    challenge.refresh_from_db()
    assert ladder_margin(challenge).value == math.inf
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", {"title": "Renamed"}, format="json")
    assert response.status_code == 200, response.content  # its host may still edit what the rule does not touch
    first = stored_recipe(challenge, alice, "first", runs_expected=1, scores=[5.0])
    better = stored_recipe(challenge, alice, "better", runs_expected=1, scores=[0.5])
    from leaderboard.services.reports import report_recompute

    report_recompute(challenge_id=challenge.pk)
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    shown = {row["submission_id"]: row["mean"]["estimate"] for row in board["entries"]}
    assert shown == {first.pk: 5.0, better.pk: 5.0}  # the first score alone, however far the next one beats it
    assert board["feedback"]["margin"] is None
    assert "rmse is unbounded per row" in board["entries"][0]["excluded_reason"]
    warnings = client_for(host).get(f"/api/challenges/{challenge.slug}/").json()["warnings"]
    assert any("rmse is unbounded per row" in w for w in warnings), warnings
