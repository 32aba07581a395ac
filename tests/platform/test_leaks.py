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
    host_body = logged_in(host).get(f"/api/challenges/{slug}/data/hidden_labels/").getvalue().decode()
    assert all(label in host_body for label in hidden)


def _csv_text(response) -> str:
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def test_the_runs_export_lists_only_the_runs_of_submissions_the_reader_may_open(host, alice, bob):
    """A failed or running submission of another team that no board shows is answered 404; its runs (scores,
    seeds, hyperparameters) were still listed by ``/runs/``, to anyone. One rule now
    (``selectors.submissions_readable``): what a reader may open, including what the board shows."""
    from leaderboard.models import Run
    from leaderboard.services.reports import report_recompute

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(host, title="Runs export")
    sub = stored_recipe(challenge, bob, "secret recipe", runs_expected=3, scores=[0.81234567])
    Run.objects.filter(submission=sub).update(hyperparameters={"lr": 0.0123, "secret_trick": "mixup"})
    Run.objects.create(submission=sub, index=1, status="failed", seeds={"split": 1}, split_id="s1")
    scored = stored_recipe(challenge, bob, "open recipe", runs_expected=1, scores=[0.7])
    url = f"/api/challenges/{challenge.slug}/runs/"
    for status in ("failed", "running"):
        sub.status = status
        sub.save(update_fields=["status"])
        assert logged_in(alice).get(f"/api/submissions/{sub.pk}/").status_code == 404
        listed = {run["submission"] for run in logged_in(alice).get(url).json()["results"]}
        assert listed == {scored.pk}, status
        anonymous = _csv_text(APIClient().get(url, {"format": "csv"}))
        assert "secret_trick" not in anonymous and "open recipe" in anonymous
        for reader in (bob, host):  # the team and the hosts still read every run
            listed = {run["submission"] for run in logged_in(reader).get(url).json()["results"]}
            assert listed == {sub.pk, scored.pk}, (status, reader.username)
    # Once the board shows the running entry (its runs so far), anyone may open it and read the runs behind it.
    report_recompute(challenge_id=challenge.pk, force=True)
    assert sub.pk in {row["submission_id"] for row in APIClient().get(f"{url[:-5]}leaderboard/").json()["entries"]}
    assert logged_in(alice).get(f"/api/submissions/{sub.pk}/").status_code == 200
    assert {run["submission"] for run in logged_in(alice).get(url).json()["results"]} == {sub.pk, scored.pk}
    sub.status = "cancelled"  # off the board at once, though its stored row stays until the next recomputation
    sub.save(update_fields=["status"])
    assert logged_in(alice).get(f"/api/submissions/{sub.pk}/").status_code == 404


def test_the_versions_beside_a_submission_are_those_the_reader_may_open(host, alice, bob):
    """The page of a scored version listed the entry's other versions to anyone: one a host hid, one failed, and
    which one the team chose for the private board. Others now see only what they may open, and no choice."""
    from leaderboard.services.moderation import submission_moderate

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(host, title="Versions", public_fraction=0.5)
    v1, v2, v3, v4 = (stored_recipe(challenge, bob, "m", runs_expected=1, scores=[s]) for s in (0.7, 0.71, 0.72, 0.73))
    submission_moderate(submission=v2, user=host, state="hidden", reason="copied code")
    v3.status, v3.selected_for_final = "failed", True
    v3.save()
    v4.selected_for_final = True
    v4.save()

    def versions(reader) -> str:
        page = logged_in(reader).get(f"/submissions/{v1.pk}/").content.decode()
        start = page.find("data-history")
        return page[start : page.find("</section>", start)] if start >= 0 else ""

    seen = versions(alice)
    assert f"submission {v4.pk}" in seen
    assert f"submission {v2.pk}" not in seen and f"submission {v3.pk}" not in seen
    assert "chosen for the private board" not in seen
    assert "selected_for_final" not in logged_in(alice).get(f"/api/submissions/{v4.pk}/").json()
    for reader in (bob, host):
        seen = versions(reader)
        assert all(f"submission {v.pk}" in seen for v in (v2, v3, v4)), reader.username
        assert "chosen for the private board" in seen
        assert logged_in(reader).get(f"/api/submissions/{v4.pk}/").json()["selected_for_final"] is True
