"""A challenge's scoring program (issue 26, docs/scoring-programs.md): upload, check, remove.

The web side stores the host's file and asks a worker to check it (``tasks.scoring.check_scoring_program``,
whose body is ``leaderboard.worker.program_check``): the worker reads ``METRICS`` and scores the challenge's
own sample submission against the hidden labels in the sandbox, then :func:`program_store_check` records
the metrics and ``ok``, or ``failed`` with the message for the hosts. Nothing here runs the program:
the web side loads no execution code.

The frames a program is called with are built here (:func:`program_truth`, :func:`program_predictions`),
and the parts of the test rows it is called on (:func:`scoring_parts`), for the check and for scoring alike.

What keeps hidden labels hidden (issue 26):

* a check holds for what it ran on (:func:`program_check_key`: the program, the data's version, the
  metric, the classes and the public rows); a challenge changed since takes no submission until a new
  check passed (:func:`program_ready`), and a check that finishes after a change is dropped;
* a program's failure on a contestant's file is charged like any scored file (a refund would make the
  failure a free question about the labels), with one fixed message; after
  ``VARBOARD_PROGRAM_MAX_FAILURES`` failures since its check the program is suspended until its hosts
  resume it (:func:`program_failure_record`, :func:`program_resume`);
* in a phase that scores the public rows only, the program never sees a private row (:func:`scoring_parts`);
* the janitor resends a check the broker lost (:func:`program_checks_resend`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import numpy as np
import pandas as pd
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from evaluation.metrics import get_metric
from evaluation.predictions import parse_predictions, prediction_columns
from evaluation.samples import sample_submission
from evaluation.scoring_programs import ProgramMetric, ScoringProgramError, parse_metrics

from ..choices import Feedback, ProgramStatus, TestRows
from ..limits import upload_limit
from ..models import AuditEntry, Challenge, Dataset, Phase, Team
from ..selectors import user_is_host
from ..storage import atomic_deleting_on_failure, discard_replaced, forget_unsaved
from .audit import audit_record
from .boards import board_public_mask
from .dataset_files import dataset_frame, dataset_test_ids
from .dispatch import CHECK_SCORING_PROGRAM, enqueue_on_commit
from .errors import PROGRAM_FAILED, NotAllowed, PlatformError, QuotaExceeded, ServiceError, TooLarge
from .metrics import PROGRAM_LADDER_REFUSAL, check_program_fits, program_primary_error
from .reports import report_request

__all__ = [
    "PROGRAM_FAILED",
    "ProgramWaiting",
    "program_scoring_gate",
    "program_check_gave_up",
    "program_check_inputs",
    "program_check_key",
    "program_checks_resend",
    "program_failure_record",
    "scoring_parts",
    "program_ready",
    "program_resume",
    "program_predictions",
    "program_remove",
    "program_restore",
    "program_state",
    "program_store_check",
    "program_truth",
    "program_upload",
]

#: The most characters of a failed check's message and log kept for the hosts.
MAX_ERROR_CHARS = 8000
#: A check still ``checking`` this long after it was sent was lost (a broker without persistence, a killed
#: worker): the janitor sends it again. A check is one METRICS read and three scoring calls, each bounded
#: by ``execution.scoring_program.DEFAULT_LIMITS`` (300 s).
CHECK_LOST_AFTER = timedelta(hours=2)
#: Checks of scoring programs one user may ask for in an hour (uploads, bundle imports, resumes): a check runs
#: a program up to four times 300 s on the programs' runner, and any signed-in user can host a challenge.
CHECKS_PER_HOUR = 12
#: A run that the program's state kept from being scored (never a question to the program: not charged).
PROGRAM_HELD_SUSPENDED = "Not scored: the host's scoring program is suspended (it failed on several teams' files)."
PROGRAM_HELD_TEAM = (
    "Not scored: your team's files broke the host's scoring program too often; the hosts have been told."
)
PROGRAM_HELD_FAILED = "Not scored: the host's scoring program no longer passes its check; the hosts have been told."
#: Failures since the program's check from this many teams suspend it for everyone: a program that breaks on many
#: teams' files is broken (one team alone blocks only itself, at ``VARBOARD_PROGRAM_MAX_FAILURES``).
SUSPEND_AFTER_TEAMS = 3


def _hosted(challenge: Challenge, user: User) -> None:
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can manage its scoring program.")


def _check_rate(user: User) -> None:
    """QuotaExceeded (HTTP 429, with Retry-After) when ``user`` asked for :data:`CHECKS_PER_HOUR` checks in the
    last hour, counted from the audit log: no host keeps the programs' runner busy for the others."""
    recent = AuditEntry.objects.filter(
        actor=user,
        action__in=("scoring_program_uploaded", "scoring_program_resumed"),
        created__gte=timezone.now() - timedelta(hours=1),
    )
    if recent.count() < CHECKS_PER_HOUR:
        return
    frees_at = recent.order_by("created").values_list("created", flat=True)[0] + timedelta(hours=1)
    wait_s = max((frees_at - timezone.now()).total_seconds(), 1.0)
    raise QuotaExceeded(
        f"You asked for {CHECKS_PER_HOUR} checks of scoring programs in the last hour, the most an hour allows; "
        f"the next is possible in {int(wait_s // 60) + 1} minutes.",
        field="scoring_program",
        retry_after=wait_s,
    )


