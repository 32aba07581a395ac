"""suites19: the public and the private board of one challenge, built through the services (predictions posted,
scored, published, revealed), each satisfy the board's invariants, and the private board's rank change is the
difference of the two boards' ranks."""

from __future__ import annotations

import numpy as np
import pytest
from rest_framework.test import APIClient

from leaderboard.services.boards import board_public_mask
from leaderboard.services.dataset_files import dataset_hidden_labels
from leaderboard.services.reports import report_recompute

from .factories import digits_challenge, make_user
from .test_competition_rules_v2 import client_for, post_predictions, scored

pytestmark = pytest.mark.django_db

ACCURACIES = [(0.95, 0.6), (0.9, 0.9), (0.85, 0.7), (0.8, 0.95), (0.7, 0.75), (0.6, 0.5), (0.92, 0.88), (0.9, 0.6)]


def random_predictions(challenge, public_correct: float, private_correct: float, rng) -> np.ndarray:
    """Right on a random ``public_correct`` share of the public rows and ``private_correct`` of the private ones."""
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    public = board_public_mask(dataset=challenge.dataset)
    out = np.array([str((int(t) + 1) % 10) for t in truth])
    for part, fraction in ((public, public_correct), (~public, private_correct)):
        rows = rng.permutation(np.flatnonzero(part))[: int(round(fraction * part.sum()))]
        out[rows] = truth[rows]
    return out


def check_board(board: dict) -> None:
    """Ranks ordered by the shown statistic (but for the section's inversions), rank intervals holding their ranks,
    the leader group every entry beaten by none (letters: sharing one with each entry shown above), the state of
    the art's bound on the right side of the raw best."""
    hib = board["higher_is_better"]
    rows = {row["submission_id"]: row for row in board["entries"]}
    for section in board["sections"]:
        order = [rows[i] for i in section["entries"]]
        inverted = {tuple(pair) for pair in section.get("inversions", [])}
        for above, below in zip(order, order[1:]):
            assert above["rank"] <= below["rank"]
            a, b = (
                (above["ranking_value"], below["ranking_value"])
                if hib
                else (-above["ranking_value"], -below["ranking_value"])
            )
            if (above["submission_id"], below["submission_id"]) not in inverted:
                assert a >= b, (above, below)
            if a == b:
                assert above["rank"] == below["rank"]
        for row in order:
            interval = row.get("rank_interval")
            if interval:
                assert interval["low"] <= row["rank"] <= interval["high"], row
        if not section["compared"]:  # no comparison published (rounded predictions, the Ladder): the top entries
            assert sorted(section["leader_group"]) == sorted(r["submission_id"] for r in order if r["rank"] == 1)
        elif "groups_note" not in section:
            letters = {row["submission_id"]: set(row["group_letters"]) for row in order if row["compared"]}
            ids = [i for i in section["entries"] if i in letters]
            unbeaten = [i for k, i in enumerate(ids) if all(letters[i] & letters[j] for j in ids[:k])]
            assert sorted(section["leader_group"]) == sorted(unbeaten), (section["leader_group"], letters)
        sota = section.get("sota")
        if sota and sota.get("bound") is not None:
            assert sota["bound_side"] == ("lower" if hib else "upper")
            assert (sota["bound"] <= sota["raw"]) if hib else (sota["bound"] >= sota["raw"]), sota


@pytest.fixture(
    params=[{}, {"feedback": "rounded", "feedback_digits": 1}, {"feedback": "ladder", "ladder_margin": 0.05}]
)
def two_boards(host, request):
    challenge, _ = digits_challenge(
        host, title="Two boards", public_fraction=0.5, bootstrap_resamples=200, **request.param
    )
    rng = np.random.default_rng(19)
    for i, (pub, priv) in enumerate(ACCURACIES):
        labels = random_predictions(challenge, pub, priv, rng)
        scored(post_predictions(client_for(make_user(f"contestant{i}")), challenge, labels, name=f"m{i}"), challenge)
    return challenge


