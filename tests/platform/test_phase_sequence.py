"""Issue 26: phases follow one another. A phase added without an ``order`` goes after the last one (two
phases added through the API used to both come back with order 0), a taken order or an overlapping window
is refused naming the other phase, and the page shows the phase open now, or else the next, with its own
closing date (it used to say "Closes: never" under a phase ending in three days)."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from leaderboard.selectors import phase_in_force

from .factories import days_ahead, digits_challenge

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _dd(page: str, attribute: str) -> str:
    match = re.search(rf"<[^>]*\b{attribute}\b[^>]*>(.*?)</", page, re.DOTALL)
    assert match, attribute
    return " ".join(re.sub(r"<[^>]+>", "", match.group(1)).split())


def test_phases_added_through_the_api_get_their_own_order_after_the_last(host):
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    url = f"/api/challenges/{challenge.slug}/phases/"
    dev = _api(host).post(url, {"name": "final", "opens_at": days_ahead(3), "closes_at": days_ahead(10)}, format="json")
    late = _api(host).post(url, {"name": "late", "opens_at": days_ahead(10)}, format="json")
    assert (dev.status_code, late.status_code) == (201, 201), (dev.content, late.content)
    assert (dev.json()["order"], late.json()["order"]) == (1, 2)
    listed = _api(host).get(url).json()["results"]
    assert [(p["name"], p["order"]) for p in listed] == [("main", 0), ("final", 1), ("late", 2)]


def test_a_taken_order_and_an_overlapping_window_are_refused_naming_the_other_phase(host):
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    url = f"/api/challenges/{challenge.slug}/phases/"
    taken = _api(host).post(url, {"name": "final", "order": 0, "opens_at": days_ahead(3)}, format="json")
    assert taken.status_code == 400 and taken.json()["field"] == "order"
    assert taken.json()["detail"].startswith("The main phase has order 0 already: give the final phase its own place")
    overlap = _api(host).post(
        url, {"name": "final", "opens_at": days_ahead(2), "closes_at": days_ahead(9)}, format="json"
    )
    assert overlap.status_code == 400 and overlap.json()["field"] == "opens_at"
    assert overlap.json()["detail"] == (
        f"The final phase (from {days_ahead(2):%Y-%m-%d %H:%M} UTC, until {days_ahead(9):%Y-%m-%d %H:%M} UTC) overlaps "
        f"the main phase (from the start, until {days_ahead(3):%Y-%m-%d %H:%M} UTC): phases follow one another, so "
        "change the dates of one of them first."
    )
    assert list(challenge.phases.values_list("name", flat=True)) == ["main"]
    final = _api(host).post(url, {"name": "final", "opens_at": days_ahead(3)}, format="json").json()
    moved = _api(host).patch(f"{url}{final['id']}/", {"opens_at": days_ahead(1)}, format="json")
    assert moved.status_code == 400 and "overlaps the main phase" in moved.json()["detail"]


def test_the_page_shows_the_open_phase_then_the_next_with_its_own_closing_date(client, host):
    """The host's scenario of the issue: the default phase is open-ended; two phases are added by the API."""
    challenge, _ = digits_challenge(host)
    url = f"/api/challenges/{challenge.slug}/phases/"
    main = challenge.phases.get()
    refused = _api(host).post(url, {"name": "development", "closes_at": days_ahead(3)}, format="json")
    assert (
        refused.status_code == 400
        and "overlaps the main phase (from the start, never closing)" in (refused.json()["detail"])
    )
    renamed = _api(host).patch(f"{url}{main.pk}/", {"name": "development", "closes_at": days_ahead(3)}, format="json")
    assert renamed.status_code == 200, renamed.content
    added = _api(host).post(
        url, {"name": "final", "opens_at": days_ahead(3), "closes_at": days_ahead(10)}, format="json"
    )
    assert added.status_code == 201, added.content

    page = client.get(challenge.get_absolute_url()).content.decode()
    assert _dd(page, "data-in-force") == "development"
    assert _dd(page, "data-closes") == f"{days_ahead(3):%Y-%m-%d %H:%M} UTC"
    later = phase_in_force(challenge=challenge, now=days_ahead(5))
    assert (later.open, later.phase.name, later.phase.closes_at) == (True, "final", days_ahead(10))
    challenge.phases.filter(name="development").update(closes_at=days_ahead(-1), opens_at=days_ahead(-2))
    challenge.phases.filter(name="final").update(opens_at=days_ahead(1))
    page = client.get(challenge.get_absolute_url()).content.decode()
    assert _dd(page, "data-in-force").startswith("final: The final phase opens at")
    assert _dd(page, "data-closes") == f"{days_ahead(10):%Y-%m-%d %H:%M} UTC"
