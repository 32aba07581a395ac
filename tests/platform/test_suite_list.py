"""A list of the suites a reader may open, at ``/suites/`` (found by newuser8: it answered 404, and the README named
only ``/suites/new/`` and ``/suites/<slug>/``, so a newcomer could not find the suites that exist).

A suite is readable when every one of its challenges is (``selectors.suite_list_visible``, the rule of its board and
``GET /api/suites/``): a suite with a private challenge is listed to that challenge's hosts only, never to others,
here or on the page of its public challenge."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import Suite

from .factories import digits_challenge, make_user

pytestmark = pytest.mark.django_db


def _suite(slug: str, user, *challenges) -> Suite:
    suite = Suite.objects.create(slug=slug, title=f"Suite {slug}", created_by=user)
    suite.challenges.set(challenges)
    return suite


def _listed(page: str) -> list[str]:
    return re.findall(r'<a [^>]*href="/suites/([^/"]+)/"[^>]*data-suite-link', page)


def test_the_suites_page_lists_what_each_reader_may_open(client, host):
    shown, _ = digits_challenge(host, title="Open task")
    other, _ = digits_challenge(host, title="Other open task")
    secret, _ = digits_challenge(host, title="Secret task")
    secret.visibility = "private"
    secret.save()
    _suite("open-pair", host, shown, other)
    _suite("with-secret", host, shown, secret)

    anonymous = client.get("/suites/")
    assert anonymous.status_code == 200
    page = anonymous.content.decode()
    assert _listed(page) == ["open-pair"]
    assert "with-secret" not in page and "Secret task" not in page
    assert 'href="/suites/new/"' in page  # how to make one
    for where in ("/", f"/c/{shown.slug}/"):  # the challenges list and a challenge's page link to the list
        assert re.search(r'<a href="/suites/" data-suites-link>', client.get(where).content.decode()), where

    client.force_login(make_user("reader"))
    assert _listed(client.get("/suites/").content.decode()) == ["open-pair"]
    client.force_login(host)  # hosts the private task: may open the suite that has it
    assert sorted(_listed(client.get("/suites/").content.decode())) == ["open-pair", "with-secret"]


def test_a_challenge_page_names_only_the_suites_its_reader_may_open(client, host):
    """The public challenge's page listed every suite holding it, the one with a private task too: its title shown to
    anyone, its link a 404."""
    shown, _ = digits_challenge(host, title="Open task")
    other, _ = digits_challenge(host, title="Other open task")
    secret, _ = digits_challenge(host, title="Secret task")
    secret.visibility = "private"
    secret.save()
    _suite("open-pair", host, shown, other)
    _suite("with-secret", host, shown, secret)
    page = client.get(f"/c/{shown.slug}/").content.decode()
    assert 'href="/suites/open-pair/"' in page
    assert "with-secret" not in page and "Suite with-secret" not in page
    client.force_login(host)
    assert 'href="/suites/with-secret/"' in client.get(f"/c/{shown.slug}/").content.decode()


def test_the_suites_page_is_paged(client, host, monkeypatch):
    first, _ = digits_challenge(host, title="Task one")
    second, _ = digits_challenge(host, title="Task two")
    for i in range(5):
        _suite(f"s{i}", host, first, second)
    monkeypatch.setattr("leaderboard.web.beyond.SUITES_PER_PAGE", 2)
    pages = [_listed(client.get(f"/suites/?page={n}").content.decode()) for n in (1, 2, 3)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(sum(pages, [])) == [f"s{i}" for i in range(5)]
    assert 'href="?page=2"' in client.get("/suites/").content.decode()
    refused = client.get("/suites/?page=x")
    assert refused.status_code == 400 and "`page` must be a whole number" in refused.content.decode()
    beyond = client.get("/suites/?page=9")
    assert beyond.status_code == 404 and "3 pages" in beyond.content.decode()


def _beyond_text(page: str) -> str:
    paragraph = re.search(r"<p [^>]*data-beyond>(.*?)</p>", page, re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", " ", paragraph).split())


def test_the_links_beyond_the_board_have_no_stray_separator(client, host):
    """A challenge without variance studies (predictions only) began the line with " · suite ..." (newuser9's note)."""
    predictions, _ = digits_challenge(host, title="Predictions only", allow_recipes=False)
    recipes, _ = digits_challenge(host, title="With recipes")
    _suite("both", host, predictions, recipes)
    for challenge, first in ((predictions, "suite Suite both"), (recipes, "variance studies")):
        for reader in (None, host):  # a host of a challenge without recipes also reads "import results"
            if reader is not None:
                client.force_login(reader)
            text = _beyond_text(client.get(f"/c/{challenge.slug}/").content.decode())
            assert text.startswith(first) and not text.endswith("·") and "· ·" not in text, text
            assert "all suites" in text
