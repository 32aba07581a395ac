"""A new user's walk through the README and the site (review newuser4): what answered other than documented."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.services.teams import team_create, team_invite

from .factories import days_ahead, digits_challenge, make_user, stored_recipe

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


@pytest.mark.django_db(transaction=True)
def test_cli_join_and_finals_say_what_the_challenge_takes(live_server, tmp_path):
    """``varboard join digits`` on the demo's closed challenge printed "joined digits: you can submit", and
    ``varboard finals wine`` on a board without a private part "0 of 2 final entries chosen" (a choice there is a
    400). Now join names the closing, and finals says there is nothing to choose."""
    from .test_cli_flows import Person

    host = make_user("host")
    closed, _ = digits_challenge(host, title="Closed", opens_at=days_ahead(-3), closes_at=days_ahead(-1))
    open_, _ = digits_challenge(host, title="Open")
    carol = Person(live_server.url, tmp_path / "carol", "carol")

    joined = carol("join", closed.slug, "--accept-rules")
    assert joined.returncode == 0, joined.stderr
    assert "you can submit" not in joined.stdout and "closed" in joined.stdout, joined.stdout
    assert "you can submit" in carol("join", open_.slug, "--accept-rules").stdout

    finals = carol("finals", open_.slug)
    assert finals.returncode == 0, finals.stderr
    assert "no private board" in finals.stdout and "final entries chosen" not in finals.stdout, finals.stdout


def test_board_jargon_headers_explain_themselves(client):
    """A Kaggle user meets "Boo3", "P(A>B)" and "Adjusted p" as column headers. Rank, Group, Runs and Rank interval
    had a tooltip; these three had none (before: Boo_n's header, both pair tables' P(A>B) and Adjusted p headers
    without a title). Each now has a title and links to its entry in "How to read this leaderboard"."""
    import re

    from .test_leaderboard_pages import known_board

    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, _ = known_board(host, users)
    page = client.get(f"/c/{challenge.slug}/").content.decode()
    headers = re.findall(r"<th\b([^>]*)>(.*?)</th>", page, flags=re.S)
    text = lambda inner: re.sub(r"<a\b[^>]*>", "", inner).strip()  # noqa: E731 (the header without its link)
    jargon = [(attrs, inner) for attrs, inner in headers if re.match(r"(Boo<sub>|P\(A&gt;B\)|Adjusted p)", text(inner))]
    assert len(jargon) >= 5, jargon  # Boo_n, and P(A>B) and Adjusted p in both pair tables
    for attrs, inner in jargon:
        assert 'title="' in attrs, f"no tooltip on the header {inner!r}"
        assert re.search(r'href="#explain-(boon|pab)"', inner), f"the header {inner!r} does not link to its legend"
