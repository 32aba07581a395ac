"""Hunt v8 (a statistician's review of the Django layer): the numbers a reader gets from different places agree."""

from __future__ import annotations

import pandas as pd
import pytest

from leaderboard.models import Challenge
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.errors import ServiceError
from leaderboard.services.reports import report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import csv_bytes, make_user, regression_challenge
from .test_published_values import client_for as _client

pytestmark = pytest.mark.django_db


def _files_submission(challenge, user, offsets, name):
    """A prediction submission of one file per offset: each file predicts every hidden label plus its offset, so its
    RMSE is |offset| and the entry's pooled RMSE is the offsets' quadratic mean."""
    ids = dataset_test_ids(dataset=challenge.dataset)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(float)
    files = [
        UploadedFile(f"p{i}.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": truth + e})))
        for i, e in enumerate(offsets)
    ]
    sub = submission_create_predictions(challenge=challenge, user=user, method_name=name, files=files)
    submission_score(submission_id=sub.pk)
    report_recompute(challenge_id=challenge.pk)
    return sub


@pytest.mark.parametrize(
    "feedback",
    [
        "ladder",
        "rounded",
    ],
)
def test_several_rmse_files_publish_the_board_s_pooled_score(host, feedback):
    """Files of RMSE 1 and 3 score √5 ≈ 2.236 on the board (pooled, Metric.pool_files), files of 2.1 and 2.1 score 2.1:
    the second entry is the better one. Every published number must follow the pooled score.

    The Ladder is refused on RMSE now (one row moves it without bound, services.challenges.check_ladder_metric); a
    Ladder board stored before the refusal releases each person's first score alone, as it is: the pooled one."""
    settings = dict(k_runs=2, feedback=feedback, feedback_digits=2, ladder_margin=0.01, public_fraction=1.0)
    if feedback == "ladder":
        with pytest.raises(ServiceError, match="rmse is unbounded per row"):
            regression_challenge(host, **settings)
        settings["feedback"] = "rounded"
    challenge, _, _ = regression_challenge(host, **settings)
    if feedback == "ladder":  # older data: stored before the refusal
        Challenge.objects.filter(pk=challenge.pk).update(feedback=feedback)
        challenge.refresh_from_db()
    ann, ben = make_user("ann"), make_user("ben")
    spread = _files_submission(challenge, ann, (1.0, 3.0), "spread")
    steady = _files_submission(challenge, ben, (2.1, 2.1), "steady")
    board = _client().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    rows = {row["submission_id"]: row for row in board}
    shown = {sid: row["mean"]["estimate"] for sid, row in rows.items()}
    pooled = (
        5**0.5 if feedback == "ladder" else 2.24
    )  # the Ladder's first release is unrounded (no grid of an infinite η)
    assert shown[spread.pk] == pytest.approx(pooled) and shown[steady.pk] == pytest.approx(2.1), shown
    assert rows[steady.pk]["rank"] < rows[spread.pk]["rank"]
    for user, sub in ((ann, spread), (ben, steady)):
        assert _client(user).get(f"/api/submissions/{sub.pk}/").json()["score"] == pytest.approx(shown[sub.pk])


