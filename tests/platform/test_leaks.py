"""No endpoint, page, export or error message shows a hidden test label to anyone but the hosts.

The regression challenge's hidden labels are distinctive decimals (``9017.4830211`` …), so
any leak, in any format, is found by a substring search.
"""

from __future__ import annotations

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.services.scoring import submission_score

from .factories import PASSWORD, csv_bytes, make_user, regression_challenge

pytestmark = pytest.mark.django_db


def logged_in(user) -> APIClient:
    client = APIClient()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_hidden_labels_never_reach_non_hosts():
    host, contestant = make_user("host"), make_user("contestant")
    challenge, frame, hidden = regression_challenge(host)
    test = frame[frame.is_test == 1]
    client = logged_in(contestant)
    predictions = pd.DataFrame({"id": test.id.to_numpy(), "prediction": 9000.0})
    response = client.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "constant", "files": [SimpleUploadedFile("p.csv", csv_bytes(predictions))]},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    submission_id = response.json()["id"]
    submission_score(submission_id=submission_id)

    bad_files = {
        "unknown id": predictions.assign(id=lambda d: d.id.where(d.index != 0, "zzz")),
        "text value": predictions.astype(object).assign(prediction=lambda d: d.prediction.where(d.index != 1, "abc")),
        "missing rows": predictions.iloc[:-1],
    }
    slug = challenge.slug
    urls = [
        "/",
        reverse("challenge-detail", kwargs={"slug": slug}),
        reverse("submission-detail", kwargs={"pk": submission_id}),
        "/api/challenges/",
        f"/api/challenges/{slug}/",
        f"/api/challenges/{slug}/leaderboard/",
        f"/api/challenges/{slug}/leaderboard/?format=csv",
        f"/api/challenges/{slug}/runs/",
        f"/api/challenges/{slug}/runs/?format=csv",
        f"/api/submissions/{submission_id}/",
        f"/api/submissions/{submission_id}/runs/0/",
        f"/api/challenges/{slug}/submissions/",
        f"/api/challenges/{slug}/data/train/",
        f"/api/challenges/{slug}/data/test_inputs/",
        f"/api/challenges/{slug}/data/sample_submission/",
        f"/api/challenges/{slug}/data/hidden_labels/",
        f"/c/{slug}/download/hidden_labels/",
        f"/c/{slug}/download/test_inputs/",
        "/api/schema/",
    ]
    seen = []
    for viewer in (APIClient(), client):
        for url in urls:
            response = viewer.get(url)
            raw = b"".join(response.streaming_content) if response.streaming else response.content  # CSV streams
            body = raw.decode("utf-8", errors="replace")
            seen.append((url, response.status_code))
            leaked = [label for label in hidden if label in body]
            assert not leaked, f"{url} showed hidden labels {leaked[:3]} (status {response.status_code})"
        for name, table in bad_files.items():
            response = viewer.post(
                f"/api/challenges/{slug}/submissions/",
                {"method_name": name, "files": [SimpleUploadedFile("p.csv", csv_bytes(table))]},
                format="multipart",
            )
            body = response.content.decode()
            assert response.status_code in (400, 401, 403), (name, body)
            assert not [label for label in hidden if label in body], name
    # The crawl reached real content, not just error pages.
    assert dict(seen)[f"/api/challenges/{slug}/data/test_inputs/"] == 200
    assert dict(seen)[f"/api/challenges/{slug}/data/hidden_labels/"] in (401, 403)
    # And the host does get them: the search above would have found a leak.
    host_body = logged_in(host).get(f"/api/challenges/{slug}/data/hidden_labels/").content.decode()
    assert all(label in host_body for label in hidden)
