"""Issue 27 on the real PostgreSQL: the runs stamps (``RunsStamp``) moved by the triggers, read by a report update while
another connection writes runs (committed rows: ``transaction=True``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import connection, connections, transaction

from leaderboard import selectors
from leaderboard.models import Run, RunsStamp, Submission
from leaderboard.selectors import challenge_runs
from tests.platform.factories import digits_challenge, make_user
from tests.platform.test_report_api import add_entry

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _in_another_connection(work, started: threading.Event, go: threading.Event) -> threading.Thread:
    """``work`` in a transaction of another connection, committed once ``go`` is set."""

    def body():
        try:
            with transaction.atomic():
                work()
                started.set()
                go.wait(30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body)
    thread.start()
    assert started.wait(30)
    return thread


def _same_as_full(challenge) -> set | None:
    incremental = challenge_runs(challenge=challenge, reuse=True)
    last = selectors.snapshot_last_read
    full = challenge_runs(challenge=challenge)
    assert incremental.runs == full.runs and incremental.submissions == full.submissions
    assert last[0] == "incremental"
    return last[1]


def test_runs_written_by_another_connection_around_a_read_are_never_missed(monkeypatch):
    assert connection.vendor == "postgresql" and selectors.run_stamps_in_force(connection)
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=4, boo_n=3, bootstrap_resamples=200, master_seed=7)
    subs = [add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(4)) for i in range(3)]
    challenge_runs(challenge=challenge, reuse=True)

    # A write not yet committed is not read, and is read once committed.
    started, go = threading.Event(), threading.Event()
    writer = _in_another_connection(
        lambda: Run.objects.filter(submission=subs[0], index=1).update(test_score=0.1), started, go
    )
    assert _same_as_full(challenge) == set()
    go.set()
    writer.join()
    assert _same_as_full(challenge) == {subs[0].pk}

    # A write committed between the read of the stamps and the read of the runs: read again at the next update.
    started, go = threading.Event(), threading.Event()
    writer = _in_another_connection(
        lambda: Run.objects.filter(submission=subs[1], index=2).update(valid_score=0.3), started, go
    )
    runs_read = selectors._runs_read

    def commit_first(*args, **kwargs):
        go.set()
        writer.join()
        return runs_read(*args, **kwargs)

    Run.objects.filter(submission=subs[2], index=0).update(public_score=0.5)  # something to read by id
    monkeypatch.setattr(selectors, "_runs_read", commit_first)
    challenge_runs(challenge=challenge, reuse=True)
    monkeypatch.setattr(selectors, "_runs_read", runs_read)
    assert _same_as_full(challenge) == {subs[1].pk}
    stamps = dict(RunsStamp.objects.filter(submission__in=subs).values_list("submission_id", "stamp"))
    assert len(set(stamps.values())) == 3  # taken from the sequence: distinct across submissions


def test_a_run_write_never_waits_for_its_submissions_row_lock():
    """The stamp has a table of its own: a run's writer (run_store locks the run, then the trigger writes the stamp)
    never takes its submission's row lock, which submission_refund and cancellations take before the runs' (the
    other lock order: deadlocks), nor waits for a writer of that row (status, moderation, selection)."""
    from django.db import OperationalError

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=4, boo_n=3, bootstrap_resamples=200, master_seed=7)
    sub = add_entry(challenge, host, "m0", "recipe", 0.8 + 0.001 * np.arange(4))
    started, go = threading.Event(), threading.Event()
    holder = _in_another_connection(
        # the lock an UPDATE of the submission's row takes (submission_refund, a status refresh): FOR NO KEY UPDATE,
        # which a run's foreign key check (FOR KEY SHARE) does not wait for
        lambda: list(Submission.objects.select_for_update(no_key=True).filter(pk=sub.pk)),
        started,
        go,
    )
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '3s'")
            try:
                Run.objects.filter(submission=sub, index=0).update(test_score=0.2)
                Run.objects.create(submission=sub, index=9)
                Run.objects.filter(submission=sub, index=1).delete()
            except OperationalError as exc:  # lock_timeout: the trigger waited for the submission's row
                pytest.fail(f"a run write waited for its submission's row lock: {exc}")
    finally:
        go.set()
        holder.join()
    assert RunsStamp.objects.get(submission=sub).stamp > 0