def _entries_without_volatile(data: dict) -> list[dict]:
    drop = {"version", "versions", "created"}
    return [{k: v for k, v in row.items() if k not in drop} for row in data["entries"]]


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_rounded_numbers_agree_across_the_api_and_a_forced_recomputation(host, digits):
    """Under rounded feedback, a submission's score on its detail, the board's mean, the per-run scores (JSON and CSV)
    and the submission scope all read the same published numbers; an incremental update equals a full one."""
    import csv
    import io

    from django.contrib.auth.models import AnonymousUser

    from evaluation.boards import shown_submission_score
    from leaderboard.services.boards import board_scope
    from leaderboard.services.reports import report_current

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(
        host, title=f"Rounded {digits}", feedback="rounded", feedback_digits=digits, bootstrap_resamples=200
    )
    runs = {
        "a": [0.425, 0.575, 0.4251, 0.4249, 0.435],
        "b": [0.8149, 0.8149, 0.8249, 0.815, 0.805],
        "c": [0.125, 0.375, 0.625, 0.875, 0.5],
        "d": [0.05, 0.15, 0.25, 0.35, 0.45],
    }
    subs = {}
    for name, scores in runs.items():
        subs[name] = stored_recipe(challenge, make_user(f"u{digits}{name}"), name, 5, scores)
        report_recompute(challenge_id=challenge.pk)
    incremental = report_current(challenge=challenge).data
    report_recompute(challenge_id=challenge.pk, force=True)
    full = report_current(challenge=challenge).data
    assert _entries_without_volatile(incremental) == _entries_without_volatile(full)
    reader = _client()
    board = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    rows = {row["submission_id"]: row for row in board}
    listed = reader.get(f"/api/challenges/{challenge.slug}/runs/?limit=100").json()
    listed = listed["results"] if isinstance(listed, dict) and "results" in listed else listed
    table = list(
        csv.DictReader(io.StringIO(reader.get(f"/api/challenges/{challenge.slug}/runs/?format=csv").content.decode()))
    )
    scope = board_scope(challenge=challenge, user=AnonymousUser())
    for name, sub in subs.items():
        detail = reader.get(f"/api/submissions/{sub.pk}/").json()
        per_run = [run["test_score"] for run in sorted(detail["runs"], key=lambda r: r["index"])]
        from_list = [r["test_score"] for r in sorted(listed, key=lambda r: r["index"]) if r["submission"] == sub.pk]
        from_csv = [
            float(r["test_score"])
            for r in sorted(table, key=lambda r: int(r["index"]))
            if int(r["submission"]) == sub.pk
        ]
        assert per_run == from_list == from_csv, name
        expected = shown_submission_score(runs[name], "rounded", digits)
        assert detail["score"] == rows[sub.pk]["mean"]["estimate"] == expected, (
            name,
            detail["score"],
            rows[sub.pk]["mean"],
        )
        assert scope.submission_score(sub.pk, list(sub.runs.all())) == expected
        if rows[sub.pk].get("run_scores"):
            assert rows[sub.pk]["run_scores"] == per_run, name


@pytest.mark.parametrize("value", [0.57575, 0.42425, 0.12345, 0.87655, 0.00015, 0.99985, -0.57575, 0.81235])
def test_the_pages_and_the_cli_print_a_score_by_the_one_rounding_rule(value):
    """A score published with 5 decimals (rounded feedback of 5 digits, or any exact board) was printed with 4 by
    two other rules: the pages' floatformat (half up from the decimal repr: 0.57575 -> 0.5758, 0.12345 -> 0.1235)
    and the CLI's f"{x:.4f}" (the binary value: 0.57575 -> 0.5757, 0.00015 -> 0.0001), so the two disagreed and
    neither printed a board and its mirror (1 - x) as mirrors. Both now print shown_score(x, 4)."""
    from django.template import Context, Template

    from cli.varboard_cli import _number
    from evaluation.boards import shown_score

    page = Template("{{ x|number:4 }}").render(Context({"x": value}))
    assert page == _number(value) == f"{shown_score(value, 4):.4f}"
    mirror = Template("{{ x|number:4 }}").render(Context({"x": 1 - value}))
    assert float(mirror) == pytest.approx(1 - float(page), abs=1e-12)


def test_a_suite_orders_entries_of_several_rmse_files_as_their_tasks_boards_do(host):
    from leaderboard.services.suites import suite_board, suite_create

    ann, ben = make_user("ann"), make_user("ben")
    tasks = []
    for title in ("First regression", "Second regression"):
        task, _, _ = regression_challenge(host, title=title, k_runs=2)
        spread = _files_submission(task, ann, (1.0, 3.0), "spread")
        steady = _files_submission(task, ben, (2.1, 2.1), "steady")
        board = {
            row["submission_id"]: row["rank"]
            for row in _client().get(f"/api/challenges/{task.slug}/leaderboard/").json()["entries"]
        }
        assert board[steady.pk] < board[spread.pk]  # each task's board: steady first
        tasks.append(task)
    suite = suite_create(created_by=host, title="Two regressions", challenges=tasks)
    order = [entry["method_name"] for entry in suite_board(suite=suite)["entries"]]
    assert order == ["steady", "spread"]


