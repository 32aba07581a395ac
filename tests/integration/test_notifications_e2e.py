"""Mails and webhooks end to end: real PostgreSQL, Redis and a Celery worker, a real HTTP receiver.

The unit tests (``tests/platform/test_notifications.py``) call the outbox task by hand; here the
worker does everything after the commit: it scores an upload, records the event, mails the team
(Django's file backend, ``EMAIL_URL=filemail://…``) and POSTs the signed webhook; an invitation is
mailed to the invitee and to no webhook. The worker is the test's own, on a Redis of its own, with
loopback receivers allowed (``VARBOARD_WEBHOOK_ALLOW_PRIVATE``), which the session's worker refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from leaderboard.models import Submission, Webhook, WebhookDelivery
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from leaderboard.services.teams import team_create, team_invite
from leaderboard.services.webhooks import webhook_create, webhook_verify
from tests.conftest import database_url, start_worker, wait_for
from tests.http_receiver import Listener, Receiver
from tests.platform.factories import digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def mails_in(folder: Path) -> str:
    """Everything Django's file backend wrote (one file per connection), as text."""
    return "".join(path.read_text(errors="replace") for path in sorted(folder.glob("*.log")))


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS = {**settings.WEBHOOKS, "ALLOW_PRIVATE": True}  # to register a 127.0.0.1 URL here
    server = Receiver()
    yield server
    server.close()


def test_a_scored_upload_and_an_invitation_reach_mail_and_webhook_through_the_worker(redis_server, receiver, tmp_path):
    outbox = tmp_path / "mail"
    worker = start_worker(
        broker_url=redis_server.url,
        database=database_url(django_settings.DATABASES["default"]),
        node="notify",
        queues="scoring",
        env={
            "VARBOARD_WEBHOOK_ALLOW_PRIVATE": "true",
            "EMAIL_URL": f"filemail://{outbox}",
            "VARBOARD_SITE_URL": "https://board.example.org",
        },
    )
    try:
        host, alice, bob = (make_user(name) for name in ("host", "alice", "bob"))
        for user in (host, alice, bob):
            user.email = f"{user.username}@example.org"
            user.save(update_fields=["email"])
        challenge, frame = digits_challenge(host, k_runs=1)
        hook = webhook_create(challenge=challenge, user=host, url=receiver.url)
        submission = submission_create_predictions(
            challenge=challenge,
            user=alice,
            method_name="labels",
            files=[UploadedFile("p.csv", label_predictions(frame))],
        )
        team_invite(team=team_create(name="Lab", creator=alice), user=bob, invited_by=alice)

        wait_for(lambda: receiver.requests, timeout=60, message=worker.tail)
        ((headers, body),) = receiver.requests
        payload = json.loads(body)
        assert payload["event"] == headers["Varboard-Event"] == "submission.scored"
        assert payload["submission"]["id"] == submission.pk and payload["submission"]["runs_succeeded"] == 1
        assert payload["submission"]["url"] == f"https://board.example.org/submissions/{submission.pk}/"
        assert webhook_verify(secret=hook.secret, body=body, header=headers["Varboard-Signature"])
        wait_for(
            lambda: WebhookDelivery.objects.filter(status="delivered").count() == 1, timeout=30, message=worker.tail
        )
        assert Submission.objects.get(pk=submission.pk).status == "scored"

        wanted = (
            f"Subject: [varboard] Digits test: submission {submission.pk} was scored",
            "alice invited you to join the team",  # the body: the subject's “Lab” is RFC 2047-encoded
            "To: alice@example.org",
            "To: bob@example.org",
        )
        wait_for(
            lambda: outbox.is_dir() and all(text in mails_in(outbox) for text in wanted),
            timeout=60,
            message=lambda: f"{mails_in(outbox) if outbox.is_dir() else 'no mail'}\n{worker.tail()}",
        )
        mails = mails_in(outbox)
        assert "To: host@example.org" not in mails  # the host took no part: not a recipient of either
        assert mails.count("\nTo: ") == 2
        assert len(receiver.requests) == 1  # the invitation went to no challenge's webhook
    finally:
        worker.stop()


def test_the_worker_never_connects_to_loopback_for_the_attack_urls(redis_server, settings):
    """Issue 21, the webhook row, replayed with the default (refusing) worker.

    ``http://127.0.0.1:PORT\\@1.1.1.1/`` is refused at ``POST`` (400); stored anyway (a row from
    before the checks), it and a name for loopback are refused again by the worker, which lists
    them with a public reason only, and the listener on 127.0.0.1:PORT is never connected to.
    """
    settings.WEBHOOKS = {**settings.WEBHOOKS, "ALLOW_PRIVATE": False, "PROXY": ""}
    listener = Listener()
    worker = start_worker(
        broker_url=redis_server.url,
        database=database_url(django_settings.DATABASES["default"]),
        node="ssrf",
        queues="scoring",
        env={"VARBOARD_WEBHOOK_ALLOW_PRIVATE": "false", "VARBOARD_WEBHOOK_MAX_ATTEMPTS": "1"},
    )
    try:
        host, alice = make_user("host"), make_user("alice")
        challenge, frame = digits_challenge(host, k_runs=1)
        client = APIClient()
        client.force_authenticate(host)
        attack = f"http://127.0.0.1:{listener.port}\\@1.1.1.1/"
        answer = client.post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": attack}, format="json")
        assert answer.status_code == 400 and "backslashes" in answer.json()["detail"]
        for url in (attack, f"http://localhost:{listener.port}/"):
            Webhook.objects.create(challenge=challenge, url=url, created_by=host, secret="whsec_x")
        submission_create_predictions(
            challenge=challenge,
            user=alice,
            method_name="labels",
            files=[UploadedFile("p.csv", label_predictions(frame))],
        )
        wait_for(lambda: WebhookDelivery.objects.filter(status="failed").count() == 2, timeout=90, message=worker.tail)
        listed = {}
        for webhook in Webhook.objects.all():
            (row,) = client.get(f"/api/challenges/{challenge.slug}/webhooks/{webhook.pk}/").json()["results"]
            listed[webhook.url] = row["last_error"]
        assert listed == {attack: "URL not allowed", f"http://localhost:{listener.port}/": "address not allowed"}
        assert listener.connections() == 0
    finally:
        worker.stop()
        listener.close()