def _check_changeable(challenge: Challenge) -> None:
    """Under the challenge's row lock (a submission being accepted takes it too)."""
    Challenge.objects.select_for_update().filter(pk=challenge.pk).first()
    if challenge.submissions.exists():
        raise ServiceError(
            "The scoring program cannot change once submissions exist: the stored runs were scored by the "
            "old one (as the metric, it is frozen at the first submission).",
            field="scoring_program",
        )


def program_upload(*, challenge: Challenge, user: User, data: bytes, filename: str = "scoring.py") -> Challenge:
    """Store ``data`` as the challenge's scoring program (hosts only) and queue its check (status ``checking``)."""
    _hosted(challenge, user)
    _check_rate(user)
    check_program_fits(allow_recipes=challenge.allow_recipes, secondary_metrics=challenge.secondary_metrics)
    if challenge.feedback == Feedback.LADDER:
        choice = "choose rounded or exact feedback first."
        raise ServiceError(PROGRAM_LADDER_REFUSAL.format(choice=choice), field="scoring_program")
    if getattr(challenge, "dataset", None) is None or not challenge.dataset.hidden_labels_file:
        raise ServiceError(
            "A scoring program scores predictions against the hidden labels; this challenge has none.",
            field="scoring_program",
        )
    if not data:
        raise ServiceError("The scoring program is empty.", field="scoring_program")
    limit = upload_limit("program")
    if limit.exceeded_by(len(data)):
        raise TooLarge(
            f"The scoring program is {limit.size(len(data))}; the limit is {limit.label}.", field="scoring_program"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ServiceError("The scoring program is not UTF-8 text (a Python file).", field="scoring_program") from None
    kept = challenge.scoring_program.name

    def stored() -> bool:
        return Challenge.objects.filter(pk=challenge.pk, scoring_program=challenge.scoring_program.name).exists()

    # Rolled back (a database error after the file was stored): the row names the program it had; the file
    # stored meanwhile goes, as no row names it (unless the commit was stored after all).
    with atomic_deleting_on_failure(lambda: forget_unsaved(challenge.scoring_program, kept), stored):
        _check_changeable(challenge)
        challenge.scoring_program.save("scoring.py", ContentFile(data), save=False)
        _set_state(challenge, status=ProgramStatus.CHECKING, metrics=[], error="", checked_at=None)
        _send_check(challenge)
        audit_record(challenge=challenge, actor=user, action="scoring_program_uploaded", filename=filename)
    discard_replaced(challenge.scoring_program, kept, reason=f"scoring program of {challenge.slug} replaced")
    return challenge


def program_restore(*, challenge: Challenge, user: User, data: bytes, metrics: list) -> Challenge:
    """A bundle's program with the metrics it declared (the board reads them at once), checked again here:
    status ``checking`` until the worker has run it on this challenge's sample submission."""
    try:
        declared = parse_metrics(metrics)
    except ScoringProgramError as exc:
        raise ServiceError(f"manifest.json: scoring_program.metrics: {exc}", field="bundle") from None
    program_upload(challenge=challenge, user=user, data=data)
    challenge.program_metrics = [metric.as_dict() for metric in declared]
    challenge.higher_is_better = next(metric for metric in declared if metric.primary).higher_is_better
    challenge.save(update_fields=["program_metrics", "higher_is_better"])
    return challenge


def program_remove(*, challenge: Challenge, user: User) -> Challenge:
    """The challenge scores with its built-in metric again (hosts only; before the first submission)."""
    _hosted(challenge, user)
    if not challenge.scoring_program:
        return challenge
    name = challenge.scoring_program.name
    with transaction.atomic():
        _check_changeable(challenge)
        challenge.scoring_program = ""
        _set_state(challenge, status=ProgramStatus.NONE, metrics=[], error="", checked_at=None)
        challenge.higher_is_better = get_metric(challenge.metric).higher_is_better
        challenge.save(update_fields=["higher_is_better"])
        audit_record(challenge=challenge, actor=user, action="scoring_program_removed")
        report_request(challenge_id=challenge.pk)  # in the change's transaction (tests/platform/test_half_stored.py)
    discard_replaced(challenge.scoring_program, name, reason=f"scoring program of {challenge.slug} removed")
    return challenge


def _set_state(challenge: Challenge, *, status: str, metrics: list, error: str, checked_at, key: str = "") -> None:
    challenge.program_status, challenge.program_metrics = status, metrics
    challenge.program_error, challenge.program_checked_at = error, checked_at
    challenge.program_check_key = key
    challenge.save(
        update_fields=[
            "scoring_program",
            "program_status",
            "program_metrics",
            "program_error",
            "program_checked_at",
            "program_check_key",
        ]
    )


def _send_check(challenge: Challenge, *, attempt: int = 1) -> None:
    """Queue a check of the stored program (once the transaction commits)."""
    challenge.program_check_sent_at, challenge.program_check_attempts = timezone.now(), attempt
    challenge.save(update_fields=["program_check_sent_at", "program_check_attempts"])
    enqueue_on_commit(CHECK_SCORING_PROGRAM, challenge.pk)


def program_check_key(challenge: Challenge) -> str:
    """What a check's verdict holds for: a hash of the program, the data's version (a label correction
    changes it), the metric and classes (the prediction frame's columns) and the public rows (the parts
    the program is called on). Any change needs a new check before the next submission."""
    digest = hashlib.sha256()
    with challenge.scoring_program.open("rb") as handle:
        digest.update(handle.read())
    dataset = challenge.dataset
    digest.update(json.dumps([dataset.version, challenge.metric, [str(c) for c in dataset.classes or []]]).encode())
    digest.update(np.packbits(board_public_mask(dataset=dataset)).tobytes())
    return digest.hexdigest()


def _recheck_if_changed(challenge: Challenge) -> bool:
    """True (and a new check sent) when the program was checked on what the challenge no longer is: its data,
    metric or public rows changed since (caught here, at the next submission or scoring, however it changed)."""
    if challenge.program_status != ProgramStatus.OK or challenge.program_check_key == program_check_key(challenge):
        return False
    with transaction.atomic():
        locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if locked.program_status == ProgramStatus.OK:
            _set_state(locked, status=ProgramStatus.CHECKING, metrics=locked.program_metrics, error="", checked_at=None)
            _send_check(locked)
    return True


def _team_failures(challenge: Challenge, team_id: int | None) -> int:
    return int((challenge.program_team_failures or {}).get(str(team_id), 0)) if team_id is not None else 0


def program_ready(challenge: Challenge, team_id: int | None = None) -> str | None:
    """None when the challenge's program may score a submission of ``team_id`` now; else why not, for the
    contestant. A changed challenge has its program checked again first (:func:`_recheck_if_changed`)."""
    if not challenge.scoring_program:
        return None
    if challenge.program_status == ProgramStatus.SUSPENDED:
        return (
            "This challenge's scoring program is suspended: it failed on several teams' files and its hosts "
            "have been told. Submissions reopen once they have checked it again."
        )
    if _recheck_if_changed(challenge):
        return (
            "This challenge changed since its scoring program was checked (its data, metric or public rows); "
            "the program is being checked again. Try again in a minute."
        )
    if challenge.program_status != ProgramStatus.OK:
        return (
            "This challenge's scoring program is not ready yet (the hosts' check has not passed); "
            "submissions open once it has."
        )
    if _team_failures(challenge, team_id) >= settings.VARBOARD["PROGRAM_MAX_FAILURES"]:
        return (
            "Your team's files broke the host's scoring program "
            f"{_team_failures(challenge, team_id)} times; the hosts have been told, and your team can submit "
            "again once they have checked it again."
        )
    return None


class ProgramWaiting(PlatformError):
    """The program is being checked (again): the run is scored once the check has passed (retried)."""


def program_scoring_gate(challenge_id: int, team_id: int) -> str | None:
    """Asked before each run is scored by the program, whatever its submission was accepted under: None to
    score it; a message (:data:`PROGRAM_HELD_SUSPENDED` …) to fail it unscored, not a question to the program;
    :class:`ProgramWaiting` while a check is due or running. So a suspension, a team's block or a change of
    the challenge holds the runs already queued too, not only new submissions."""
    challenge = Challenge.objects.select_related("dataset").get(pk=challenge_id)
    if challenge.program_status == ProgramStatus.SUSPENDED:
        return PROGRAM_HELD_SUSPENDED
    if challenge.program_status == ProgramStatus.FAILED:
        return PROGRAM_HELD_FAILED
    if challenge.program_status == ProgramStatus.CHECKING or _recheck_if_changed(challenge):
        raise ProgramWaiting("the host's scoring program is being checked; the run is scored after its check")
    if _team_failures(challenge, team_id) >= settings.VARBOARD["PROGRAM_MAX_FAILURES"]:
        return PROGRAM_HELD_TEAM
    return None


def program_state(*, challenge: Challenge, user: User) -> dict:
    """The program's check for the hosts: ``status``, ``metrics``, ``error``, ``checked_at``."""
    _hosted(challenge, user)
    return {
        "status": challenge.program_status,
        "metrics": list(challenge.program_metrics or []),
        "error": challenge.program_error,
        "checked_at": challenge.program_checked_at,
        "failures": challenge.program_failures,
    }


def program_error_text(exc: ScoringProgramError) -> str:
    """A failed program's message and the end of its log, for the hosts only (it may quote hidden labels)."""
    text = str(exc)
    if exc.log:
        text += "\n\nThe program's output:\n" + exc.log[-(MAX_ERROR_CHARS // 2) :]
    return text[:MAX_ERROR_CHARS]


def program_store_check(
    *,
    challenge_id: int,
    program: str,
    metrics: list[ProgramMetric] | None = None,
    outcome_names=(),
    error: ScoringProgramError | None = None,
    key: str = "",
) -> Challenge | None:
    """Record a finished check of the stored program ``program`` (its file name) run on ``key``
    (:func:`program_check_key` when it started): the metrics and ``ok``, or ``failed`` with the message.

    A check of a program since replaced or removed, or that is no longer waited for, is dropped (None);
    one that ran on a challenge that changed meanwhile is dropped and sent again.
    """
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
        if challenge.scoring_program.name != program or challenge.program_status != ProgramStatus.CHECKING:
            return None
        if key != program_check_key(challenge):
            _send_check(challenge)
            return None
        problem = None if error is not None else program_primary_error(metrics or [], outcome_names)
        if error is not None or problem:
            text = program_error_text(error) if error is not None else f"The scoring program was refused: {problem}"
            _set_state(challenge, status=ProgramStatus.FAILED, metrics=[], error=text, checked_at=timezone.now())
            audit_record(challenge=challenge, actor=None, action="scoring_program_failed", error=text[:2000])
            return challenge
        declared = [metric.as_dict() for metric in metrics or []]
        _set_state(challenge, status=ProgramStatus.OK, metrics=declared, error="", checked_at=timezone.now(), key=key)
        primary = next(metric for metric in metrics or [] if metric.primary)
        challenge.higher_is_better = primary.higher_is_better
        challenge.program_team_failures = {}  # a passed check starts every team's count again
        challenge.save(update_fields=["higher_is_better", "program_team_failures"])
        audit_record(challenge=challenge, actor=None, action="scoring_program_checked", metrics=declared)
        # in the check's transaction: after it, a database gone here failed the task, and its retry, finding the check
        # recorded, dropped it, so the board was never asked for (tests/platform/test_half_stored.py)
        report_request(challenge_id=challenge.pk)
    return challenge


def program_check_gave_up(*, challenge_id: int, reason: str) -> None:
    """The platform could not check the program (the sandbox or the storage kept failing): the hosts are told."""
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
        if challenge.program_status != ProgramStatus.CHECKING:
            return
        text = f"The platform could not check the scoring program ({reason}); upload it again to retry."
        _set_state(challenge, status=ProgramStatus.FAILED, metrics=[], error=text, checked_at=timezone.now())


def program_checks_resend(*, now) -> int:
    """Send again each check still waited for :data:`CHECK_LOST_AFTER` after it was sent (the janitor's);
    past ``VARBOARD_MAX_RUN_ATTEMPTS`` sendings the hosts are told instead. Returns how many were sent."""
    sent = 0
    stale = Challenge.objects.filter(
        program_status=ProgramStatus.CHECKING, program_check_sent_at__lt=now - CHECK_LOST_AFTER
    ).values_list("pk", flat=True)
    for challenge_id in stale:
        with transaction.atomic():
            challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
            if challenge.program_status != ProgramStatus.CHECKING:
                continue
            attempts = challenge.program_check_attempts
            if attempts >= settings.VARBOARD["MAX_RUN_ATTEMPTS"]:
                program_check_gave_up(challenge_id=challenge_id, reason=f"its check was lost {attempts} times")
                continue
            _send_check(challenge, attempt=attempts + 1)
            sent += 1
    return sent


def program_failure_record(*, challenge_id: int, team_id: int, submission_id: int, run_index: int, error) -> None:
    """The program failed on a contestant's file: the hosts read why (audit log) and the failure is counted for
    the team. A team at ``VARBOARD_PROGRAM_MAX_FAILURES`` since the last check submits no more (its runs still
    queued are not scored) until the hosts check the program again; failures from :data:`SUSPEND_AFTER_TEAMS`
    teams suspend the program for everyone. A program that contestants' files can break is a question about
    the labels at the price of one run: the block caps how many one team can ask, and one team alone cannot
    close the challenge to the others."""
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
        counts = dict(challenge.program_team_failures or {})
        counts[str(team_id)] = int(counts.get(str(team_id), 0)) + 1
        challenge.program_team_failures = counts
        challenge.save(update_fields=["program_team_failures"])
        text = program_error_text(error)
        audit_record(
            challenge=challenge,
            actor=None,
            action="scoring_program_failed",
            submission=submission_id,
            run=run_index,
            team=team_id,
            team_name=Team.objects.filter(pk=team_id).values_list("name", flat=True).first(),  # read by the hosts
            error=text,
        )
        if len(counts) >= SUSPEND_AFTER_TEAMS and challenge.program_status == ProgramStatus.OK:
            challenge.program_status = ProgramStatus.SUSPENDED
            challenge.program_error = (
                f"Suspended after failing on the files of {len(counts)} teams ({sum(counts.values())} files; the "
                f"last: submission {submission_id}, run {run_index}): {text}"
            )[:MAX_ERROR_CHARS]
            challenge.save(update_fields=["program_status", "program_error"])
            audit_record(challenge=challenge, actor=None, action="scoring_program_suspended", teams=len(counts))


def program_resume(*, challenge: Challenge, user: User) -> Challenge:
    """Check the program again and forget its failures (hosts only): a suspended program, or one that blocked
    teams whose files broke it, takes their submissions again once the check has passed."""
    _hosted(challenge, user)
    _check_rate(user)
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if challenge.program_status != ProgramStatus.SUSPENDED and not challenge.program_team_failures:
            raise ServiceError("The scoring program is neither suspended nor has it failed.", field="scoring_program")
        _set_state(
            challenge, status=ProgramStatus.CHECKING, metrics=challenge.program_metrics, error="", checked_at=None
        )
        _send_check(challenge)
        audit_record(challenge=challenge, actor=user, action="scoring_program_resumed")
    return challenge


def scoring_parts(challenge: Challenge, phase: Phase | None) -> list[tuple[str, np.ndarray]]:
    """``(part, row mask)`` of each part of the test rows a run is scored on (the built-in metrics and a
    host's program alike): ``test`` (the run's own score), ``public`` and, where ``phase`` scores it,
    ``private``. A program gets one call per part, each part alone (a non-decomposable metric needs
    the part by itself): ``test`` (the run's own score), ``public`` and, where ``phase`` scores it,
    ``private``. A phase of the public rows only never shows the program a private row: its ``test`` part
    is the public rows. ``phase`` None: every part, as a check runs them (whatever a phase may ask)."""
    public = board_public_mask(dataset=challenge.dataset)
    if phase is not None and phase.test_rows == TestRows.PUBLIC:
        return [("test", public), ("public", public)]
    return [("test", np.ones(public.size, dtype=bool)), ("public", public), ("private", ~public)]


def program_truth(dataset: Dataset, ids: list[str]) -> pd.DataFrame:
    """``y_true``: the hidden labels of ``ids`` (in that order), indexed by the id column (ids as text);
    a regression dataset's as float64, a classification dataset's as read."""
    hidden = dataset_frame(dataset=dataset, part="hidden_labels")
    hidden[dataset.id_column] = hidden[dataset.id_column].astype(str)
    if dataset.task == "regression":  # as dataset_hidden_labels reads them for the built-in metrics
        hidden[dataset.label_column] = hidden[dataset.label_column].astype(np.float64)
    frame = hidden.set_index(dataset.id_column).loc[ids, [dataset.label_column]]
    frame.index = pd.Index(ids, name=dataset.id_column)
    frame.columns = [str(column) for column in frame.columns]
    return frame


def program_predictions(challenge: Challenge, predictions: np.ndarray, ids: list[str]) -> pd.DataFrame:
    """``y_pred``: parsed predictions (rows in ``ids`` order) as the submitted columns, indexed by the id column."""
    dataset = challenge.dataset
    classes = tuple(str(c) for c in dataset.classes) if dataset.classes else None
    columns = list(prediction_columns(challenge.metric_info, classes))
    values = predictions.reshape(len(ids), -1) if predictions.ndim == 1 else predictions
    return pd.DataFrame(values, columns=columns, index=pd.Index(ids, name=dataset.id_column))


def program_check_inputs(challenge: Challenge) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frames a program is checked on: the hidden labels and the challenge's own sample submission."""
    dataset = challenge.dataset
    ids = [str(i) for i in dataset_test_ids(dataset=dataset)]
    classes = dataset.classes or None
    text = sample_submission(ids, challenge.metric_info, classes, id_column=dataset.id_column)
    predictions = parse_predictions(
        text.encode("utf-8"),
        filename="sample_submission.csv",
        id_column=dataset.id_column,
        expected_ids=ids,
        metric=challenge.metric_info,
        classes=classes,
        max_bytes=len(text.encode("utf-8")) + 1,
    )
    return program_truth(dataset, ids), program_predictions(challenge, predictions, ids)