def test_ladder_numbers_agree_across_teams_of_one_person_and_a_forced_recomputation(host):
    """One person submits from their own team and from a second team: the board's rows, the submission API, the
    history and a forced full recomputation all read the person's one Ladder sequence."""
    from django.contrib.auth.models import AnonymousUser

    from leaderboard.models import Submission
    from leaderboard.services.boards import board_scope
    from leaderboard.services.history import history_entry
    from leaderboard.services.reports import report_current
    from leaderboard.services.teams import team_create

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(
        host, title="Ladder teams", feedback="ladder", ladder_margin=0.03, bootstrap_resamples=200
    )
    ann, ben = make_user("ann"), make_user("ben")
    other = team_create(name="Ann second", creator=ann)
    subs = [stored_recipe(challenge, ann, "first", 5, [0.50] * 5)]
    report_recompute(challenge_id=challenge.pk)
    second = stored_recipe(challenge, ann, "second", 5, [0.52] * 5)
    Submission.objects.filter(pk=second.pk).update(team=other)
    subs.append(second)
    report_recompute(challenge_id=challenge.pk)
    subs.append(stored_recipe(challenge, ben, "third", 5, [0.51] * 5))
    report_recompute(challenge_id=challenge.pk)
    subs.append(stored_recipe(challenge, ann, "fourth", 5, [0.54] * 5))
    report_recompute(challenge_id=challenge.pk)
    incremental = report_current(challenge=challenge).data
    report_recompute(challenge_id=challenge.pk, force=True)
    full = report_current(challenge=challenge).data
    assert _entries_without_volatile(incremental) == _entries_without_volatile(full)
    rows = {
        row["submission_id"]: row
        for row in _client().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    }
    scope = board_scope(challenge=challenge, user=AnonymousUser())
    for sub in subs:
        detail = _client(ann if sub.method_name != "third" else ben).get(f"/api/submissions/{sub.pk}/").json()
        assert detail["score"] == scope.ladder[sub.pk]
        if sub.pk in rows:
            assert rows[sub.pk]["mean"]["estimate"] == detail["score"], sub.method_name
            history = history_entry(challenge=challenge, submission_id=sub.pk, scope=scope)["public"]
            assert history[-1]["value"] == rows[sub.pk]["ranking_value"], (sub.method_name, history)


def test_after_the_reveal_the_private_board_the_scope_and_the_page_read_one_exact_score(host):
    """After the reveal: the private board's mean, BoardScope(private).submission_score, the submission page on the
    private board; the public board keeps its rounded numbers and the per-run public scores stay rounded."""
    import re

    from django.contrib.auth.models import AnonymousUser
    from django.test import Client
    from django.utils import timezone

    from leaderboard.models import Challenge, Run
    from leaderboard.services.boards import board_scope

    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(
        host, title="Revealed", feedback="rounded", feedback_digits=2, public_fraction=0.5, bootstrap_resamples=200
    )
    scores = {
        "a": ([0.425, 0.575, 0.4251, 0.4249, 0.435], [0.95, 0.95, 0.95, 0.95, 0.95]),
        "b": ([0.8149, 0.8149, 0.8249, 0.815, 0.805], [0.1, 0.2, 0.3, 0.4, 0.7]),
        "c": ([0.125, 0.375, 0.625, 0.875, 0.5], [0.33333, 0.66667, 0.5, 0.5, 0.5]),
    }
    subs = {}
    for name, (public, private) in scores.items():
        sub = stored_recipe(challenge, make_user(f"r{name}"), name, 5, public)
        for run, p, q in zip(sub.runs.order_by("index"), public, private):
            Run.objects.filter(pk=run.pk).update(public_score=p, private_score=q, test_score=(p + q) / 2)
        subs[name] = sub
    Challenge.objects.filter(pk=challenge.pk).update(private_revealed_at=timezone.now())
    challenge.refresh_from_db()
    report_recompute(challenge_id=challenge.pk, force=True)
    reader = _client()
    private = {
        r["submission_id"]: r
        for r in reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()["entries"]
    }
    public = {
        r["submission_id"]: r for r in reader.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    }
    scope = board_scope(challenge=challenge, user=AnonymousUser(), board="private")
    public_scope = board_scope(challenge=challenge, user=AnonymousUser())
    page_client = Client()
    for name, sub in subs.items():
        exact = scope.submission_score(sub.pk, list(sub.runs.all()))
        # equal to the last bit: see test_an_exact_board_s_mean_is_the_submission_s_score
        assert private[sub.pk]["mean"]["estimate"] == pytest.approx(exact, rel=1e-14), name
        shown = public_scope.submission_score(sub.pk, list(sub.runs.all()))
        assert public[sub.pk]["mean"]["estimate"] == shown, name
        assert reader.get(f"/api/submissions/{sub.pk}/").json()["score"] == shown, name
        page = page_client.get(f"/submissions/{sub.pk}/?board=private").content.decode()
        figure = re.search(r"data-submission-score>.*?<strong>([^<]*)</strong>", page, re.S)
        assert figure is not None and figure.group(1) == f"{exact:.4f}", (name, figure and figure.group(1), exact)


