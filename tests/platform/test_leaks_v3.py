"""Leaks found by a third attack through the real interfaces (API, pages), after the boards, the feedback and the
Ladder held against a two-worlds crawl of every page and endpoint a contestant reads.

* **Another team's hidden submissions, through the site's buttons.** The API answers 404 alike for a submission
  that does not exist and one the reader may not open (another team's entry still queued or running, failed, or
  hidden by a host), and so did every page but two: the site's cancel and final-choice forms
  (``/submissions/{id}/cancel/``, ``/submissions/{id}/select/``) looked the submission up among every submission
  of the challenges the reader may see and answered a redirect with a refusal ("Only the submitting team ...")
  where none existed answered 404. POSTing to successive ids then told a contestant how many entries the others
  made and when, unscored ones too, beyond what the board and the submissions they may open show: the oracle the
  variance-study request was closed for (``test_contestant_side_channels``).
* **Registrations, through the hosts' decide endpoint.** ``POST /api/challenges/{slug}/registrations/{id}/decide/``
  looked the registration up before asking who asked: 404 for an id that is no registration of the challenge, 403
  for one that is. The registration list is the hosts'; a contestant counted who had registered, and when.
* **A private challenge's entries, through the teams page.** A host's baseline entered an unannounced challenge with
  a team a contestant shares (the case ``test_contestant_side_channels`` closed for the refusals and the mails);
  the contestant's teams page counted the team's submissions, that challenge's too: 1 where she could open none,
  and one more at each of the host's tries. It counts the submissions on challenges the reader may see.
* **A private challenge's queue, through /metrics.** Without ``VARBOARD_METRICS_TOKEN`` (the default: unset in
  .env.example and docker-compose.yml) ``/metrics`` answered anyone, and docker-compose.yml publishes the web
  port that serves it: runs and submissions by status and the age of the oldest queued run, over every challenge,
  private ones too. A visitor watching the counters against the public boards (whose entries carry their times)
  read when an unannounced challenge was being tried and how much. Without a token ``/metrics`` is now closed
  (403 naming the setting), but under ``DEBUG`` (a developer's machine).
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Registration, Submission
from leaderboard.selectors import submission_readable

from .factories import digits_challenge, label_predictions

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def page_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _queued_submission(challenge, frame, user) -> Submission:
    upload = SimpleUploadedFile("p.csv", label_predictions(frame), content_type="text/csv")
    made = api_for(user).post(
        f"/api/challenges/{challenge.slug}/submissions/", {"method_name": "m", "files": [upload]}, format="multipart"
    )
    assert made.status_code == 202, made.content
    return Submission.objects.get(pk=made.json()["id"])


@pytest.mark.parametrize("action", ["cancel", "select"])
def test_the_site_s_forms_answer_alike_for_a_hidden_submission_and_none(host, alice, bob, action):
    challenge, frame = digits_challenge(host, public_fraction=0.5)
    hidden = _queued_submission(challenge, frame, alice)
    assert not submission_readable(user=bob, submission=hidden)  # still queued: not Bob's to open
    answers = []
    for pk in (hidden.pk, hidden.pk + 1000):
        response = page_for(bob).post(f"/submissions/{pk}/{action}/", {"selected": "true"})
        answers.append(response.status_code)
    assert answers == [404, 404], answers
    hidden.refresh_from_db()
    assert hidden.status == "queued" and not hidden.selected_for_final
    # the submitting team still cancels and chooses its own
    mine = page_for(alice).post(f"/submissions/{hidden.pk}/{action}/", {"selected": "true"})
    assert mine.status_code == 302, mine.status_code
    hidden.refresh_from_db()
    assert hidden.status == "cancelled" if action == "cancel" else hidden.selected_for_final


def test_deciding_a_registration_answers_alike_for_one_that_exists_and_none(host, alice, bob):
    challenge, _ = digits_challenge(host, registration_required=True)
    registration = Registration.objects.create(challenge=challenge, user=alice)
    url = f"/api/challenges/{challenge.slug}/registrations/{{}}/decide/"
    answers = []
    for pk in (registration.pk, registration.pk + 1000):
        response = api_for(bob).post(url.format(pk), {"approve": True}, format="json")
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1], answers
    assert answers[0][0] == 403 and "hosts" in answers[0][1]["detail"]
    registration.refresh_from_db()
    assert registration.status != "approved"
    # the host still decides it, and an id that is none is then a 404
    assert api_for(host).post(url.format(registration.pk), {"approve": True}, format="json").status_code == 200
    assert api_for(host).post(url.format(registration.pk + 1000), {"approve": True}, format="json").status_code == 404


def test_metrics_are_closed_to_anyone_without_the_token(host, alice, settings):
    """No token set: a visitor read every challenge's queue, private ones included; now refused, naming the
    setting that opens it. With the token the scrape reads the figures as before."""
    secret, frame = digits_challenge(host, title="Unannounced", visibility="private")
    _queued_submission(secret, frame, host)
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": ""}
    for client in (Client(), page_for(alice)):
        response = client.get("/metrics")
        assert response.status_code == 403, response.status_code
        text = response.content.decode()
        assert "varboard_runs" not in text and "VARBOARD_METRICS_TOKEN" in text
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": "s3cret"}
    scraped = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret")
    assert scraped.status_code == 200
    assert 'varboard_runs{kind="predictions",status="queued"} 1.0' in scraped.content.decode()
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": ""}
    settings.DEBUG = True  # a developer's machine: open, as before
    assert Client().get("/metrics").status_code == 200


def test_the_teams_page_counts_no_submission_of_a_challenge_the_reader_cannot_see(host, alice):
    from leaderboard.models import Membership, Team

    secret, frame = digits_challenge(host, title="Unannounced moonshot", visibility="private")
    open_, open_frame = digits_challenge(host, title="Open one")
    team = Team.objects.create(name="Shared")
    Membership.objects.bulk_create([Membership(team=team, user=member) for member in (host, alice)])
    for challenge, data in ((secret, frame), (open_, open_frame)):  # the host's baselines, with the shared team
        form = {"method_name": "baseline", "team": team.pk}
        form["files"] = [SimpleUploadedFile("p.csv", label_predictions(data), content_type="text/csv")]
        made = api_for(host).post(f"/api/challenges/{challenge.slug}/submissions/", form, format="multipart")
        assert made.status_code == 202, made.content
    counts = {t.name: t.n_submissions for t in page_for(alice).get("/teams/").context["teams"]}
    assert counts["Shared"] == 1, counts  # the open challenge's entry only
    assert {t.name: t.n_submissions for t in page_for(host).get("/teams/").context["teams"]}["Shared"] == 2
