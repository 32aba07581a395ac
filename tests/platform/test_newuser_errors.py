"""A new user's first mistakes with the API are named (the new user's review, 2026-11-30): a token sent under
another scheme than ``Token`` was answered "Authentication credentials were not provided.", and an unknown
challenge slug or submission id "No Challenge matches the given query.", naming neither the scheme nor the slug."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from .factories import PASSWORD, digits_challenge, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def token():
    make_user("alice")
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200
    return response.json()["token"]


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("Bearer {token}", "uses the scheme 'Bearer', which this API does not take"),
        ("{token}", "holds no scheme before the token"),
        (None, "Authentication credentials were not provided"),
    ],
)
def test_a_token_in_the_wrong_form_is_told_the_form_the_api_takes(token, header, said):
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header.format(token=token))
    response = client.get("/api/teams/")
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert said in detail and "Authorization: Token <token>" in detail and "/api/auth/token/" in detail
    assert token not in detail
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/teams/").status_code == 200


def test_an_unknown_challenge_slug_or_submission_id_is_named():
    host = make_user("host")
    challenge, _ = digits_challenge(host)
    client = APIClient()
    for path in ("/api/challenges/no-such-slug/leaderboard/", "/api/challenges/no-such-slug/"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.json() == {
            "detail": "There is no challenge 'no-such-slug' that you may see (GET /api/challenges/ lists them)."
        }
    response = client.get("/api/submissions/987654/")
    assert (
        response.status_code == 404 and response.json()["detail"] == "There is no submission 987654 that you may see."
    )
    # a 404 the project words itself keeps its words
    response = client.get(f"/api/challenges/{challenge.slug}/data/labels/")
    assert response.status_code == 404 and "Unknown download 'labels'" in response.json()["detail"]


@pytest.mark.parametrize("size", ["small", "wide"])
def test_a_json_predictions_file_is_named_as_json_not_as_too_many_columns(size):
    """pandas' ``to_json`` of a prediction frame was refused as "the file has 80 columns; the limit is 14 columns"
    (its commas, read as a CSV header) or, with few rows, for a missing ``id`` column among JSON fragments."""
    import pandas as pd
    from django.core.files.uploadedfile import SimpleUploadedFile

    host, alice = make_user("host"), make_user("alice")
    challenge, frame = digits_challenge(host)
    test = frame[frame.is_test == 1]
    rows = test if size == "wide" else test.head(2)
    data = pd.DataFrame({"id": rows.id.to_numpy(), "prediction": rows.label.to_numpy()}).to_json().encode()
    client = APIClient()
    client.force_authenticate(alice)
    response = client.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "json", "files": [SimpleUploadedFile("preds.json", data, content_type="application/json")]},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["detail"].startswith("preds.json: the file is not CSV text; it looks like JSON."), (
        response.json()
    )
