"""Issue 23, row 12: the settings' k < 10n said when the challenge is made, and the hints of a decided pair.

k runs per entry below 10n (``evaluation.stats.boon.min_runs_for_interval``: below it Boo_n's interval covers less
than its level)
leave Boo_n without an interval on every entry of the board: the host hears it at creation (API
response, form message), on update and in the planner, and the defaults obey the rule.
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.stats.boon import min_runs_for_interval
from leaderboard.models import Challenge

from .factories import csv_bytes, digits_frame, make_user
from .test_api import client_for
from .test_leaderboard_pages import known_board
from .test_web import challenge_form_data

pytestmark = pytest.mark.django_db


def _create(user, **fields):
    return client_for(user).post(
        "/api/challenges/",
        {
            "title": "Digits",
            "metric": "accuracy",
            "dataset": SimpleUploadedFile("d.csv", csv_bytes(digits_frame(120))),
            "id_column": "id",
            "label_column": "label",
            "test_column": "is_test",
            **fields,
        },
        format="multipart",
    )


def test_row12_api_warns_at_creation_when_k_is_below_10n(alice):
    response = _create(alice, k_runs=30, boo_n=5)
    assert response.status_code == 201, response.content
    (warning,) = response.json()["warnings"]
    assert "k = 30" in warning and "10n = 50" in warning and "Boo_5" in warning
    # the same request with the default n: no warning
    response = _create(alice, k_runs=30)
    body = response.json()
    assert response.status_code == 201 and body["warnings"] == [] and body["boo_n"] == 3
    # and on update
    response = client_for(alice).patch(f"/api/challenges/{body['slug']}/", {"k_runs": 24}, format="json")
    assert response.status_code == 200 and "10n = 30" in response.json()["warnings"][0]


def test_a_challenge_of_fewer_than_six_runs_is_warned_for_the_mean_and_boo_1_like_the_mean(alice):
    """A new user's finding (2026-11-30): k = 5 with n = 1 was created without a warning, and the board showed
    Boo_1 = 0.9600 in [0.9500, 0.9878] beside the same mean without an interval ("k < 6"); the k < 3n warning
    advised "lower n to 1", which brings no interval back below 6 runs. (Recipe entries: a prediction entry's mean
    and Boo_1 intervals come from its test examples, test_newuser8.py.)"""
    response = _create(alice, k_runs=5, boo_n=1, allow_recipes=True)
    assert response.status_code == 201, response.content
    (mean_warning, rank_warning, boo_warning) = response.json()["warnings"]  # rank: a mean board's 16 (rank23)
    assert "k = 5 runs per entry" in mean_warning and "the 6 the mean's interval needs" in mean_warning
    assert "the 16 a board ranked by the mean needs for rank intervals" in rank_warning
    assert "as for the mean" in boo_warning and "lower n" not in boo_warning and '"k < 6"' in boo_warning
    response = _create(
        alice, k_runs=5, boo_n=3, allow_recipes=True
    )  # below 6 and below 10n: lowering n would not help either
    warnings = response.json()["warnings"]
    assert len(warnings) == 3 and "10n = 30" in warnings[2] and "lower n" not in warnings[2]
    response = _create(alice, k_runs=24, boo_n=3)  # 6 <= k < 10n: n = 2 brings Boo_n's interval back
    (warning,) = response.json()["warnings"]
    assert "lower n to 2." in warning
    response = _create(alice, k_runs=12, boo_n=3)  # only n = 1 would, the mean the board already shows
    (warning,) = response.json()["warnings"]  # no recipes: no word on a mean board's rank intervals (rank23)
    assert "10n = 30" in warning and "lower n" not in warning


def test_row12_default_challenge_satisfies_the_rule_it_enforces():
    defaults = Challenge()
    assert defaults.k_runs >= min_runs_for_interval(defaults.boo_n)


def test_row12_web_form_and_planner_warn(client, alice, media):
    client.force_login(alice)
    response = client.post("/challenges/new/", challenge_form_data(slug="few-runs", k_runs=30, boo_n=5), follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "10n = 50" in html and "data-k-warning" in html  # the message and the preview's planner
    planner = client.get(
        reverse("challenge-planner"),
        {"entries": 5, "gamma": 0.75, "alpha": 0.05, "power": 0.95, "run_minutes": 1, "boo_n": 5},
    ).content.decode()
    assert "data-k-boo-n" in planner and "10n = 50" in planner


def test_row12_compare_page_of_a_decided_pair_has_no_runs_needed_hint(client, host):
    users = [make_user("carol"), make_user("dave")]
    challenge, subs = known_board(host, users)
    strong, weak = subs[0], subs[2]
    html = client.get(f"/c/{challenge.slug}/compare/?a={strong.pk}&b={weak.pk}").content.decode()
    assert 'data-verdict="a_better"' in html
    assert "Runs needed" not in html
    # Weak is beaten by both others: its rank interval is 3 alone, never reaching above them
    assert "(interval 1–3)" not in html and "(interval 2–3)" not in html
    # an undecided pair (the tie) keeps the hint
    html = client.get(f"/c/{challenge.slug}/compare/?a={strong.pk}&b={subs[1].pk}").content.decode()
    assert "Runs needed" in html
    # ... and says the board's figure in all, not Noether's N for one unpaired pair (36 more beside N = 29)
    report = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    row = next(r for r in report["entries"] if r["submission_id"] == strong.pk and r["runs_needed_for_decision"])
    hint = html[html.index("data-runs-needed") :].split("</dd>")[0]
    total = row["runs_succeeded"] + row["runs_needed_for_decision"]
    assert f"{row['runs_needed_for_decision']} more, {total} in all" in hint and "Noether" not in hint


def test_row12_compare_page_explains_ranks_apart_for_an_undecided_pair(client, host):
    """Found by a new user: "cannot tell apart; either could be the better one" beside rank intervals 1 and 2.
    Both are right (A's mean is above B's in nearly every resample; A's run beats B's same-seed run in 12 of 20,
    not significantly above ½): the page now says which question each answers."""
    from .factories import digits_challenge
    from .test_leaderboard_pages import write_entry

    challenge, _ = digits_challenge(host, title="Apart", k_runs=20, bootstrap_resamples=500)
    b_runs = [0.90, 0.92, 0.88, 0.91, 0.89, 0.93, 0.90, 0.92, 0.88, 0.91] * 2  # 20: rank intervals from 16 (rank23)
    margins = ([0.05] * 6 + [-0.001] * 4) * 2
    a = write_entry(challenge, make_user("erin"), "Ahead", [x + d for x, d in zip(b_runs, margins)])
    b = write_entry(challenge, make_user("fred"), "Behind", b_runs)
    html = client.get(f"/c/{challenge.slug}/compare/?a={a.pk}&b={b.pk}").content.decode()
    assert 'data-verdict="not_significant"' in html
    explained = html[html.index("data-ranks-apart") :]
    assert "Ahead: 1–1" in explained and "Behind: 2–2" in explained
    assert "reliably ahead on the" in explained
    # a decided pair needs no such note
    strong = known_board(host, [make_user("gina"), make_user("hugo")])[1]
    decided = client.get(f"/c/{strong[0].challenge.slug}/compare/?a={strong[0].pk}&b={strong[2].pk}").content.decode()
    assert "data-ranks-apart" not in decided


def test_the_few_runs_flags_link_to_their_explanation(client, host):
    """Found by a new user: 'k < 10n' (then 'k < 3n') and 'k < 6' said what they mean only in a tooltip, which a touch screen cannot
    show. Each is now a link to its explanation under "How to read this" (the tooltip stays)."""
    from .factories import digits_challenge
    from .test_leaderboard_pages import write_entry

    challenge, _ = digits_challenge(host, title="Few runs", k_runs=5, bootstrap_resamples=200)
    write_entry(challenge, make_user("ivy"), "Few", [0.80, 0.82, 0.79, 0.81, 0.83])
    html = client.get(challenge.get_absolute_url()).content.decode()
    for anchor, label in (("explain-interval", "k &lt; 6"), ("explain-boon", "k &lt; 10n")):
        assert re.search(rf'<a class="flag" href="#{anchor}" title="[^"]+"[^>]*>{label}</a>', html), label
        assert f'id="{anchor}"' in html
        explained = html[html.index(f'id="{anchor}"') :].split("</dd>")[0]
        assert f'<span class="flag">{label}</span>' in explained
    assert "fewer than 10n = 30." in html[html.index('id="explain-boon"') :].split("</dd>")[0]
    assert "fewer runs than an interval needs (16)" in html  # ranked by the mean (rank23)


def test_a_boo_1_board_flags_and_explains_the_means_six_runs(client, host):
    """The flag and its explanation come from one rule (``evaluation.stats.boon.min_runs_flag``, ``min_runs_rule``),
    not from the templates' own copy of it: Boo_1 is the mean of the runs and needs the mean's 6."""
    from .factories import digits_challenge
    from .test_leaderboard_pages import write_entry

    challenge, _ = digits_challenge(
        host, title="Boo one", k_runs=5, boo_n=1, ranking_statistic="boo_n", bootstrap_resamples=200
    )
    write_entry(challenge, make_user("jo"), "Few", [0.80, 0.82, 0.79, 0.81, 0.83])
    html = client.get(challenge.get_absolute_url()).content.decode()
    assert re.search(r'<a class="flag" href="#explain-boon" title="[^"]+"[^>]*>k &lt; 6</a>', html)
    explained = html[html.index('id="explain-boon"') :].split("</dd>")[0]
    assert '<span class="flag">k &lt; 6</span>' in explained and "fewer than 6, as for the mean" in explained
    assert "10n" not in explained.split("marks")[-1]
    ranks = html[html.index('id="explain-rank"') :].split("</dd>")[0] if 'id="explain-rank"' in html else html
    assert "fewer runs than an interval needs (16)" in ranks  # Boo_1 is the mean: a mean board's rank rule


def test_a_label_column_the_dataset_lacks_is_the_label_column_s_error(alice):
    """A new user's finding (2026-11-30): a wrong label column was reported under the dataset field (the file was
    fine, the setting was not), in the host form and in the API's ``field``."""
    response = _create(alice, label_column="target")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == "label_column" and "there is no label column 'target'" in body["detail"]
    response = _create(alice, id_column="key")
    assert response.status_code == 400 and response.json()["field"] == "id_column"
