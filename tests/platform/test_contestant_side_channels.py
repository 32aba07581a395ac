"""Side channels a contestant could read from the outside (a reviewer's attack after the evaluation was frozen).

Starting a variance study (hosts only) looked the submission up before asking who was asking: a contestant
read 404 for an id that is no submission of the challenge and 403 for one that is, a hidden one too (another
team's entry still running, one a host hid): an oracle of which ids are the challenge's submissions, so how
many entries the others made and when, beyond what the board and the submissions they may open show.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Submission
from leaderboard.selectors import submission_readable

from .factories import digits_challenge, label_predictions, make_user

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_study_request_answers_alike_for_a_hidden_submission_and_none(host, alice):
    challenge, frame = digits_challenge(host)
    upload = SimpleUploadedFile("p.csv", label_predictions(frame), content_type="text/csv")
    made = client_for(alice).post(
        f"/api/challenges/{challenge.slug}/submissions/", {"method_name": "m", "files": [upload]}, format="multipart"
    )
    assert made.status_code == 202, made.content
    hidden = Submission.objects.get(pk=made.json()["id"])
    bob = make_user("bob")
    assert not submission_readable(user=bob, submission=hidden)  # still queued: not Bob's to see
    url = f"/api/challenges/{challenge.slug}/variance-studies/"
    answers = []
    for pk in (hidden.pk, hidden.pk + 1000):
        response = client_for(bob).post(url, {"submission": pk, "k_runs": 3}, format="json")
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1], answers
    assert answers[0][0] == 403
