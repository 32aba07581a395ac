"""The evaluation is fixed once a challenge has a submission (Kaggle fixes it at launch).

A host could change the public board's feedback (mode, rounding digits, the Ladder's η) and the runs per entry
after contestants had submitted under the old rules: switching a rounded or Ladder board to exact feedback
published the exact public score of every probe made under the old rule, more digits published what the rounding
hid, a smaller η released the probes the Ladder held back. ``challenge_update`` refuses them, naming the field and
why, so the API, the edit page, the admin and bundles obey one rule; harmless changes (title, description, dates)
still go through.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Challenge
from leaderboard.services.challenges import challenge_update
from leaderboard.services.errors import ServiceError

from .factories import days_ahead, digits_challenge, label_predictions

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def submit(user, challenge, frame, name="probe"):
    upload = SimpleUploadedFile("p.csv", label_predictions(frame, correct_fraction=0.7), content_type="text/csv")
    response = client_for(user).post(
        f"/api/challenges/{challenge.slug}/submissions/", {"method_name": name, "files": [upload]}, format="multipart"
    )
    assert response.status_code == 202, response.content
    return response


CHANGES = [
    ({"feedback": "ladder", "ladder_margin": 0.05}, {"feedback": "exact"}, "feedback"),
    ({"feedback": "rounded", "feedback_digits": 1}, {"feedback": "exact"}, "feedback"),
    ({"feedback": "rounded", "feedback_digits": 1}, {"feedback": "ladder"}, "feedback"),
    ({"feedback": "exact"}, {"feedback": "rounded"}, "feedback"),
    ({"feedback": "rounded", "feedback_digits": 1}, {"feedback_digits": 4}, "feedback_digits"),
    ({"feedback": "rounded", "feedback_digits": 3}, {"feedback_digits": 2}, "feedback_digits"),
    ({"feedback": "ladder", "ladder_margin": 0.05}, {"ladder_margin": 0.0001}, "ladder_margin"),
    ({"feedback": "ladder", "ladder_margin": 0.05}, {"ladder_margin": 0.1}, "ladder_margin"),
    ({"public_fraction": 0.5}, {"public_fraction": 0.6}, "public_fraction"),
    ({}, {"k_runs": 8}, "k_runs"),
]


@pytest.mark.parametrize("initial, change, field", CHANGES)
def test_the_api_refuses_an_evaluation_change_once_a_submission_exists(host, alice, initial, change, field):
    challenge, frame = digits_challenge(host, **initial)
    before = Challenge.objects.get(pk=challenge.pk).report_settings_values()
    submit(alice, challenge, frame)
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", change, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body.get("field") == field and f"{field} cannot change once submissions exist" in body["detail"], body
    assert Challenge.objects.get(pk=challenge.pk).report_settings_values() == before


@pytest.mark.parametrize("initial, change, field", CHANGES)
def test_the_service_refuses_an_evaluation_change_once_a_submission_exists(host, alice, initial, change, field):
    challenge, frame = digits_challenge(host, **initial)
    submit(alice, challenge, frame)
    with pytest.raises(ServiceError, match=f"{field} cannot change once submissions exist") as refused:
        challenge_update(challenge=Challenge.objects.get(pk=challenge.pk), user=host, **change)
    assert refused.value.field == field


def test_the_reason_says_what_the_change_would_publish(host, alice):
    challenge, frame = digits_challenge(host, feedback="ladder", ladder_margin=0.05)
    submit(alice, challenge, frame)
    detail = client_for(host).patch(f"/api/challenges/{challenge.slug}/", {"feedback": "exact"}, format="json")
    assert "exact public scores of probes made under rounded or Ladder feedback" in detail.json()["detail"]


@pytest.mark.parametrize("initial, change, field", CHANGES)
def test_before_the_first_submission_the_evaluation_may_change(host, initial, change, field):
    challenge, _ = digits_challenge(host, **initial)
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", change, format="json")
    assert response.status_code == 200, response.content
    assert response.json()[field] == change[field]


def test_harmless_changes_still_go_through_after_submissions(host, alice):
    challenge, frame = digits_challenge(host, feedback="ladder", ladder_margin=0.05, public_fraction=0.5)
    submit(alice, challenge, frame)
    change = {
        "title": "Renamed",
        "description": "New words",
        "closes_at": days_ahead(20).isoformat(),
        # the edit page sends every field: the frozen ones unchanged are no change
        "feedback": "ladder",
        "ladder_margin": 0.05,
        "feedback_digits": challenge.feedback_digits,
        "k_runs": challenge.k_runs,
        "public_fraction": 0.5,
    }
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", change, format="json")
    assert response.status_code == 200, response.content
    stored = Challenge.objects.get(pk=challenge.pk)
    assert (stored.title, stored.description, stored.feedback) == ("Renamed", "New words", "ladder")


def test_the_edit_page_shows_the_evaluation_fixed(host, alice):
    from leaderboard.web.forms import ChallengeSettingsForm

    challenge, frame = digits_challenge(host, feedback="rounded", feedback_digits=2)
    submit(alice, challenge, frame)
    form = ChallengeSettingsForm(instance=Challenge.objects.get(pk=challenge.pk))
    for name in ("feedback", "feedback_digits", "ladder_margin", "k_runs", "public_fraction"):
        if name in form.fields:
            assert form.fields[name].disabled, name


@pytest.mark.parametrize("feedback", [{"feedback": "rounded", "feedback_digits": 1}, {"feedback": "ladder"}])
def test_a_rescore_under_another_metric_is_refused_under_rounded_or_ladder_feedback(host, alice, feedback):
    """The rescore endpoint's metric change re-scored every probe and showed it again under a second metric."""
    challenge, frame = digits_challenge(host, **feedback)
    submit(alice, challenge, frame)
    response = client_for(host).post(f"/api/challenges/{challenge.slug}/rescore/", {"metric": "macro_f1"})
    assert response.status_code == 400, response.content
    assert response.json().get("field") == "metric" and "second view" in response.json()["detail"]
    assert Challenge.objects.get(pk=challenge.pk).metric == "accuracy"


def test_a_rescore_under_another_metric_still_goes_through_under_exact_feedback(host, alice):
    challenge, frame = digits_challenge(host)
    submit(alice, challenge, frame)
    response = client_for(host).post(f"/api/challenges/{challenge.slug}/rescore/", {"metric": "macro_f1"})
    assert response.status_code == 202, response.content
    assert Challenge.objects.get(pk=challenge.pk).metric == "macro_f1"
