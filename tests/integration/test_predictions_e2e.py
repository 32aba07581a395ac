"""End to end on the real services: PostgreSQL, the Redis broker and a real Celery worker process.

A contestant uploads predictions over HTTP (the ``requests`` client against pytest-django's
live server); the worker process scores them; the API shows the score and per-run results.
"""

from __future__ import annotations

import threading

import pandas as pd
import pytest
import requests
from django.db import connection

from leaderboard.models import Submission
from tests.conftest import wait_for
from tests.platform.factories import PASSWORD, digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def token(base: str, username: str) -> dict:
    response = requests.post(f"{base}/api/auth/token/", data={"username": username, "password": PASSWORD}, timeout=10)
    response.raise_for_status()
    return {"Authorization": f"Token {response.json()['token']}"}


def test_upload_score_and_read_back(live_server, celery_worker_process):
    assert connection.vendor == "postgresql"
    host, _alice = make_user("host"), make_user("alice")
    challenge, frame = digits_challenge(host)
    headers = token(live_server.url, "alice")
    files = [
        ("files", (f"seed{i}.csv", label_predictions(frame, correct_fraction=0.75 + 0.05 * i, seed=i), "text/csv"))
        for i in range(3)
    ]
    response = requests.post(
        f"{live_server.url}/api/challenges/{challenge.slug}/submissions/",
        headers=headers,
        data={"method_name": "three seeds"},
        files=files,
        timeout=30,
    )
    assert response.status_code == 202, response.text
    submission_id = response.json()["id"]

    def scored():
        body = requests.get(f"{live_server.url}/api/submissions/{submission_id}/", headers=headers, timeout=10).json()
        return body if body["status"] in ("scored", "failed") else None

    body = wait_for(scored, timeout=90)
    assert body["status"] == "scored", body
    truth = frame[frame.is_test == 1].label.to_numpy()
    for i, run in enumerate(body["runs"]):
        predicted = pd.read_csv(
            pd.io.common.BytesIO(label_predictions(frame, correct_fraction=0.75 + 0.05 * i, seed=i))
        )
        assert run["status"] == "succeeded"
        assert run["test_score"] == pytest.approx((predicted.prediction.to_numpy() == truth).mean())
    board = requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/leaderboard/", timeout=10).json()
    assert [entry["method_name"] for entry in board["entries"]] == ["three seeds"]
    runs_csv = requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/runs/?format=csv", timeout=10).text
    assert len(runs_csv.strip().splitlines()) == 1 + 3


def test_concurrent_uploads_cannot_both_take_the_last_slot(live_server, celery_worker_process):
    """Two uploads race for a total quota of 1 on PostgreSQL: the team-row lock lets exactly one in."""
    assert connection.vendor == "postgresql"
    host, _alice = make_user("host"), make_user("alice")
    challenge, frame = digits_challenge(host, total_quota=1, daily_quota=0, title="Race")
    headers = token(live_server.url, "alice")
    data = label_predictions(frame)
    barrier = threading.Barrier(4)
    codes: list[int] = []

    def upload():
        barrier.wait()
        response = requests.post(
            f"{live_server.url}/api/challenges/{challenge.slug}/submissions/",
            headers=headers,
            data={"method_name": "race"},
            files=[("files", ("p.csv", data, "text/csv"))],
            timeout=60,
        )
        codes.append(response.status_code)

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202, 429, 429, 429], codes
    assert Submission.objects.filter(challenge=challenge).count() == 1
