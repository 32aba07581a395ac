"""Scoring prediction submissions against the hidden labels (queue ``scoring``).

Idempotent: each run goes through the lifecycle's claim and write-once store, so a
redelivered task scores only the runs that have not ended and writes nothing twice
(docs/DESIGN.md §7).
"""

from __future__ import annotations

import logging
import time

import numpy as np
from django.db import DatabaseError

from evaluation.metrics import score_predictions
from evaluation.predictions import PredictionFileError, parse_predictions

from ..choices import RunStatus, SubmissionKind, TestRows
from ..limits import upload_limit
from ..logs import log_context
from ..models import Run, Submission
from ..storage import STORAGE_DOWN
from .boards import board_public_mask
from .dataset_files import dataset_hidden_labels, dataset_test_ids
from .errors import PlatformError
from .lifecycle import run_claim, run_heartbeat, run_store_rescored, run_store_retrying, submission_refund

logger = logging.getLogger(__name__)


def _score_one(submission: Submission, run: Run, expected_ids: list[str], y_true) -> dict:
    """The result fields of one run: its file parsed and scored."""
    challenge, dataset = submission.challenge, submission.challenge.dataset
    record = submission.prediction_files.get(index=run.index)
    started = time.monotonic()
    with record.file.open("rb") as handle:
        data = handle.read()
    predictions = parse_predictions(
        data,
        filename=record.original_name,
        id_column=dataset.id_column,
        expected_ids=expected_ids,
        metric=challenge.metric_info,
        classes=dataset.classes or None,
        max_bytes=upload_limit("prediction").max_bytes,
    )
    result = score_predictions(challenge.metric, y_true, predictions, classes=dataset.classes or None)
    return dict(
        status=RunStatus.SUCCEEDED,
        test_score=float(result.score),
        outcomes=Run.pack_outcomes(result.outcomes),
        duration_s=time.monotonic() - started,
        device="scoring",
        **score_parts(submission, y_true, predictions),
    )


def score_parts(submission: Submission, y_true, predictions) -> dict:
    """Scores and outcomes on the public board's rows and (where the phase scores it) the private board's,
    each computed on its part alone; the secondary metrics' on the test rows and the same parts."""
    challenge, dataset = submission.challenge, submission.challenge.dataset
    public = board_public_mask(dataset=dataset)
    parts = [("public", public)]
    if submission.phase is None or submission.phase.test_rows != TestRows.PUBLIC:
        parts.append(("private", ~public))
    fields = {}
    for name, rows in parts:
        if rows.any():
            part = score_predictions(challenge.metric, y_true[rows], predictions[rows], classes=dataset.classes or None)
            fields[f"{name}_score"] = float(part.score)
            fields[f"{name}_outcomes"] = Run.pack_outcomes(part.outcomes)
    everything = np.ones(len(y_true), dtype=bool)
    extra_scores, extra_outcomes = score_secondary(
        challenge.secondary_metrics, y_true, predictions, [("test", everything), *parts], dataset.classes
    )
    fields.update(extra_scores=extra_scores, extra_outcomes=Run.pack_extra_outcomes(extra_outcomes))
    return fields


def score_secondary(names, y_true, predictions, parts, classes) -> tuple[dict, dict]:
    """The secondary metrics ``names`` on each non-empty part (``(part, row mask)``), each part scored alone:
    ``({part: {name: score}}, {"part/name": outcomes})``, the layout of ``Run.extra_scores``."""
    scores: dict[str, dict[str, float]] = {}
    outcomes: dict[str, np.ndarray] = {}
    for part, rows in parts:
        if not names or not rows.any():
            continue
        scores[part] = {}
        for name in names:
            result = score_predictions(name, y_true[rows], predictions[rows], classes=classes or None)
            scores[part][name] = float(result.score)
            outcomes[f"{part}/{name}"] = result.outcomes
    return scores, outcomes


def _score_or_fail(submission: Submission, run: Run, expected_ids: list[str], y_true) -> dict:
    """Scored result fields, or failed ones naming the problem; transient errors propagate."""
    try:
        return _score_one(submission, run, expected_ids, y_true)
    except PredictionFileError as exc:  # validated at upload; only a changed dataset gets here
        return dict(status=RunStatus.FAILED, error_message=str(exc))
    except DatabaseError:
        raise  # transient: the task retries
    except (OSError, *STORAGE_DOWN) as exc:  # a disk or the object store: transient, retried with backoff
        raise PlatformError(f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # the platform's fault (a bug, an inconsistent challenge): fail, don't loop
        logger.exception("scoring run %s of submission %s failed", run.index, submission.pk)
        submission_refund(submission_id=submission.pk)
        return dict(
            status=RunStatus.FAILED,
            error_message=f"platform error while scoring: {type(exc).__name__}: {exc} (not charged to your quota)",
        )


def submission_score(*, submission_id: int, delivery: str = "", cause: str = "") -> Submission:
    """Score every run of a prediction submission that has not ended yet.

    Each run is claimed (a lease, an attempt counted) and stored with its attempt as token, so
    a redelivered or resent task scores only what is left and writes nothing twice.
    """
    submission = Submission.objects.select_related("challenge", "challenge__dataset", "phase").get(pk=submission_id)
    if submission.kind != SubmissionKind.PREDICTIONS:
        raise ValueError(f"submission {submission_id} is a {submission.kind}, not predictions")
    if submission.has_ended:
        return submission
    with log_context(submission_id=submission_id):
        dataset = submission.challenge.dataset
        expected_ids = dataset_test_ids(dataset=dataset)
        y_true = dataset_hidden_labels(dataset=dataset)
        for run_id in submission.runs.order_by("index").values_list("pk", flat=True):
            run = run_claim(run_id=run_id, delivery=delivery, cause=cause)
            if run is None:
                continue
            with log_context(run_id=run_id), run_heartbeat(run):
                result = _score_or_fail(submission, run, expected_ids, y_true)
                run_store_retrying(run_id=run_id, attempt=run.attempts, **result)
    return Submission.objects.get(pk=submission_id)


def submission_rescore(*, submission_id: int) -> int:
    """Score every ended run of a prediction submission again (labels or metric corrected); how many changed.

    Runs whose file no longer parses against the corrected data fail with the reason.
    """
    submission = Submission.objects.select_related("challenge", "challenge__dataset", "phase").get(pk=submission_id)
    if submission.kind != SubmissionKind.PREDICTIONS:
        return 0
    dataset = submission.challenge.dataset
    expected_ids = dataset_test_ids(dataset=dataset)
    y_true = dataset_hidden_labels(dataset=dataset)
    changed = 0
    for run in submission.runs.filter(status__in=(RunStatus.SUCCEEDED, RunStatus.FAILED)).order_by("index"):
        fields = _score_or_fail(submission, run, expected_ids, y_true)
        fields.pop("duration_s", None), fields.pop("device", None)
        fields.setdefault("error_message", "")
        if fields["status"] == RunStatus.FAILED:
            fields.update(
                test_score=None,
                public_score=None,
                private_score=None,
                outcomes=None,
                public_outcomes=None,
                private_outcomes=None,
                extra_scores={},
                extra_outcomes=None,
            )
        changed += run_store_rescored(run_id=run.pk, **fields)
    return changed
