"""A new user's walk through the README and the site (review newuser4): what answered other than documented."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.services.teams import team_create, team_invite

from .factories import digits_challenge, make_user, stored_recipe

pytestmark = pytest.mark.django_db


def token_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_refused_writes_without_a_body_declare_their_400(api_contract):
    """Cancelling an ended submission, or an invitation twice, answers 400 naming the state: the schema must
    declare that 400 (before: POST /api/submissions/{id}/cancel/ and /api/invitations/{id}/cancel/ declared
    200, 401, 403, 404, 406, 500, 503 only, so a generated client raised on the documented refusal)."""
    host, alice, bob = make_user("host"), make_user("alice"), make_user("bob")
    challenge, _ = digits_challenge(host)
    scored = stored_recipe(challenge, alice, "ended", 1, scores=[0.9])
    client = token_client(alice)
    response = client.post(f"/api/submissions/{scored.pk}/cancel/")
    assert response.status_code == 400 and "nothing to cancel" in response.json()["detail"]

    team = team_create(name="Owls", creator=alice)
    invitation = team_invite(team=team, user=bob, invited_by=alice)
    assert client.post(f"/api/invitations/{invitation.pk}/cancel/").status_code == 200
    again = client.post(f"/api/invitations/{invitation.pk}/cancel/")
    assert again.status_code == 400 and "pending" in again.json()["detail"]
    assert not api_contract, api_contract

