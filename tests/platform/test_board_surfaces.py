"""Issue 23 through the services: every published surface of a board reads the same entries and numbers
(a statistician's hunt over the platform's real models: the board, its CSV, compare, the submission API, the
history, the suite board)."""

from __future__ import annotations

import pytest

from leaderboard.models import Run
from leaderboard.services.reports import report_recompute

from .factories import digits_challenge, make_user, stored_recipe
from .test_published_values import client_for as _client

pytestmark = pytest.mark.django_db


def _recipe(challenge, user, name, scores):
    """A scored recipe whose runs score the same on the public part as on all hidden rows."""
    sub = stored_recipe(challenge, user, name, len(scores), scores)
    for run, score in zip(sub.runs.order_by("index"), scores):
        Run.objects.filter(pk=run.pk).update(public_score=score, private_score=score)
    report_recompute(challenge_id=challenge.pk)
    return sub


def test_a_suite_reads_the_version_each_task_s_board_shows(host):
    """board_version = selected (the default): a team that chose version 1 of its method for the private board and
    then submitted a worse version 2 is shown with version 1 on each task's public board; the suite board must read
    that version too, not the latest one."""
    from leaderboard.services.submissions import submission_select_final
    from leaderboard.services.suites import suite_board, suite_create

    ann, ben = make_user("ann"), make_user("ben")
    tasks, shown = [], {}
    for title in ("Task one", "Task two"):
        task, _ = digits_challenge(host, title=title, k_runs=6, public_fraction=0.5, bootstrap_resamples=200)
        first = _recipe(task, ann, "method", [0.90, 0.91, 0.92, 0.90, 0.91, 0.92])
        submission_select_final(submission=first, user=ann)
        _recipe(task, ann, "method", [0.50, 0.51, 0.52, 0.50, 0.51, 0.52])
        _recipe(task, ben, "other", [0.70, 0.71, 0.72, 0.70, 0.71, 0.72])
        report_recompute(challenge_id=task.pk)
        rows = _client().get(f"/api/challenges/{task.slug}/leaderboard/").json()["entries"]
        shown[task.slug] = {row["method_name"]: row["submission_id"] for row in rows}
        assert shown[task.slug]["method"] == first.pk  # the board shows the chosen version
        assert [row["method_name"] for row in rows] == ["method", "other"]
        tasks.append(task)
    suite = suite_create(created_by=host, title="Two tasks", challenges=tasks)
    board = suite_board(suite=suite)
    for entry in board["entries"]:
        assert entry["submissions"] == {slug: ids[entry["method_name"]] for slug, ids in shown.items()}, entry
    assert [entry["method_name"] for entry in board["entries"]] == ["method", "other"]
