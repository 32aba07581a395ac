"""Issue 26: a results-only challenge (no dataset) is created from the web form, its import formats are
documented on the page, and its first results are imported there; a taken slug is refused on the form."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Challenge, Submission

from .factories import make_user
from .test_beyond import _results_csv

pytestmark = pytest.mark.django_db


def test_a_host_creates_a_results_only_challenge_on_the_web_and_imports_results(client, host):
    client.force_login(host)
    assert "/challenges/new/results-only/" in client.get("/challenges/new/").content.decode()
    page = client.get("/challenges/new/results-only/").content.decode()
    assert 'id="import-formats"' in page and "lm-eval-jsonl" in page and "solved-ids" in page
    created = client.post(
        "/challenges/new/results-only/",
        {
            "title": "QA harness results",
            "slug": "qa-results",
            "description": "Imported",
            "metric": "accuracy",
            "direction": "higher",
            "visibility": "private",
        },
    )
    assert created.status_code == 302 and created["Location"] == "/c/qa-results/import/"
    challenge = Challenge.objects.get(slug="qa-results")
    assert challenge.visibility == "private" and list(challenge.hosts.all()) == [host]
    assert not challenge.allow_recipes and not hasattr_dataset(challenge)
    data = _results_csv(np.random.default_rng(3), {"model-a": 0.9, "model-b": 0.5}, n=40)
    imported = client.post(
        "/c/qa-results/import/",
        {"format": "csv", "files": [SimpleUploadedFile("r.csv", data)], "team": "Harness", "source": "self_reported"},
    )
    assert imported.status_code == 302, imported.content.decode()[:1500]
    assert sorted(Submission.objects.filter(challenge=challenge).values_list("method_name", flat=True)) == [
        "model-a",
        "model-b",
    ]
    again = client.post(
        "/challenges/new/results-only/",
        {"title": "Again", "slug": "qa-results", "metric": "accuracy", "direction": "higher", "visibility": "public"},
    )
    assert again.status_code == 200 and "exists already" in again.content.decode()
    assert Challenge.objects.filter(slug="qa-results").count() == 1


def test_the_results_only_form_needs_a_login(client):
    response = client.get("/challenges/new/results-only/")
    assert response.status_code == 302 and "login" in response["Location"]
    client.force_login(make_user("someone"))
    assert client.get("/challenges/new/results-only/").status_code == 200


def hasattr_dataset(challenge: Challenge) -> bool:
    try:
        return challenge.dataset is not None
    except Challenge.dataset.RelatedObjectDoesNotExist:
        return False


def test_a_results_only_challenge_is_created_through_the_api(host):
    from rest_framework.test import APIClient

    api = APIClient()
    assert api.post("/api/challenges/results-only/", {"title": "x"}, format="json").status_code in (401, 403)
    api.force_authenticate(host)
    created = api.post(
        "/api/challenges/results-only/",
        {"title": "Harness runs", "slug": "harness", "metric": "accuracy"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["slug"] == "harness" and body["allow_recipes"] is False and body["dataset"] is None
    taken = api.post("/api/challenges/results-only/", {"title": "Again", "slug": "harness"}, format="json")
    assert taken.status_code == 400 and taken.json()["field"] == "slug"


def test_a_results_only_challenge_takes_a_known_metric_and_is_not_told_to_raise_k(host, client):
    """A host's review: `metric=error_rate` was stored, and the leaderboard, the challenge page and the home page
    listing it answered 500 ("unknown metric") from then on; the creation's warnings told the host to raise a k
    that imported results do not have."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(host)
    refused = api.post(
        "/api/challenges/results-only/",
        {"title": "QA error rate", "metric": "error_rate", "higher_is_better": False},
        format="json",
    )
    assert refused.status_code == 400 and refused.json()["field"] == "metric"
    assert "error_rate" in refused.json()["detail"] and "mae" in refused.json()["detail"]
    assert not Challenge.objects.filter(slug="qa-error-rate").exists()
    created = api.post(
        "/api/challenges/results-only/",
        {"title": "QA errors", "metric": "mae", "higher_is_better": False},
        format="json",
    )
    assert created.status_code == 201 and created.json()["warnings"] == []
    assert client.get("/").status_code == 200


