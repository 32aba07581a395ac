"""Team invitations, the profile page, password reset, e-mail notifications and signed webhooks.

The webhook tests POST to a real HTTP server on 127.0.0.1 and check the signature with their own
HMAC-SHA256, as a receiver would.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.celery import app as celery_app
from leaderboard.models import Event, Membership, Run, Submission, WebhookDelivery
from leaderboard.services.challenges import challenge_reveal
from leaderboard.services.dispatch import DELIVER_WEBHOOK, PROCESS_EVENT
from leaderboard.services.errors import NotAllowed, ServiceError
from leaderboard.services.janitor import janitor_run
from leaderboard.services.lifecycle import submission_refresh_status
from leaderboard.services.notifications import event_process, profile_update, reveals_record_due
from leaderboard.services.phases import phase_update
from leaderboard.services.teams import invitation_cancel, invitation_decide, team_create, team_invite, team_personal_for
from leaderboard.services.webhooks import webhook_create, webhook_deliver, webhook_verify
from tests.http_receiver import Receiver

from .factories import digits_challenge

pytestmark = pytest.mark.django_db


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """``with committed():`` runs what the block queued after commit (tests run inside one transaction)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def with_email(user, address: str | None = None):
    user.email = address or f"{user.username}@example.org"
    user.save(update_fields=["email"])
    return user


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def ended_submission(challenge, user, *, failed: bool = False) -> Submission:
    """A prediction submission whose runs have all ended, its status not yet derived."""
    team = team_personal_for(user=user)
    submission = Submission.objects.create(
        challenge=challenge,
        team=team,
        submitted_by=user,
        kind="predictions",
        method_name="m",
        runs_expected=1,
        phase=challenge.phases.first(),
    )
    Run.objects.create(
        submission=submission,
        index=0,
        status="failed" if failed else "succeeded",
        test_score=None if failed else 0.9,
        error_message="boom" if failed else "",
    )
    return submission


# ------------------------------------------------------------------ invitations


def test_a_member_invites_and_only_the_invitee_can_accept(alice, bob, host):
    lab = team_create(name="Lab", creator=alice)
    with pytest.raises(ServiceError, match="personal team"):
        team_invite(team=team_personal_for(user=alice), user=bob, invited_by=alice)
    with pytest.raises(NotAllowed, match="Only members"):
        team_invite(team=lab, user=bob, invited_by=host)
    invitation = team_invite(team=lab, user=bob, invited_by=alice)
    assert not lab.members.filter(pk=bob.pk).exists()  # no consent yet
    with pytest.raises(ServiceError, match="invited to “Lab” already"):
        team_invite(team=lab, user=bob, invited_by=alice)
    with pytest.raises(NotAllowed, match="Only the invited user"):
        invitation_decide(invitation=invitation, user=alice, accept=True)
    invitation_decide(invitation=invitation, user=bob, accept=True)
    assert lab.members.filter(pk=bob.pk).exists()
    with pytest.raises(ServiceError, match="accepted already"):
        invitation_decide(invitation=invitation, user=bob, accept=False)
    with pytest.raises(ServiceError, match="member of “Lab” already"):
        team_invite(team=lab, user=bob, invited_by=alice)


def test_a_declined_or_cancelled_invitation_adds_nobody(alice, bob, host):
    lab = team_create(name="Lab", creator=alice)
    invitation_decide(invitation=team_invite(team=lab, user=bob, invited_by=alice), user=bob, accept=False)
    cancelled = invitation_cancel(invitation=team_invite(team=lab, user=host, invited_by=alice), user=alice)
    assert cancelled.status == "cancelled" and list(lab.members.all()) == [alice]
    with pytest.raises(ServiceError, match="cancelled already"):
        invitation_decide(invitation=cancelled, user=host, accept=True)


