"""Issue 27: a report update reads only the runs of the submissions whose runs changed (``RunsStamp``, a table of its
own bumped by the database's triggers on ``leaderboard_run``), and what it reads equals a full read after every writer.

Each test reads the board once (kept), writes through one path, then checks the next read against a full read and
that it read the changed submissions' runs only (docs/scale.md, issue 27)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from leaderboard import selectors
from leaderboard.models import Run, RunsStamp, Submission, Team
from leaderboard.selectors import challenge_runs

from .factories import digits_challenge, make_user
from .test_report_api import add_entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=4, boo_n=3, bootstrap_resamples=200, master_seed=7)
    subs = [add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(4)) for i in range(5)]
    return challenge, host, subs


def _same_as_full(challenge, *, read: set[int] | None = None) -> None:
    """The kept read equals a full one; ``read``: the submissions whose runs it read (None: not checked)."""
    incremental = challenge_runs(challenge=challenge, reuse=True)
    last = selectors.snapshot_last_read
    full = challenge_runs(challenge=challenge)
    assert incremental.runs == full.runs
    assert incremental.submissions == full.submissions
    # what is worked out per submission and kept across reads (ChallengeRuns.memos) equals it worked out afresh
    assert _derived(challenge, incremental) == _derived(challenge, full)
    if read is not None:
        assert last == ("incremental", read), last


def _derived(challenge, snapshot) -> tuple:
    from leaderboard.services.entries import entry_versions
    from leaderboard.services.reports import report_inputs_version

    read = snapshot.read_by_reports()
    return (
        report_inputs_version(challenge=challenge, snapshot=snapshot),
        report_inputs_version(challenge=challenge, snapshot=snapshot, board="private"),
        entry_versions(challenge=challenge, snapshot=snapshot),
        snapshot.scored("test_score"),
        snapshot.scored("public_score"),
        (read.runs, read.submissions),
    )


def _stamp(submission: Submission) -> int:
    """The submission's runs stamp as the reader takes it (no row: 0)."""
    return RunsStamp.objects.filter(submission_id=submission.pk).values_list("stamp", flat=True).first() or 0


def _queued(challenge, host, name="late", runs=2) -> Submission:
    team, _ = Team.objects.get_or_create(name=f"team-{name}")
    sub = Submission.objects.create(
        challenge=challenge, team=team, submitted_by=host, kind="recipe", method_name=name, runs_expected=runs
    )
    Run.objects.bulk_create([Run(submission=sub, index=i) for i in range(runs)])
    return sub


def test_the_stamps_are_in_force_after_the_migrations():
    assert selectors.run_stamps_in_force(connection)


def test_nothing_changed_reads_no_run(board):
    challenge, _, _ = board
    challenge_runs(challenge=challenge, reuse=True)
    _same_as_full(challenge, read=set())


def test_a_new_submission_and_its_runs_are_read_alone(board):
    challenge, host, _ = board
    challenge_runs(challenge=challenge, reuse=True)
    new = add_entry(challenge, host, "newcomer", "recipe", [0.5, 0.6, 0.7, 0.8])
    _same_as_full(challenge, read={new.pk})


def test_a_run_claimed_stored_and_rescored(board):
    from leaderboard.services.lifecycle import run_claim, run_renew_lease, run_store, run_store_rescored

    challenge, host, _ = board
    sub = _queued(challenge, host)
    challenge_runs(challenge=challenge, reuse=True)
    run = sub.runs.get(index=0)
    claimed = run_claim(run_id=run.pk, delivery="t1")
    _same_as_full(challenge, read={sub.pk})
    stamp = _stamp(sub)
    assert run_renew_lease(run_id=run.pk, attempt=claimed.attempts)  # a heartbeat: no write to the submission
    assert _stamp(sub) == stamp
    _same_as_full(challenge, read=set())
    run_store(run_id=run.pk, attempt=claimed.attempts, status="succeeded", test_score=0.75, valid_score=0.7)
    _same_as_full(challenge, read={sub.pk})
    run_store_rescored(run_id=run.pk, test_score=0.76)
    _same_as_full(challenge, read={sub.pk})


