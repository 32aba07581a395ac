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


def test_an_automatic_reveal_is_not_taken_back_by_unticking_auto_reveal(host, alice):
    """Once a phase's automatic reveal has shown the private board, unticking ``auto_reveal`` hid it again; the
    board then counted as never revealed, so a new phase could take submissions fitted to the private scores
    everyone had read (the rule ``_check_not_after_reveal`` keeps against re-dating). Refused, naming the field."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.services.errors import ServiceError
    from leaderboard.services.phases import phase_update

    from .factories import days_ahead, stored_recipe

    challenge, _ = digits_challenge(host, title="Auto revealed", public_fraction=0.5, bootstrap_resamples=100)
    stored_recipe(challenge, alice, "entry", runs_expected=1, scores=[0.8])
    now = timezone.now()
    phase = challenge.phases.get()
    phase_update(phase=phase, user=host, opens_at=now - timedelta(days=2), closes_at=now, auto_reveal=True)
    board = f"/api/challenges/{challenge.slug}/leaderboard/?board=private"
    assert client_for(alice).get(board).status_code == 200  # revealed by its last phase's end
    url = f"/api/challenges/{challenge.slug}/phases/{phase.pk}/"
    response = client_for(host).patch(url, {"auto_reveal": False}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "auto_reveal", response.content
    assert client_for(alice).get(board).status_code == 200  # still revealed
    more = {"name": "more", "opens_at": now, "closes_at": days_ahead(5)}
    added = client_for(host).post(f"/api/challenges/{challenge.slug}/phases/", more, format="json")
    assert added.status_code == 400 and added.json()["field"] == "closes_at", added.content
    with pytest.raises(ServiceError, match="auto_reveal"):
        phase_update(phase=challenge.phases.get(), user=host, auto_reveal=False)
    # a phase whose reveal has not come yet may still drop it
    later, _ = digits_challenge(host, title="Not yet", public_fraction=0.5, bootstrap_resamples=100)
    stored_recipe(later, alice, "entry", runs_expected=1, scores=[0.8])
    phase_update(phase=later.phases.get(), user=host, closes_at=days_ahead(3), auto_reveal=True)
    phase_update(phase=later.phases.get(), user=host, auto_reveal=False)


def test_leaving_a_team_does_not_name_a_private_challenge_it_entered(host, alice):
    """A host's baseline entered an unannounced (private) challenge with a team a contestant also belongs to; the
    contestant's attempt to leave the team was refused naming the private challenge's title, which the challenge
    list, the submissions list and every page keep from her."""
    from leaderboard.models import Membership, Team
    from leaderboard.services.errors import ServiceError
    from leaderboard.services.teams import team_leave

    secret, frame = digits_challenge(host, title="Unannounced moonshot", visibility="private")
    team = Team.objects.create(name="Shared")
    Membership.objects.create(team=team, user=host)
    Membership.objects.create(team=team, user=alice)
    upload = SimpleUploadedFile("p.csv", label_predictions(frame), content_type="text/csv")
    made = client_for(host).post(
        f"/api/challenges/{secret.slug}/submissions/",
        {"method_name": "baseline", "files": [upload], "team": team.pk},
        format="multipart",
    )
    assert made.status_code == 202, made.content
    assert client_for(alice).get(f"/api/challenges/{secret.slug}/").status_code == 404
    with pytest.raises(ServiceError) as refused:
        team_leave(team=team, user=alice)
    assert "Unannounced moonshot" not in refused.value.message and "cannot leave" in refused.value.message
    response = client_for(alice).post(f"/api/teams/{team.pk}/leave/")
    assert response.status_code == 400 and "Unannounced moonshot" not in response.content.decode()
    # the host, who sees it, is told which
    with pytest.raises(ServiceError, match="Unannounced moonshot"):
        team_leave(team=team, user=host)


def test_a_private_challenge_s_submission_mails_only_who_may_see_the_challenge(host, alice):
    """The same shared team: the host's baseline scored on the unannounced challenge mailed every member of the
    team, the contestant too ("[varboard] Unannounced moonshot: submission N was scored", with its link)."""
    from django.core import mail

    from leaderboard.models import Membership, Team
    from leaderboard.services.notifications import event_process, submission_ended_record

    for user in (host, alice):
        user.email = f"{user.username}@example.org"
        user.save(update_fields=["email"])
    secret, _ = digits_challenge(host, title="Unannounced moonshot", visibility="private")
    team = Team.objects.create(name="Shared")
    Membership.objects.create(team=team, user=host)
    Membership.objects.create(team=team, user=alice)
    baseline = Submission.objects.create(
        challenge=secret, team=team, submitted_by=host, kind="predictions", method_name="baseline", runs_expected=1
    )
    Submission.objects.filter(pk=baseline.pk).update(status="scored")
    baseline.refresh_from_db()
    event = submission_ended_record(submission=baseline)
    event_process(event_id=event.pk)
    recipients = sorted(address for message in mail.outbox for address in message.to)
    assert recipients == [host.email], [(m.to, m.subject) for m in mail.outbox]
