"""Leases, the one attempt counter, the write-once store under a token, and the janitor's pass.

The real processes (a SIGKILLed worker, a Redis restarted empty, a PostgreSQL restart) are in
tests/integration/test_faults.py; here the services are called in the test process.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import DataError, OperationalError
from django.utils import timezone

from leaderboard.models import JANITOR_STATE_PK, JanitorState, Report, ReportLease, Run, Submission
from leaderboard.services import dispatch
from leaderboard.services.dispatch import EXECUTE_RUN, RECOMPUTE_REPORT, SCORE_SUBMISSION
from leaderboard.services.janitor import JanitorPass, janitor_last_pass_age, janitor_run
from leaderboard.services.lifecycle import LOST_WORKER, run_claim, run_heartbeat, run_store, runs_requeue_expired
from leaderboard.services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe

from .factories import label_predictions, stored_recipe

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRIVIAL = UploadedFile("trivial.py", (EXAMPLES / "recipes" / "trivial.py").read_bytes())


@pytest.fixture
def lengths(monkeypatch):
    """The broker's queue lengths the janitor sees (every queue empty unless set)."""
    current: dict[str, int] = {}
    monkeypatch.setattr(dispatch, "queue_lengths", lambda names: {name: current.get(name, 0) for name in names})
    return current


def recipe_submission(challenge, user, k=2) -> Submission:
    challenge.k_runs = k
    challenge.save(update_fields=["k_runs"])
    return submission_create_recipe(challenge=challenge, user=user, method_name="trivial", recipe=TRIVIAL)


def age(runs, seconds: float, **fields) -> None:
    """Move the runs' enqueued_at (and any other fields given) ``seconds`` into the past."""
    runs.update(enqueued_at=timezone.now() - timedelta(seconds=seconds), **fields)


def last_pass(seconds_ago: float) -> None:
    """Record in the database that the janitor's last pass ended ``seconds_ago`` (run by any process)."""
    JanitorState.objects.update_or_create(
        pk=JANITOR_STATE_PK, defaults={"last_pass_at": timezone.now() - timedelta(seconds=seconds_ago)}
    )


# ---------------------------------------------------------------- claim, lease, store
def test_a_claim_takes_a_lease_that_other_deliveries_respect(challenge, alice):
    challenge, _ = challenge
    run = recipe_submission(challenge, alice).runs.get(index=0)
    claimed = run_claim(run_id=run.pk, delivery="task-a")
    assert claimed.attempts == 1 and claimed.status == "running" and claimed.lease_owner == "task-a"
    assert claimed.lease_expires_at > timezone.now()
    assert run_claim(run_id=run.pk, delivery="task-b") is None  # a duplicate while the lease is alive
    again = run_claim(run_id=run.pk, delivery="task-a")  # a retry of the same task takes it back
    assert again.attempts == 2
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_claim(run_id=run.pk, delivery="task-b").attempts == 3  # expired: anyone may take it


@pytest.mark.parametrize("first_to_finish", ["original", "re-run"])
def test_the_first_attempt_to_finish_stores_the_result_and_only_once(challenge, alice, first_to_finish):
    """Fencing: an original and its re-run can neither both count nor both be dropped."""
    challenge, _ = challenge
    run = recipe_submission(challenge, alice).runs.get(index=0)
    first = run_claim(run_id=run.pk, delivery="slow")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = run_claim(run_id=run.pk, delivery="redelivered")
    assert (first.attempts, second.attempts) == (1, 2)
    order = [(first, 0.1), (second, 0.9)]
    if first_to_finish == "re-run":
        order.reverse()
    (winner, score), (loser, late) = order
    assert run_store(run_id=run.pk, attempt=winner.attempts, status="succeeded", test_score=score)
    assert not run_store(run_id=run.pk, attempt=loser.attempts, status="succeeded", test_score=late)
    assert not run_store(run_id=run.pk, attempt=winner.attempts, status="succeeded", test_score=0.5)
    stored = Run.objects.get(pk=run.pk)
    assert stored.test_score == score and stored.lease_expires_at is None and stored.lease_owner == ""


def test_a_worn_out_run_fails_for_the_platform_naming_the_last_cause(challenge, alice, settings):
    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "MAX_RUN_ATTEMPTS": 2}
    submission = recipe_submission(challenge, alice, k=1)
    run = submission.runs.get()
    assert run_claim(run_id=run.pk, delivery="t").attempts == 1
    assert run_claim(run_id=run.pk, delivery="t", cause="OperationalError: server closed the connection").attempts == 2
    assert run_claim(run_id=run.pk, delivery="t", cause="OperationalError: connection refused") is None
    run.refresh_from_db()
    submission.refresh_from_db()
    assert run.status == "failed" and run.attempts == 2
    assert run.error_message == (
        "platform error: the run was started 2 times without finishing; the last attempt "
        "ended with: OperationalError: connection refused (not charged to your quota unless another run of this "
        "submission is scored)"
    )
    assert submission.status == "failed" and not submission.counts_toward_quota


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_the_lease_and_notices_when_it_is_lost(challenge, alice, settings):
    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "LEASE_S": 5.0}
    run = recipe_submission(challenge, alice).runs.get(index=0)
    claimed = run_claim(run_id=run.pk, delivery="a")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=1))
    with run_heartbeat(claimed) as beat:
        deadline = time.monotonic() + 10  # renewed within a few heartbeats, however loaded the machine
        while Run.objects.get(pk=run.pk).lease_expires_at < timezone.now() + timedelta(seconds=4):
            assert time.monotonic() < deadline, "the heartbeat did not renew the lease in 10 s"
            time.sleep(0.05)
        Run.objects.filter(pk=run.pk).update(attempts=claimed.attempts + 1)  # another attempt took over
        deadline = time.monotonic() + 5
        while not beat.lost and time.monotonic() < deadline:
            time.sleep(0.05)
    assert beat.lost


