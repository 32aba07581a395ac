"""A challenge's scoring program (issue 26, docs/scoring-programs.md): upload, check, remove.

The web side stores the host's file and asks a worker to check it (``tasks.scoring.check_scoring_program``,
whose body is ``leaderboard.worker.program_check``): the worker reads ``METRICS`` and scores the challenge's
own sample submission against the hidden labels in the sandbox, then :func:`program_store_check` records
the metrics and ``ok``, or ``failed`` with the message for the hosts. Nothing here runs the program:
the web side loads no execution code.

The frames a program is called with are built here (:func:`program_truth`, :func:`program_predictions`),
for the check and for scoring alike.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from evaluation.metrics import get_metric
from evaluation.predictions import parse_predictions, prediction_columns
from evaluation.samples import sample_submission
from evaluation.scoring_programs import ProgramMetric, ScoringProgramError, parse_metrics

from ..choices import ProgramStatus
from ..limits import upload_limit
from ..models import Challenge, Dataset
from ..selectors import user_is_host
from .audit import audit_record
from .dataset_files import dataset_frame, dataset_test_ids
from .dispatch import CHECK_SCORING_PROGRAM, enqueue_on_commit
from .errors import NotAllowed, ServiceError
from .metrics import check_program_fits, program_primary_error
from .reports import report_request

__all__ = [
    "program_check_gave_up",
    "program_check_inputs",
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


def _hosted(challenge: Challenge, user: User) -> None:
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can manage its scoring program.")


def _check_changeable(challenge: Challenge) -> None:
    if challenge.submissions.exists():
        raise ServiceError(
            "The scoring program cannot change once submissions exist: the stored runs were scored by the "
            "old one (as the metric, it is frozen at the first submission).",
            field="scoring_program",
        )


def program_upload(*, challenge: Challenge, user: User, data: bytes, filename: str = "scoring.py") -> Challenge:
    """Store ``data`` as the challenge's scoring program (hosts only) and queue its check (status ``checking``)."""
    _hosted(challenge, user)
    _check_changeable(challenge)
    check_program_fits(allow_recipes=challenge.allow_recipes, secondary_metrics=challenge.secondary_metrics)
    if getattr(challenge, "dataset", None) is None or not challenge.dataset.hidden_labels_file:
        raise ServiceError(
            "A scoring program scores predictions against the hidden labels; this challenge has none.",
            field="scoring_program",
        )
    if not data:
        raise ServiceError("The scoring program is empty.", field="scoring_program")
    limit = upload_limit("program")
    if limit.exceeded_by(len(data)):
        raise ServiceError(
            f"The scoring program is {limit.size(len(data))}; the limit is {limit.label}.", field="scoring_program"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ServiceError("The scoring program is not UTF-8 text (a Python file).", field="scoring_program") from None
    old = challenge.scoring_program.name if challenge.scoring_program else None
    with transaction.atomic():
        challenge.scoring_program.save("scoring.py", ContentFile(data), save=False)
        _set_state(challenge, status=ProgramStatus.CHECKING, metrics=[], error="", checked_at=None)
        audit_record(challenge=challenge, actor=user, action="scoring_program_uploaded", filename=filename)
        enqueue_on_commit(CHECK_SCORING_PROGRAM, challenge.pk)
    if old and old != challenge.scoring_program.name:
        challenge.scoring_program.storage.delete(old)
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
    _check_changeable(challenge)
    if not challenge.scoring_program:
        return challenge
    name = challenge.scoring_program.name
    with transaction.atomic():
        challenge.scoring_program = ""
        _set_state(challenge, status=ProgramStatus.NONE, metrics=[], error="", checked_at=None)
        challenge.higher_is_better = get_metric(challenge.metric).higher_is_better
        challenge.save(update_fields=["higher_is_better"])
        audit_record(challenge=challenge, actor=user, action="scoring_program_removed")
    challenge.scoring_program.storage.delete(name)
    report_request(challenge_id=challenge.pk)
    return challenge


def _set_state(challenge: Challenge, *, status: str, metrics: list, error: str, checked_at) -> None:
    challenge.program_status, challenge.program_metrics = status, metrics
    challenge.program_error, challenge.program_checked_at = error, checked_at
    challenge.save(
        update_fields=["scoring_program", "program_status", "program_metrics", "program_error", "program_checked_at"]
    )


def program_state(*, challenge: Challenge, user: User) -> dict:
    """The program's check for the hosts: ``status``, ``metrics``, ``error``, ``checked_at``."""
    _hosted(challenge, user)
    return {
        "status": challenge.program_status,
        "metrics": list(challenge.program_metrics or []),
        "error": challenge.program_error,
        "checked_at": challenge.program_checked_at,
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
) -> Challenge | None:
    """Record a finished check of the stored program ``program`` (its file name): the metrics and ``ok``, or
    ``failed`` with the message. A check of a program since replaced or removed is dropped (None)."""
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
        if challenge.scoring_program.name != program:
            return None
        problem = None if error is not None else program_primary_error(metrics or [], outcome_names)
        if error is not None or problem:
            text = program_error_text(error) if error is not None else f"The scoring program was refused: {problem}"
            _set_state(challenge, status=ProgramStatus.FAILED, metrics=[], error=text, checked_at=timezone.now())
            audit_record(challenge=challenge, actor=None, action="scoring_program_failed", error=text[:2000])
            return challenge
        declared = [metric.as_dict() for metric in metrics or []]
        _set_state(challenge, status=ProgramStatus.OK, metrics=declared, error="", checked_at=timezone.now())
        primary = next(metric for metric in metrics or [] if metric.primary)
        challenge.higher_is_better = primary.higher_is_better
        challenge.save(update_fields=["higher_is_better"])
        audit_record(challenge=challenge, actor=None, action="scoring_program_checked", metrics=declared)
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


def program_truth(dataset: Dataset, ids: list[str]) -> pd.DataFrame:
    """``y_true``: the hidden labels of ``ids`` (in that order), indexed by the id column (ids as text)."""
    hidden = dataset_frame(dataset=dataset, part="hidden_labels")
    hidden[dataset.id_column] = hidden[dataset.id_column].astype(str)
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
