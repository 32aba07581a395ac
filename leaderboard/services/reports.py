"""Leaderboard reports: gather the stored runs, build the report (a pure function), cache it.

Coalescing: ``report_request`` flips ``Report.recompute_pending`` from False to True with
one conditional UPDATE and enqueues only when it did the flip. Fifty runs finishing in a
second flip it once; the task clears the flag before it reads the runs, so a run landing
during a recomputation triggers exactly one more.

The report is :func:`evaluation.report.build_report` of every scored run, read with one
query (``values_list``: no model instances, no N+1). What it depends on is listed once:
``Challenge.REPORT_SETTINGS`` (and the runs); the cache key, the inputs version and the
API's one-query read all derive from it.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import marshal
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import orjson
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluation.boards import rounded_predictions_reason, rounded_tie_reason, shown_entries
from evaluation.report import (
    REPORT_FORMAT,
    EntryRuns,
    ReportSettings,
    build_report,
    collector_paused,
    compare,
    entry_fingerprint,
    flip_comparison,
    section_pairs,
)

from ..choices import SUBMISSION_ACTIVE, Board, Feedback, RunStatus, SubmissionKind, SubmissionStatus
from ..models import Challenge, PrivateReport, Report, ReportLease, ReportPiece, ReportRow, Run, Submission
from ..report_rows import ROW_TABLE, own_row, report_skeleton, row_ids, skeleton_pieces
from ..selectors import (
    REPORT_MODELS,
    SNAPSHOT_RUN_COLUMNS,
    SNAPSHOT_SUBMISSION_COLUMNS,
    ChallengeRuns,
    challenge_runs,
    report_stored_meta,
    rows_as_stored,
    submission_read_by_reports,
    submissions_read_by_reports,
)
from .boards import board_fields, board_has_private, board_pool_files, board_publish
from .dispatch import RECOMPUTE_REPORT, enqueue_on_commit
from .entries import Version, entry_versions, final_selection_ids, public_board_ids, selection_on_public_board
from .errors import ServiceError
from .heartbeats import renew_until_stopped
from .history import record_moves
from .metrics import challenge_metrics, primary_metric
from .rank_states import rank_slot

logger = logging.getLogger(__name__)

#: Query parameters that may override a challenge's report settings, and the Challenge field each
#: overrides (its model validators are the override's validators).
OVERRIDABLE = {"n": "boo_n", "gamma": "gamma", "alpha": "alpha", "statistic": "ranking_statistic"}

MULTIPLICITY_NOTE = (
    "m counts every test-set evaluation of this kind in the challenge (in the prediction-file "
    "section every scored prediction file, in the recipe section every recipe submission), in every "
    "phase, not only the entries shown: picking the best of many adaptive tries flatters the best score "
    "(too high where higher is better, too low where lower is; Møllersen & Holsbø), and each try is one "
    "more draw."
)


# ------------------------------------------------------------------ requesting and caching
def report_request(*, challenge_id: int, board: str = Board.PUBLIC) -> bool:
    """Ask for a recomputation; returns True when this call queued one.

    ``board`` private: a change only the private board reads (a team's final choice before the reveal) is asked for
    on the private board's own flag, which its readers see. Through the public board's, which the board publishes as
    ``recompute_pending`` (its page: "New runs have arrived"), a reader polling the board read when a team chose its
    final entries (tests/platform/test_leaks_v6.py). The recomputation rebuilds whichever board's inputs moved."""
    model = REPORT_MODELS[Board(board)]
    model.objects.get_or_create(challenge_id=challenge_id)
    flipped = model.objects.filter(challenge_id=challenge_id, recompute_pending=False).update(
        recompute_pending=True, requested_at=timezone.now()
    )
    if flipped:
        enqueue_on_commit(RECOMPUTE_REPORT, challenge_id, countdown=settings.VARBOARD["REPORT_DEBOUNCE_S"])
    return bool(flipped)


def report_request_after(*, submission: Submission, scored: bool = True) -> bool:
    """Ask for a recomputation after ``submission``'s runs or state changed (a run's result, a cancellation, a host's
    moderation), unless no board can read it (:func:`selectors.submission_read_by_reports`: no run scored on any
    part). Then no board's inputs moved, and the request's own trace (``recompute_pending`` on the board, a moment
    later its ``computed_at``) would tell every reader when a rival's try failed or was cancelled, or that a host
    moderated it. ``scored`` False: the change is runs that ended without a score; of a cancelled submission (a run
    it left running) no board reads them (:meth:`selectors.ChallengeRuns.read_by_reports`)."""
    if not scored and submission.status == SubmissionStatus.CANCELLED:
        return False
    if not submission_read_by_reports(submission):
        return False
    return report_request(challenge_id=submission.challenge_id)


def report_request_after_team(*, challenge: Challenge, team_id: int) -> bool:
    """:func:`report_request_after` for every submission of a team on ``challenge`` (a host's moderation of the team):
    no request where no board reads any of them."""
    ids = set(Submission.objects.filter(challenge=challenge, team_id=team_id).values_list("pk", flat=True))
    if not submissions_read_by_reports(challenge=challenge, submission_ids=ids):
        return False
    return report_request(challenge_id=challenge.pk)


def report_request_for_choice(*, challenge: Challenge) -> bool:
    """Ask for the boards after a team's choice of final entries: the private board's request, unless the public board
    shows the choices (:func:`services.entries.selection_on_public_board`: after the reveal, when choosing is closed
    anyway). The public board's flag, published, told a reader polling the board when a team chose."""
    board = Board.PUBLIC if selection_on_public_board(challenge) else Board.PRIVATE
    return report_request(challenge_id=challenge.pk, board=board)


#: How the service lays a report out, part of the settings key so that a stored report of another
#: layout is recomputed (2: each section's comparisons as one table of columns, docs/scale.md; 3: a Ladder board
#: publishes with η raised to the largest one-row move, ``services.boards.ladder_margin``: build_report's content,
#: hence REPORT_FORMAT, is unchanged, the published releases and note are not).
STORED_LAYOUT = 3


def report_settings_key(challenge: Challenge) -> str:
    """A digest of the challenge settings the report depends on (cheap: no query)."""
    return hashlib.sha256(
        repr((*challenge.report_settings_values(), REPORT_FORMAT, STORED_LAYOUT)).encode()
    ).hexdigest()[:32]


def report_inputs_version(
    *, challenge: Challenge, snapshot: ChallengeRuns | None = None, board: str = Board.PUBLIC
) -> str:
    """A hash of everything ``board``'s report depends on: settings, the dataset, the runs and submissions a board
    can read (``snapshot``: the challenge's runs and submissions already read; :meth:`ChallengeRuns.read_by_reports`)
    and, for the public board, the teams' choices only where it shows them
    (:func:`services.entries.selection_on_public_board`). The public board's version is published: an input no
    public number depends on (a rival's failed try, a team's final choice before the reveal) must not move it,
    nor re-stamp the board (``computed_at``, the ETag), which told a reader when others acted."""
    snapshot = challenge_runs(challenge=challenge) if snapshot is None else snapshot
    read = snapshot.read_by_reports()
    shows_choices = selection_on_public_board(challenge) if board == Board.PUBLIC else None
    digest = hashlib.sha256(report_settings_key(challenge).encode())
    dataset = getattr(challenge, "dataset", None)
    digest.update(repr((getattr(dataset, "version", None), getattr(dataset, "public_mask", None))).encode())
    digest.update(repr((str(board), shows_choices)).encode())
    # Each submission read with its runs, as a digest of its own: worked out again only for the submissions whose row
    # or runs changed (issue 27). The same inputs as one digest of all runs and all rows (each run is its
    # submission's), so the version moves exactly when that one moved.
    piece, name = _inputs_piece(challenge, board, shows_choices)
    groups = read.groups
    pieces = read.per_submission(name, ((row[0], row, groups.get(row[0], ())) for row in read.submissions), piece)
    digest.update(b"".join(pieces.values()))
    return digest.hexdigest()


def _inputs_piece(challenge: Challenge, board: str, shows_choices: bool | None):
    """``(piece, name)``: the digest of one submission's row and runs as ``board``'s inputs version reads them,
    and the name it is kept under (:meth:`selectors.ChallengeRuns.per_submission`)."""
    if board != Board.PUBLIC:

        def private(row, runs) -> bytes:
            # The database's own values (ints, floats, strings, None, booleans), serialised at once by value
            # (marshal version 2 keeps no references): Django's converters and repr() would cost ten times more.
            return hashlib.sha256(marshal.dumps((row, list(runs)), 2)).digest()

        return private, f"inputs:{board}"
    chosen = SNAPSHOT_SUBMISSION_COLUMNS.index("selected_for_final")
    # Of each run, what the public board reads: whether it succeeded (not a run starting: queued -> running), its
    # score on the public board's rows (not the private rows': a host's correction of private labels), its
    # validation score, its secondary scores (one column, all parts) and its rescores (outcomes that moved).
    column = board_fields(challenge, Board.PUBLIC)[0]
    score = SNAPSHOT_RUN_COLUMNS.index(column)
    status, valid, extra, revision = (
        SNAPSHOT_RUN_COLUMNS.index(c) for c in ("status", "valid_score", "extra_scores", "result_revision")
    )
    succeeded = RunStatus.SUCCEEDED

    def public(row, runs) -> bytes:
        if not shows_choices:  # a team's final choice, unless the public board shows it
            row = (*row[:chosen], None, *row[chosen + 1 :])
        runs = [(r[0], r[1], r[status] == succeeded, r[score], r[valid], r[extra], r[revision]) for r in runs]
        return hashlib.sha256(marshal.dumps((row, runs), 2)).digest()

    return public, f"inputs:public:{column}:{shows_choices}"


def report_recompute(*, challenge_id: int, force: bool = False, reuse: bool = False) -> Report:
    """Recompute and cache the reports (public board, and private board when there is one) unless
    the cached ones have the same inputs version. Returns the public board's report.

    ``reuse``: keep this read of the runs in the process for the next update, which then reads again only the runs
    that changed (``selectors.challenge_runs``, issue 27; ~140 MB on 20,000 entries x 16 runs): the report worker's
    task only, never a web process (``report_current`` recomputes in a reader's request).

    The recomputation holds the board's lease meanwhile (:class:`recompute_lease`), so the janitor does
    not send it again while it runs. Python's cyclic collector is paused: decoding the stored report
    allocates millions of acyclic objects, and each collection they trigger walks all of them
    (docs/scale.md). The report worker (``reuse``) then freezes what it keeps (:func:`_collector_frozen_after`); a web
    process, which recomputes a small board in a reader's request, only pauses the collector (a full collection of its
    heap at each such request would cost the reader more than the update)."""
    with _collector_frozen_after() if reuse else collector_paused(), recompute_lease(challenge_id=challenge_id):
        return _recompute(challenge_id=challenge_id, force=force, reuse=reuse)


#: Updates between two full collections of what the updates left frozen (:func:`_collector_frozen_after`).
FROZEN_COLLECT_EVERY = 64
_frozen = {"updates": 0}
_FROZEN_LOCK = threading.Lock()


@contextlib.contextmanager
def _collector_frozen_after():
    """:func:`collector_paused`, and where this call paused the collector, what the process then holds frozen
    (``gc.freeze``) before it is enabled again. Enabled with the update's young objects in its youngest generation, the
    collector walked them all at once (the board this worker keeps, ~330,000 objects on a board of 20,000 entries:
    0.04 s of every update); frozen, it walks none of them, and what is freed by its reference count (the board
    replaced at the next update) is freed as before. Cycles among frozen objects (a model instance and its field file,
    a finished thread's connection, closures: ~80 objects an update, bounded by the update, not the board) wait for the
    full collection every :data:`FROZEN_COLLECT_EVERY` updates, which unfreezes everything first
    (tests/platform/test_report_collector.py). Where it freezes, the cyclic garbage other work left (a failed task's
    traceback and its arrays, in an older generation) is collected first, before the update allocates anything: else
    it was frozen too, held until that full collection (tests/platform/test_snapshot_attacks.py); what is not frozen
    between two updates (what other tasks keep) is all that collection walks."""
    outermost = gc.isenabled()
    if outermost:
        gc.collect()
    with collector_paused():
        yield
        if outermost:
            with _FROZEN_LOCK:
                if _frozen["updates"] >= FROZEN_COLLECT_EVERY:
                    gc.unfreeze()
                    gc.collect()
                    _frozen["updates"] = 0
                gc.freeze()
                _frozen["updates"] += 1


def _lease_until() -> datetime:
    return timezone.now() + timedelta(seconds=settings.VARBOARD["LEASE_S"])


#: When this process's latest recomputation of a board that failed took the board's request (``recompute_lease``), for
#: the give-up that follows in the same process (Celery calls the task's ``give_up`` where its last attempt ran): a
#: request made after that is not the one given up (:func:`report_recompute_gave_up`).
_failed_attempt_took: dict[int, datetime] = {}


class recompute_lease:  # noqa: N801 - used as a context manager, like contextlib's
    """The lease of a board's running recomputation, renewed from a thread every ``VARBOARD_HEARTBEAT_S``.

    Taken with the request (``recompute_pending`` cleared just after the lease is written: the janitor never sees a
    started request without its lease; a worker lost between the two leaves the request pending, sent again once the
    lease expired), so that the janitor leaves a recomputation alone while it runs, however long
    (a 20,000-entry board takes ~15 s, a slow database longer): before, a request newer than the last board was
    sent again at every pass past ``REQUEUE_AFTER_S``, and two recomputations of the same board ran at once.
    A worker that is lost (SIGKILL, its machine gone) stops renewing it, and the janitor sends the request
    again once it expired (``LEASE_S`` after the last renewal). Released when the recomputation answered the
    request; a failure leaves it to expire (the database may be what failed), and a recomputation that starts
    meanwhile takes it over (the renewals of the first then stop, and the one that holds the lease last ends the
    give-ups in a row when it answers). The lease is a row of its own (``ReportLease``): only the take's clearing
    of the request and the new board rewrite the report's row, its skeleton with it (SQLite rewrites a whole row).
    """

    def __init__(self, *, challenge_id: int):
        self.challenge_id = challenge_id
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-report-{challenge_id}", daemon=True)

    def _mine(self):
        return ReportLease.objects.filter(challenge_id=self.challenge_id, owner=self.owner)

    def __enter__(self) -> recompute_lease:
        _failed_attempt_took.pop(self.challenge_id, None)
        self.taken_at = timezone.now()  # the requests made until now are this recomputation's
        report = Report.objects.filter(challenge_id=self.challenge_id)
        leased = report.exists()  # no row yet (a board's first recomputation, in a reader's request): nothing to lease
        if leased:  # the lease first: the janitor may see it with the request still pending, never the reverse
            lease = ReportLease(challenge_id=self.challenge_id, owner=self.owner, expires_at=_lease_until())
            ReportLease.objects.bulk_create(
                [lease], update_conflicts=True, unique_fields=["challenge"], update_fields=["owner", "expires_at"]
            )
            # the request cleared where pending only: else the report's row is left as it is, not rewritten
            report.filter(recompute_pending=True).update(recompute_pending=False)
            self._thread.start()
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join()
        if exc_type is not None:
            _failed_attempt_took[self.challenge_id] = self.taken_at
        else:  # answered: the lease goes, and with it the give-ups in a row (the report's row left as it is if none)
            # the give-ups first: a worker lost between the two leaves a lease to expire, not a retry falling due
            Report.objects.filter(challenge_id=self.challenge_id, challenge__report_lease__owner=self.owner).filter(
                Q(recompute_give_ups__gt=0) | Q(recompute_retry_at__isnull=False)
            ).update(recompute_give_ups=0, recompute_retry_at=None)
            self._mine().delete()

    def _beat(self) -> None:
        renew_until_stopped(
            self._stop,
            lambda: bool(self._mine().update(expires_at=_lease_until())),
            on_lost=lambda: logger.info(
                "report of challenge %s: another recomputation took over the lease",
                self.challenge_id,
                extra={"challenge_id": self.challenge_id},
            ),
            what=f"report of challenge {self.challenge_id}",
            extra={"challenge_id": self.challenge_id},
            transient=lambda exc: isinstance(exc, DatabaseError),
        )


def report_leases_extend(*, until: datetime) -> int:
    """Give every held recomputation lease until ``until`` (the janitor's return after an absence, when the
    renewals could not be written either); returns how many."""
    return ReportLease.objects.update(expires_at=until)


#: A recomputation was asked for and started (it cleared ``recompute_pending``) but never stored a board nor a
#: failure after the request: its worker's machine was lost, or the database stayed away longer than its retries
#: and the give-up could not be written either.
_REQUEST_UNFINISHED = (Q(computed_at__isnull=True) | Q(computed_at__lt=F("requested_at"))) & (
    Q(failed_at__isnull=True) | Q(failed_at__lt=F("requested_at"))
)


def reports_lost(*, now: datetime) -> list[int]:
    """The challenges whose recomputation the janitor should send again (the rule, in one place).

    A request left pending or started and unfinished for more than ``REQUEUE_AFTER_S``, and a recomputation
    given up whose retry is due (:func:`report_recompute_gave_up`); never one whose lease is alive (it is
    running: :class:`recompute_lease`).
    """
    stale_before = now - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"])
    asked = Q(requested_at__lt=stale_before) & (Q(recompute_pending=True) | _REQUEST_UNFINISHED)
    # the private board's own requests (a team's choice), pending or started and unfinished, as the public one's
    private_asked = PrivateReport.objects.filter(asked)
    return list(
        Report.objects.filter(
            asked | Q(recompute_retry_at__lte=now) | Q(challenge_id__in=private_asked.values("challenge_id"))
        )
        .exclude(challenge__report_lease__expires_at__gt=now)
        .values_list("challenge_id", flat=True)
    )


def report_resent(*, challenge_id: int, now: datetime) -> None:
    """Record that the janitor sent the recomputation again now (a due retry becomes an ordinary request); a private
    board's own request is renewed on its own row (the public one's was not asked for)."""
    Report.objects.filter(challenge_id=challenge_id).filter(
        Q(recompute_pending=True) | _REQUEST_UNFINISHED | Q(recompute_retry_at__isnull=False)
    ).update(requested_at=now, recompute_retry_at=None)
    PrivateReport.objects.filter(challenge_id=challenge_id).filter(
        Q(recompute_pending=True) | _REQUEST_UNFINISHED
    ).update(requested_at=now)


#: Longest interval before a given-up recomputation is sent again.
GIVE_UP_RETRY_MAX_S = 86_400.0

#: What readers see of a recomputation given up (the cause, which may quote data, is logged only).
GAVE_UP_MESSAGE = "the recomputation failed repeatedly on a platform error (the database); it will be tried again"


def report_recompute_gave_up(*, challenge_id: int, reason: str) -> None:
    """A recomputation whose task gave up (Celery's retries spent on a database error, or an error not retried).

    Before, nothing was written: the request stayed unfinished and the janitor sent it again at every pass past
    ``REQUEUE_AFTER_S``, each one retried again, for ever (a board failing for good took a worker for good). Now
    the give-ups in a row are counted and the janitor sends the next one after ``REPORT_GIVE_UP_RETRY_S``,
    doubled with each further give-up (at most a day): a database that came back is recovered then (or at the
    next run's request), a board that fails for good costs one recomputation per interval. Where no failure was
    recorded for the request (a database error), the board is marked failed, so it is not seen as unfinished.
    When this write fails too (the database is down), the request stays unfinished and the janitor sends it
    again when the database is back. A request already answered by another recomputation is left as it is, and so
    is one made after the last attempt took the board's request (a new entry scored meanwhile): it has its own
    recomputation (queued, or running under its lease), and marked failed it was not sent again if that one was
    lost, not until this give-up's retry fell due.
    """
    now = timezone.now()
    took = _failed_attempt_took.pop(challenge_id, None)
    with transaction.atomic():
        unanswered = Report.objects.select_for_update().filter(
            Q(computed_at__isnull=True) | Q(computed_at__lt=F("requested_at")), challenge_id=challenge_id
        )
        if took is not None:  # a request made while the last attempt ran is its own recomputation's (queued)
            unanswered = unanswered.filter(Q(requested_at__isnull=True) | Q(requested_at__lte=took))
        give_ups = unanswered.values_list("recompute_give_ups", flat=True).first()
        if give_ups is None:
            logger.warning(
                "report of challenge %s: a recomputation gave up (%s); its request was answered since, or a newer "
                "one is left to its own recomputation",
                challenge_id,
                reason,
                extra={"challenge_id": challenge_id},
            )
            return
        give_ups += 1
        delay = min(GIVE_UP_RETRY_MAX_S, settings.VARBOARD["REPORT_GIVE_UP_RETRY_S"] * 2 ** min(give_ups - 1, 20))
        unanswered.update(recompute_give_ups=give_ups, recompute_retry_at=now + timedelta(seconds=delay))
        unanswered.filter(Q(failed_at__isnull=True) | Q(failed_at__lt=F("requested_at"))).update(
            recompute_failure=GAVE_UP_MESSAGE, failed_at=now
        )
    logger.error(
        "report of challenge %s: recomputation given up (%d in a row): %s; the janitor sends it again in %.0f s",
        challenge_id,
        give_ups,
        reason,
        delay,
        extra={"challenge_id": challenge_id},
    )


def _recompute(*, challenge_id: int, force: bool, reuse: bool) -> Report:
    """Rebuild each board whose inputs version moved (both with ``force``): the public board and, where there is
    one, the private board, each stamped only when its own inputs changed."""
    challenge = Challenge.objects.get(pk=challenge_id)
    report = _with_data(Report.objects.defer("data").get_or_create(challenge=challenge)[0])
    private = _with_data(PrivateReport.objects.defer("data").filter(challenge=challenge).first())
    if private is not None and private.recompute_pending:  # the private board's own request is answered here too
        PrivateReport.objects.filter(pk=private.pk).update(recompute_pending=False)  # before the runs are read
    # read once: the inputs versions, the versions, the entries; kept in the worker's process only (issue 27)
    snapshot = challenge_runs(challenge=challenge, reuse=reuse)
    version = report_inputs_version(challenge=challenge, snapshot=snapshot)
    has_private = board_has_private(challenge)
    private_version = (
        report_inputs_version(challenge=challenge, snapshot=snapshot, board=Board.PRIVATE) if has_private else ""
    )
    public_stale = force or report.inputs_version != version or not report.data
    # The private board's rows carry their public rank: a new public board stales it too.
    private_stale = has_private and (public_stale or private is None or private.inputs_version != private_version)
    if not (public_stale or private_stale):
        # Nothing to do for the requests: answered (else the janitor would take them for recomputations lost).
        _answered(report)
        _answered(private)
        return report
    versions = entry_versions(challenge=challenge, snapshot=snapshot)
    failing = [report] if public_stale else []
    if has_private:
        private = private or PrivateReport.objects.create(challenge=challenge)
        failing.append(private)  # a public failure stales both boards
    try:
        if public_stale:
            previous = report.data
            _save(
                report,
                version,
                lambda: build_report_data(challenge=challenge, versions=versions, previous=previous, snapshot=snapshot),
            )
        if has_private and private_stale:
            failing = [private]
            previous_private = private.data
            _save(
                private,
                private_version,
                lambda: build_report_data(
                    challenge=challenge,
                    board=Board.PRIVATE,
                    versions=versions,
                    public_data=report.data,
                    previous=previous_private,
                    snapshot=snapshot,
                ),
            )
    except Exception as exc:
        if not isinstance(exc, DatabaseError):  # an outage is answered 503 and retried, not a board's failure
            key = report_settings_key(challenge)
            for stale in failing:
                _record_failure(stale, exc, key)
        raise
    if not public_stale:  # the request is answered, the board unchanged: its inputs are those it was computed from
        _answered(report)
    if not private_stale:
        _answered(private)
    return report


#: The board of each kind this process stored last (``_save``), by model: (its key, its data, its row ids). A worker's
#: next update reads it here, not decoded again from the database (~0.4 s of an update of 20,000 entries:
#: docs/scale.md). Shared with the caller of ``report_recompute``: read it, never change it.
_STORED: dict[str, tuple] = {}


def _stored_key(report) -> tuple:
    """What tells a stored board from any other: ``_save`` moves its count and its time in one UPDATE."""
    model = type(report).__name__
    return (model, report.pk, report.challenge_id, report.recompute_count, report.computed_at, report.inputs_version)


def _with_data(report):
    """``report`` (read without its data) with its data: this process's copy when it stored this very board last
    (:data:`_STORED`), else read again, whole, from the database."""
    if report is None or report.computed_at is None:
        return report if report is None or report.pk is None else type(report).objects.get(pk=report.pk)
    kept = _STORED.get(type(report).__name__)
    if kept is None or kept[0] != _stored_key(report):
        return type(report).objects.get(pk=report.pk)
    report.data, report.row_ids = kept[1], kept[2]
    return report


def _answered(report) -> None:
    """Mark a request that found its board's inputs unchanged as answered (its ``requested_at`` back to the board's
    ``computed_at``): left after ``computed_at``, :func:`reports_lost` would take it for a recomputation lost."""
    if report is None or not report.requested_at:
        return
    if (
        report.computed_at is None or report.computed_at < report.requested_at
    ):  # None: a board never built (no private part)
        type(report).objects.filter(pk=report.pk, recompute_pending=False).update(requested_at=report.computed_at)


def _save(report, version: str, build) -> None:
    """Store the report ``build()`` returns in pieces (``leaderboard.report_rows``): the rows that changed, the
    skeleton without its comparison tables' blocks of pairs, and the count with it in one UPDATE (SQLite rewrites a
    whole row at each), the blocks that are new; all in one transaction (a reader never sees a half-written board)."""
    started = time.perf_counter()
    data = build()
    report.inputs_version = version
    report.computed_at = timezone.now()
    report.duration_s = time.perf_counter() - started
    model = type(report)
    skeleton = report_skeleton(data)
    stored, pieces = skeleton_pieces(skeleton)
    fields = {
        "data": stored,
        "inputs_version": version,
        "computed_at": report.computed_at,
        "duration_s": report.duration_s,
        "recompute_count": F("recompute_count") + 1,
        "recompute_failure": "",
        "failed_at": None,
        "failed_settings_key": "",
    }
    with transaction.atomic():
        # Stored over the report this recomputation read only (the UPDATE locks its row until the commit) ...
        overtaken = not model.objects.filter(pk=report.pk, recompute_count=report.recompute_count).update(**fields)
        if overtaken:
            # ... else another (a second worker process, a reader's request) stored the board since it was read:
            # the rows to write are those that differ from the board stored now, not from the one read (a row the
            # other deleted stayed deleted under a skeleton that lists it, and the board could not be read again,
            # not even by the next recomputation). This one's runs may be the older: another is asked for.
            fresh = model.objects.select_for_update().get(pk=report.pk)
            report.data, report.row_ids, report.recompute_count = fresh.data, fresh.row_ids, fresh.recompute_count
            model.objects.filter(pk=report.pk).update(**fields)
        _write_rows(report, data, skeleton)
        _write_pieces(report, pieces)
        record_moves(
            challenge_id=report.challenge_id,
            board=model.BOARD,
            before=report.data,
            after=data,
            at=report.computed_at,
        )
        if overtaken:
            report_request(challenge_id=report.challenge_id)
    report.data, report.row_ids, report.recompute_count = data, row_ids(skeleton), report.recompute_count + 1
    report.recompute_failure, report.failed_at, report.failed_settings_key = "", None, ""
    _STORED[model.__name__] = (_stored_key(report), report.data, report.row_ids)


def report_failure(report) -> dict | None:
    """``{message, at}`` when the latest recomputation of ``report`` failed (it is served as it was), else None."""
    return {"message": report.recompute_failure, "at": report.failed_at} if report.recompute_failure else None


def _record_failure(report, exc: Exception, settings_key: str) -> None:
    """Mark the stored report with why its recomputation failed, and under which settings: it stays, served with
    the reason, instead of a board that silently stops updating. A service error says what is wrong; anything
    else is named by its type only (its text could quote data a reader may not see)."""
    message = exc.message if isinstance(exc, ServiceError) else f"an internal error ({type(exc).__name__})"
    report.recompute_failure, report.failed_at, report.failed_settings_key = message, timezone.now(), settings_key
    type(report).objects.filter(pk=report.pk).update(
        recompute_failure=message, failed_at=report.failed_at, failed_settings_key=settings_key
    )


def _write_rows(report, data: dict, skeleton: dict) -> None:
    """Write the own rows of ``data`` (whose skeleton is ``skeleton``) that differ from those stored with ``report``
    (its ``data`` still the previous report), delete those of entries no longer shown (``report.written_rows``: how
    many rows were written)."""
    moving = set(skeleton[ROW_TABLE]["columns"])
    rows = {row["submission_id"]: row for row in data["entries"]}
    stored = ReportRow.objects.filter(challenge_id=report.challenge_id, board=type(report).BOARD)
    before_ids = getattr(report, "row_ids", None)
    if before_ids is None:  # stored whole until now, or never: every row is written
        stored.delete()
        changed = list(rows)
    else:
        gone = [sid for sid in before_ids if sid not in rows]
        for start in range(0, len(gone), 500):
            stored.filter(submission_id__in=gone[start : start + 500]).delete()
        before = {row["submission_id"]: row for row in (report.data or {}).get("entries", ())}
        # A row equal as a whole has the same own row (one comparison, most rows); else the own rows are compared.
        changed = [
            sid
            for sid, row in rows.items()
            if sid not in before or (row != before[sid] and own_row(row, moving) != own_row(before[sid], moving))
        ]
    ReportRow.objects.bulk_create(
        [
            ReportRow(
                challenge_id=report.challenge_id,
                board=type(report).BOARD,
                submission_id=sid,
                data=own_row(rows[sid], moving),
            )
            for sid in changed
        ],
        update_conflicts=True,
        unique_fields=["challenge", "board", "submission_id"],
        update_fields=["data"],
        batch_size=500,
    )
    report.written_rows = len(changed)


def _write_pieces(report, pieces: dict[str, dict]) -> None:
    """Write the pieces of the skeleton (``report_rows.skeleton_pieces``) the board does not store yet, delete those
    its new skeleton no longer lists (``report.written_pieces``: how many were written). Keyed by their content: the
    stored keys tell which, whatever board this update read (an overtaken save too)."""
    stored = ReportPiece.objects.filter(challenge_id=report.challenge_id, board=type(report).BOARD)
    have = set(stored.values_list("key", flat=True))
    gone = sorted(have - set(pieces))
    for start in range(0, len(gone), 500):
        stored.filter(key__in=gone[start : start + 500]).delete()
    new = [key for key in pieces if key not in have]
    ReportPiece.objects.bulk_create(
        [
            ReportPiece(challenge_id=report.challenge_id, board=type(report).BOARD, key=key, data=pieces[key])
            for key in new
        ],
        batch_size=100,
    )
    report.written_pieces = len(new)


#: Largest public board recomputed in the reader's request after a settings change; a larger one is
#: recomputed in the background (``report_request`` queued it) and served meanwhile, marked pending.
SYNC_MAX_ENTRIES = 500


def report_current(*, challenge: Challenge, board: str = Board.PUBLIC):
    """The cached report of ``board``, recomputed synchronously when missing or made with other settings.

    When runs changed, ``report_request`` has already queued a recomputation: the cached
    report is served meanwhile (``recompute_pending`` says so). So is a public board of more
    than :data:`SYNC_MAX_ENTRIES` entries whose settings changed, while its recomputation is
    queued (docs/scale.md): a full recomputation of thousands of entries takes seconds. When the
    recomputation fails and a report is stored, that report is served, marked with the failure
    (``recompute_failure``, ``failed_at``), and not recomputed again in readers' requests under the settings
    it failed with (the worker retries when runs change); with none stored, the error is raised.
    """
    model = REPORT_MODELS[Board(board)]
    report = model.objects.filter(challenge=challenge).first()
    stored = not (report is None or not report.data or report.computed_at is None)
    missing = not stored
    if stored and report.data.get("settings_key") != (key := report_settings_key(challenge)):
        queued = board == Board.PUBLIC and report.recompute_pending
        failed = report.recompute_failure and report.failed_settings_key == key  # tried with these settings
        missing = not (queued and len(report.data.get("entries", ())) > SYNC_MAX_ENTRIES) and not failed
    if missing:
        try:
            report_recompute(challenge_id=challenge.pk, force=True)
        except DatabaseError:
            raise  # an outage: 503, retried
        except Exception:
            if not stored:
                raise  # nothing to serve
            return model.objects.get(challenge=challenge)  # the last report, marked with the failure
        report = model.objects.get(challenge=challenge)
    return report


#: Decoded reports kept per process, by (model, report id, computed_at): a 20,000-entry report is 21 MB of skeleton
#: and 20,000 rows of JSON (~1 s to read and decode), read once per new report rather than on every request.
_DECODED: dict = {}
_DECODED_SIZE = 2
_DECODED_LOCK = threading.Lock()


def report_data(*, challenge: Challenge, board: str = Board.PUBLIC) -> tuple[Report | PrivateReport, dict]:
    """(the stored report of ``board`` without its data, its data): :func:`report_current`'s, decoded once per report
    version and process. The data is shared between requests: read it, never change it. Every page and endpoint
    that reads a stored board reads it here: the state of the art, compare and history decoded the whole board
    at every request (1.2 s for ``/sota/`` on 20,000 entries, where the page took 0.14 s)."""
    meta = report_stored_meta(challenge=challenge, board=board)
    key = None if meta is None or meta.computed_at is None else (type(meta).__name__, meta.pk, meta.computed_at)
    data = _DECODED.get(key) if key else None
    if data is None or data.get("settings_key") != report_settings_key(challenge):
        meta = report_current(challenge=challenge, board=board)
        data = meta.data
        key = (type(meta).__name__, meta.pk, meta.computed_at)
        with _DECODED_LOCK:
            while len(_DECODED) >= _DECODED_SIZE:
                _DECODED.pop(next(iter(_DECODED)))
            _DECODED[key] = data
    return meta, data


# ------------------------------------------------------------------ building
def report_settings(
    *,
    challenge: Challenge,
    overrides: dict[str, Any] | None = None,
    m_total_predictions: int | None = None,
    m_total_recipes: int | None = None,
) -> ReportSettings:
    """The challenge's statistical settings, with the :data:`OVERRIDABLE` parameters overridden."""
    values = {field: getattr(challenge, field) for field in OVERRIDABLE.values()}
    for key, value in (overrides or {}).items():
        values[OVERRIDABLE[key]] = value
    metric = primary_metric(challenge)
    return ReportSettings(
        higher_is_better=challenge.higher_is_better,
        n_resamples=challenge.bootstrap_resamples,
        master_seed=challenge.master_seed,
        correction=challenge.correction,
        k_runs=challenge.k_runs,
        m_total_predictions=m_total_predictions,
        m_total_recipes=m_total_recipes,
        accuracy_like=metric.name == "accuracy" and challenge.program_primary is None,
        metric_from_mean=metric.from_mean,
        metric_pool_files=board_pool_files(challenge),
        score_range=metric.score_range,
        boo_n=values["boo_n"],
        gamma=values["gamma"],
        alpha=values["alpha"],
        statistic=values["ranking_statistic"],
        backend=settings.VARBOARD.get("STATS_BACKEND", "auto"),
        device=settings.VARBOARD.get("STATS_DEVICE", "auto"),
        comparison_table=True,
        secondary=tuple(challenge_metrics(challenge)),
    )


def report_entries(
    *,
    challenge: Challenge,
    board: str = Board.PUBLIC,
    versions: dict[int, Version] | None = None,
    submission_ids: set[int] | None = None,
    snapshot: ChallengeRuns | None = None,
) -> tuple[list[EntryRuns], dict[str, int]]:
    """Entries shown on ``board``, and how many test-set evaluations of each kind were ever made on it.

    Shown on the public board: one version per entry (``services.entries.public_board_ids``), on
    the private board: each team's final selection; every run with its score on that board's
    rows; entries a host moderated are on neither board. Counted (``m`` of the multiplicity-adjusted
    state of the art): every scored prediction file and every recipe submission with a scored run,
    of every version, failed, cancelled and moderated ones included (see :data:`MULTIPLICITY_NOTE`). ``submission_ids``: only these entries' runs
    are read (the counts then cover them only). ``snapshot``: the challenge's runs and
    submissions already read (a report update reads them once).
    """
    if snapshot is None:  # which version of an entry is shown depends on all of them: then read every one
        snapshot = challenge_runs(challenge=challenge, submission_ids=None if versions is None else submission_ids)
    if versions is None:
        versions = entry_versions(challenge=challenge, snapshot=snapshot)
    shown = (
        public_board_ids(challenge=challenge, versions=versions)
        if board == Board.PUBLIC
        else final_selection_ids(challenge=challenge, versions=versions)
    )
    score_field, outcomes_field = board_fields(challenge, board)
    about = {row[0]: row for row in snapshot.submissions if submission_ids is None or row[0] in submission_ids}
    kind, state = SNAPSHOT_SUBMISSION_COLUMNS.index("kind"), SNAPSHOT_SUBMISSION_COLUMNS.index("status")
    moderated = SNAPSHOT_SUBMISSION_COLUMNS.index("moderated")  # by a host (services.moderation): on no board
    runs: dict[int, list[tuple]] = {}
    files = 0
    recipes: set[int] = set()
    for sid, group in snapshot.scored(score_field).items():
        submission = about.get(sid)
        if submission is None:
            continue
        if submission[kind] == SubmissionKind.PREDICTIONS:
            files += len(group)
        else:
            recipes.add(sid)
        if submission[state] != SubmissionStatus.CANCELLED and not submission[moderated] and sid in shown:
            runs[sid] = group
    predictions = [sid for sid in runs if about[sid][kind] == SubmissionKind.PREDICTIONS]
    outcomes = _prediction_outcomes(challenge, outcomes_field, predictions)
    part = "test" if score_field == "test_score" else str(board)
    secondary = _secondary_runs(challenge, part, runs, predictions)
    score = SNAPSHOT_RUN_COLUMNS.index(score_field)
    if submission_ids is None:  # a whole board: the entries whose rows did not move are those built last
        key = (challenge.pk, str(board), score)
        entries = _entries_reused(key, about, runs, score, outcomes, secondary, by_reference=snapshot.kept)
    else:
        entries = _entries(about, runs, score, outcomes, secondary)
    if board == Board.PUBLIC and challenge.feedback == Feedback.ROUNDED:
        entries = shown_entries(entries, challenge.feedback_digits)  # the board computes from what it shows
    return entries, {SubmissionKind.PREDICTIONS: files, SubmissionKind.RECIPE: len(recipes)}


def _stored_json(value) -> dict:
    """A JSON column as ``rows_as_stored`` returns it (decoded by the driver or not)."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        value = orjson.loads(bytes(value) if not isinstance(value, str) else value)
    return value if isinstance(value, dict) else {}


def _secondary_runs(
    challenge: Challenge, part: str, runs: dict[int, list[tuple]], prediction_ids: list[int]
) -> dict[int, dict]:
    """Each entry's secondary metrics on ``part`` of the test rows (``EntryRuns.secondary``): the runs'
    scores (NaN where a run has none) and, for prediction files, the runs' outcomes when all have them."""
    names = [metric.name for metric in challenge_metrics(challenge)]
    if not names:
        return {}
    extra, run = SNAPSHOT_RUN_COLUMNS.index("extra_scores"), SNAPSHOT_RUN_COLUMNS.index("index")
    blobs = _prediction_outcomes(challenge, "extra_outcomes", prediction_ids)
    out = {}
    for sid, group in runs.items():
        scores = [_stored_json(row[extra]).get(part) or {} for row in group]
        packed = [Run.unpack_extra_outcomes(blobs.get((sid, row[run]))) for row in group] if blobs else []
        out[sid] = {
            name: (
                np.array([np.nan if s.get(name) is None else s[name] for s in scores], dtype=np.float64),
                _stacked([p.get(f"{part}/{name}") for p in packed]),
            )
            for name in names
        }
    return out


def _stacked(arrays: list) -> np.ndarray | None:
    """(runs, examples) float64 when every run has outcomes of one length, else None."""
    if not arrays or any(a is None for a in arrays) or len({a.size for a in arrays}) != 1 or not arrays[0].size:
        return None
    return np.stack(arrays).astype(np.float64)


def _prediction_outcomes(challenge: Challenge, field: str, submission_ids: list[int]) -> dict[tuple, bytes]:
    """The per-example outcomes of the prediction files' runs, by (submission, run index): only
    prediction entries have them, so a board of recipes reads none."""
    if not submission_ids:
        return {}
    rows = rows_as_stored(
        Run.objects.filter(
            submission__challenge=challenge,
            submission_id__in=submission_ids,
            status=RunStatus.SUCCEEDED,
            **{f"{field}__isnull": False},
        ).values_list("submission_id", "index", field)
    )
    return {(sid, index): blob for sid, index, blob in rows}


def _entries(
    about: dict[int, tuple],
    runs: dict[int, list[tuple]],
    score: int,
    outcomes: dict[tuple, bytes],
    secondary: dict[int, dict] | None = None,
) -> list[EntryRuns]:
    """One :class:`EntryRuns` per submission of ``runs`` (rows of :data:`SNAPSHOT_RUN_COLUMNS`, ``score`` the
    board's score column; ``about``: rows of :data:`SNAPSHOT_SUBMISSION_COLUMNS`). The columns of all the
    runs become arrays at once, each entry's a slice of them (a board of 5,000 entries: docs/scale.md)."""
    flat = [row for group in runs.values() for row in group]
    if not flat:
        return []
    run, valid_score = SNAPSHOT_RUN_COLUMNS.index("index"), SNAPSHOT_RUN_COLUMNS.index("valid_score")
    test = np.array([r[score] for r in flat], dtype=np.float64)
    index = np.array([r[run] for r in flat], dtype=np.int64)
    valid = np.array([np.nan if r[valid_score] is None else r[valid_score] for r in flat], dtype=np.float64)
    for array in (test, index, valid):  # shared by the entries' slices, and kept between updates (_BUILT)
        array.flags.writeable = False
    bounds = np.cumsum([0, *(len(group) for group in runs.values())]).tolist()
    # No validation score on any run: the entry has none (Boo_n chooses by test score). Some runs without
    # one: kept as NaN, and check_entries leaves those runs out, named in the row (issue 23, row 2).
    incomplete = np.logical_and.reduceat(np.isnan(valid), bounds[:-1]).tolist()
    out = []
    for k, (sid, group) in enumerate(runs.items()):
        sid, _, kind, status, name, team, runs_expected, created, _, _, source, link, *_ = about[sid]
        part = slice(bounds[k], bounds[k + 1])
        out.append(
            EntryRuns(
                id=sid,
                name=name,
                team=team,
                kind=kind,
                runs_expected=runs_expected,
                run_index=index[part],
                test=test[part],
                valid=None if incomplete[k] else valid[part],
                outcomes=_outcomes_of(sid, group, outcomes) if outcomes else None,
                created=created,
                in_progress=status in SUBMISSION_ACTIVE,
                provenance=None if source is None else {"source": source, "link": link or ""},
                secondary=(secondary or {}).get(sid),
            )
        )
    return out


#: The entries this process built last for the board of each kind it updated last (:func:`report_entries`,
#: :func:`_keep_last`), by (challenge, board, score column): {submission id: (its submission row, its runs, its
#: EntryRuns)} where they came from the worker's kept read (held between updates anyway), else {submission id: (the row
#: and runs as marshalled, None, its EntryRuns)}: a web process's read is not held by reference. A recipe entry without
#: secondary metrics is a function of these rows alone (:func:`_entries`): an update builds only the entries whose rows
#: moved (docs/scale.md). The arrays are read-only (:func:`_entries`); replaced whole, never changed in place.
_BUILT: dict[tuple, dict[int, tuple[Any, list | None, EntryRuns]]] = {}


def _entries_reused(
    key: tuple, about: dict, runs: dict, score: int, outcomes: dict, secondary: dict, by_reference: bool = False
) -> list[EntryRuns]:
    """:func:`_entries` of ``runs``, taking from :data:`_BUILT` each recipe entry whose submission row and runs are
    those it was built from: the very objects (the worker's kept read, ``by_reference``, hands back an unchanged
    submission's row tuple and runs list, never changed in place: ``selectors.challenge_runs(reuse=True)``), else equal
    byte for byte (marshal: -0.0 is not 0.0, nor 1 1.0; a NaN equals itself), as a full read's new objects are."""
    before, rows, kept, todo = _BUILT.get(key, {}), {}, {}, {}
    kind, recipe = SNAPSHOT_SUBMISSION_COLUMNS.index("kind"), SubmissionKind.RECIPE
    for sid, group in runs.items():
        row = about[sid]
        if row[kind] != recipe or sid in secondary:  # outcomes, secondary scores: built
            todo[sid] = group
            continue
        old = before.get(sid)
        if old is not None and old[1] is group and old[0] is row:  # only a kept read's objects are held
            rows[sid], kept[sid] = (row, group), old[2]
            continue
        raw = marshal.dumps((row, group), 2)
        rows[sid] = (row, group) if by_reference else (raw, None)
        if old is not None and (old[0] if old[1] is None else marshal.dumps(old[:2], 2)) == raw:
            kept[sid] = old[2]
        else:
            todo[sid] = group
    built = {e.id: e for e in _entries(about, todo, score, outcomes, secondary)}
    entries = [kept[sid] if sid in kept else built[sid] for sid in runs]
    _keep_last(_BUILT, key, {sid: (*pair, kept[sid] if sid in kept else built[sid]) for sid, pair in rows.items()})
    return entries


def _keep_last(cache: dict, key: tuple, value) -> None:
    """``cache[key] = value``, the only entry of ``key``'s board kind (``key[1]``): a worker keeps what it built for
    the board of each kind it updated last, as :data:`_STORED` does, not for every board it ever updated (each of
    :data:`_BUILT` and :data:`_PRINTS` grew by one board's entries per board a worker met)."""
    for other in [k for k in cache if k[1] == key[1] and k != key]:
        del cache[other]
    cache[key] = value


def _outcomes_of(sid: int, group: list[tuple], outcomes: dict[tuple, bytes]) -> np.ndarray | None:
    """An entry's per-example outcomes (runs x examples) when every run has them, of one length."""
    run = SNAPSHOT_RUN_COLUMNS.index("index")
    blobs = [outcomes.get((sid, r[run])) for r in group]
    if any(b is None for b in blobs):
        return None
    parts = [np.frombuffer(bytes(b), dtype="<f4") for b in blobs]
    if len({a.size for a in parts}) != 1 or not parts[0].size:
        return None
    return np.stack(parts).astype(np.float64)


#: Each board's entries of the last :func:`reusable_rows` and their fingerprints, by (challenge, board): keyed by the
#: EntryRuns itself (by identity: ``eq=False``; frozen, its arrays read-only), so only the very entry reused
#: from :data:`_BUILT` takes its print, never another with equal fields.
_PRINTS: dict[tuple, dict[EntryRuns, str]] = {}


def reusable_rows(
    *, challenge: Challenge, board: str, entries: list[EntryRuns], previous: dict | None
) -> tuple[dict[int, dict], dict[str, str]]:
    """Rows of ``previous`` (the board's stored report) an incremental update may keep, and every entry's fingerprint.

    A row is kept when the report was made with the same settings, is published exactly
    (rounded and Ladder boards alter rows) and its entry's fingerprint is unchanged: a new
    or finished submission then recomputes its own intervals and what depends on the
    other entries (comparisons, groups, ranks, rank intervals, state of the art), not
    every entry's bootstrap intervals (docs/scale.md).
    """
    known = _PRINTS.get((challenge.pk, str(board)), {})  # an entry reused from the last update (_BUILT): its print
    by_entry = {e: known.get(e) or entry_fingerprint(e) for e in entries}
    _keep_last(_PRINTS, (challenge.pk, str(board)), by_entry)
    prints = {str(e.id): fingerprint for e, fingerprint in by_entry.items()}
    exact = board != Board.PUBLIC or challenge.feedback == Feedback.EXACT
    if (
        not previous
        or not exact
        or previous.get("settings_key") != report_settings_key(challenge)
        or previous.get("format") != REPORT_FORMAT
    ):
        return {}, prints
    before = previous.get("fingerprints") or {}
    return {
        row["submission_id"]: row
        for row in previous.get("entries", ())
        if before.get(str(row["submission_id"])) == prints.get(str(row["submission_id"]))
    }, prints


def _public_board_of(challenge: Challenge, overrides, versions, snapshot) -> dict:
    """The public board a private board's rank changes read: the stored one, or under the same overrides (the
    stored board ranked by the challenge's statistic made ``?board=private&statistic=boo_n`` show a rank change
    against a public board ranked by the mean; found by suites19)."""
    if not overrides:
        return report_current(challenge=challenge).data
    return build_report_data(challenge=challenge, overrides=overrides, versions=versions, snapshot=snapshot)


def build_report_data(
    *,
    challenge: Challenge,
    overrides: dict[str, Any] | None = None,
    board: str = Board.PUBLIC,
    versions: dict[int, Version] | None = None,
    public_data: dict | None = None,
    previous: dict | None = None,
    snapshot: ChallengeRuns | None = None,
) -> dict:
    """The report of ``challenge``'s ``board`` as published (see :func:`evaluation.report.build_report`
    and :func:`services.boards.board_publish`).

    Parameters
    ----------
    challenge : Challenge
    overrides : dict, optional
        Keys of :data:`OVERRIDABLE` (``n``, ``gamma``, ``alpha``, ``statistic``),
        already validated: the report is computed with them instead of the challenge's.
    board : {"public", "private"}
        Whose rows the scores are computed on; the caller has checked that the viewer may see it.
    versions, public_data : optional
        The entries' versions and the public board's data (for the private board's rank changes),
        when the caller has them already.
    previous : dict, optional
        The board's stored report: rows of unchanged entries are reused (:func:`reusable_rows`).
    snapshot : ChallengeRuns, optional
        The challenge's runs and submissions, when the caller has read them already.

    Raises
    ------
    ServiceError
        When the challenge's settings cannot produce a report (the message says why).
    """
    snapshot = challenge_runs(challenge=challenge) if snapshot is None else snapshot
    versions = entry_versions(challenge=challenge, snapshot=snapshot) if versions is None else versions
    entries, ever = report_entries(challenge=challenge, board=board, versions=versions, snapshot=snapshot)
    settings_ = report_settings(
        challenge=challenge,
        overrides=overrides,
        m_total_predictions=ever[SubmissionKind.PREDICTIONS],
        m_total_recipes=ever[SubmissionKind.RECIPE],
    )
    reuse, prints = reusable_rows(
        challenge=challenge, board=board, entries=entries, previous=None if overrides else previous
    )
    try:
        slot = None if overrides else rank_slot(challenge.pk, board)
        data = build_report(entries, settings_, reuse=reuse, previous=previous if reuse else None, rank_slot=slot)
    except ValueError as exc:  # e.g. a challenge saved with gamma = 1, which the decision rule cannot use
        raise ServiceError(f"The report of {challenge.slug!r} cannot be computed: {exc}") from exc
    data["challenge"] = {
        "slug": challenge.slug,
        "metric": primary_metric(challenge).name,
        "higher_is_better": challenge.higher_is_better,
        "secondary_metrics": data["settings"]["secondary_metrics"],
    }
    data["settings"]["m_total"] = {str(kind): count for kind, count in ever.items()}
    data["settings"]["m_note"] = MULTIPLICITY_NOTE
    data["overrides"] = dict(overrides or {})
    data["fingerprints"] = prints
    data["reused_rows"] = len(reuse)
    data["settings_key"] = None if overrides else report_settings_key(challenge)
    if board == Board.PRIVATE and public_data is None:
        public_data = _public_board_of(challenge, overrides, versions, snapshot)
    return board_publish(challenge=challenge, data=data, board=board, versions=versions, public_data=public_data)


def report_with_overrides_key(*, challenge: Challenge, overrides: dict, board: str = Board.PUBLIC) -> str:
    """Cache key of a board's report recomputed with ``overrides``, tied to the current inputs' version of that
    board (the private board's also to the public board's, whose ranks its rows carry): the public board's version
    alone left a private board recomputed with overrides showing a team's former final choice for the cache's
    ten minutes (the choice moves the private board's inputs, not the public one's)."""
    stored = [report_stored_meta(challenge=challenge, board=Board.PUBLIC)]  # the versions, not the boards' data
    if board != Board.PUBLIC:
        stored.append(report_stored_meta(challenge=challenge, board=board))
    version = ":".join(str(getattr(meta, "inputs_version", None)) for meta in stored)
    digest = hashlib.sha256(f"{version}:{board}:{sorted(overrides.items())}".encode()).hexdigest()[:32]
    return f"varboard:override:{challenge.pk}:{digest}"


def pair_compare(
    *,
    challenge: Challenge,
    section: dict,
    a_id: int,
    b_id: int,
    overrides: dict[str, Any] | None = None,
    board: str = Board.PUBLIC,
) -> dict:
    """The comparison of two compared recipe entries the report did not store (a large board's far pair).

    Reads the two entries' runs only and decides the pair as one of the section's pairs
    (:func:`evaluation.report.compare`).

    Raises
    ------
    ServiceError
        When the pair cannot be compared (the message says why).
    """
    entries, _ = report_entries(challenge=challenge, board=board, submission_ids={a_id, b_id})
    by_id = {e.id: e for e in entries}
    if a_id not in by_id or b_id not in by_id:
        raise ServiceError("Both entries need scored runs on this board to be compared.")
    try:
        return compare(
            by_id[a_id],
            by_id[b_id],
            report_settings(challenge=challenge, overrides=overrides),
            family_size=section_family_size(section),
        )
    except ValueError as exc:
        raise ServiceError(f"These entries cannot be compared: {exc}") from exc


def section_family_size(section: dict) -> int:
    """The pairs of a section's multiplicity correction: every pair of its compared entries (docs/scale.md),
    whether or not the report stored them."""
    n = len(section["compared"])
    return n * (n - 1) // 2


def section_pair(
    *,
    challenge: Challenge,
    section: dict,
    a: dict,
    b: dict,
    overrides: dict[str, Any] | None = None,
    board: str = Board.PUBLIC,
) -> tuple[dict | None, str | None]:
    """(the comparison of rows A and B seen from A, None), or (None, why not): stored, else computed on demand.

    A large board stores each entry's comparisons with its neighbours, the leader and its frontier;
    any other pair of compared recipe entries is decided by :func:`pair_compare`.
    """
    a_id, b_id = a["submission_id"], b["submission_id"]
    rounded = board == Board.PUBLIC and challenge.feedback == Feedback.ROUNDED
    if (
        rounded
        and a_id != b_id
        and a.get("ranking_value") is not None
        and a.get("ranking_value") == b.get("ranking_value")
    ):
        return None, rounded_tie_reason(challenge.feedback_digits)  # issue 21: nothing beyond the shown scores
    if rounded and section["kind"] == "predictions":
        return None, rounded_predictions_reason(challenge.feedback_digits)  # per-row outcomes are withheld
    # Not rounded: as publish_rounded publishes the board's pairs (functions of the shown runs, at the precision
    # their verdict is read at).
    return _stored_or_decided_pair(challenge, section, a, b, overrides, board)


def _stored_or_decided_pair(
    challenge: Challenge, section: dict, a: dict, b: dict, overrides: dict[str, Any] | None, board: str
) -> tuple[dict | None, str | None]:
    """:func:`section_pair`'s comparison before publication: the stored pair (seen from A), else decided on demand."""
    a_id, b_id = a["submission_id"], b["submission_id"]
    names = {a_id: a["method_name"], b_id: b["method_name"]}
    for pair in section_pairs(section, names, among=names):
        if {pair["a"], pair["b"]} == {a_id, b_id}:
            return (pair if pair["a"] == a_id else flip_comparison(pair)), None
    compared = set(section["compared"])
    if a_id != b_id and a_id in compared and b_id in compared and section["kind"] == SubmissionKind.RECIPE:
        try:
            return pair_compare(
                challenge=challenge, section=section, a_id=a_id, b_id=b_id, overrides=overrides, board=board
            ), None
        except ServiceError as exc:
            return None, exc.message
    return None, None
