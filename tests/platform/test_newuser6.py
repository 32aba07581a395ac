"""A new host's review of the k = 30 / Boo_3 defaults and the 10n rule (newuser6, 2026-12-01): what the board, the
planner and the host form say about ranking, k and Boo_n's interval."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from django.urls import reverse

from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import csv_bytes, digits_challenge, make_user

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def _field_help(html: str, name: str) -> str:
    """The help under the form's field ``name`` (templates/includes/field.html), empty without one."""
    field = html[html.index(f'id="field-{name}"') :]
    field = field[: field.index('<div class="field', 1)] if '<div class="field' in field[1:] else field
    match = re.search(r'<div class="help">(.*?)</div>', field, re.S)
    return _text(match.group(1)) if match else ""


def _files(frame: pd.DataFrame, fractions: list[float]) -> list[UploadedFile]:
    """One prediction file per fraction: that share of the test rows labelled right (the first rows), the rest wrong."""
    test = frame[frame.is_test == 1]
    files = []
    for i, fraction in enumerate(fractions):
        labels = test.label.to_numpy().copy()
        wrong = int(round(len(labels) * (1 - fraction)))
        labels[len(labels) - wrong :] = (labels[len(labels) - wrong :] + 1) % 10
        table = pd.DataFrame({"id": test.id.to_numpy(), "prediction": labels})
        files.append(UploadedFile(f"p{i}.csv", csv_bytes(table)))
    return files


def test_a_boo_n_board_of_prediction_entries_says_they_are_ranked_by_the_mean(client, host):
    """A Boo_3 board (k = 10) of prediction entries: 'One' (one file, 0.90) above 'Spread' (three files, mean 0.83,
    Boo_3 above 0.90). Prediction sections rank by the mean (docs/statistics.md), and the page said "Ranked by Boo_3"
    and "Entries are ordered by Boo_3" beside a row of a higher Boo_3 ranked below one of a lower Boo_3 (the new
    user's board: 'mid' Boo_3 0.9122 at rank 2 under 'one' 0.9020 at rank 1)."""
    challenge, frame = digits_challenge(
        host, title="Boo board", k_runs=10, boo_n=3, ranking_statistic="boo_n", bootstrap_resamples=200
    )
    users = [make_user("pia"), make_user("quinn")]
    for user, name, fractions in ((users[0], "One", [0.90]), (users[1], "Spread", [1.0, 0.75, 0.75])):
        sub = submission_create_predictions(
            challenge=challenge, user=user, method_name=name, files=_files(frame, fractions)
        )
        submission_score(submission_id=sub.pk)
    report = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    rows = {row["method_name"]: row for row in report["entries"]}
    assert rows["One"]["rank"] < rows["Spread"]["rank"]  # by the mean ...
    assert rows["Spread"]["boo_n"]["estimate"] > rows["One"]["boo_n"]["estimate"]  # ... not by Boo_3
    html = client.get(challenge.get_absolute_url()).content.decode()
    footer = _text(html[html.index('class="board-meta') :].split("</p>")[0])
    assert "prediction entries by the mean" in footer, footer
    ranks = _text(html[html.index('id="explain-rank"') :].split("</dd>")[0])
    assert "prediction entries by the mean" in ranks, ranks


def test_the_planner_does_not_credit_bajgar_with_the_10n_rule(client):
    """Bajgar et al. (2018, §4) keep 3n runs for a stable estimate; the 10n of Boo_n's interval is this project's
    measurement (benchmarks/bench_coverage.py, evaluation.stats.boon.RUNS_PER_N). The planner said
    "Boo_3 needs k ≥ 10n = 30 runs per entry for an interval (Bajgar et al. 2018, §4)"."""
    html = client.get(
        reverse("challenge-planner"),
        {"entries": 5, "gamma": 0.75, "alpha": 0.05, "power": 0.95, "run_minutes": 1, "boo_n": 3},
    ).content.decode()
    said = _text(html[html.index("data-k-boo-n") :].split("</p>")[0])
    assert "10n = 30" in said
    assert "interval (Bajgar" not in said and "3n runs for a stable estimate" in said, said
    assert "bench_coverage" in said, said


