"""What a new user's review of the pages in a browser found, as the HTML shows it (the layout found there:
tests/browser/test_phone_board.py)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_no_drop_down_on_the_host_form_cuts_its_choices(client, host):
    """A closed select showed "Out-of-bootstrap (Bouthillier e": long choices are radio buttons, whose labels wrap."""
    from leaderboard.web.forms import SELECT_LABEL_MAX

    client.force_login(host)
    html = client.get("/challenges/new/").content.decode()
    options = [
        option
        for select in re.findall(r"<select.*?</select>", html, re.S)
        for option in re.findall(r"<option[^>]*>([^<]*)</option>", select)
    ]
    assert options and max(len(option) for option in options) <= SELECT_LABEL_MAX, options
    for name in ("split_scheme", "hpo_mode", "board_version", "feedback"):
        assert f'type="radio" name="{name}"' in html, name
    assert "Out-of-bootstrap (Bouthillier et al. 2021, App. B)" in html


def test_a_search_that_matches_nothing_says_so_without_an_empty_table(client, host):
    from tests.platform.factories import make_user
    from tests.platform.test_leaderboard_pages import known_board

    challenge, _ = known_board(host, [make_user("carol"), make_user("dave")])
    html = client.get(f"/c/{challenge.slug}/", {"q": "zzzz"}).content.decode()
    assert "No entry matches “zzzz”" in html and "data-no-match" in html
    assert 'href="?">Show the whole board (4 entries)</a>' in html
    assert "1–0" not in html and "data-page-range" not in html
    assert 'class="table leaderboard"' not in html and 'data-submission="' not in html
    assert "like the leader" not in html and "data-decided" not in html and "data-coverage" not in html
    found = client.get(f"/c/{challenge.slug}/", {"q": "strong"}).content.decode()
    assert "data-no-match" not in found and "entries 1–1 of 1" in found and found.count('data-submission="') >= 1
    assert "data-coverage" in found


def test_counts_of_one_are_singular_on_the_planner_and_in_the_host_warning(client):
    from leaderboard.services.challenges import challenge_settings_warnings

    query = {"entries": 2, "gamma": 0.75, "alpha": 0.05, "power": 0.95, "run_minutes": 1, "boo_n": 3}
    html = client.get("/challenges/plan/", query).content.decode()
    assert "(1 pair, each tested" in html and "1 pairs" not in html
    assert [w.split(" is fewer")[0] for w in challenge_settings_warnings(k_runs=1, boo_n=3)] == [
        "k = 1 run per entry"
    ] * 3  # the mean's interval, a mean board's rank intervals (rank23), Boo_3
    assert challenge_settings_warnings(k_runs=2, boo_n=3)[0].startswith("k = 2 runs per entry")


def test_the_suite_coverage_note_says_the_simulated_suite_is_not_this_one(client, host):
    """A 2-task suite said "IQM (3 tasks)": the 3 tasks are the simulation's, said as such."""
    import numpy as np

    from evaluation.report.coverage import SUITE_TASKS
    from leaderboard.services.suites import suite_create
    from tests.platform.factories import digits_challenge
    from tests.platform.test_report_api import add_entry

    rng = np.random.default_rng(2)
    tasks = [digits_challenge(host, title=f"Task {i}")[0] for i in (1, 2)]
    for task in tasks:
        for name, level in (("strong", 0.8), ("weak", 0.6)):
            add_entry(task, host, name, "recipe", level + 0.01 * rng.standard_normal(5))
    suite = suite_create(created_by=host, title="Two tasks", challenges=tasks)
    html = client.get(f"/suites/{suite.slug}/").content.decode()
    assert f"in a simulated suite of {SUITE_TASKS} tasks" in html and "IQM (3 tasks)" not in html


def test_a_challenge_without_a_private_board_says_score_not_public_board_score(client, host):
    from tests.platform.factories import make_user
    from tests.platform.test_leaderboard_pages import known_board

    carol = make_user("carol")
    _, subs = known_board(host, [carol, make_user("dave")])
    client.force_login(carol)
    html = client.get(subs[0].get_absolute_url()).content.decode()
    assert "data-submission-score" in html and "Score: <strong>" in html
    assert "on the public board" not in html


def test_a_board_of_two_entries_does_not_offer_all_1_comparison(client, host):
    """Two entries make one pair: "All 1 comparison" read oddly above it."""
    import numpy as np

    from tests.platform.factories import digits_challenge, make_user
    from tests.platform.test_leaderboard_pages import write_entry

    challenge, _ = digits_challenge(host, k_runs=10, bootstrap_resamples=200)
    rng = np.random.default_rng(3)
    for name, level in (("strong", 0.95), ("weak", 0.80)):
        write_entry(challenge, make_user(f"user-{name}"), name, level + 0.004 * rng.standard_normal(10))
    html = client.get(f"/c/{challenge.slug}/").content.decode()
    assert "The comparison in full" in html and "All 1 comparison" not in html


def test_the_host_forms_number_inputs_carry_the_bounds_the_server_checks(client, host):
    """k = -1 was refused with "greater than or equal to 0" (the field's own bound), and k = 0 then with "... 1";
    the inputs said min="0" and no max, so the browser let 0 and 5000 through: the model's bounds, once."""
    client.force_login(host)
    html = client.get("/challenges/new/").content.decode()

    def attrs(name: str) -> str:
        return re.search(rf'<input[^>]*name="{name}"[^>]*>', html).group(0)

    for name, low, high in (
        ("k_runs", "1", "1000"),
        ("boo_n", "1", "1000"),
        ("bootstrap_resamples", "100", "100000"),
        ("hpo_budget", "1", "1000"),
        ("run_memory_limit_mb", "256", None),
        ("final_entries", "1", "100"),
        ("feedback_digits", "0", "12"),
    ):
        assert f'min="{low}"' in attrs(name), attrs(name)
        if high is not None:
            assert f'max="{high}"' in attrs(name), attrs(name)
    refused = client.post("/challenges/new/", {"title": "x", "k_runs": "-1"}).content.decode()
    assert "greater than or equal to 1." in refused and "greater than or equal to 0." not in refused


def test_your_submissions_says_how_many_runs_failed(client, host, alice):
    """A recipe whose 6 runs all raised showed "6/6" under Runs, as a fully scored entry does on the board above
    (where it counts the runs that succeeded): the failed ones are said."""
    from leaderboard.models import Run, Submission
    from tests.platform.factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(host)
    failed = stored_recipe(challenge, alice, "boom", 3)
    Submission.objects.filter(pk=failed.pk).update(status="failed")
    for i in range(3):
        Run.objects.create(submission=failed, index=i, status="failed", seeds={"split": i}, split_id=f"s{i}")
    partly = stored_recipe(challenge, alice, "half", 3, scores=[0.9, 0.8])
    Run.objects.create(submission=partly, index=2, status="failed", seeds={"split": 2}, split_id="s2")
    fine = stored_recipe(challenge, alice, "fine", 3, scores=[0.9, 0.8, 0.85])
    client.force_login(alice)
    page = client.get(challenge.get_absolute_url()).content.decode()

    def runs_cell(submission) -> str:
        row = re.search(rf'<tr data-submission="{submission.pk}">(.*?)</tr>', page, re.S).group(1)
        return re.sub(
            r"\s+", " ", re.sub(r"<[^>]+>", " ", re.search(r"<td[^>]*data-runs[^>]*>(.*?)</td>", row, re.S).group(1))
        ).strip()

    assert runs_cell(failed) == "3/3 · 3 failed"
    assert runs_cell(partly) == "3/3 · 1 failed"
    assert runs_cell(fine) == "3/3"