# ---------------------------------------------------------------- the janitor
def test_the_janitor_queues_again_a_run_whose_lease_expired(challenge, alice, queued, lengths):
    challenge, _ = challenge
    submission = recipe_submission(challenge, alice)
    run = submission.runs.get(index=0)
    run_claim(run_id=run.pk, delivery="dead-worker")
    queued.clear()
    assert janitor_run() == JanitorPass()  # the lease is alive: nothing to do
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert janitor_run() == JanitorPass(requeued_lost=1, resent_runs=1)
    assert queued.ids(EXECUTE_RUN) == [run.pk] and queued.queues(EXECUTE_RUN) == ["cpu"]
    run.refresh_from_db()
    assert run.status == "queued" and run.last_error == LOST_WORKER and run.lease_owner == ""
    # The resent task claims it (attempt 2). Had the first worker been alive after all, its result
    # would be kept if it finished first, and the re-run's dropped.
    assert run_claim(run_id=run.pk, delivery="new-worker").attempts == 2
    assert run_store(run_id=run.pk, attempt=1, status="succeeded", test_score=1.0)
    assert not run_store(run_id=run.pk, attempt=2, status="succeeded", test_score=0.5)


def test_after_an_absence_every_running_lease_restarts_before_the_janitor_judges_it(
    challenge, alice, queued, lengths, settings
):
    """Issue 22: a database outage stops heartbeats and janitor passes alike; the first pass after it
    must not requeue a run whose live worker has not yet had the chance to renew its lease: each
    running run gets a whole lease from the janitor's return (a CI run once lost a live run when the
    window was two heartbeats and the loaded worker renewed a little later)."""
    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "JANITOR_INTERVAL_S": 2.0, "LEASE_S": 0.6}
    run = recipe_submission(challenge, alice).runs.get(index=0)
    run_claim(run_id=run.pk, delivery="alive-or-not")
    expired = timezone.now() - timedelta(seconds=20)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=expired)
    last_pass(40)  # the last pass before a 40 s outage
    back = timezone.now()  # each pass is told its time, so a slow pass cannot eat into the lease it checks
    assert janitor_run(now=back).requeued_lost == 0  # back from the outage: the lease clock restarts
    restarted = Run.objects.get(pk=run.pk)
    assert restarted.status == "running" and restarted.lease_expires_at == back + timedelta(seconds=0.6)
    assert janitor_run(now=back + timedelta(seconds=0.3)).requeued_lost == 0  # within the new lease: alive
    # a whole lease and no renewal: the worker is gone
    assert janitor_run(now=back + timedelta(seconds=0.7)).requeued_lost == 1
    assert Run.objects.get(pk=run.pk).last_error == LOST_WORKER


def test_a_janitor_pass_without_an_absence_judges_expired_leases_at_once(challenge, alice, queued, lengths, settings):
    """The restart is only for a return after a gap: a worker lost while the janitor ran on is judged."""
    challenge, _ = challenge
    run = recipe_submission(challenge, alice).runs.get(index=0)
    run_claim(run_id=run.pk, delivery="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    last_pass(0)  # the janitor passed a moment ago
    assert janitor_run().requeued_lost == 1


def test_every_process_sees_the_last_pass_any_process_recorded(challenge, alice, queued, lengths, settings):
    """The last pass lives in the database, not in each process's cache: a worker's processes agree.

    Before, it was kept in Django's cache, per-process memory without ``CACHE_URL``: after an outage, a
    process that had run no pass itself knew no gap and judged every lease at once (a live run was
    queued again), and one whose own pass was long ago saw a gap with no outage and restarted every
    lease. Clearing the cache stands for another process's empty memory.
    """
    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "JANITOR_INTERVAL_S": 2.0, "LEASE_S": 0.6}
    assert janitor_last_pass_age() is None  # no pass on record
    janitor_run()  # a pass in one process...
    cache.clear()  # ...is seen by another, whose cache never heard of it
    seen = janitor_last_pass_age()
    assert seen is not None and seen < 5
    run = recipe_submission(challenge, alice).runs.get(index=0)
    run_claim(run_id=run.pk, delivery="alive")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=20))
    JanitorState.objects.filter(pk=JANITOR_STATE_PK).update(last_pass_at=timezone.now() - timedelta(seconds=40))
    cache.clear()  # the 40 s outage is known only through the database
    back = timezone.now()
    assert janitor_run(now=back).requeued_lost == 0  # the lease clock restarts: the live run is kept
    assert Run.objects.get(pk=run.pk).lease_expires_at == back + timedelta(seconds=0.6)
    assert janitor_last_pass_age() < 5  # and this pass is the last one now, for every process


