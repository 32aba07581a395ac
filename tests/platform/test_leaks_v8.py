"""What a contestant still read about others' submissions nobody else may open (an eighth attack).

* **The challenge's warnings.** ``GET /api/challenges/{slug}/`` publishes ``warnings`` (what the settings cost the
  board) to anyone; its advice changed from "Raise k to 6" to "k is fixed now that submissions exist" the moment any
  submission existed, a rival's first try still queued or failed, which nobody else may open: a reader polling the
  challenge read when the first hidden submission was made. The advice now follows the submissions the reader may
  open (the hosts: all of them).
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Submission

from .factories import PASSWORD, digits_challenge, stored_recipe

pytestmark = pytest.mark.django_db


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_challenge_s_warnings_do_not_tell_that_a_hidden_submission_exists(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Warned", k_runs=5)  # k < 6: the board's costs are said
    url = f"/api/challenges/{challenge.slug}/"
    readers = {"anonymous": APIClient(), "alice": client_for(alice)}
    before = {name: reader.get(url).json()["warnings"] for name, reader in readers.items()}
    assert before["anonymous"] and all("Raise k" in w for w in before["anonymous"][:1])

    queued = stored_recipe(challenge, bob, "first try", runs_expected=5)
    Submission.objects.filter(pk=queued.pk).update(status="queued")  # nobody else may open it
    assert APIClient().get(f"/api/submissions/{queued.pk}/").status_code == 404
    for name, reader in readers.items():
        assert reader.get(url).json()["warnings"] == before[name], name

    hosts = client_for(host).get(url).json()["warnings"]  # the hosts read that k is frozen now
    assert "k is fixed now that submissions exist" in hosts[0]
    shown = stored_recipe(challenge, bob, "scored", runs_expected=1, scores=[0.8])  # one anyone may open
    assert APIClient().get(f"/api/submissions/{shown.pk}/").status_code == 200
    assert "k is fixed now that submissions exist" in APIClient().get(url).json()["warnings"][0]