def test_an_invitation_mails_the_invitee_once_unless_turned_off(alice, bob, host, receiver, queued, committed):
    """The invitee hears of it (after commit, from the outbox task), with where to accept; nobody else does,
    no challenge's webhook gets it, and a user who turned these mails off gets none."""
    challenge, _ = digits_challenge(host)
    webhook_create(challenge=challenge, user=host, url=receiver.url)
    with_email(alice), with_email(bob), with_email(host)
    lab = team_create(name="Lab", creator=alice)
    with committed():
        invitation = team_invite(team=lab, user=bob, invited_by=alice)
    assert mail.outbox == []  # sent by the task, not the request
    (event_id,) = queued.ids(PROCESS_EVENT)
    event = Event.objects.get(pk=event_id)
    assert (event.kind, event.invitation_id, event.challenge_id) == ("team.invited", invitation.pk, None)
    assert event_process(event_id=event_id) == 1 and event_process(event_id=event_id) == 0
    (message,) = mail.outbox
    assert message.to == ["bob@example.org"] and message.subject == "[varboard] alice invited you to the team “Lab”"
    assert "only if you accept" in message.body and "/account/" in message.body
    assert WebhookDelivery.objects.count() == 0
    profile_update(user=host, notify_invited=False)
    with committed():
        team_invite(team=lab, user=host, invited_by=alice)
    (_, second) = queued.ids(PROCESS_EVENT)
    assert event_process(event_id=second) == 0 and len(mail.outbox) == 1


def test_the_api_invites_lists_and_accepts(alice, bob):
    created = api(alice).post("/api/teams/", {"name": "Lab"}, format="json")
    assert created.status_code == 201 and created.json()["members"] == ["alice"]
    team_id = created.json()["id"]
    unknown = api(alice).post(f"/api/teams/{team_id}/invitations/", {"username": "nobody"}, format="json")
    assert unknown.status_code == 400 and "no user named 'nobody'" in unknown.json()["detail"]
    invited = api(alice).post(f"/api/teams/{team_id}/invitations/", {"username": "bob"}, format="json")
    assert invited.status_code == 201 and invited.json()["status"] == "pending"
    pk = invited.json()["id"]
    assert api(alice).post(f"/api/invitations/{pk}/accept/").status_code == 403
    assert [row["id"] for row in api(bob).get("/api/invitations/?status=pending").json()["results"]] == [pk]
    accepted = api(bob).post(f"/api/invitations/{pk}/accept/")
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    teams = {row["name"]: row["members"] for row in api(bob).get("/api/teams/").json()["results"]}
    assert teams["Lab"] == ["alice", "bob"]
    assert Membership.objects.filter(team_id=team_id, user=bob).exists()


# ------------------------------------------------------------------ profile and password reset


def test_the_profile_shows_a_new_token_once_and_saves_notification_settings(client, alice):
    client.force_login(alice)
    created = client.post("/account/", {"action": "create"}).content.decode()
    secret = re.search(r'data-new-token><p>[^<]*</p><pre class="mono">([^<]+)</pre>', created).group(1)
    page = client.get("/account/").content.decode()
    assert secret not in page and "data-new-token" not in page and secret[:8] in page  # listed by its key only
    assert api(alice).get("/api/auth/tokens/").status_code == 200
    client.post("/account/", {"action": "notifications", "notify_scored": "on"})
    settings = APIClient()
    settings.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert settings.get("/api/account/notifications/").json() == {
        "notify_scored": True,
        "notify_failed": False,
        "notify_revealed": False,
        "notify_invited": False,
    }
    assert (
        settings.patch("/api/account/notifications/", {"notify_failed": True}, format="json").json()["notify_failed"]
        is True
    )


def test_password_reset_mails_a_one_time_link_that_sets_a_new_password(client, alice, settings):
    with_email(alice)
    assert "password-reset/" in client.get("/login/").content.decode()
    assert client.post("/password-reset/", {"email": "alice@example.org"}).status_code == 302
    link = re.search(r"https?://\S+", mail.outbox[0].body).group(0)
    form = client.get(link, follow=True)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "another-long-pass-88", "new_password2": "another-long-pass-88"},
        follow=True,
    )
    assert "Password changed" in done.content.decode()
    assert APIClient().login(username="alice", password="another-long-pass-88")
    assert "does not work" in client.get(link, follow=True).content.decode()  # used once


def test_password_reset_requests_are_throttled(client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "password_reset": "2/hour"},
    }
    codes = [client.post("/password-reset/", {"email": f"x{i}@example.org"}).status_code for i in range(3)]
    assert codes[:2] == [302, 302] and codes[2] == 429


# ------------------------------------------------------------------ e-mail notifications