@pytest.mark.xfail(
    strict=True,
    reason="BoardScope.submission_score publishes an exact mean to 15 significant digits (float_precision: 0.34) "
    "while the board's row shows the engine's mean with its summation noise (0.33999999999999997)",
)
def test_an_exact_board_s_mean_is_the_submission_s_score(host):
    from .factories import digits_challenge, stored_recipe

    challenge, _ = digits_challenge(host, title="Exact", bootstrap_resamples=200)
    sub = stored_recipe(challenge, make_user("eve"), "noisy", 5, [0.1, 0.2, 0.3, 0.4, 0.7])
    report_recompute(challenge_id=challenge.pk)
    reader = _client()
    row = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"][0]
    assert reader.get(f"/api/submissions/{sub.pk}/").json()["score"] == row["mean"]["estimate"]


@pytest.mark.parametrize("feedback", ["rounded", "ladder"])
def test_an_error_rate_board_publishes_its_accuracy_mirror_s_numbers(host, feedback):
    """Results-only: the same models imported as 0/1 correctness on an accuracy board and as 0/1 errors on an MAE
    board (an error rate). Accuracies 51, 57, 63, 69 of 120 are 0.425, 0.475, 0.525, 0.575, half-way at 2 digits."""
    from leaderboard.models import Challenge
    from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create

    correct = {"m51": 51, "m57": 57, "m63": 63, "m69": 69, "m70": 70}
    boards = {}
    for metric in ("accuracy", "mae"):
        challenge = challenge_create_results_only(created_by=host, title=f"Mirror {metric} {feedback}", metric=metric)
        Challenge.objects.filter(pk=challenge.pk).update(feedback=feedback, feedback_digits=2, ladder_margin=0.03)
        challenge.refresh_from_db()
        lines = ["model,instance_id,score"]
        for model, k in correct.items():
            for i in range(120):
                right = i < k
                lines.append(f"{model},q{i},{int(right) if metric == 'accuracy' else int(not right)}")
        results_import_create(
            challenge=challenge, user=host, files=[ImportFile("r.csv", "\n".join(lines).encode())], format="csv"
        )
        report_recompute(challenge_id=challenge.pk)
        entries = _client().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
        boards[metric] = {row["method_name"]: row for row in entries}
    for model in correct:
        a, e = boards["accuracy"][model], boards["mae"][model]
        assert a["mean"]["estimate"] == pytest.approx(1 - e["mean"]["estimate"], abs=1e-12), model
        assert a["rank_display"] == e["rank_display"], (model, a["rank_display"], e["rank_display"])


def test_imported_models_under_the_ladder_are_released_each_their_own_score(host):
    """A results-only challenge whose host sets Ladder feedback: every imported model is submitted by the host, so
    the Ladder (per person) ran them as one contestant's sequence, and a model of accuracy 0.60 imported after one
    of 0.90 was released 0.90, the other model's score, on the board and in its API."""
    from leaderboard.services.challenges import challenge_update
    from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create

    challenge = challenge_create_results_only(created_by=host, title="Imported ladder", metric="accuracy")
    challenge = challenge_update(challenge=challenge, user=host, feedback="ladder", ladder_margin=0.01)
    lines = ["model,instance_id,score"]
    for model, k in {"strong": 108, "weak": 72}.items():
        lines += [f"{model},q{i},{int(i < k)}" for i in range(120)]
    results_import_create(
        challenge=challenge, user=host, files=[ImportFile("r.csv", "\n".join(lines).encode())], format="csv"
    )
    report_recompute(challenge_id=challenge.pk)
    rows = {
        r["method_name"]: r for r in _client().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    }
    assert rows["strong"]["mean"]["estimate"] == pytest.approx(0.90)
    assert rows["weak"]["mean"]["estimate"] == pytest.approx(0.60), rows["weak"]["mean"]
    assert rows["strong"]["rank"] < rows["weak"]["rank"]
