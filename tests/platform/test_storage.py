"""Storage without a shared disk: datasets, hidden labels and submissions on an S3-compatible server.

The server is moto's server mode on 127.0.0.1 (a real HTTP S3 API; ``s3_storage`` in
tests/conftest.py), reached through django-storages exactly as MinIO or AWS S3 would be.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from leaderboard.models import Submission
from leaderboard.services.accounts import token_create
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import digits_challenge, label_predictions

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_a_prediction_submission_round_trips_through_s3(s3_storage, host, alice, client):
    challenge, frame = digits_challenge(host)
    dataset = challenge.dataset
    assert dataset.train_file.storage.bucket_name == s3_storage.bucket
    assert dataset.hidden_labels_file.storage.bucket_name == s3_storage.private_bucket
    token = token_create(user=alice)[1]
    response = client.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "s3", "files": [_upload(label_predictions(frame, correct_fraction=0.8))]},
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 202, response.content
    submission = submission_score(submission_id=response.json()["id"])
    assert submission.status == "scored"
    assert 0.7 < submission.runs.get().test_score < 0.9

    public, private = s3_storage.keys(s3_storage.bucket), s3_storage.keys(s3_storage.private_bucket)
    assert f"public/challenges/{challenge.slug}/train.csv" in public
    assert f"public/challenges/{challenge.slug}/test_inputs.csv" in public
    assert any(key.startswith("public/submissions/") for key in public)
    assert private == [f"private/challenges/{challenge.slug}/hidden_labels.csv"]
    assert not any("hidden" in key for key in public)  # hidden labels never in the public bucket

    # Downloads stream from the object store; the hidden labels go to hosts only.
    test_inputs = client.get(f"/api/challenges/{challenge.slug}/data/test_inputs/")
    assert test_inputs.status_code == 200 and b"img-0000" in test_inputs.getvalue()
    assert (
        client.get(
            f"/api/challenges/{challenge.slug}/data/hidden_labels/", HTTP_AUTHORIZATION=f"Token {token}"
        ).status_code
        == 403
    )
    host_token = token_create(user=host)[1]
    hidden = client.get(
        f"/api/challenges/{challenge.slug}/data/hidden_labels/", HTTP_AUTHORIZATION=f"Token {host_token}"
    )
    assert hidden.status_code == 200 and b"label" in hidden.getvalue()


def test_a_rejected_upload_leaves_no_object_behind(s3_storage, host, alice, monkeypatch):
    challenge, frame = digits_challenge(host)
    before = s3_storage.keys(s3_storage.bucket)

    def refuse(*args, **kwargs):
        raise RuntimeError("the database refused the row")

    monkeypatch.setattr("leaderboard.services.submissions.Run.objects.create", refuse)
    with pytest.raises(RuntimeError):
        submission_create_predictions(
            challenge=challenge, user=alice, method_name="p", files=[UploadedFile("p.csv", label_predictions(frame))]
        )
    assert s3_storage.keys(s3_storage.bucket) == before and not Submission.objects.exists()


def test_the_readiness_check_reaches_both_buckets(s3_storage, client):
    body = client.get("/health/ready").json()
    assert body["checks"]["storage"]["ok"] and body["checks"]["hidden_storage"]["ok"], body
    s3_storage.client().delete_bucket(Bucket=s3_storage.private_bucket)
    body = client.get("/health/ready").json()
    assert not body["checks"]["hidden_storage"]["ok"] and "404" in body["checks"]["hidden_storage"]["error"]


def test_no_code_reads_a_stored_file_by_path():
    """An object store has no path: stored files are opened through the storage API only."""
    offenders = []
    for folder in ("leaderboard", "tasks"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr == "path" and _looks_like_a_file(node.value):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def _looks_like_a_file(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return text.endswith(("_file", "file", "storage")) or "FieldFile" in text


def _upload(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("p.csv", data, content_type="text/csv")