def test_scored_and_failed_submissions_mail_the_team_once_unless_turned_off(host, alice, bob, queued, committed):
    challenge, _ = digits_challenge(host)
    with_email(alice), with_email(bob)
    lab = team_create(name="Lab", creator=alice)
    invitation_decide(invitation=team_invite(team=lab, user=bob, invited_by=alice), user=bob, accept=True)
    profile_update(user=bob, notify_failed=False)
    scored = ended_submission(challenge, alice)
    scored.team = lab
    scored.save(update_fields=["team"])
    failed = ended_submission(challenge, alice, failed=True)
    failed.team = lab
    failed.save(update_fields=["team"])
    with committed():
        submission_refresh_status(submission_id=scored.pk)
        submission_refresh_status(submission_id=scored.pk)  # seen twice, told once
        submission_refresh_status(submission_id=failed.pk)
    assert mail.outbox == []  # nothing is sent from the request: a task does it
    events = queued.ids(PROCESS_EVENT)
    assert len(events) == 2
    assert [event_process(event_id=pk) for pk in events] == [2, 1]
    assert event_process(event_id=events[0]) == 0  # processed once
    subjects = sorted((m.subject, m.to[0]) for m in mail.outbox)
    assert subjects == sorted(
        [
            (f"[varboard] Digits test: submission {failed.pk} failed", "alice@example.org"),
            (f"[varboard] Digits test: submission {scored.pk} was scored", "alice@example.org"),
            (f"[varboard] Digits test: submission {scored.pk} was scored", "bob@example.org"),
        ]
    )
    assert "/account/" in mail.outbox[0].body and f"/submissions/{scored.pk}/" in mail.outbox[0].body


def test_a_revealed_private_board_mails_the_contestants(host, alice, bob, queued, committed):
    challenge, _ = digits_challenge(host, public_fraction=0.5)
    with_email(alice), with_email(bob), with_email(host)
    ended_submission(challenge, alice)
    with committed():
        challenge_reveal(challenge=challenge, user=host)
        challenge_reveal(challenge=challenge, user=host)
    (event_id,) = queued.ids(PROCESS_EVENT)
    assert event_process(event_id=event_id) == 1
    assert mail.outbox[0].to == ["alice@example.org"] and "private board is revealed" in mail.outbox[0].subject


def test_an_auto_reveal_phase_that_closes_is_announced_by_the_janitor(host, alice, queued):
    challenge, _ = digits_challenge(host, public_fraction=0.5)
    phase = challenge.phases.get()
    phase_update(phase=phase, user=host, auto_reveal=True, closes_at=timezone.now() + timedelta(hours=1))
    assert reveals_record_due() == 0
    assert reveals_record_due(now=timezone.now() + timedelta(hours=2)) == 1
    assert reveals_record_due(now=timezone.now() + timedelta(hours=3)) == 0
    assert Event.objects.filter(challenge=challenge, kind="board.revealed").count() == 1


# ------------------------------------------------------------------ webhooks


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS = {**settings.WEBHOOKS, "ALLOW_PRIVATE": True, "RETRY_BASE_S": 30, "MAX_ATTEMPTS": 3}
    server = Receiver()
    yield server
    server.close()


def test_only_hosts_register_webhooks_and_private_addresses_are_refused(host, alice, settings):
    challenge, _ = digits_challenge(host)
    refused = api(alice).post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": "https://example.org/h"})
    assert refused.status_code == 403
    for url in ("http://127.0.0.1:6379/", "http://10.0.0.5/hook", "http://[::1]/x", "ftp://example.org/"):
        answer = api(host).post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": url})
        assert answer.status_code == 400, url
    assert (
        "localhost does not resolve to a public address"
        in api(host)
        .post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": "http://localhost:8000/"})
        .json()["detail"]
    )


