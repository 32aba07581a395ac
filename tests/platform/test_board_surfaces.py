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
    then submitted a worse version 2 is shown with version 1 on each task's public board once revealed; the suite board must read
    that version too, not the latest one."""
    from leaderboard.services.challenges import challenge_reveal
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
        challenge_reveal(challenge=task, user=host)  # the choice is on the public board once revealed
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


def test_a_private_row_s_public_rank_is_the_rank_the_public_board_gives_that_submission(host):
    """board_version = latest: a team chose version 1 of its method for the private board and then submitted version 2,
    which the public board shows. The private board's row for version 1 must not claim version 2's public rank (the
    shake-up on the history page, keyed by submission, leaves version 1 out: it is on no public board)."""
    from django.utils import timezone

    from leaderboard.models import Challenge
    from leaderboard.services.history import shakeup
    from leaderboard.services.reports import report_current
    from leaderboard.services.submissions import submission_select_final

    task, _ = digits_challenge(
        host, title="Versions", k_runs=6, public_fraction=0.5, board_version="latest", bootstrap_resamples=200
    )
    ann, ben = make_user("ann"), make_user("ben")
    first = _recipe(task, ann, "method", [0.60, 0.61, 0.62, 0.60, 0.61, 0.62])
    submission_select_final(submission=first, user=ann)
    _recipe(task, ann, "method", [0.90, 0.91, 0.92, 0.90, 0.91, 0.92])
    _recipe(task, ben, "other", [0.70, 0.71, 0.72, 0.70, 0.71, 0.72])
    Challenge.objects.filter(pk=task.pk).update(private_revealed_at=timezone.now())
    task.refresh_from_db()
    report_recompute(challenge_id=task.pk, force=True)
    reader = _client()
    public = {r["submission_id"]: r for r in reader.get(f"/api/challenges/{task.slug}/leaderboard/").json()["entries"]}
    private = reader.get(f"/api/challenges/{task.slug}/leaderboard/?board=private").json()["entries"]
    assert first.pk not in public and first.pk in {r["submission_id"] for r in private}
    for row in private:
        on_public = public.get(row["submission_id"])
        assert row["public_rank"] == (on_public["rank"] if on_public else None), row["method_name"]
    shaken = shakeup(
        public=report_current(challenge=task, board="public").data,
        private=report_current(challenge=task, board="private").data,
    )
    assert {r["submission_id"]: r["public_rank"] for r in shaken} == {
        r["submission_id"]: r["public_rank"] for r in private if r["public_rank"] is not None
    }