def test_a_cancellation_and_a_platform_failure(board):
    from leaderboard.services.lifecycle import run_fail_for_platform, submission_fail_for_platform
    from leaderboard.services.submissions import submission_cancel

    challenge, host, _ = board
    one, two = _queued(challenge, host, "one"), _queued(challenge, host, "two", runs=3)
    challenge_runs(challenge=challenge, reuse=True)
    submission_cancel(submission=one, user=host)
    _same_as_full(challenge, read={one.pk})
    run_fail_for_platform(run_id=two.runs.get(index=0).pk, reason="lost")  # the janitor's path
    _same_as_full(challenge, read={two.pk})
    submission_fail_for_platform(submission_id=two.pk, reason="lost")
    _same_as_full(challenge, read={two.pk})


def test_raw_updates_deletes_and_a_deleted_submission(board):
    challenge, _, subs = board
    challenge_runs(challenge=challenge, reuse=True)
    Run.objects.filter(submission=subs[1], index=2).update(public_score=0.1, extra_scores={"test": {"f1": 0.3}})
    Run.objects.filter(submission=subs[2], index=3).delete()
    _same_as_full(challenge, read={subs[1].pk, subs[2].pk})
    Submission.objects.filter(pk=subs[3].pk).delete()  # with its runs
    _same_as_full(challenge, read=set())
    Run.objects.filter(submission=subs[4]).update(result_revision=7)
    _same_as_full(challenge, read={subs[4].pk})


def test_columns_no_report_reads_do_not_stamp(board):
    challenge, _, subs = board
    challenge_runs(challenge=challenge, reuse=True)
    stamp = _stamp(subs[0])
    Run.objects.filter(submission=subs[0]).update(log="more", duration_s=3.0, device="cpu", lease_owner="w")
    assert _stamp(subs[0]) == stamp
    _same_as_full(challenge, read=set())


def test_the_submissions_own_columns_are_read_every_time(board):
    from leaderboard.services.moderation import submission_moderate

    challenge, host, subs = board
    challenge_runs(challenge=challenge, reuse=True)
    Team.objects.filter(pk=subs[0].team_id).update(name="Renamed")
    Submission.objects.filter(pk=subs[1].pk).update(status="failed", selected_for_final=True)
    submission_moderate(submission=subs[2], user=host, state="hidden", reason="spam")
    _same_as_full(challenge, read=set())


def test_a_stale_save_of_a_submission_leaves_its_stamp(board):
    """Django writes every field of ``save()``: a submission loaded before its runs changed, saved after, once set the
    stamp the board read back when it was a column of the submission. The stamp has a table of its own now, which
    Django never writes: a stale save leaves it as the triggers set it."""
    challenge, _, subs = board
    stale = Submission.objects.get(pk=subs[0].pk)
    challenge_runs(challenge=challenge, reuse=True)
    before = _stamp(subs[0])
    Run.objects.filter(submission=subs[0], index=0).update(test_score=0.01)
    moved = _stamp(subs[0])
    stale.save()
    assert _stamp(subs[0]) == moved > before
    _same_as_full(challenge, read={subs[0].pk})


def test_a_run_write_never_writes_the_submission_row(board):
    """The triggers write the stamp table only (on PostgreSQL a run's writer then never takes its submission's row
    lock after the run's: the lock order of submission_refund and cancellations, submission then runs)."""
    challenge, host, subs = board
    row = Submission.objects.filter(pk=subs[0].pk).values().get()
    _queued(challenge, host, "fresh")
    Run.objects.filter(submission=subs[0]).update(test_score=0.3, status="failed")
    Run.objects.filter(submission=subs[0], index=1).delete()
    assert Submission.objects.filter(pk=subs[0].pk).values().get() == row


