"""A new user's walk through README's API section against the demo (review newuser5): errors that did not name the
input at fault, or named the wrong thing."""

from __future__ import annotations

import pytest
from django.test import Client

from .factories import digits_challenge, make_user, stored_recipe

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    host, alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(host, bootstrap_resamples=200)
    a = stored_recipe(challenge, alice, "a", 3, scores=[0.8, 0.81, 0.79])
    b = stored_recipe(challenge, host, "b", 3, scores=[0.7, 0.72, 0.71])
    client = Client()
    client.force_login(alice)
    return challenge, a, b, client


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/challenges/?limit=abc", "limit"),
        ("/api/challenges/?metric=foo", "metric"),
        ("/api/challenges/{slug}/leaderboard/?around=abc", "around"),
        ("/api/challenges/{slug}/leaderboard/?gamma=2", "gamma"),
        ("/api/challenges/{slug}/leaderboard/?statistic=foo", "statistic"),
        ("/api/challenges/{slug}/compare/?a={a}", "b"),
        ("/api/challenges/{slug}/compare/?a=x&b={b}", "a"),
        ("/api/challenges/{slug}/runs/?status=foo", "status"),
    ],
)
def test_a_validation_error_names_its_field(board, api_contract, path, field):
    """The schema's Error declares ``field``, "the input field the error concerns", and the README says a filter
    or page parameter that does not parse is a 400 naming it. A validation error named it only in ``detail``'s
    words and the keys of ``errors``: ``?limit=abc`` answered no ``field`` (an unknown parameter, ``?stauts=``, did),
    so a client that shows ``field`` beside the input had nothing to show."""
    challenge, a, b, client = board
    response = client.get(path.format(slug=challenge.slug, a=a.pk, b=b.pk))
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body.get("field") == field, body
    assert field in body["errors"]
    assert not api_contract, api_contract


def test_a_token_request_without_its_password_names_it(api_contract):
    make_user("alice")
    response = Client().post("/api/auth/token/", {"username": "alice"}, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["field"] == "password", response.json()
    assert not api_contract, api_contract


def test_an_error_for_the_input_as_a_whole_names_no_field(board, api_contract):
    """``non_field_errors`` is no input field: such an error keeps ``field`` out."""
    from rest_framework import serializers
    from rest_framework.exceptions import ValidationError
    from rest_framework.test import APIRequestFactory

    from leaderboard.api.exceptions import exception_handler

    request = APIRequestFactory().get("/api/")
    whole = exception_handler(ValidationError({"non_field_errors": ["the pair is refused"]}), {"request": request})
    assert whole.data == {"detail": "the pair is refused", "errors": {"non_field_errors": ["the pair is refused"]}}
    nested = exception_handler(
        serializers.ValidationError({"files": [{"name": ["too long"]}]}), {"request": request}
    ).data
    assert nested["field"] == "files.0.name" and nested["errors"] == {"files.0.name": ["too long"]}


def test_compare_names_the_entry_that_is_not_on_the_board(board, api_contract):
    """``?around=999`` on the leaderboard answered 404 with ``field: around``; ``/compare/?a=..&b=999`` answered
    "Submission 999 (b) is not on this leaderboard." with no ``field``."""
    challenge, a, _, client = board
    for query, field in ((f"a={a.pk}&b=999", "b"), (f"a=999&b={a.pk}", "a")):
        response = client.get(f"/api/challenges/{challenge.slug}/compare/?{query}")
        assert response.status_code == 404
        assert response.json() == {
            "detail": f"Submission 999 ({field}) is not on this leaderboard.",
            "field": field,
        }
    assert not api_contract, api_contract


def test_a_run_that_does_not_exist_is_named_by_its_index(board, api_contract):
    """``GET /api/submissions/16/runs/5/`` of a one-run submission answered "There is no run 16 that you may see.":
    the submission's id, given as the run's."""
    _, a, _, client = board
    response = client.get(f"/api/submissions/{a.pk}/runs/7/")
    assert response.status_code == 404
    assert response.json()["detail"] == f"There is no run 7 of submission {a.pk} that you may see."
    assert client.get(f"/api/submissions/{a.pk}/runs/2/").status_code == 200
    assert not api_contract, api_contract
