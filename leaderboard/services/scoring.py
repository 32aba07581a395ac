"""Scoring prediction submissions against the hidden labels (queue ``scoring``).

Idempotent: each run is locked, and only runs not yet ended are scored, so a redelivered
task writes nothing twice (DESIGN.md §7).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from evaluation.metrics import score_predictions
from evaluation.predictions import PredictionFileError, parse_predictions

from ..choices import RunStatus, SubmissionKind, SubmissionStatus
from ..models import Run, Submission
from ..selectors import dataset_hidden_labels, dataset_test_ids
from .reports import report_request
from .submissions import submission_refresh_status

logger = logging.getLogger(__name__)


def _score_one(submission: Submission, run: Run, expected_ids: list[str], y_true) -> None:
    challenge, dataset = submission.challenge, submission.challenge.dataset
    record = submission.prediction_files.get(index=run.index)
    started = time.monotonic()
    with record.file.open("rb") as handle:
        data = handle.read()
    predictions = parse_predictions(data, filename=record.original_name, id_column=dataset.id_column,
                                    expected_ids=expected_ids, metric=challenge.metric_info,
                                    classes=dataset.classes or None,
                                    max_bytes=settings.VARBOARD["MAX_PREDICTION_MB"] * 1024 * 1024)
    result = score_predictions(challenge.metric, y_true, predictions, classes=dataset.classes or None)
    run.test_score = float(result.score)
    run.outcomes = Run.pack_outcomes(result.outcomes)
    run.status = RunStatus.SUCCEEDED
    run.duration_s = time.monotonic() - started
    run.device = "scoring"


def submission_score(*, submission_id: int) -> Submission:
    """Score every run of a prediction submission that has not ended yet."""
    submission = Submission.objects.select_related("challenge", "challenge__dataset").get(pk=submission_id)
    if submission.kind != SubmissionKind.PREDICTIONS:
        raise ValueError(f"submission {submission_id} is a {submission.kind}, not predictions")
    if submission.status in (SubmissionStatus.SCORED, SubmissionStatus.FAILED, SubmissionStatus.CANCELLED):
        return submission
    Submission.objects.filter(pk=submission_id, status=SubmissionStatus.QUEUED).update(
        status=SubmissionStatus.RUNNING, started_at=timezone.now())
    dataset = submission.challenge.dataset
    expected_ids = dataset_test_ids(dataset=dataset)
    y_true = dataset_hidden_labels(dataset=dataset)
    for run_id in submission.runs.order_by("index").values_list("pk", flat=True):
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
                continue
            run.attempts += 1
            run.started_at = timezone.now()
            try:
                _score_one(submission, run, expected_ids, y_true)
            except PredictionFileError as exc:  # validated at upload; only a changed dataset gets here
                run.status, run.error_message = RunStatus.FAILED, str(exc)
            except (DatabaseError, OSError):
                raise  # transient: the task retries
            except Exception as exc:  # the platform's fault (a bug, an inconsistent challenge): fail, don't loop
                logger.exception("scoring run %s of submission %s failed", run.index, submission_id)
                run.status = RunStatus.FAILED
                run.error_message = f"platform error while scoring: {type(exc).__name__}: {exc} (not charged)"
                Submission.objects.filter(pk=submission_id).update(counts_toward_quota=False)
            run.finished_at = timezone.now()
            run.save()
    submission = submission_refresh_status(submission_id=submission_id)
    report_request(challenge_id=submission.challenge_id)
    return submission


def submission_fail_for_platform(*, submission_id: int, reason: str) -> None:
    """The platform could not score it: fail it without charging the team's quota."""
    with transaction.atomic():
        Submission.objects.filter(pk=submission_id).update(counts_toward_quota=False)
        Run.objects.filter(submission_id=submission_id).exclude(
            status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]).update(
            status=RunStatus.FAILED, error_message=f"platform error: {reason}", finished_at=timezone.now())
    submission_refresh_status(submission_id=submission_id)
