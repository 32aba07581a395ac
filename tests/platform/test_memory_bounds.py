"""A small upload must not take a large part of the web process's memory: parsed JSON takes many
times its text (5 MB of ``[],`` about 140 MB), so what the web process parses is bounded before it
is parsed, and what it stores and reads back with every list is bounded too.

Measured before (peak RSS of a process that made the call, against its baseline): five recipe
submissions with 4.9 MB of hyperparameters each, stored as they came, then a host's list of
submissions: +651 MB for that one request (about 130 MB a row).
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Submission
from leaderboard.services.errors import ServiceError
from leaderboard.services.submissions import UploadedFile, submission_create_recipe

from .factories import PASSWORD, digits_challenge, make_user

pytestmark = pytest.mark.django_db
RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return train.y[:1]\n"


def _nested(count: int) -> dict:
    return {"grid": [[] for _ in range(count)]}


def test_hyperparameters_past_their_limit_are_refused_and_nothing_is_stored(host):
    challenge, _ = digits_challenge(host)
    alice = make_user("alice")
    submit = dict(challenge=challenge, user=alice, recipe=UploadedFile(name="r.py", data=RECIPE))
    with pytest.raises(ServiceError) as refused:
        submission_create_recipe(method_name="big", hyperparameters=_nested(30_000), **submit)
    assert (refused.value.message, refused.value.field) == (
        "The hyperparameters take 88 KB as JSON; the limit is 64 KB.",
        "hyperparameters",
    )
    assert not Submission.objects.exists()
    kept = submission_create_recipe(method_name="grid", hyperparameters=_nested(20_000), **submit)  # 59 KB
    assert len(kept.hyperparameters["grid"]) == 20_000


def test_the_api_refuses_hyperparameters_past_their_limit_on_their_text(host):
    challenge, _ = digits_challenge(host)
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": host.username, "password": PASSWORD}, format="json")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    url = f"/api/challenges/{challenge.slug}/submissions/"
    text = json.dumps(_nested(30_000), separators=(",", ":"))  # 88 KB as sent, refused before it is parsed
    multipart = client.post(
        url,
        {"method_name": "x", "kind": "recipe", "hyperparameters": text, "recipe": SimpleUploadedFile("r.py", RECIPE)},
    )
    assert multipart.status_code == 400, multipart.content[:300]
    assert multipart.json()["errors"]["hyperparameters"] == [
        "The hyperparameters take 88 KB as JSON; the limit is 64 KB."
    ]
    assert not Submission.objects.exists()
