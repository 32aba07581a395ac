"""What a contestant read about entries and teams no one else may open (a fifth attack).

* **A moderated imported entry stayed named.** A host who hid or disqualified an imported model took it off both
  boards, yet the challenge page's provenance card ("Where these results come from") still listed it, with its team,
  citation and link, to everyone; and ``GET /api/challenges/{slug}/imports/``, the hosts' import log (the web import
  page answers others 403), listed every import to anyone, naming each model and file. The card now lists the
  entries the reader may open (``selectors.submissions_readable``); the import log is the hosts' only.
* **Team ids told apart.** ``POST /api/teams/{id}/invitations/`` and the hosts' team moderation looked the team up
  before asking who asks: anyone read 404 for a team id that does not exist and 403 (or 400, "A personal team has
  exactly one member") for one that does, and so counted the site's teams and told the personal ones apart. The
  site's invitation form did the same for invitation ids (404 against a refusal). Each now answers alike.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Submission, Team, TeamInvitation
from leaderboard.services.moderation import submission_moderate
from leaderboard.services.reports import report_recompute
from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create
from leaderboard.services.teams import team_create, team_invite, team_personal_for

from .factories import make_user

pytestmark = pytest.mark.django_db

RESULTS = (
    b"model,instance_id,correct\n"
    + b"".join(f"public-model,q{i},{i % 2}\n".encode() for i in range(6))
    + b"".join(f"leaky-model,q{i},1\n".encode() for i in range(6))
)


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def imported(host):
    challenge = challenge_create_results_only(created_by=host, title="Imported board")
    results_import_create(
        challenge=challenge,
        user=host,
        files=[ImportFile("leaky-model-results.csv", RESULTS)],
        format="csv",
        note="Someone et al. (2024)",
        link="https://example.org/leaky",
    )
    leaky = Submission.objects.get(challenge=challenge, method_name="leaky-model")
    submission_moderate(submission=leaky, user=host, state="disqualified", reason="trained on the test set")
    report_recompute(challenge_id=challenge.pk, force=True)
    return challenge


def test_a_moderated_imported_entry_is_not_named_on_the_challenge_page(imported, host, alice):
    board = client_for().get(f"/api/challenges/{imported.slug}/leaderboard/").json()
    assert [row["method_name"] for row in board["entries"]] == ["public-model"]  # off the board
    for reader in (None, alice):
        client = Client()
        if reader is not None:
            client.force_login(reader)
        page = client.get(imported.get_absolute_url()).content.decode()
        assert "data-provenance-card" in page and "public-model" in page
        assert "leaky-model" not in page, "the provenance card names an entry a host disqualified"
    hosted = Client()
    hosted.force_login(host)
    assert "leaky-model" in hosted.get(imported.get_absolute_url()).content.decode()  # the hosts read every one


def test_the_import_log_is_the_hosts_only(imported, host, alice):
    url = f"/api/challenges/{imported.slug}/imports/"
    hosted = client_for(host).get(url)
    assert hosted.status_code == 200 and hosted.json()["results"][0]["models"] == ["public-model", "leaky-model"]
    for reader in (None, alice):
        answer = client_for(reader).get(url)
        assert answer.status_code in (401, 403), (answer.status_code, answer.content[:200])
        assert b"leaky" not in answer.content
    page = Client()
    page.force_login(alice)
    assert page.get(f"/c/{imported.slug}/import/").status_code == 403  # as the site's import page answers


def test_inviting_to_a_team_answers_alike_for_a_team_that_exists_and_none(alice, bob):
    carol = make_user("carol")
    shared = team_create(name="Carol's lab", creator=carol)
    personal = team_personal_for(user=carol)
    missing = Team.objects.order_by("-pk").first().pk + 1000
    answers = {}
    for name, team_id in (("shared", shared.pk), ("personal", personal.pk), ("missing", missing)):
        for username in ("bob", "nobody-by-this-name"):
            answer = client_for(alice).post(f"/api/teams/{team_id}/invitations/", {"username": username}, format="json")
            detail = answer.json().get("detail", "").replace(str(team_id), "<id>")  # the id asked for, echoed
            answers[(name, username)] = (answer.status_code, detail)
    assert len(set(answers.values())) == 1, answers
    assert not TeamInvitation.objects.exists()


def test_moderating_a_team_answers_a_contestant_alike_for_a_team_that_exists_and_none(host, alice, bob):
    challenge = challenge_create_results_only(created_by=host, title="Moderated teams")
    bobs = team_create(name="Bob's lab", creator=bob)
    missing = Team.objects.order_by("-pk").first().pk + 1000
    answers = {}
    for name, team_id in (("exists", bobs.pk), ("missing", missing)):
        url = f"/api/challenges/{challenge.slug}/teams/{team_id}/moderation/"
        post = client_for(alice).post(url, {"state": "hidden", "reason": "x"}, format="json")
        delete = client_for(alice).delete(url)
        answers[name] = tuple(
            (answer.status_code, answer.json().get("detail", "").replace(str(team_id), "<id>"))
            for answer in (post, delete)
        )
    assert answers["exists"] == answers["missing"], answers
    assert answers["exists"][0][0] == 403


def test_the_site_s_invitation_form_answers_alike_for_an_invitation_that_exists_and_none(alice, bob):
    carol = make_user("carol")
    team = team_create(name="Carol's lab", creator=carol)
    invitation = team_invite(team=team, user=bob, invited_by=carol)
    client = Client()
    client.force_login(alice)
    for action in ("accept", "decline", "cancel"):
        exists = client.post(f"/invitations/{invitation.pk}/", {"action": action})
        missing = client.post(f"/invitations/{invitation.pk + 1000}/", {"action": action})
        assert exists.status_code == missing.status_code == 404, (action, exists.status_code, missing.status_code)
    invitation.refresh_from_db()
    assert invitation.status == TeamInvitation.Status.PENDING


def test_the_invitee_and_the_team_still_act_on_an_invitation(alice, bob):
    team = team_create(name="Alice's lab", creator=alice)
    invitation = team_invite(team=team, user=bob, invited_by=alice)
    invitee = Client()
    invitee.force_login(bob)
    assert invitee.post(f"/invitations/{invitation.pk}/", {"action": "accept"}).status_code == 302
    invitation.refresh_from_db()
    assert invitation.status == TeamInvitation.Status.ACCEPTED
    other = team_invite(team=team, user=make_user("dave"), invited_by=alice)
    member = Client()
    member.force_login(bob)  # a member now: may cancel the team's invitations
    assert member.post(f"/invitations/{other.pk}/", {"action": "cancel"}).status_code == 302
    other.refresh_from_db()
    assert other.status == TeamInvitation.Status.CANCELLED
    invited = client_for(alice).post(f"/api/teams/{team.pk}/invitations/", {"username": "carol-x"}, format="json")
    assert invited.status_code == 400 and "no user named" in invited.json()["detail"]
