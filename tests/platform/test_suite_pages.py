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


def test_after_the_reveal_a_suite_reads_no_public_rows_score_as_one_on_all_rows(host):
    """Found by suites19: after the reveal a suite reads each run's score on all hidden rows (``test_score``), but a
    run of a development phase that scores the public rows only has the public rows' score there. An entry whose
    board version on a task came from such a phase was scored on the public rows beside entries scored on every
    row, under "all hidden rows (private board revealed)". It has no score on all rows there: it is left out."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import Phase, Run, Submission
    from leaderboard.services.challenges import challenge_reveal
    from leaderboard.services.phases import phase_create
    from leaderboard.services.reports import report_recompute
    from leaderboard.services.suites import suite_board, suite_create

    from .factories import stored_recipe

    now = timezone.now()
    tasks, users = [], {name: make_user(name) for name in ("early", "late")}
    for i, (dev_only, final) in enumerate([(["late"], ["early", "late"]), ([], ["early", "late"])]):
        task, _ = digits_challenge(
            host,
            title=f"Phased {i}",
            public_fraction=0.5,
            opens_at=now - timedelta(days=10),
            closes_at=now - timedelta(days=5),
        )
        Phase.objects.filter(challenge=task).update(test_rows="public")
        dev = task.phases.get()
        final_phase = phase_create(
            challenge=task, user=host, name="final", opens_at=now - timedelta(days=4), closes_at=now - timedelta(days=1)
        )
        for phase, names in ((dev, dev_only), (final_phase, final)):
            for name in names:
                if phase is final_phase and name in dev_only:
                    continue
                sub = stored_recipe(task, users[name], name, 3, [0.8, 0.8, 0.8])
                Submission.objects.filter(pk=sub.pk).update(phase=phase)
                scores_all = phase.test_rows == "all"
                Run.objects.filter(submission=sub).update(
                    public_score=0.9 if name == "late" else 0.6,
                    private_score=0.2 if scores_all else None,
                    test_score=0.55 if scores_all else 0.9,  # a public-rows-only run: its public rows' score
                )
        report_recompute(challenge_id=task.pk)
        challenge_reveal(challenge=task, user=host)
        report_recompute(challenge_id=task.pk)
        tasks.append(task)
    board = suite_board(suite=suite_create(created_by=host, title="Phased", challenges=tasks))
    assert all("revealed" in task["scores"] for task in board["tasks"])
    assert [e["method_name"] for e in board["entries"]] == ["early"]
    assert [(e["method_name"], e["missing"]) for e in board["left_out"]] == [("late", [tasks[0].slug])]


def test_a_suite_without_normalisation_says_lower_is_better_tasks_are_negated(client, host):
    """With normalization "none" a lower-is-better task's scores are negated (evaluation.stats.suites.normalise), so an
    RMSE suite showed IQMs of -0.35 under "normalised not at all" with nothing saying why they are negative
    (suites19's finding); the page says so."""
    first, second = _two_tasks(host)
    client.force_login(make_user("reader"))
    created = client.post(
        "/suites/new/",
        {"title": "Raw", "slug": "raw", "challenges": [first.pk, second.pk], "normalization": "none", "rope": 0.01},
    )
    assert created.status_code == 302
    page = client.get("/suites/raw/").content.decode()
    assert "normalised not at all (a lower-is-better task's scores negated: higher is better on every task)" in page
    minmax = client.post(
        "/suites/new/",
        {
            "title": "Min-max",
            "slug": "mm",
            "challenges": [first.pk, second.pk],
            "normalization": "minmax",
            "rope": 0.01,
        },
    )
    assert minmax.status_code == 302 and "negated" not in client.get("/suites/mm/").content.decode()