def test_the_public_and_the_private_board_hold_the_invariants_and_agree_on_rank_changes(two_boards, host):
    challenge = two_boards
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    public = APIClient().get(url).json()
    check_board(public)
    assert client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 200
    report_recompute(challenge_id=challenge.pk)
    public_after = APIClient().get(url).json()
    private = APIClient().get(url + "?board=private").json()
    assert private["board"] == "private"
    check_board(public_after)
    check_board(private)
    public_rank = {row["submission_id"]: row["rank"] for row in public_after["entries"]}
    assert {row["submission_id"] for row in private["entries"]} == set(public_rank)
    for row in private["entries"]:
        assert row["public_rank"] == public_rank[row["submission_id"]]
        assert row["rank_change"] == row["public_rank"] - row["rank"]
    assert any(row["rank_change"] for row in private["entries"])  # the private rows reorder the board


@pytest.fixture
def recipe_boards(host):
    """Recipe entries whose public and private runs order them differently by the mean and by Boo_n."""
    from leaderboard.models import Run

    from .factories import stored_recipe

    challenge, _ = digits_challenge(host, title="Recipe boards", public_fraction=0.5, bootstrap_resamples=200)
    rng = np.random.default_rng(7)
    for i in range(6):
        public = np.clip(0.6 + 0.03 * i + rng.normal(0, 0.02 + 0.03 * (i % 3), 8), 0, 1)
        private = np.clip(0.75 - 0.02 * i + rng.normal(0, 0.02 + 0.03 * ((i + 1) % 3), 8), 0, 1)
        sub = stored_recipe(challenge, make_user(f"cook{i}"), f"r{i}", 8, public)
        for run, p, q in zip(sub.runs.order_by("index"), public, private):
            Run.objects.filter(pk=run.pk).update(public_score=p, private_score=q, test_score=(p + q) / 2)
    report_recompute(challenge_id=challenge.pk, force=True)
    assert client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 200
    report_recompute(challenge_id=challenge.pk)
    return challenge


@pytest.mark.parametrize("query", ["", "&statistic=boo_n", "&statistic=mean", "&n=5", "&alpha=0.2"])
def test_a_private_recipe_board_s_rank_change_is_against_the_public_board_of_the_same_settings(recipe_boards, query):
    url = f"/api/challenges/{recipe_boards.slug}/leaderboard/?limit=500"
    public = APIClient().get(url + query).json()
    private = APIClient().get(url + "&board=private" + query).json()
    check_board(public)
    check_board(private)
    public_rank = {row["submission_id"]: row["rank"] for row in public["entries"]}
    for row in private["entries"]:
        assert row["public_rank"] == public_rank.get(row["submission_id"]), (query, row["method_name"])
        assert row["rank_change"] == row["public_rank"] - row["rank"]


def test_a_lower_is_better_challenge_s_two_boards_hold_the_invariants(host):
    from .factories import regression_challenge

    challenge, _, _ = regression_challenge(host, public_fraction=0.5, bootstrap_resamples=200)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(float)
    public = board_public_mask(dataset=challenge.dataset)
    rng = np.random.default_rng(3)
    for i, (pub, priv) in enumerate([(0.5, 3.0), (1.0, 1.0), (2.0, 0.5), (3.0, 2.0), (0.7, 0.6), (1.5, 4.0)]):
        labels = truth + rng.normal(0, 1, truth.size) * np.where(public, pub, priv)
        scored(post_predictions(client_for(make_user(f"fitter{i}")), challenge, labels, name=f"f{i}"), challenge)
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    check_board(APIClient().get(url).json())
    assert client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 200
    report_recompute(challenge_id=challenge.pk)
    public_board, private = APIClient().get(url).json(), APIClient().get(url + "?board=private").json()
    assert not private["higher_is_better"]
    check_board(public_board)
    check_board(private)
    public_rank = {row["submission_id"]: row["rank"] for row in public_board["entries"]}
    for row in private["entries"]:
        assert row["public_rank"] == public_rank[row["submission_id"]]
        assert row["rank_change"] == row["public_rank"] - row["rank"]
    assert any(row["rank_change"] for row in private["entries"])