def test_a_database_error_recording_the_pass_does_not_fail_it(challenge, alice, queued, lengths, monkeypatch):
    """The pass's work is written; its time is recorded by the next pass, the last one only looks older."""
    challenge, _ = challenge
    run = recipe_submission(challenge, alice).runs.get(index=0)
    run_claim(run_id=run.pk, delivery="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    last_pass(10)

    def refuse(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(JanitorState.objects, "bulk_create", refuse)
    assert janitor_run() == JanitorPass(requeued_lost=1, resent_runs=1)
    assert 9 < janitor_last_pass_age() < 15  # still the earlier pass


@pytest.mark.django_db(transaction=True)
def test_a_live_worker_takes_back_a_run_the_janitor_queued_during_an_outage(challenge, alice, settings):
    """A database outage longer than the lease: the worker's heartbeat takes the run back."""
    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "LEASE_S": 5.0}
    run = recipe_submission(challenge, alice).runs.get(index=0)
    claimed = run_claim(run_id=run.pk, delivery="alive")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert [r.pk for r in runs_requeue_expired()] == [run.pk]  # what the janitor did while renewals failed
    with run_heartbeat(claimed) as beat:
        deadline = time.monotonic() + 5
        while Run.objects.get(pk=run.pk).status != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
    taken = Run.objects.get(pk=run.pk)
    assert not beat.lost and taken.status == "running" and taken.attempts == 1 and taken.last_error == ""
    assert taken.lease_expires_at > timezone.now() + timedelta(seconds=3)
    assert run_claim(run_id=run.pk, delivery="janitor-resent") is None  # the resent message finds it held


def test_the_janitor_resends_stale_queued_work_only_when_its_queue_is_empty(
    challenge, alice, bob, queued, lengths, settings
):
    challenge, frame = challenge
    recipe = recipe_submission(challenge, alice)
    predictions = submission_create_predictions(
        challenge=challenge, user=bob, method_name="p", files=[UploadedFile("p.csv", label_predictions(frame))]
    )
    queued.clear()
    assert janitor_run() == JanitorPass()  # just published: not stale yet
    stale = settings.VARBOARD["REQUEUE_AFTER_S"] + 1
    age(Run.objects.all(), stale)
    lengths.update(cpu=2, scoring=1)  # a backlog: the tasks may well be in it
    assert janitor_run() == JanitorPass() and not queued
    lengths.update(cpu=0, scoring=0)  # the broker lost them (a restart without persistence)
    assert janitor_run() == JanitorPass(resent_runs=2, resent_scorings=1)
    assert sorted(queued.ids(EXECUTE_RUN)) == sorted(recipe.runs.values_list("pk", flat=True))
    assert queued.ids(SCORE_SUBMISSION) == [predictions.pk]
    assert not Run.objects.filter(enqueued_at__lt=timezone.now() - timedelta(seconds=stale - 1)).exists()
    queued.clear()
    assert janitor_run() == JanitorPass() and not queued  # resent just now: not again at the next pass


def test_the_janitor_resends_a_lost_report_recomputation(challenge, queued, lengths, settings):
    challenge, _ = challenge
    Report.objects.update_or_create(
        challenge=challenge,
        defaults=dict(
            recompute_pending=True,
            requested_at=timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1),
        ),
    )
    assert janitor_run() == JanitorPass(resent_reports=1)
    assert queued.ids(RECOMPUTE_REPORT) == [challenge.pk]