def test_a_results_only_challenge_ranks_in_its_metrics_direction_and_refuses_the_contrary(host, client):
    """A host's review: creation took any direction with any metric ("Accuracy, lower is better" ranked the worst
    classifier first; MAE, unless told, was ranked higher-is-better) while a settings change refused the same
    contradiction. Now one rule (``services.challenges.check_direction``) on every path."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(host)
    mae = api.post("/api/challenges/results-only/", {"title": "Errors", "metric": "mae"}, format="json")
    assert mae.status_code == 201, mae.json()
    assert mae.json()["higher_is_better"] is False and Challenge.objects.get(slug="errors").higher_is_better is False
    contrary = api.post(
        "/api/challenges/results-only/",
        {"title": "Backwards", "metric": "accuracy", "higher_is_better": False},
        format="json",
    )
    assert contrary.status_code == 400 and contrary.json()["field"] == "higher_is_better"
    assert "contradicts the metric" in contrary.json()["detail"]
    assert not Challenge.objects.filter(slug="backwards").exists()
    client.force_login(host)
    form = {"title": "Web errors", "slug": "web-errors", "metric": "mae", "visibility": "private"}
    assert client.post("/challenges/new/results-only/", {**form, "direction": ""}).status_code == 302
    assert Challenge.objects.get(slug="web-errors").higher_is_better is False
    page = client.post("/challenges/new/results-only/", {**form, "slug": "web-up", "direction": "higher"})
    assert page.status_code == 200 and "contradicts the metric" in page.content.decode()
    assert not Challenge.objects.filter(slug="web-up").exists()


def test_the_host_forms_submit_buttons_are_drawn_as_buttons_and_the_formats_name_the_score_bound(client, host):
    """A host's review: the results-only, import, bundle, suite and variance-study forms ended in the browser's
    bare grey button (every other form's is the site's), and the import formats said `score` takes any number
    (1e99 broke the board; scores are bounded)."""
    from tests.conftest import ROOT

    bare = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if '<button type="submit">' in line and 'name="q"' not in path.read_text().splitlines()[number - 2]
    ]
    assert bare == []
    client.force_login(host)
    page = client.get("/challenges/new/results-only/").content.decode()
    assert '<button type="submit" class="button">Create the challenge</button>' in page
    assert "(any number)" not in page and "within ±1e18" in page


def _results_only(host, slug="imported"):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(host)
    created = api.post("/api/challenges/results-only/", {"title": "Imported", "slug": slug}, format="json")
    assert created.status_code == 201, created.json()
    return api, created.json()


def test_a_results_only_challenge_refuses_a_k_runs_change_naming_why(host):
    """A PATCH of ``k_runs`` on a results-only challenge was taken, though it plans no runs: its entries are
    imported with the runs they have. It is a 400 naming ``k_runs`` and why; other settings still change."""
    api, body = _results_only(host)
    refused = api.patch(f"/api/challenges/{body['slug']}/", {"k_runs": 10}, format="json")
    assert refused.status_code == 400, refused.json()
    assert refused.json()["field"] == "k_runs" and "imported" in refused.json()["detail"], refused.json()
    assert Challenge.objects.get(slug=body["slug"]).k_runs == body["k_runs"]
    same = api.patch(f"/api/challenges/{body['slug']}/", {"k_runs": body["k_runs"], "title": "Renamed"}, format="json")
    assert same.status_code == 200 and same.json()["title"] == "Renamed"


def test_a_submission_to_a_results_only_challenge_is_a_409_saying_what_to_do(host):
    """A contestant's submission to a results-only challenge heard only that the challenge was closed; the 409 now
    says it takes no submissions and that its hosts import results instead."""
    api, body = _results_only(host)
    for kind, upload in (("predictions", "files"), ("recipe", "recipe")):
        sent = SimpleUploadedFile("p.csv" if kind == "predictions" else "r.py", b"id,label\n1,0\n")
        answer = api.post(
            f"/api/challenges/{body['slug']}/submissions/",
            {"kind": kind, "method_name": "m", upload: sent},
            format="multipart",
        )
        assert answer.status_code == 409, answer.json()
        detail = answer.json()["detail"]
        assert "imported results only" in detail and f"/api/challenges/{body['slug']}/imports/" in detail, detail


def test_a_rescore_of_a_results_only_challenge_is_a_400_saying_to_import_instead(host):
    """A host's rescore of a results-only challenge answered 500 (``challenge.dataset`` raised): it has no labels
    to correct; the 400 says so and where corrected results go."""
    api, body = _results_only(host)
    answer = api.post(f"/api/challenges/{body['slug']}/rescore/", {}, format="multipart")
    assert answer.status_code == 400, answer.content[:300]
    assert "nothing to rescore" in answer.json()["detail"] and "/imports/" in answer.json()["detail"]
