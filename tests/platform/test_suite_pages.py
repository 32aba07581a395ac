"""Issue 26: suites on the web. A user groups visible challenges into a suite with a form, and the suite's
page draws the performance profiles and the critical-difference diagram as server-side SVG."""

from __future__ import annotations

import re

import numpy as np
import pytest

from leaderboard.models import Suite

from .factories import digits_challenge, make_user
from .test_beyond import add_entry

pytestmark = pytest.mark.django_db


def _two_tasks(host):
    rng = np.random.default_rng(4)
    first, _ = digits_challenge(host, title="Task one")
    second, _ = digits_challenge(host, title="Task two")
    for challenge, shift in ((first, 0.0), (second, 0.1)):
        add_entry(challenge, host, "strong", "recipe", 0.8 + shift + 0.01 * rng.standard_normal(6))
        add_entry(challenge, host, "weak", "recipe", 0.6 + shift + 0.01 * rng.standard_normal(5))
        add_entry(challenge, host, "middle", "recipe", 0.7 + shift + 0.01 * rng.standard_normal(5))
    return first, second


def test_a_suite_is_created_on_the_web_and_drawn_with_its_profile_and_cd_diagram(client, host):
    first, second = _two_tasks(host)
    client.force_login(make_user("reader"))
    form = client.get("/suites/new/").content.decode()
    assert f'value="{first.pk}"' in form and f'value="{second.pk}"' in form
    too_small = client.post(
        "/suites/new/", {"title": "One", "challenges": [first.pk], "normalization": "minmax", "rope": 0.01}
    )
    assert too_small.status_code == 200 and "at least two challenges" in too_small.content.decode()
    created = client.post(
        "/suites/new/",
        {
            "title": "Two tasks",
            "slug": "two-tasks",
            "challenges": [first.pk, second.pk],
            "normalization": "minmax",
            "rope": 0.01,
        },
    )
    assert created.status_code == 302 and created["Location"] == "/suites/two-tasks/"
    assert list(Suite.objects.get(slug="two-tasks").challenges.order_by("pk")) == [first, second]
    page = client.get("/suites/two-tasks/").content.decode()
    profile = re.search(r"<figure class=\"chart\" data-profile>.*?</figure>", page, re.S).group(0)
    assert profile.count('class="profile"') == 3 and "<polygon" in profile  # one line and band per entry
    cd = re.search(r"<figure class=\"chart\" data-cd-chart>.*?</figure>", page, re.S).group(0)
    assert cd.count('class="cd-entry"') == 3 and "CD = " in cd
    assert re.search(r"<title>strong \([^)]*\): average rank 1</title>", cd), re.findall(r"<title>[^<]*</title>", cd)


def test_the_suite_form_offers_only_visible_challenges_and_needs_a_login(client, host):
    first, second = _two_tasks(host)
    second.visibility = "private"
    second.save()
    assert client.get("/suites/new/").status_code == 302  # to the login page
    client.force_login(make_user("reader"))
    form = client.get("/suites/new/").content.decode()
    assert f'value="{first.pk}"' in form and f'value="{second.pk}"' not in form
    refused = client.post(
        "/suites/new/",
        {"title": "Sneaky", "challenges": [first.pk, second.pk], "normalization": "minmax", "rope": 0.01},
    )
    assert refused.status_code == 200 and not Suite.objects.exists()


def test_an_entry_missing_a_task_is_left_out_with_the_tasks_it_misses(client, host):
    """Found by suites19: an entry scored on one task of two vanished from the suite's board, page and JSON, with
    nothing saying it was left out or why (a reader could not tell it from an entry never submitted)."""
    first, second = _two_tasks(host)
    add_entry(first, host, "only-one-task", "recipe", 0.99 + 0.01 * np.random.default_rng(5).standard_normal(5))
    client.force_login(host)
    client.post(
        "/suites/new/",
        {"title": "Two", "slug": "two", "challenges": [first.pk, second.pk], "normalization": "minmax", "rope": 0.01},
    )
    board = client.get("/api/suites/two/").json()
    assert [e["method_name"] for e in board["entries"]] == ["strong", "middle", "weak"]
    assert [(e["method_name"], e["missing"]) for e in board["left_out"]] == [("only-one-task", [second.slug])]
    page = client.get("/suites/two/").content.decode()
    left_out = re.search(r"<p[^>]*data-left-out>.*?</p>", page, re.S).group(0)
    assert "only-one-task" in left_out and second.title in left_out