def test_the_host_form_says_what_k_runs_per_entry_cost(client, alice):
    """The form's "Runs per entry (k)" (default 30) had no help at all: nothing said that a recipe submission is
    retrained k times (k × the time limit per run of worker time, 30 × 600 s = 5 hours at most) nor that a prediction
    entry uploads at most k files."""
    client.force_login(alice)
    html = client.get("/challenges/new/").content.decode()
    help_text = _field_help(html, "k_runs")
    assert "retrain" in help_text and "time limit per run" in help_text, help_text
    assert "prediction" in help_text and "files" in help_text, help_text


def test_the_boo_n_help_gives_the_rule_the_board_applies_to_boo_1(client, alice):
    """ "its interval needs k >= 10n runs per entry, and never fewer than 6" reads as max(10n, 6): 10 runs for Boo_1,
    whose interval the board shows from the mean's 6 (evaluation.stats.boon.min_runs_for_interval(1) == 6)."""
    from evaluation.stats.boon import min_runs_for_interval

    assert min_runs_for_interval(1) == 6
    client.force_login(alice)
    html = client.get("/challenges/new/").content.decode()
    help_text = _field_help(html, "boo_n")
    assert "10n" in help_text and "never fewer than 6" not in help_text, help_text
    assert "Boo_1" in help_text and "6" in help_text, help_text


