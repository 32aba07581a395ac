"""Issue 21's rounded-feedback attack, replayed black box: HTTP uploads, a real Celery worker scores them.

A contestant posts a base prediction file and one-row probes over HTTP (the ``requests`` client
against pytest-django's live server); the session's worker process scores them and recomputes
the report. Under 1-digit rounding, an anonymous reader must not tell the probes that fixed a
public row from the others: one rank, one group, no comparison, submission order in the CSV.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest
import requests

from leaderboard.models import Report, Run
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from tests.conftest import wait_for
from tests.platform.factories import PASSWORD, csv_bytes, digits_challenge, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_rounded_probes_are_indistinguishable_through_the_api_and_a_real_worker(live_server, celery_worker_process):
    host, _alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(
        host, title="Rounded e2e", feedback="rounded", feedback_digits=1, daily_quota=20, bootstrap_resamples=200
    )
    token = requests.post(
        f"{live_server.url}/api/auth/token/", data={"username": "alice", "password": PASSWORD}, timeout=10
    ).json()["token"]
    headers = {"Authorization": f"Token {token}"}
    ids = dataset_test_ids(dataset=challenge.dataset)
    truth = np.asarray(dataset_hidden_labels(dataset=challenge.dataset)).astype(str)
    correct = max(4, int(0.1 * len(truth)))  # base ≈ 0.1; one more right row still rounds to 0.1
    base = np.array([t if i < correct else str((int(t) + 1) % 10) for i, t in enumerate(truth)])
    files = [base]
    for j in range(3):  # probe 0 and 2 fix a row, probe 1 changes a wrong row to another wrong label
        probe = base.copy()
        probe[correct + j] = truth[correct + j] if j % 2 == 0 else str((int(truth[correct + j]) + 2) % 10)
        files.append(probe)
    submitted = []
    for k, labels in enumerate(files):
        data = csv_bytes(pd.DataFrame({"id": ids, "prediction": list(labels)}))
        response = requests.post(
            f"{live_server.url}/api/challenges/{challenge.slug}/submissions/",
            headers=headers,
            data={"method_name": f"probe {k}"},
            files=[("files", ("p.csv", data, "text/csv"))],
            timeout=30,
        )
        assert response.status_code == 202, response.text
        submitted.append(response.json()["id"])

    def board_complete():
        if Run.objects.filter(submission_id__in=submitted, status="succeeded").count() < len(submitted):
            return None
        if Report.objects.filter(challenge=challenge, recompute_pending=True).exists():
            return None
        body = requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/leaderboard/", timeout=10).json()
        return body if len(body["entries"]) == len(submitted) else None

    board = wait_for(board_complete, timeout=180, interval=0.5)
    exact = dict(Run.objects.filter(submission_id__in=submitted).values_list("submission_id", "test_score"))
    assert len(set(exact.values())) == 2 and {round(v, 1) for v in exact.values()} == {0.1}
    assert {row["rank_display"] for row in board["entries"]} == {"=1"}
    assert len({row["groups"] for row in board["entries"]}) == 1
    assert [row["submission_id"] for row in board["entries"]] == sorted(submitted)
    fixer, base_id = submitted[1], submitted[0]
    assert exact[fixer] > exact[base_id]
    pair = requests.get(
        f"{live_server.url}/api/challenges/{challenge.slug}/compare/?a={fixer}&b={base_id}", timeout=30
    ).json()
    assert pair["comparison"] is None and "rounded to 1 digit" in pair["reason"]
    for submission_id in submitted:
        body = requests.get(f"{live_server.url}/api/submissions/{submission_id}/", headers=headers, timeout=10).json()
        assert body["score"] == 0.1
    export = requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/leaderboard/?format=csv", timeout=30)
    order = [int(row["submission_id"]) for row in csv.DictReader(io.StringIO(export.text))]
    assert order == sorted(submitted)
