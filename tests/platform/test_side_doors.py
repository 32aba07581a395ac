"""Side doors a contestant opened from the outside: a reviewer's findings, each a request any user can send.

Imported results joined whatever team bore the import's team name (``Team.objects.get_or_create``): a contestant who
had created a team named "Imported results" (the default) became the team of every host's imports, private
challenges' included, and read them in ``/api/submissions/``.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Submission
from leaderboard.services.errors import ServiceError
from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create

pytestmark = pytest.mark.django_db

RESULTS = b"model,instance_id,correct\nsecret-model,q0,1\nsecret-model,q1,0\nsecret-model,q2,1\n"


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_imported_results_never_join_a_contestant_s_team(host, alice):
    """alice squats the default team name; the host's import into a private challenge is refused, not given to her."""
    squat = client_for(alice).post("/api/teams/", {"name": "Imported results"}, format="json")
    assert squat.status_code == 201
    secret = challenge_create_results_only(created_by=host, title="Unannounced", visibility="private")
    response = client_for(host).post(
        f"/api/challenges/{secret.slug}/imports/",
        {"format": "csv", "files": [SimpleUploadedFile("r.csv", RESULTS)]},
        format="multipart",
    )
    assert response.status_code == 400 and response.json().get("field") == "team", response.json()
    assert not Submission.objects.filter(challenge=secret).exists()
    listed = client_for(alice).get("/api/submissions/").json()["results"]
    assert [row["challenge"] for row in listed] == []


def test_imports_go_to_a_team_of_their_own(host, alice):
    """A team without members (an earlier import's) is reused; a team with members, personal ones too, is refused."""
    challenge = challenge_create_results_only(created_by=host, title="Imported QA")
    results_import_create(challenge=challenge, user=host, files=[ImportFile("r.csv", RESULTS)], format="csv")
    again = RESULTS.replace(b"secret-model", b"other-model")
    results_import_create(challenge=challenge, user=host, files=[ImportFile("r.csv", again)], format="csv")
    teams = set(Submission.objects.filter(challenge=challenge).values_list("team__name", flat=True))
    assert teams == {"Imported results"}
    client_for(alice).get("/api/teams/")  # creates alice's personal team
    third = RESULTS.replace(b"secret-model", b"third-model")
    with pytest.raises(ServiceError, match="has members") as refused:
        results_import_create(
            challenge=challenge, user=host, files=[ImportFile("r.csv", third)], format="csv", team_name="alice"
        )
    assert refused.value.field == "team"


def test_a_team_s_entry_to_a_private_challenge_is_not_listed_to_its_other_members(host, alice):
    """A host's baseline, sent with a team alice belongs to, to a challenge not yet announced: ``/api/submissions/``
    listed it (slug, scores), where ``/api/submissions/{id}/`` answered 404."""
    from leaderboard.models import Membership, Team

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(host, title="Not yet announced", visibility="private")
    lab = Team.objects.create(name="Lab")
    Membership.objects.create(team=lab, user=host), Membership.objects.create(team=lab, user=alice)
    baseline = stored_recipe(challenge, host, "baseline", runs_expected=1, scores=[0.8123])
    Submission.objects.filter(pk=baseline.pk).update(team=lab)
    reader = client_for(alice)
    assert reader.get(f"/api/submissions/{baseline.pk}/").status_code == 404
    assert reader.get("/api/submissions/").json()["results"] == []
    assert [row["id"] for row in client_for(host).get("/api/submissions/").json()["results"]] == [baseline.pk]
