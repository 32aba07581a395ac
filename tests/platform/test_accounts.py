"""Accounts: hashed expiring tokens, throttled log-ins and sign-ups (429 with Retry-After), e-mail
verification, rules and host-approved registration before the first submission."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.db import connection
from knox.models import AuthToken
from rest_framework.test import APIClient

from leaderboard.services.errors import NotAllowed
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import PASSWORD, digits_challenge, label_predictions

pytestmark = pytest.mark.django_db


def token_for(user) -> str:
    response = APIClient().post("/api/auth/token/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 200, response.content
    return response.json()["token"]


def test_tokens_are_stored_hashed_expire_and_work_with_the_token_keyword(alice):
    token = token_for(alice)
    stored = AuthToken.objects.get(user=alice)
    assert token not in {stored.digest, stored.token_key} and stored.expiry is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT digest, token_key FROM knox_authtoken")
        assert all(token not in row for row in cursor.fetchall())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    listed = client.get("/api/auth/tokens/").json()["results"]
    assert [row["token_key"] for row in listed] == [stored.token_key]
    assert client.delete(f"/api/auth/tokens/{stored.token_key}/").status_code == 204
    assert client.get("/api/auth/tokens/").status_code == 401  # revoked: the token no longer authenticates


def test_twenty_wrong_passwords_are_throttled_with_retry_after(alice):
    client = APIClient()
    statuses = [
        client.post("/api/auth/token/", {"username": "alice", "password": f"guess-{i}"}).status_code for i in range(20)
    ]
    assert statuses[:10] == [401] * 10 or statuses[:10] == [403] * 10
    assert set(statuses[10:]) == {429}
    refused = client.post("/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0  # even the right one, for now
    web = client.post("/login/", {"username": "alice", "password": "nope"})
    assert web.status_code == 429 and int(web["Retry-After"]) > 0


def test_signups_are_throttled_per_address(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "signup": "2/hour"},
    }
    codes = [
        APIClient()
        .post("/signup/", {"username": f"sock{i}", "password1": "a-long-pass-77x", "password2": "a-long-pass-77x"})
        .status_code
        for i in range(3)
    ]
    assert codes == [302, 302, 429]


def test_email_verification_keeps_new_accounts_inactive_until_confirmed(settings):
    settings.VARBOARD_EMAIL_VERIFICATION = True
    client = APIClient()
    response = client.post(
        "/signup/",
        {
            "username": "carol",
            "email": "carol@example.org",
            "password1": "a-long-pass-77x",
            "password2": "a-long-pass-77x",
        },
    )
    assert response.status_code == 302
    from django.contrib.auth.models import User

    assert not User.objects.get(username="carol").is_active
    link = re.search(r"https?://\S+", mail.outbox[0].body).group(0)
    assert client.get(link).status_code == 302
    assert User.objects.get(username="carol").is_active


def test_rules_and_registration_come_before_the_first_submission(host, alice):
    challenge, frame = digits_challenge(host, rules="No hand labelling.", registration_required=True)
    files = [UploadedFile("p.csv", label_predictions(frame))]
    with pytest.raises(NotAllowed, match="Accept the challenge's rules"):
        submission_create_predictions(challenge=challenge, user=alice, method_name="m", files=files)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    assert client.post(f"/api/challenges/{challenge.slug}/register/", {}).status_code == 400
    registration = client.post(f"/api/challenges/{challenge.slug}/register/", {"accept_rules": True}).json()
    assert registration["status"] == "pending"
    with pytest.raises(NotAllowed, match="waiting for the hosts"):
        submission_create_predictions(challenge=challenge, user=alice, method_name="m", files=files)
    hosts = APIClient()
    hosts.credentials(HTTP_AUTHORIZATION=f"Token {token_for(host)}")
    assert client.get(f"/api/challenges/{challenge.slug}/registrations/").status_code == 403
    decided = hosts.post(
        f"/api/challenges/{challenge.slug}/registrations/{registration['id']}/decide/", {"approve": True}
    )
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    assert submission_create_predictions(challenge=challenge, user=alice, method_name="m", files=files).pk


def test_the_tokens_page_lists_creates_and_revokes(alice):
    client = APIClient()
    assert client.login(username="alice", password=PASSWORD)
    created = client.post("/account/tokens/", {"action": "create"}).content.decode()
    assert "data-new-token" in created
    key = AuthToken.objects.get(user=alice).token_key
    assert key in client.get("/account/tokens/").content.decode()
    client.post("/account/tokens/", {"action": "revoke", "token_key": key})
    assert not AuthToken.objects.filter(user=alice).exists()