def test_a_submission_without_a_stamp_row_reads_zero_and_its_first_run_moves_it(board):
    challenge, host, _ = board
    team, _ = Team.objects.get_or_create(name="team-empty")
    sub = Submission.objects.create(challenge=challenge, team=team, submitted_by=host, kind="recipe", method_name="e")
    assert not RunsStamp.objects.filter(submission_id=sub.pk).exists()
    challenge_runs(challenge=challenge, reuse=True)
    # none of its runs read: kept without its stamp, its runs read by id at the next update (session attack27:
    # test_snapshot_attacks.py, a submission moved away during a full read)
    assert selectors._KEPT_READS and sub.pk not in next(iter(selectors._KEPT_READS.values())).stamps
    challenge_runs(challenge=challenge, reuse=True)
    assert selectors.snapshot_last_read == ("incremental", {sub.pk})
    assert next(iter(selectors._KEPT_READS.values())).stamps[sub.pk][1] == 0  # read by id: kept with its stamp 0
    Run.objects.create(submission=sub, index=0)
    assert _stamp(sub) > 0
    _same_as_full(challenge, read={sub.pk})


@pytest.mark.parametrize("first", ["stamp", "runs", "collector"])
def test_a_deleted_submission_leaves_no_stamp_row_and_raises_nothing(board, first):
    """Django's collector deletes the stamp row and the runs in an order of its own: either way no IntegrityError,
    no row left behind (the DELETE trigger updates a row only, never inserts one)."""
    challenge, _, subs = board
    challenge_runs(challenge=challenge, reuse=True)
    sub = subs[1]
    with transaction.atomic():
        if first == "stamp":
            RunsStamp.objects.filter(submission_id=sub.pk).delete()
            Run.objects.filter(submission=sub).delete()
        elif first == "runs":
            Run.objects.filter(submission=sub).delete()
            RunsStamp.objects.filter(submission_id=sub.pk).delete()
        Submission.objects.get(pk=sub.pk).delete()
    Submission.objects.filter(pk=subs[2].pk).delete()  # a queryset's deletion too
    assert not RunsStamp.objects.filter(submission_id__in=[sub.pk, subs[2].pk]).exists()
    assert not Run.objects.filter(submission_id__in=[sub.pk, subs[2].pk]).exists()
    assert RunsStamp.objects.count() == Submission.objects.count()  # no orphan, every other one kept
    _same_as_full(challenge, read=set())


def test_a_plain_read_keeps_nothing(board):
    """Only the report worker keeps a read (``reuse=True``, ~140 MB on 20,000 x 16): a web process's read (pages,
    board_ladder, a report recomputed in a reader's request) keeps none, nor drops the worker's."""
    from leaderboard.services.reports import report_current, report_recompute

    challenge, _, _ = board
    selectors._KEPT_READS.clear()
    challenge_runs(challenge=challenge)
    report_recompute(challenge_id=challenge.pk, force=True)
    report_current(challenge=challenge)
    assert selectors._KEPT_READS == {}
    challenge_runs(challenge=challenge, reuse=True)
    kept = dict(selectors._KEPT_READS)
    assert len(kept) == 1
    challenge_runs(challenge=challenge)
    assert selectors._KEPT_READS == kept


def test_another_challenge_with_the_same_id_is_read_in_full(board):
    """A kept read is keyed by the database and the challenge's and submissions' creation: ids come back after a
    rollback (tests) and a recreated challenge must never take another's runs."""
    challenge, host, _ = board
    with pytest.raises(RuntimeError), transaction.atomic():
        challenge_runs(challenge=challenge, reuse=True)
        raise RuntimeError
    challenge_runs(challenge=challenge, reuse=True)
    assert selectors.snapshot_last_read[0] == "incremental"
    challenge.created = challenge.created.replace(year=2001)
    challenge_runs(challenge=challenge, reuse=True)
    assert selectors.snapshot_last_read[0] == "full"