def test_the_janitor_sends_nothing_while_the_broker_is_unreachable(challenge, alice, queued, monkeypatch, settings):
    challenge, _ = challenge
    recipe_submission(challenge, alice)
    age(Run.objects.all(), settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    queued.clear()
    monkeypatch.setattr(dispatch, "queue_lengths", lambda names: None)
    assert janitor_run() == JanitorPass(broker_unreachable=True) and not queued
    assert Run.objects.filter(status="queued").count() == 2  # still queued: the next pass tries again


def test_the_janitor_publishes_nothing_more_once_the_broker_refuses(challenge, alice, lengths, monkeypatch, settings):
    challenge, _ = challenge
    recipe_submission(challenge, alice, k=3)
    age(Run.objects.all(), settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    attempts = []

    def refuse(name, args, queue=None, countdown=None):
        attempts.append(args)
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(dispatch, "send", refuse)
    assert janitor_run() == JanitorPass(broker_unreachable=True)
    assert len(attempts) == 1  # one refusal ends the pass's publishing


def test_a_transaction_stops_publishing_at_the_first_refusal_and_the_janitor_sends_every_message_it_skipped(
    challenge, host, alice, bob, queued, lengths, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    """A hung broker held a request for one publish timeout (~4 s) per message it queued after its commit: a
    submission of k runs ~4k s, a label correction of n submissions ~4n s. One transaction's publishes now stop at
    its first refusal (as a janitor pass's do), and each message it did not try is one the janitor sends once the
    broker answers: every kind a transaction queues (runs, a scoring, a rescore, a study's runs, a recomputation, a
    program check, an event, its webhook deliveries)."""
    from leaderboard.models import Event, Webhook
    from leaderboard.services.notifications import event_record
    from leaderboard.services.programs import CHECK_LOST_AFTER, program_upload
    from leaderboard.services.reports import report_request
    from leaderboard.services.rescoring import challenge_rescore
    from leaderboard.services.variance_studies import variance_study_create
    from leaderboard.services.webhooks import deliveries_create

    from .test_scoring_programs import PROGRAM, animals_challenge

    challenge, frame = challenge
    checked = animals_challenge(host)
    for url in ("https://hooks.example/a", "https://hooks.example/b"):
        Webhook.objects.create(challenge=challenge, url=url, secret="s", created_by=host)
    Report.objects.filter(challenge=challenge).update(recompute_pending=False)
    tried = []

    def refuse(name, args, queue=None, countdown=None):
        tried.append((name, tuple(args)))
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(dispatch, "send", refuse)
    caplog.set_level("DEBUG", logger="leaderboard.services.dispatch")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        recipe = recipe_submission(challenge, alice, k=5)
        files = [UploadedFile("p.csv", label_predictions(frame))]
        submission_create_predictions(challenge=challenge, user=bob, method_name="p", files=files)
        challenge_rescore(challenge=challenge, user=host)
        variance_study_create(submission=recipe, user=host, k_runs=2)
        report_request(challenge_id=challenge.pk)
        program_upload(challenge=checked, user=host, data=PROGRAM)
        event = event_record(kind=Event.Kind.BOARD_REVEALED, challenge=challenge)
        deliveries_create(event=event, payload={"event": event.kind})
    skipped = [record.args[:2] for record in caplog.records if record.msg.startswith("not tried:")]
    lost = set(tried) | {(name, tuple(args)) for name, args in skipped}
    assert len(tried) == 1 and len(lost) == len(callbacks) > 15, (tried, skipped)
    assert {name for name, _ in lost} == {
        EXECUTE_RUN,
        SCORE_SUBMISSION,
        dispatch.RESCORE_SUBMISSION,
        dispatch.EXECUTE_STUDY_RUN,
        RECOMPUTE_REPORT,
        dispatch.CHECK_SCORING_PROGRAM,
        dispatch.PROCESS_EVENT,
        dispatch.DELIVER_WEBHOOK,
    }

    monkeypatch.setattr(
        dispatch, "send", lambda name, args, queue=None, countdown=None: queued.append((name, args, queue))
    )
    queued.clear()
    later = timezone.now() + CHECK_LOST_AFTER + timedelta(seconds=1)
    with django_capture_on_commit_callbacks(execute=True):  # a program check is sent after its own commit
        assert not janitor_run(now=later).broker_unreachable
    resent = {(name, tuple(args)) for name, args, _ in queued}
    assert lost <= resent, sorted(lost - resent)


def test_a_refusal_stops_only_its_own_transaction_s_publishes(monkeypatch, django_capture_on_commit_callbacks):
    """The breaker is the transaction's: a later transaction tries again (the broker may be back), and a block
    rolled back leaves nothing behind."""
    from django.db import transaction

    tried, refusing = [], [True]

    def broker(name, args, queue=None, countdown=None):
        tried.append(args[0])
        if refusing[0]:
            raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(dispatch, "send", broker)
    with django_capture_on_commit_callbacks(execute=True):
        for pk in (1, 2, 3):
            dispatch.enqueue_on_commit(EXECUTE_RUN, pk)
    assert tried == [1]
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.enqueue_on_commit(EXECUTE_RUN, 4)
        dispatch.enqueue_on_commit(EXECUTE_RUN, 5)
    assert tried == [1, 4]  # refused again: tried once more, then not
    refusing[0] = False
    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                dispatch.enqueue_on_commit(EXECUTE_RUN, 6)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        dispatch.enqueue_on_commit(EXECUTE_RUN, 7)
        dispatch.enqueue_on_commit(EXECUTE_RUN, 8)
    assert tried == [1, 4, 7, 8]  # the broker is back: the next transaction sends all of its messages


# ---------------------------------------------------------------- the task policy
def test_a_transient_error_is_retried_with_its_cause_and_no_celery_limit(monkeypatch):
    from tasks import runs

    calls = []

    def flaky(*, run_id, delivery, cause):
        calls.append(cause)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(runs, "run_execute", flaky)
    runs.execute_run.apply(args=(42,))
    assert calls == ["", "OperationalError: server closed the connection unexpectedly"]
    assert runs.execute_run.max_retries is None  # Run.attempts, counted by the claim, is the one limit


def test_tasks_without_a_claim_keep_a_bounded_celery_retry(settings):
    from tasks import PLATFORM_RETRIES
    from tasks.maintenance import janitor
    from tasks.reports import recompute_report

    assert recompute_report.max_retries == PLATFORM_RETRIES  # issue 22: its backoff spans over a minute
    assert janitor.max_retries == 0


def test_beat_s_health_check_needs_a_recent_janitor_pass(lengths):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="no janitor pass is recorded"):
        call_command("janitor_check")
    janitor_run()
    call_command("janitor_check")
    last_pass(500)
    with pytest.raises(CommandError, match=r"ended 50\d s ago \(limit 150 s\)"):
        call_command("janitor_check")


def test_an_unreadable_recipe_does_not_stop_the_pass(challenge, alice, bob, queued, lengths, settings):
    challenge, _ = challenge
    broken, fine = recipe_submission(challenge, alice, k=1), recipe_submission(challenge, bob, k=1)
    broken.recipe_file.storage.delete(broken.recipe_file.name)
    age(Run.objects.all(), settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    queued.clear()
    # Both are sent (on the queue stored with each run): the broken one's worker meets the fault,
    # retries and finally fails the run naming it, rather than the run waiting forever.
    assert janitor_run() == JanitorPass(resent_runs=2)
    assert sorted(queued.ids(EXECUTE_RUN)) == sorted([broken.runs.get().pk, fine.runs.get().pk])
    assert queued.queues(EXECUTE_RUN) == ["cpu", "cpu"]


def test_the_janitor_dispatches_from_the_stored_queue_without_opening_the_recipe(
    challenge, host, alice, queued, lengths, settings
):
    """Issue 24: a NEEDS_GPU recipe's runs and its study's runs go back to ``gpu`` with the recipe file gone
    (before, the janitor re-read the recipe: the runs fell back to ``cpu`` and the study runs broke the pass)."""
    from leaderboard.models import VarianceStudy
    from leaderboard.services.dispatch import EXECUTE_STUDY_RUN
    from leaderboard.services.variance_studies import variance_study_create

    challenge, _ = challenge
    challenge.k_runs, challenge.device = 2, "gpu"
    challenge.save(update_fields=["k_runs", "device"])
    gpu = UploadedFile("g.py", b"NEEDS_GPU = True\ndef fit_predict(a, b, c, d, e, f):\n    return None\n")
    entry = submission_create_recipe(challenge=challenge, user=alice, method_name="g", recipe=gpu)
    study = variance_study_create(submission=entry, user=host, k_runs=2)
    assert set(study.runs.values_list("queue", flat=True)) == {"gpu"}
    entry.recipe_file.storage.delete(entry.recipe_file.name)
    stale = settings.VARBOARD["REQUEUE_AFTER_S"] + 1
    age(Run.objects.all(), stale)
    VarianceStudy.objects.filter(pk=study.pk).update(created=timezone.now() - timedelta(seconds=stale))
    queued.clear()
    assert janitor_run() == JanitorPass(resent_runs=2 + study.runs.count())
    assert queued.queues(EXECUTE_RUN) == ["gpu", "gpu"]
    assert set(queued.queues(EXECUTE_STUDY_RUN)) == {"gpu"}


def test_one_deadline_judges_runs_and_study_runs_stuck_everywhere(challenge, host, alice, queued, lengths, settings):
    """``run_deadline``: start + wall-time limit + grace, for a Run and a StudyRun alike; the reaper, the
    study-run claim and the janitor's resending of study runs all follow it (issue 24)."""
    from leaderboard.models import StudyRun, VarianceStudy
    from leaderboard.services.dispatch import EXECUTE_STUDY_RUN
    from leaderboard.services.lifecycle import run_deadline, runs_fail_stuck
    from leaderboard.services.variance_studies import variance_study_create
    from leaderboard.worker.study_execution import study_run_claim

    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "STUCK_RUN_GRACE_S": 7}
    limit = timedelta(seconds=challenge.run_wall_time_s() + 7)
    entry = recipe_submission(challenge, alice, k=1)
    study = variance_study_create(submission=entry, user=host, k_runs=2)
    VarianceStudy.objects.filter(pk=study.pk).update(
        created=timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    )
    StudyRun.objects.filter(study=study).update(status="succeeded", test_score=0.5)
    assert run_deadline(entry.runs.get()) is None  # not started

    def start(seconds_left: float):
        started = timezone.now() - limit + timedelta(seconds=seconds_left)
        Run.objects.filter(submission=entry).update(status="running", started_at=started)
        StudyRun.objects.filter(pk=study.runs.first().pk).update(status="running", started_at=started)
        return started, entry.runs.select_related("submission__challenge").get(), study.runs.first()

    started, run, study_run = start(60)
    assert run_deadline(run) == run_deadline(study_run) == started + limit
    queued.clear()
    assert runs_fail_stuck() == 0 and study_run_claim(study_run_id=study_run.pk) is None
    assert janitor_run() == JanitorPass() and not queued
    started, run, study_run = start(-60)
    assert study_run_claim(study_run_id=study_run.pk).attempts == 1  # stuck: taken again
    StudyRun.objects.filter(pk=study_run.pk).update(status="running", started_at=started)
    assert janitor_run() == JanitorPass(failed_stuck=1, resent_runs=1)
    assert queued.ids(EXECUTE_STUDY_RUN) == [study_run.pk]
    assert Run.objects.get(pk=run.pk).status == "failed"


def test_the_janitor_settles_a_submission_whose_runs_ended_behind_its_back(
    challenge, alice, queued, lengths, django_capture_on_commit_callbacks
):
    challenge, _ = challenge
    submission = recipe_submission(challenge, alice)
    Run.objects.filter(submission=submission).update(status="succeeded", test_score=0.5)  # status never derived
    assert Submission.objects.get(pk=submission.pk).status == "queued"
    Report.objects.filter(challenge=challenge).update(recompute_pending=False)  # the last report was built
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert janitor_run() == JanitorPass(settled_submissions=1)
    assert Submission.objects.get(pk=submission.pk).status == "scored"
    assert queued.ids(RECOMPUTE_REPORT) == [challenge.pk]
    assert janitor_run() == JanitorPass()


def test_the_janitor_resends_variance_study_runs_left_queued_or_stuck(
    challenge, host, alice, queued, lengths, settings
):
    """Study runs whose message was lost (queued) or whose worker was lost (running past the limit) go out again."""
    from leaderboard.models import StudyRun, VarianceStudy
    from leaderboard.services.dispatch import EXECUTE_STUDY_RUN
    from leaderboard.services.variance_studies import variance_study_create

    challenge, _ = challenge
    recipe = recipe_submission(challenge, alice)
    study = variance_study_create(submission=recipe, user=host, k_runs=2)
    queued.clear()
    assert janitor_run() == JanitorPass()  # just created: not stale yet
    VarianceStudy.objects.filter(pk=study.pk).update(
        created=timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    )
    runs = list(study.runs.order_by("pk"))
    hung = timezone.now() - timedelta(seconds=challenge.run_wall_time_s() + settings.VARBOARD["STUCK_RUN_GRACE_S"] + 5)
    StudyRun.objects.filter(pk=runs[0].pk).update(status="running", started_at=hung)
    StudyRun.objects.filter(pk=runs[1].pk).update(status="running", started_at=timezone.now())  # alive: left alone
    StudyRun.objects.filter(pk=runs[2].pk).update(status="succeeded", test_score=0.5)  # ended: left alone
    lengths.update(cpu=1)
    assert janitor_run() == JanitorPass() and not queued  # a backlog: the message may be in it
    lengths.update(cpu=0)
    expected = [runs[0].pk, *[run.pk for run in runs[3:]]]
    assert janitor_run() == JanitorPass(resent_runs=len(expected))
    assert sorted(queued.ids(EXECUTE_STUDY_RUN)) == expected


def test_the_janitor_resends_a_rescore_the_broker_did_not_take(challenge, host, alice, queued, lengths, monkeypatch):
    """A label or metric correction queues one rescore per prediction submission; a broker that refuses them (or
    restarts empty) must not leave the submissions scored against the old labels for good."""
    from leaderboard.services.dispatch import RESCORE_SUBMISSION
    from leaderboard.services.rescoring import challenge_rescore
    from leaderboard.services.scoring import submission_rescore, submission_score

    challenge, frame = challenge
    files = [UploadedFile("p.csv", label_predictions(frame))]
    submission = submission_create_predictions(challenge=challenge, user=alice, method_name="p", files=files)
    submission_score(submission_id=submission.pk)
    record = dispatch.send

    def refuse(name, args, queue=None, countdown=None):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(dispatch, "send", refuse)
    assert challenge_rescore(challenge=challenge, user=host)["queued"] == 1  # logged, "the janitor sends it again"
    monkeypatch.setattr(dispatch, "send", record)
    queued.clear()

    later = timezone.now() + timedelta(seconds=settings_requeue_after() + 1)
    assert janitor_run(now=later).resent_rescores == 1
    assert queued.ids(RESCORE_SUBMISSION) == [submission.pk]
    queued.clear()
    submission_rescore(submission_id=submission.pk)  # the resent task ran
    assert janitor_run(now=later + timedelta(seconds=settings_requeue_after() + 1)).resent_rescores == 0
    assert not queued.ids(RESCORE_SUBMISSION)


def settings_requeue_after() -> float:
    from django.conf import settings

    return settings.VARBOARD["REQUEUE_AFTER_S"]


def test_the_janitor_resends_a_report_recomputation_that_never_finished(challenge, alice, queued, lengths, monkeypatch):
    """The recomputation clears its request as it starts; one that then dies (its worker's machine lost, or the
    database gone for longer than its retries) must not leave the board without the entries it was asked for."""
    from django.conf import settings

    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute

    challenge, frame = challenge
    report_recompute(challenge_id=challenge.pk, force=True)
    stored_recipe(challenge, alice, "p", runs_expected=1, scores=[0.5])  # a new entry, scored
    assert Report.objects.get(challenge=challenge).recompute_pending is False  # not until a run changed
    from leaderboard.services.reports import report_request

    report_request(challenge_id=challenge.pk)

    def database_gone(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    build = reports.build_report_data
    monkeypatch.setattr(reports, "build_report_data", database_gone)
    with pytest.raises(OperationalError):
        report_recompute(challenge_id=challenge.pk)  # its last retry: the task gives up
    queued.clear()

    stale = timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    report = Report.objects.filter(challenge=challenge)
    report.update(computed_at=timezone.now() - 2 * stale, requested_at=timezone.now() - stale)  # long ago
    assert janitor_run().resent_reports == 0  # its lease is left to expire (the database may be what failed)
    ReportLease.objects.filter(challenge=challenge).update(expires_at=timezone.now() - timedelta(seconds=1))  # later
    assert janitor_run().resent_reports == 1
    assert queued.ids(RECOMPUTE_REPORT) == [challenge.pk]
    queued.clear()
    assert janitor_run().resent_reports == 0  # resent just now
    monkeypatch.setattr(reports, "build_report_data", build)
    report_recompute(challenge_id=challenge.pk)  # the resent one ran
    computed, requested = report.values_list("computed_at", "requested_at").get()
    assert computed > requested  # the request answered
    report.update(computed_at=computed - 2 * stale, requested_at=requested - 2 * stale)
    assert janitor_run().resent_reports == 0


def test_a_rescore_that_gives_up_is_not_resent_for_ever(challenge, host, alice, queued, lengths):
    """A rescore that can never run (its prediction file lost from the storage: each attempt a storage fault, retried
    until the task gives up) kept its request, and the janitor sent it again at every pass past REQUEUE_AFTER_S, each
    one retried again, for ever. Given up, the request is answered (logged), as a scoring that gives up is."""
    from leaderboard.services.rescoring import challenge_rescore
    from leaderboard.services.scoring import submission_score
    from tasks.scoring import rescore_submission

    challenge, frame = challenge
    files = [UploadedFile("p.csv", label_predictions(frame))]
    submission = submission_create_predictions(challenge=challenge, user=alice, method_name="p", files=files)
    submission_score(submission_id=submission.pk)
    record = submission.prediction_files.get()
    record.file.storage.delete(record.file.name)  # lost
    assert challenge_rescore(challenge=challenge, user=host)["queued"] == 1
    queued.clear()
    rescore_submission.apply(args=(submission.pk,))  # retried, then given up
    later = timezone.now() + timedelta(seconds=settings_requeue_after() + 1)
    assert janitor_run(now=later).resent_rescores == 0


# ---------------------------------------------------------------- report recomputations: the lease, the give-up
def stale_request(challenge, frame, alice) -> None:
    """A board stored, then a new entry: its recomputation asked for long ago (older than REQUEUE_AFTER_S)."""
    from django.conf import settings

    from leaderboard.services.reports import report_recompute, report_request

    report_recompute(challenge_id=challenge.pk, force=True)
    stored_recipe(challenge, alice, "p", runs_expected=1, scores=[0.5])  # a new entry, scored
    report_request(challenge_id=challenge.pk)
    stale = timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    Report.objects.filter(challenge=challenge).update(
        computed_at=timezone.now() - 2 * stale, requested_at=timezone.now() - stale
    )


def test_the_janitor_leaves_a_running_recomputation_alone(challenge, alice, queued, lengths, monkeypatch):
    """A recomputation clears its request as it starts; one still running when the janitor passed (a 20,000-entry
    board takes ~15 s) was sent again at every pass past REQUEUE_AFTER_S, two recomputations of the board at once.
    Its lease now says it runs: the janitor leaves it, and the lease is released when it has answered."""
    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute

    challenge, frame = challenge
    stale_request(challenge, frame, alice)
    queued.clear()
    build, seen = reports.build_report_data, []

    def janitor_passes_meanwhile(**kwargs):
        seen.append(janitor_run())
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", janitor_passes_meanwhile)
    report_recompute(challenge_id=challenge.pk)
    assert seen and seen[0].resent_reports == 0 and not queued.ids(RECOMPUTE_REPORT)
    stored = Report.objects.get(challenge=challenge)
    assert not ReportLease.objects.filter(challenge=challenge).exists()  # released
    assert stored.computed_at > stored.requested_at  # answered: nothing more to send
    assert janitor_run(now=timezone.now() + timedelta(seconds=3600)).resent_reports == 0


class Killed(BaseException):
    """The worker's end (SIGKILL): no handler runs, nothing is written."""


def test_the_janitor_resends_a_recomputation_whose_worker_was_killed(challenge, alice, queued, lengths, monkeypatch):
    """A lost worker stops renewing the lease: the janitor sends the request again once it expired, not before."""
    from django.conf import settings

    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute

    challenge, frame = challenge
    stale_request(challenge, frame, alice)
    queued.clear()

    def killed(**kwargs):
        raise Killed

    monkeypatch.setattr(reports, "build_report_data", killed)
    with pytest.raises(Killed):
        report_recompute(challenge_id=challenge.pk)
    assert janitor_run().resent_reports == 0  # as far as anyone can tell, it still runs
    held = ReportLease.objects.get(challenge=challenge)
    assert held.owner and held.expires_at > timezone.now()
    expired = held.expires_at + timedelta(seconds=1)
    assert expired <= timezone.now() + timedelta(seconds=settings.VARBOARD["LEASE_S"] + 1)
    assert janitor_run(now=expired).resent_reports == 1
    assert queued.ids(RECOMPUTE_REPORT) == [challenge.pk]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_a_long_recomputation_s_lease(challenge, alice, queued, lengths, monkeypatch, settings):
    """Longer than the lease itself: the heartbeat thread renews it (in its own connection), the janitor waits."""
    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute

    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "LEASE_S": 0.5}
    challenge, frame = challenge
    stale_request(challenge, frame, alice)
    queued.clear()
    build, seen = reports.build_report_data, []

    def slow(**kwargs):
        time.sleep(1.5)  # three leases
        seen.append(janitor_run().resent_reports)
        seen.append(ReportLease.objects.filter(challenge=challenge).values().get())
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", slow)
    report_recompute(challenge_id=challenge.pk)
    resent, row = seen
    assert resent == 0
    assert row["expires_at"] > timezone.now() - timedelta(seconds=1.5)  # renewed meanwhile
    assert not ReportLease.objects.filter(challenge=challenge).exists()


@pytest.mark.django_db(transaction=True)
def test_a_board_s_first_recomputation_takes_no_lease_and_starts_no_heartbeat(challenge, monkeypatch, settings, caplog):
    """No report row yet (a board's first recomputation, in a reader's request): nothing to lease, so no heartbeat,
    whose first renewal matched no row and logged that another recomputation had taken the lease over."""
    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute

    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.1, "LEASE_S": 0.5}
    challenge, _ = challenge
    Report.objects.filter(challenge=challenge).delete()
    build = reports.build_report_data

    def slow(**kwargs):
        time.sleep(0.5)  # five heartbeats, were one started
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", slow)
    with caplog.at_level("INFO", logger="leaderboard.services.reports"):
        report_recompute(challenge_id=challenge.pk)
    assert Report.objects.get(challenge=challenge).computed_at is not None
    assert "took over the lease" not in caplog.text


def elapse(challenge, seconds: float) -> None:
    """Move the board's recomputation times ``seconds`` into the past (as if that long went by), its lease's with
    them (a row of its own)."""
    from django.db.models import DateTimeField, F

    back = timedelta(seconds=seconds)
    fields = [field.name for field in Report._meta.concrete_fields if isinstance(field, DateTimeField)]
    Report.objects.filter(challenge=challenge).update(**{field: F(field) - back for field in fields})
    ReportLease.objects.filter(challenge=challenge).update(expires_at=F("expires_at") - back)


@pytest.mark.parametrize(
    "error, attempts",
    [
        (OperationalError("canceling statement due to statement timeout"), 7),  # retried by Celery, then given up
        (DataError("total size of jsonb array elements exceeds the maximum"), 1),  # not retried
    ],
)
def test_a_recomputation_failing_on_the_database_is_not_resent_at_every_pass(
    challenge, alice, queued, lengths, monkeypatch, caplog, error, attempts
):
    """A recomputation that fails on a database error kept its request unfinished and nothing recorded: the janitor
    sent it again at every pass past REQUEUE_AFTER_S, each one retried again (7 attempts), for ever. Given up, it
    is counted, logged and sent again after REPORT_GIVE_UP_RETRY_S, doubled at each give-up in a row; once the
    database answers again, the board is stored and the count ends."""
    from django.conf import settings

    from leaderboard.services import reports
    from tasks import PLATFORM_RETRIES
    from tasks.reports import recompute_report

    challenge, frame = challenge
    stale_request(challenge, frame, alice)
    queued.clear()
    build, tries = reports.build_report_data, []

    def failing(**kwargs):
        tries.append(1)
        raise error

    monkeypatch.setattr(reports, "build_report_data", failing)
    interval = settings.VARBOARD["JANITOR_INTERVAL_S"]
    recompute_report.apply(args=(challenge.pk,))
    assert len(tries) == attempts and attempts in (1, PLATFORM_RETRIES + 1)

    def passes(seconds: float) -> list[int]:
        """What the janitor's passes of the next ``seconds`` resend, one every JANITOR_INTERVAL_S."""
        sent = []
        for _ in range(int(seconds // interval)):
            elapse(challenge, interval)
            sent.append(janitor_run().resent_reports)
            if sent[-1]:
                recompute_report.apply(args=(challenge.pk,))  # the resent one runs at once
        return sent

    # The passes of the next nine minutes send nothing (before: one every REQUEUE_AFTER_S, each with its retries).
    sent = passes(540)
    assert (sent, len(tries)) == ([0] * len(sent), attempts)
    first_retry = settings.VARBOARD["REPORT_GIVE_UP_RETRY_S"]
    assert sum(passes(first_retry - 540 - interval)) == 0  # nor the others until the retry is due
    report = Report.objects.get(challenge=challenge)
    assert report.recompute_give_ups == 1 and report.failed_at >= report.requested_at
    assert "recomputation given up (1 in a row)" in caplog.text and type(error).__name__ in caplog.text
    assert report.recompute_failure == reports.GAVE_UP_MESSAGE  # readers see the board is not the latest
    assert len(tries) == attempts

    # Due: sent again once; it fails again, and the next try waits twice as long.
    assert passes(2 * interval) == [1, 0] and queued.ids(RECOMPUTE_REPORT) == [challenge.pk]
    assert len(tries) == 2 * attempts and Report.objects.get(challenge=challenge).recompute_give_ups == 2
    assert sum(passes(2 * first_retry - 2 * interval)) == 0

    # The database answers again: the next due try stores the board, and nothing more is sent.
    monkeypatch.setattr(reports, "build_report_data", build)
    queued.clear()
    assert sum(passes(2 * interval)) == 1
    report = Report.objects.get(challenge=challenge)
    assert report.recompute_give_ups == 0 and report.recompute_retry_at is None
    assert report.recompute_failure == "" and report.computed_at > report.requested_at
    assert sum(passes(20 * interval)) == 0


def test_a_give_up_leaves_a_request_made_during_its_last_attempt_to_that_request_s_recomputation(
    challenge, alice, queued, lengths, monkeypatch
):
    """A give-up marked the board failed for whatever request stood then, one made while its last attempt ran (a
    new entry scored meanwhile) included, which that attempt never read: the newer request's own recomputation,
    queued, started (its lease) and lost with its worker, was then not sent again once its lease expired but only
    when the give-up's retry fell due (REPORT_GIVE_UP_RETRY_S, up to a day after a few give-ups). The give-up now
    answers only the requests its attempt had taken."""
    from django.conf import settings

    from leaderboard.services import reports
    from leaderboard.services.reports import report_recompute, report_request
    from tasks.reports import recompute_report

    challenge, frame = challenge
    stale_request(challenge, frame, alice)
    queued.clear()

    def failing(**kwargs):
        report_request(challenge_id=challenge.pk)  # a new entry scored meanwhile: its recomputation is queued
        raise DataError("total size of jsonb array elements exceeds the maximum")

    monkeypatch.setattr(reports, "build_report_data", failing)
    recompute_report.apply(args=(challenge.pk,))  # not retried: given up at once
    report = Report.objects.get(challenge=challenge)
    assert report.recompute_pending  # the newer request, its recomputation queued (on commit)
    assert report.recompute_failure != reports.GAVE_UP_MESSAGE  # the newer request is not the one given up

    def killed(**kwargs):
        raise Killed

    monkeypatch.setattr(reports, "build_report_data", killed)
    with pytest.raises(Killed):  # the newer request's recomputation starts, and its worker is lost
        report_recompute(challenge_id=challenge.pk)
    queued.clear()
    conf = settings.VARBOARD
    later = timezone.now() + timedelta(seconds=max(conf["LEASE_S"], conf["REQUEUE_AFTER_S"]) + 1)
    assert later < timezone.now() + timedelta(seconds=conf["REPORT_GIVE_UP_RETRY_S"])
    assert janitor_run(now=later).resent_reports == 1  # once its lease expired, as any lost recomputation
    assert queued.ids(RECOMPUTE_REPORT) == [challenge.pk]


def test_the_janitor_never_deletes_a_recorded_orphan_that_a_row_names(challenge, alice, lengths, caplog):
    """A record of a file whose delete failed (``StorageOrphan``) may be wrong: a row can name the file all the
    same (a commit stored after all). The janitor asks every file field first: a live prediction file and live
    hidden labels stay, their records go, and a real orphan beside them is deleted. The labels' path recorded
    under the other storage stays too: locally both storages are one folder (no VARBOARD_PRIVATE_MEDIA_ROOT)."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from leaderboard.models import StorageOrphan
    from leaderboard.storage import hidden_storage

    challenge, frame = challenge
    submission = submission_create_predictions(
        challenge=challenge, user=alice, method_name="live", files=[UploadedFile("p.csv", label_predictions(frame))]
    )
    live = submission.prediction_files.get().file.name
    labels = challenge.dataset.hidden_labels_file.name
    orphan = default_storage.save("submissions/orphan.csv", ContentFile(b"id,label\n1,3\n"))
    for storage, path in (("default", live), ("hidden", labels), ("default", labels), ("default", orphan)):
        StorageOrphan.objects.create(storage=storage, path=path, reason="a test", last_error="a test")

    assert janitor_run().deleted_orphans == 1
    assert default_storage.exists(live) and hidden_storage.exists(labels)
    assert not default_storage.exists(orphan)
    assert not StorageOrphan.objects.exists()
    kept = [r.getMessage() for r in caplog.records if "kept, its orphan record dropped" in r.getMessage()]
    assert len(kept) == 3 and "leaderboard.PredictionFile.file" in kept[0], kept
    assert all("leaderboard.Dataset.hidden_labels_file" in message for message in kept[1:]), kept
