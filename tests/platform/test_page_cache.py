"""The anonymous micro-cache of the challenge page (leaderboard/web/pagecache.py), through the test client."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.web.pagecache import PAGE_CACHE

from .factories import digits_challenge, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def microcache(settings):
    settings.VARBOARD = {**settings.VARBOARD, "LEADERBOARD_MICROCACHE_S": 60}
    PAGE_CACHE.clear()
    yield
    PAGE_CACHE.clear()


@pytest.fixture
def challenge():
    return digits_challenge(make_user("page-cache-host"), visibility="public")[0]


def test_second_anonymous_get_makes_no_query(microcache, challenge, django_assert_num_queries):
    url = f"/c/{challenge.slug}/"
    first = Client().get(url)
    assert first.status_code == 200 and "X-Varboard-Page-Cache" not in first
    with django_assert_num_queries(0):
        second = Client().get(url)
    assert second.status_code == 200 and second["X-Varboard-Page-Cache"] == "hit"
    assert second.content == first.content and "Cookie" in second["Vary"]
    # Another query string is another page: rendered, not served from the first one.
    other = Client().get(url + "?q=nobody")
    assert other.status_code == 200 and "X-Varboard-Page-Cache" not in other


def test_signed_in_reader_is_never_served_from_it(microcache, challenge):
    url = f"/c/{challenge.slug}/"
    anonymous = Client().get(url)
    assert anonymous.status_code == 200 and b"Log in" in anonymous.content
    reader = Client()
    reader.force_login(make_user("page-cache-reader"))
    page = reader.get(url)
    assert page.status_code == 200 and "X-Varboard-Page-Cache" not in page
    assert b"page-cache-reader" in page.content and b"Log out" in page.content
    # ...and what the signed-in reader saw was not stored for the anonymous ones.
    again = Client().get(url)
    assert again["X-Varboard-Page-Cache"] == "hit" and b"page-cache-reader" not in again.content


def test_off_when_the_setting_is_zero(settings, challenge, django_assert_max_num_queries):
    settings.VARBOARD = {**settings.VARBOARD, "LEADERBOARD_MICROCACHE_S": 0}
    PAGE_CACHE.clear()
    url = f"/c/{challenge.slug}/"
    Client().get(url)
    second = Client().get(url)
    assert second.status_code == 200 and "X-Varboard-Page-Cache" not in second


def test_a_private_challenge_is_not_cached_for_anonymous_readers(microcache, challenge):
    challenge.visibility = "private"
    challenge.save(update_fields=["visibility"])
    url = f"/c/{challenge.slug}/"
    assert Client().get(url).status_code == 404
    assert PAGE_CACHE.get((url, "")) is None


def test_an_expired_page_is_rendered_by_one_reader_while_the_others_get_the_previous_copy(monkeypatch):
    from leaderboard.web import pagecache

    clock = [100.0]
    monkeypatch.setattr(pagecache.time, "monotonic", lambda: clock[0])
    cache = pagecache.PageCache()
    cache.put("page", "v1", ttl=1)
    assert cache.get("page") == "v1"
    clock[0] += 1.5  # expired
    assert cache.get("page") is None  # the first reader renders it...
    assert cache.get("page") == "v1" and cache.get("page") == "v1"  # ...the others are not held up
    cache.put("page", "v2", ttl=1)
    assert cache.get("page") == "v2"
    clock[0] += 1.5
    assert cache.get("page") is None
    cache.release("page")  # that render failed: the next reader tries again, nothing stale is kept
    assert cache.get("page") is None and cache.get("page") is None
    cache.put("page", "v3", ttl=1)
    clock[0] += 1 + pagecache.STALE_GRACE_S + 1
    assert cache.get("page") is None  # a refresh that never came back does not keep the old copy forever
    assert cache.get("page") is None