def test_a_report_update_after_one_new_submission_reads_its_runs_only(board):
    from leaderboard.services.reports import report_recompute

    challenge, host, _ = board
    report_recompute(challenge_id=challenge.pk, force=True, reuse=True)
    new = add_entry(challenge, host, "newcomer", "recipe", [0.5, 0.6, 0.7, 0.8])
    report = report_recompute(challenge_id=challenge.pk, reuse=True)
    assert selectors.snapshot_last_read == ("incremental", {new.pk})
    assert "newcomer" in {row["method_name"] for row in report.data["entries"]}


def test_the_triggers_cover_every_column_a_report_reads():
    import importlib

    migration = importlib.import_module("leaderboard.migrations.0035_runs_stamp")
    assert set(selectors.SNAPSHOT_RUN_COLUMNS) <= set(migration.STAMPED_COLUMNS)
    assert migration.TRIGGERS == selectors.RUN_STAMP_TRIGGERS


def test_a_missing_trigger_or_too_many_changes_read_every_run(board, monkeypatch):
    """A later migration that rebuilds leaderboard_run on SQLite drops its triggers: then nothing kept is trusted."""
    challenge, host, subs = board
    challenge_runs(challenge=challenge, reuse=True)
    monkeypatch.setattr(selectors, "SNAPSHOT_MAX_CHANGED", 0)
    add_entry(challenge, host, "newcomer", "recipe", [0.5, 0.6, 0.7, 0.8])
    challenge_runs(challenge=challenge, reuse=True)
    assert selectors.snapshot_last_read == ("full", None)
    monkeypatch.undo()
    name = (
        "leaderboard_run_stamp_update" if connection.vendor == "sqlite" else "leaderboard_run_stamp ON leaderboard_run"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {name}")  # rolled back with the test's transaction
    assert not selectors.run_stamps_in_force(connection)
    Run.objects.filter(submission=subs[0], index=0).update(test_score=0.2)  # no stamp moves now
    full = challenge_runs(challenge=challenge)
    assert challenge_runs(challenge=challenge, reuse=True).runs == full.runs
    assert selectors.snapshot_last_read == ("full", None)


@pytest.mark.django_db(transaction=True)
def test_the_submissions_before_the_migration_get_a_stamp_their_runs_move():
    """The DELETE and UPDATE triggers update a stamp row only: the migration gives every existing submission its row
    (stamp 0), else a change to an older submission's runs would move no stamp and be missed."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    old = [("leaderboard", "0034_report_piece")]
    executor.migrate(old)
    apps = executor.loader.project_state(old).apps
    user = apps.get_model("auth", "User").objects.create(username="old-host")
    challenge = apps.get_model("leaderboard", "Challenge").objects.create(
        slug="old", title="Old", created_by=user, metric="accuracy", higher_is_better=True
    )
    sub = apps.get_model("leaderboard", "Submission").objects.create(
        challenge=challenge,
        team=apps.get_model("leaderboard", "Team").objects.create(name="t"),
        submitted_by=user,
        kind="recipe",
        method_name="m",
        runs_expected=2,
    )
    old_run = apps.get_model("leaderboard", "Run")
    old_run.objects.bulk_create([old_run(submission=sub, index=i, status="succeeded", test_score=0.7) for i in (0, 1)])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert RunsStamp.objects.get(submission_id=sub.pk).stamp == 0
    Run.objects.filter(submission_id=sub.pk, index=0).update(test_score=0.8)
    moved = _stamp(sub)
    assert moved > 0
    Run.objects.filter(submission_id=sub.pk, index=1).delete()
    assert _stamp(sub) > moved


def test_the_report_workers_task_keeps_its_read(board):
    from tasks import reports

    challenge, _, _ = board
    selectors._KEPT_READS.clear()
    reports.recompute_report.push_request(retries=0)
    try:
        reports.recompute_report.run(challenge.pk)
    finally:
        reports.recompute_report.pop_request()
    assert len(selectors._KEPT_READS) == 1