def test_events_are_posted_signed_to_a_real_server_and_retried(host, alice, receiver, queued, committed):
    challenge, _ = digits_challenge(host)
    created = api(host).post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": receiver.url})
    assert created.status_code == 201
    secret = created.json()["secret"]
    assert secret.startswith("whsec_") and len(secret) > 40
    submission = ended_submission(challenge, alice)
    with committed():
        submission_refresh_status(submission_id=submission.pk)
    assert receiver.requests == []  # the state change itself POSTs nothing
    with committed():
        event_process(event_id=queued.ids(PROCESS_EVENT)[0])
    (delivery_id,) = queued.ids(DELIVER_WEBHOOK)
    assert celery_app.amqp.router.route({}, DELIVER_WEBHOOK)["queue"].name == "scoring"

    receiver.statuses = [500]
    with committed():
        assert webhook_deliver(delivery_id=delivery_id) == "retrying"
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.attempts == 1 and delivery.response_status == 500 and "HTTP 500" in delivery.last_error
    assert queued.ids(DELIVER_WEBHOOK) == [delivery_id, delivery_id]  # queued again, with its backoff
    assert webhook_deliver(delivery_id=delivery_id) == "skipped"  # not due yet: a duplicate does nothing
    WebhookDelivery.objects.filter(pk=delivery_id).update(next_attempt_at=timezone.now())
    assert webhook_deliver(delivery_id=delivery_id) == "delivered"

    assert len(receiver.requests) == 2
    headers, body = receiver.requests[-1]
    timestamp, mac = re.fullmatch(r"t=(\d+),v1=([0-9a-f]{64})", headers["Varboard-Signature"]).groups()
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(mac, expected) and abs(time.time() - int(timestamp)) < 60
    assert not hmac.compare_digest(mac, hmac.new(b"wrong", f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest())
    assert webhook_verify(secret=secret, body=body, header=headers["Varboard-Signature"])
    assert not webhook_verify(secret=secret, body=body + b" ", header=headers["Varboard-Signature"])
    payload = json.loads(body)
    assert headers["Varboard-Event"] == payload["event"] == "submission.scored"
    assert headers["Varboard-Delivery"] == str(delivery_id) and headers["Content-Type"] == "application/json"
    assert payload["submission"]["id"] == submission.pk and payload["challenge"]["slug"] == challenge.slug
    assert payload["submission"]["url"].endswith(f"/submissions/{submission.pk}/")


def test_a_receiver_that_keeps_failing_ends_failed_after_the_last_attempt(host, alice, receiver, queued, committed):
    challenge, _ = digits_challenge(host)
    webhook_create(challenge=challenge, user=host, url=receiver.url)
    submission = ended_submission(challenge, alice, failed=True)
    with committed():
        submission_refresh_status(submission_id=submission.pk)
    with committed():
        event_process(event_id=queued.ids(PROCESS_EVENT)[0])
    (delivery_id,) = queued.ids(DELIVER_WEBHOOK)
    receiver.statuses = [503, 503, 503]
    outcomes = []
    for _ in range(3):
        WebhookDelivery.objects.filter(pk=delivery_id).update(next_attempt_at=timezone.now())
        outcomes.append(webhook_deliver(delivery_id=delivery_id))
    assert outcomes == ["retrying", "retrying", "failed"]
    assert json.loads(receiver.requests[0][1])["event"] == "submission.failed"
    page = APIClient()
    page.force_login(host)
    html = page.get(f"/c/{challenge.slug}/webhooks/").content.decode()
    assert receiver.url in html and "failed" in html and "HTTP 503" in html


def test_the_janitor_resends_a_lost_event(host, alice, queued, committed, monkeypatch):
    challenge, _ = digits_challenge(host)
    submission = ended_submission(challenge, alice)
    with committed():
        submission_refresh_status(submission_id=submission.pk)
    Event.objects.update(created=timezone.now() - timedelta(hours=1))
    monkeypatch.setattr("leaderboard.services.dispatch.queue_lengths", lambda queues: {q: 0 for q in queues})
    assert janitor_run().notifications == 1
    assert queued.ids(PROCESS_EVENT) == [Event.objects.get().pk] * 2


def test_the_webhooks_page_registers_and_shows_the_secret(client, host, receiver):
    challenge, _ = digits_challenge(host)
    client.force_login(host)
    assert "Webhooks" in client.get(f"/c/{challenge.slug}/audit/").content.decode()
    response = client.post(f"/c/{challenge.slug}/webhooks/", {"action": "create", "url": receiver.url}, follow=True)
    webhook = challenge.webhooks.get()
    assert webhook.secret in response.content.decode()
    client.post(f"/c/{challenge.slug}/webhooks/", {"action": "delete", "webhook": webhook.pk})
    assert not challenge.webhooks.exists()


def test_only_hosts_see_the_webhooks_page(client, host, alice):
    challenge, _ = digits_challenge(host)
    client.force_login(alice)
    assert client.get(f"/c/{challenge.slug}/webhooks/").status_code == 403
