"""The life of a run and of its submission, in one place.

A run is queued, claimed by one worker (``running``), and ends once: ``succeeded`` or
``failed``, written under a row lock so that a redelivered task writes nothing twice
(docs/DESIGN.md §7). A submission's status follows from its runs. A failure that is the
platform's fault (a lost worker, an unreachable queue, a bug) refunds the quota: the
submission stops counting toward it. Every change of a run's result asks for a new report.

Leases. A claimed run holds a lease (``Run.lease_expires_at``, ``VARBOARD_LEASE_S``) that its
worker renews from a heartbeat thread (:class:`run_heartbeat`) while the run executes. A
worker that dies stops renewing; once the lease has expired the janitor
(``services.janitor``) puts the run back in the queue (:func:`runs_requeue_expired`) and the next
claim takes it. The attempt number that claimed the run is its lease token: a slow but living
worker whose lease was taken over can neither renew it nor store its result
(:func:`run_store` checks the token under the row lock), so a result is written exactly once,
by the attempt that holds the run.

Attempts. ``Run.attempts`` is the one counter: every claim (first delivery, a redelivery after a
lost worker, a retry after a transient error) counts, and a run claimed ``VARBOARD_MAX_RUN_ATTEMPTS``
times without finishing is failed for the platform's reasons, naming the last cause
(``Run.last_error``). A claim whose cause is a storage fault (an unreachable or hung object store,
a full or read-only disk: :func:`is_storage_cause`) may go ``STORAGE_FAULT_EXTRA_ATTEMPTS`` further,
so an outage of a few minutes, waited out by the task's backoff, never ends a run for good; every
claim still takes a new attempt number (the lease token stays unique).

Nothing else writes ``Run.status`` or ``Submission.status`` (cancelling aside, in
``services.submissions``).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from ..choices import RUN_ENDED, SUBMISSION_ACTIVE, RunStatus, SubmissionStatus
from ..database_faults import DATABASE_AWAY_ERRORS, database_away
from ..models import Run, StudyRun, Submission
from ..storage import DISK_FULL_ERRNOS, STORAGE_DOWN
from .errors import PROGRAM_FAILED
from .heartbeats import renew_until_stopped
from .notifications import submission_ended_record
from .reports import report_request_after

logger = logging.getLogger(__name__)

#: Fields of a run that hold its result; ``run_store`` writes these and nothing else.
RESULT_FIELDS = (
    "status",
    "test_score",
    "valid_score",
    "outcomes",
    "hyperparameters",
    "hpo_trials",
    "duration_s",
    "device",
    "fingerprint",
    "log",
    "error_message",
    "isolation",
    "public_score",
    "private_score",
    "public_outcomes",
    "private_outcomes",
    "extra_scores",
    "extra_outcomes",
)
LOST_WORKER = "its worker stopped renewing the run's lease (the worker was lost)"


def max_attempts() -> int:
    """How many times a run may be started (first delivery, redeliveries and retries together)."""
    return settings.VARBOARD["MAX_RUN_ATTEMPTS"]


#: Claims a run may take beyond ``max_attempts()`` while the last cause is a storage fault: with the
#: tasks' backoff (2, 4, ... 60 s) the retries then span about six minutes of outage.
STORAGE_FAULT_EXTRA_ATTEMPTS = 8


def _with_subclasses(classes) -> set[str]:
    names, todo = set(), list(classes)
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


#: How ``tasks.describe`` names a storage fault, from ``leaderboard.storage``'s own lists: the object
#: store's connection errors (botocore, any subclass) and a disk that cannot take a write, raw or wrapped.
_STORAGE_FAULT_NAMES = frozenset(_with_subclasses(STORAGE_DOWN))
_DISK_FULL_MARKS = tuple(f"[Errno {number}]" for number in sorted(DISK_FULL_ERRNOS))


def is_storage_cause(cause: str) -> bool:
    """True when a retry's ``cause`` names a storage fault (not charged to the run's attempts)."""
    names = {part.strip() for part in cause[:300].split(":")}  # "PlatformError: OSError: [Errno 28] ..."
    return bool(names.intersection(_STORAGE_FAULT_NAMES)) or any(mark in cause for mark in _DISK_FULL_MARKS)


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.VARBOARD["LEASE_S"])


#: What a platform fault costs the team (:func:`submission_refund`): nothing, unless a run of the submission
#: answered, its score readable.
NOT_CHARGED = "(not charged to your quota unless another run of this submission is scored)"


def platform_message(reason: str) -> str:
    return f"platform error: {reason} {NOT_CHARGED}"


def _lease_held(run: Run, delivery: str, now) -> bool:
    """True when another delivery's worker holds the running run's lease (it is alive)."""
    if run.status != RunStatus.RUNNING or (delivery and run.lease_owner == delivery):
        return False  # queued, or a retry or redelivery of the very task that holds it
    return run.lease_expires_at is not None and run.lease_expires_at > now


def run_claim(*, run_id: int, delivery: str = "", cause: str = "") -> Run | None:
    """Mark the run running under a new lease and count the attempt; None when it must not run.

    None when the run has ended, its submission was cancelled, or another worker holds its
    lease. ``delivery`` names the claiming task (its Celery id: a retry of the same task takes
    its own lease back at once); ``cause`` says why the previous attempt of this task stopped.
    A run started ``max_attempts()`` times already is failed for the platform's reasons, with
    the last cause. The returned run's ``attempts`` is the lease token to renew and store with.
    """
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("submission").get(pk=run_id)
        if run.has_ended or run.submission.status == SubmissionStatus.CANCELLED or _lease_held(run, delivery, now):
            return None
        if cause and run.attempts:
            run.last_error = cause[:2000]
        worn_out = run.attempts >= max_attempts() + (STORAGE_FAULT_EXTRA_ATTEMPTS if is_storage_cause(cause) else 0)
        if worn_out:
            run.save(update_fields=["last_error"])
        else:
            run.status = RunStatus.RUNNING
            run.attempts += 1
            run.started_at = now
            run.lease_owner = (delivery or "")[:64]
            run.lease_expires_at = now + lease_duration()
            run.save(
                update_fields=["status", "attempts", "started_at", "lease_owner", "lease_expires_at", "last_error"]
            )
            Submission.objects.filter(pk=run.submission_id, status=SubmissionStatus.QUEUED).update(
                status=SubmissionStatus.RUNNING, started_at=now
            )
    if worn_out:
        last = run.last_error or "its worker was lost"
        run_fail_for_platform(
            run_id=run_id,
            reason=f"the run was started {run.attempts} times without finishing; the last attempt ended with: {last}",
        )
        return None
    return run


def run_renew_lease(*, run_id: int, attempt: int) -> bool:
    """Extend the lease of the run that ``attempt`` holds; False when that attempt lost it (or it ended).

    A run the janitor put back in the queue because this attempt's renewals could not reach the
    database (an outage longer than the lease) is taken back while no later attempt has claimed
    it: the worker was alive all along, and the queued message's claim then finds the lease held.
    """
    lease = {"lease_expires_at": timezone.now() + lease_duration()}
    if Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts=attempt).update(**lease):
        return True
    taken_back = Run.objects.filter(
        pk=run_id, status=RunStatus.QUEUED, attempts=attempt, last_error=LOST_WORKER
    ).update(status=RunStatus.RUNNING, last_error="", **lease)
    if taken_back:
        logger.warning(
            "run %s: attempt %s renewed its lease after the janitor had queued the run again; it keeps the run",
            run_id,
            attempt,
            extra={"run_id": run_id},
        )
    return bool(taken_back)


class run_heartbeat:  # noqa: N801 - used as a context manager, like contextlib's
    """Renew a claimed run's lease from a thread every ``VARBOARD_HEARTBEAT_S`` while the block runs.

    ``with run_heartbeat(run): ...`` in the worker process that executes the run. A renewal
    that fails because the database is unreachable is logged and tried again at the next
    beat; one that finds the lease taken over (the janitor queued the run again, another
    worker claimed it) sets :attr:`lost`, and the result of this attempt will not be stored.
    """

    def __init__(self, run: Run):
        self.run_id, self.attempt = run.pk, run.attempts
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-run-{run.pk}", daemon=True)

    def __enter__(self) -> run_heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        renew_until_stopped(
            self._stop,
            lambda: run_renew_lease(run_id=self.run_id, attempt=self.attempt),
            on_lost=self._lost,
            what=f"run {self.run_id}",
            extra={"run_id": self.run_id},
            transient=database_away,
        )

    def _lost(self) -> None:
        self.lost = True
        logger.warning(
            "run %s: attempt %s lost its lease; its result will not be stored",
            self.run_id,
            self.attempt,
            extra={"run_id": self.run_id},
        )


def run_store(*, run_id: int, attempt: int | None = None, **result) -> bool:
    """Write a run's result once; False (nothing written) when it has ended already.

    The first attempt to finish wins, whichever holds the lease now: the row lock and the
    "has it ended?" test are the fence. A run that an outage made the janitor queue again
    (or that a later attempt re-runs) keeps the result its original attempt brings back, and
    the re-run's store then finds it ended; the two can neither both count nor both be
    dropped. Every attempt runs with the same seeds, so either result is the run's.
    ``attempt`` (the token :func:`run_claim` returned) is only logged.
    """
    unknown = sorted(set(result) - set(RESULT_FIELDS))
    if unknown:
        raise ValueError(f"not result fields of a run: {unknown}")
    if result.get("status") not in RUN_ENDED:
        raise ValueError(f"a stored run must have ended, got status {result.get('status')!r}")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.has_ended:
            return False  # a duplicate delivery or another attempt finished first: written once
        if attempt is not None and (run.status != RunStatus.RUNNING or run.attempts != attempt):
            logger.warning(
                "run %s: attempt %s finished first (the run was %s, attempt %s); its result is kept",
                run_id,
                attempt,
                run.status,
                run.attempts,
                extra={"run_id": run_id},
            )
        for name, value in result.items():
            setattr(run, name, value)
        run.finished_at = timezone.now()
        run.lease_expires_at, run.lease_owner = None, ""
        run.save()
        submission_charge_if_answered(submission_id=run.submission_id)
    runs_changed(submission_id=run.submission_id, scored=run.status == RunStatus.SUCCEEDED)
    return True


def run_store_rescored(*, run_id: int, **scores) -> bool:
    """Overwrite an ended run's result after a host corrected the labels or the metric (services.rescoring).

    The only write to an ended run besides ``run_store``; its log stays. False when the run has not ended.
    """
    unknown = sorted(set(scores) - set(RESULT_FIELDS))
    if unknown:
        raise ValueError(f"not score fields of a run: {unknown}")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if not run.has_ended:
            return False
        # a new revision: the outcomes may move where no score does (reports.report_inputs_version reads it)
        Run.objects.filter(pk=run_id).update(**scores, result_revision=F("result_revision") + 1)
    runs_changed(submission_id=run.submission_id)
    return True


def run_store_retrying(*, run_id: int, attempt: int | None = None, **result) -> bool:
    """:func:`run_store`, retried with backoff while the database is away or read-only (``database_away``: a
    restart, a failover's read-only window), for ``RESULT_RETRY_S``.

    A run that took minutes is not thrown away for a database outage: the result is kept in
    memory (the heartbeat keeps trying to renew the lease meanwhile) and stored when the database
    answers again. Past ``RESULT_RETRY_S`` (10 minutes by default) the error propagates.
    """
    deadline = time.monotonic() + settings.VARBOARD["RESULT_RETRY_S"]
    delay = 0.25
    while True:
        try:
            return run_store(run_id=run_id, attempt=attempt, **result)
        except DATABASE_AWAY_ERRORS as exc:
            if not database_away(exc) or time.monotonic() + delay > deadline:
                raise  # run_store's one transaction rolled back: nothing of the result is stored
            logger.warning(
                "run %s: the database is unreachable or read-only (%s); storing again in %.2f s",
                run_id,
                exc,
                delay,
                extra={"run_id": run_id},
            )
            connection.close()  # a broken connection is not reused
            time.sleep(delay)
            delay = min(delay * 2, 4.0)


def runs_changed(*, submission_id: int, scored: bool = True) -> Submission:
    """After a run's result changed: the submission's status, then a new report (``scored`` False: the runs that
    changed ended without a score, :func:`services.reports.report_request_after`)."""
    submission = submission_refresh_status(submission_id=submission_id)
    report_request_after(submission=submission, scored=scored)
    return submission


def run_fail_for_platform(*, run_id: int, reason: str) -> None:
    """Give up on a run for the platform's own reasons; the submission stops counting toward quotas."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.has_ended:
            return
        run.status = RunStatus.FAILED
        run.error_message = platform_message(reason)
        run.finished_at = timezone.now()
        run.lease_expires_at, run.lease_owner = None, ""
        run.save(update_fields=["status", "error_message", "finished_at", "lease_expires_at", "lease_owner"])
        submission_refund(submission_id=run.submission_id)
    runs_changed(submission_id=run.submission_id, scored=False)


def submission_fail_for_platform(*, submission_id: int, reason: str) -> None:
    """Fail every run of the submission that has not ended, for the platform's reasons (refunded)."""
    with transaction.atomic():
        submission_refund(submission_id=submission_id)
        Run.objects.filter(submission_id=submission_id).exclude(status__in=RUN_ENDED).update(
            status=RunStatus.FAILED,
            error_message=platform_message(reason),
            finished_at=timezone.now(),
            lease_expires_at=None,
            lease_owner="",
        )
    runs_changed(submission_id=submission_id, scored=False)


def submission_refund(*, submission_id: int) -> None:
    """The submission no longer counts toward the team's quotas, unless one of its runs has already answered:
    a run scored (any challenge: its score is readable) or a host's scoring program failed on it. What the
    team saw of that run is an answer about the hidden labels, which a refund would make free: a file scored
    beside one the platform failed on was a free probe past every quota (issues 26 and 33). Cancelling
    follows the same rule."""
    if answered_runs(submission_id=submission_id).exists():
        return
    Submission.objects.filter(pk=submission_id).update(counts_toward_quota=False)


def answered_runs(*, submission_id: int):
    """The submission's runs that answered about the hidden labels: scored, or failed by the host's scoring
    program (:func:`submission_refund`'s rule)."""
    return Run.objects.filter(submission_id=submission_id).filter(
        Q(status=RunStatus.SUCCEEDED)
        | Q(status=RunStatus.FAILED, error_message=PROGRAM_FAILED, submission__challenge__scoring_program__gt="")
    )


def submission_charge_if_answered(*, submission_id: int) -> None:
    """A run just answered: a refund an earlier run's platform fault gave ends (whichever run the platform
    failed first, the answer is charged; :func:`submission_refund`)."""
    if answered_runs(submission_id=submission_id).exists():
        Submission.objects.filter(pk=submission_id, counts_toward_quota=False).update(counts_toward_quota=True)


def _summarise(statuses: list[tuple[str, str]]) -> tuple[str | None, str]:
    """(new status or None to keep it, error message) from the runs' (status, error) pairs."""
    if not statuses:
        return None, ""
    failed = [message or "unknown error" for status, message in statuses if status == RunStatus.FAILED]
    if all(status in RUN_ENDED for status, _ in statuses):
        scored = len(failed) < len(statuses)
        error = f"{len(failed)} of {len(statuses)} runs failed; first error: {failed[0]}" if failed else ""
        return (SubmissionStatus.SCORED if scored else SubmissionStatus.FAILED), error
    if any(status != RunStatus.QUEUED for status, _ in statuses):
        return SubmissionStatus.RUNNING, ""
    return None, ""


def submission_refresh_status(*, submission_id: int) -> Submission:
    """Derive the submission's status from its runs: it ends when every run has ended."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if submission.status == SubmissionStatus.CANCELLED:
            return submission
        status, error = _summarise(list(submission.runs.values_list("status", "error_message")))
        if status in (SubmissionStatus.SCORED, SubmissionStatus.FAILED):
            submission.status, submission.error_message = status, error
            submission.finished_at = submission.finished_at or timezone.now()
            submission_ended_record(submission=submission)  # mails and webhooks, once, after commit
        elif status == SubmissionStatus.RUNNING:
            submission.status = status
            submission.started_at = submission.started_at or timezone.now()
        submission.save(update_fields=["status", "finished_at", "started_at", "error_message"])
    return submission


def run_deadline(run: Run | StudyRun) -> datetime | None:
    """When a running run (a leaderboard ``Run`` or a variance study's ``StudyRun``) is judged stuck:
    its start plus its challenge's wall-time limit plus ``STUCK_RUN_GRACE_S``; None before it started.

    The one "stuck" rule: the reaper (:func:`runs_fail_stuck`), the study-run claim and the janitor's
    resending of study runs all compare ``now`` with it.
    """
    if run.started_at is None:
        return None
    challenge = run.study.challenge if isinstance(run, StudyRun) else run.submission.challenge
    return run.started_at + timedelta(seconds=challenge.run_wall_time_s() + settings.VARBOARD["STUCK_RUN_GRACE_S"])


def run_is_stuck(run: Run | StudyRun, now=None) -> bool:
    """``running`` past :func:`run_deadline` (its worker was lost, or hangs)."""
    deadline = run_deadline(run)
    return run.status == RunStatus.RUNNING and deadline is not None and deadline < (now or timezone.now())


def runs_fail_stuck(*, now=None) -> int:
    """Fail runs that have been ``running`` past :func:`run_deadline` (a reaper)."""
    now = now or timezone.now()
    failed = 0
    candidates = Run.objects.filter(status=RunStatus.RUNNING, started_at__isnull=False).select_related(
        "submission__challenge"
    )
    for run in candidates:
        if run_is_stuck(run, now):
            limit = run_deadline(run) - run.started_at
            run_fail_for_platform(
                run_id=run.pk, reason=f"the run was still marked running {limit} after it started; its worker was lost"
            )
            failed += 1
    return failed


def runs_requeue_expired(*, now=None) -> list[Run]:
    """Put back in the queue the running runs whose lease expired (their worker was lost).

    Each goes back to ``queued`` with ``last_error`` saying why and ``enqueued_at`` = now; the
    caller (the janitor) publishes its task again. Rows another janitor is handling are skipped.
    The attempt is not undone: a worker lost again and again wears the run out (see run_claim).
    """
    now = now or timezone.now()
    with transaction.atomic():
        runs = list(
            Run.objects.select_for_update(skip_locked=True).filter(status=RunStatus.RUNNING, lease_expires_at__lt=now)
        )
        for run in runs:
            run.status, run.last_error, run.enqueued_at = RunStatus.QUEUED, LOST_WORKER, now
            run.lease_expires_at, run.lease_owner = None, ""
            run.save(update_fields=["status", "last_error", "enqueued_at", "lease_expires_at", "lease_owner"])
    return runs


def runs_extend_leases(*, until) -> int:
    """Push every running run's lease out to at least ``until`` (the janitor's return after an
    absence); returns how many leases moved. Leases already reaching further are left alone."""
    return Run.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=until).update(lease_expires_at=until)


def submissions_settle() -> int:
    """Bring up to date the submissions still marked queued or running whose runs have all ended.

    A run's result and its submission's status are written in two transactions; a database
    that fell over between them (or a worker lost right then) leaves the submission behind. Its
    status is derived again and a report requested. Returns how many were settled.
    """
    behind = (
        Submission.objects.filter(status__in=SUBMISSION_ACTIVE, runs__isnull=False)
        .exclude(runs__status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        .distinct()
        .values_list("pk", flat=True)
    )
    settled = 0
    for submission_id in behind:
        runs_changed(submission_id=submission_id)
        settled += 1
    return settled