def test_after_the_first_submission_the_warning_does_not_advise_raising_the_frozen_k(host):
    """k freezes at the first submission (a PATCH of k_runs is then a 400 naming it), yet raising n to 5 on a default
    board (k = 30) answered "Raise k to 50 or lower n to 3.": the one advice the host cannot follow came first."""
    from .test_api import client_for

    challenge, frame = digits_challenge(host, title="Frozen k", k_runs=30, boo_n=3)
    submission_create_predictions(challenge=challenge, user=host, method_name="A", files=_files(frame, [0.9]))
    client = client_for(host)
    refused = client.patch(f"/api/challenges/{challenge.slug}/", {"k_runs": 50}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "k_runs"
    response = client.patch(f"/api/challenges/{challenge.slug}/", {"boo_n": 5}, format="json")
    assert response.status_code == 200, response.content
    (warning,) = response.json()["warnings"]
    assert "10n = 50" in warning and "Raise k" not in warning, warning
    assert "lower n to 3" in warning and "fixed" in warning, warning
    # before any submission the advice stands
    other, _ = digits_challenge(host, title="Open k", k_runs=30, boo_n=5)
    (warning,) = client.get(f"/api/challenges/{other.slug}/").json()["warnings"]
    assert "Raise k to 50 or lower n to 3." in warning


def test_the_planner_s_boo_1_rule_reads_as_one_sentence(client):
    """The planner said "Boo_1 needs k ≥ 6, as for the mean (Boo_1 is the mean of the runs) runs per entry for an
    interval": the rule's phrase with "runs per entry" after its parenthesis (the warning's same slip was fixed)."""
    html = client.get(
        reverse("challenge-planner"),
        {"entries": 5, "gamma": 0.75, "alpha": 0.05, "power": 0.95, "run_minutes": 1, "boo_n": 1},
    ).content.decode()
    said = _text(html[html.index("data-k-boo-n") :].split("</p>")[0])
    assert "k ≥ 6 runs per entry" in said and ") runs per entry" not in said, said
    assert "as for the mean (Boo_1 is the mean of the runs)" in said, said


def test_a_boo_n_ranked_recipe_board_below_10n_is_warned_of_its_rank_intervals(alice):
    """README: with k < 10n "every Boo_n is shown without an interval ..., and a board ranked by Boo_n without rank
    intervals" is what the response's warnings say. They said the first only: a recipe board ranked by Boo_3 at k = 10
    lost every recipe entry's rank interval ("k = 10 < 10n = 30: no rank interval on a board ranked by Boo_3" in
    settings.coverage) without a word at creation."""
    from .test_board_hints import _create

    response = _create(alice, k_runs=10, boo_n=3, ranking_statistic="boo_n", allow_recipes=True)
    assert response.status_code == 201, response.content
    (warning,) = response.json()["warnings"]
    assert "10n = 30" in warning and "rank interval" in warning, warning
    # ranked by the mean: Boo_3's warning says nothing of ranks; the mean's own rule (16 runs, rank23) does
    plain, boo = _create(alice, k_runs=10, boo_n=3, allow_recipes=True).json()["warnings"]
    assert "the 16 a board ranked by the mean needs for rank intervals" in plain, plain
    assert "rank interval" not in boo, boo


def test_boo_n_beyond_the_prediction_files_a_submission_may_hold_is_warned(alice, settings):
    """A prediction entry uploads at most min(k, VARBOARD_MAX_PREDICTION_FILES = 100) files: k = 200 with Boo_20 was
    created without a warning, yet no prediction entry could ever reach the 10n = 200 runs Boo_20's interval needs."""
    from .test_board_hints import _create

    assert settings.VARBOARD["MAX_PREDICTION_FILES"] == 100
    response = _create(alice, k_runs=200, boo_n=20, allow_recipes=False)
    assert response.status_code == 201, response.content
    (warning,) = response.json()["warnings"]
    assert "100 files" in warning and "10n = 200" in warning and "prediction" in warning, warning
    assert _create(alice, k_runs=100, boo_n=10).json()["warnings"] == []  # 100 files reach 10n = 100


def test_the_coverage_line_gives_the_k_each_figure_was_measured_at(client, host):
    """A recipe board ranked by Boo_3 at k = 30 (the defaults but the statistic) quotes its rank interval's coverage
    from Boo_5's board at k = 50 (the same k/n, ``coverage_notes``), yet its line read "Measured coverage of the 95 %
    intervals at k = 30 runs: mean 96.3 %, ..., rank 99.2 %": every figure as if measured at this board's k."""
    import numpy as np

    from .test_leaderboard_pages import write_entry

    challenge, _ = digits_challenge(
        host, title="Boo 30", k_runs=30, boo_n=3, ranking_statistic="boo_n", bootstrap_resamples=200
    )
    rng = np.random.default_rng(4)
    for name, mu in (("A", 0.90), ("B", 0.89)):
        write_entry(challenge, make_user(name.lower() * 3), name, mu + 0.02 * rng.standard_normal(30))
    notes = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["settings"]["coverage"]
    rank = next(n for n in notes if n["interval"] == "recipe.rank")
    assert rank["shown"] and rank["k"] != 30  # measured elsewhere
    html = client.get(challenge.get_absolute_url()).content.decode()
    line = _text(html[html.index("data-coverage") :].split("</p>")[0])
    assert "at k = 30 runs" in line, line
    quoted = line[line.index(" rank ") :]
    assert f"k = {rank['k']}" in quoted.split(",")[0], line


def test_the_overview_names_the_ranking_statistic_as_the_board_does(client, host):
    """A new user's finding: the challenge page's Evaluation card read "Ranking: by boo_n" (the raw choice, lowered)
    where the board says Boo_3."""
    challenge, _ = digits_challenge(host, title="Ranked by Boo", k_runs=30, boo_n=3, ranking_statistic="boo_n")
    html = client.get(challenge.get_absolute_url()).content.decode()
    ranking = _text(html[html.index("<dt>Ranking</dt>") :].split("</dd>")[0])
    assert "by boo_n" not in ranking and "by Boo3 (prediction entries by their mean)" in ranking, ranking
    plain, _ = digits_challenge(host, title="Ranked by mean", k_runs=30)
    html = client.get(plain.get_absolute_url()).content.decode()
    assert "by the mean;" in _text(html[html.index("<dt>Ranking</dt>") :].split("</dd>")[0])
