"""Scoring prediction submissions against the hidden labels (queue ``scoring``).

Idempotent: each run goes through the lifecycle's claim and write-once store, so a
redelivered task scores only the runs that have not ended and writes nothing twice
(docs/DESIGN.md §7).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from django.db import DatabaseError
from django.utils import timezone

from evaluation.metrics import score_predictions
from evaluation.predictions import PredictionFileError, parse_predictions
from evaluation.scoring_programs import ProgramScores, ScoringProgramError

from ..choices import RunStatus, SubmissionKind
from ..limits import upload_limit
from ..logs import log_context
from ..models import Run, Submission
from ..storage import STORAGE_DOWN
from .dataset_files import dataset_hidden_labels, dataset_test_ids
from .errors import PlatformError
from .lifecycle import (
    NOT_CHARGED,
    is_storage_cause,
    run_claim,
    run_heartbeat,
    run_store_rescored,
    run_store_retrying,
    submission_refund,
)
from .metrics import program_metrics
from .programs import (
    PROGRAM_FAILED,
    program_failure_record,
    program_predictions,
    program_scoring_gate,
    program_truth,
    scoring_parts,
)

logger = logging.getLogger(__name__)

#: Runs a host's scoring program in the sandbox: ``(source, y_true, y_pred) -> ProgramScores``. The worker
#: gives it (``leaderboard.worker.program_check.run_program``): the services cannot import the sandbox.
ProgramRunner = Callable[[bytes, pd.DataFrame, pd.DataFrame], ProgramScores]


def _score_one(
    submission: Submission, run: Run, expected_ids: list[str], y_true, runner: ProgramRunner | None = None
) -> dict:
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
    if challenge.scoring_program:
        held = program_scoring_gate(challenge.pk, submission.team_id)
        if held:
            return dict(status=RunStatus.FAILED, error_message=held)
        fields = score_with_program(submission, predictions, expected_ids, runner)
        # No duration: how long the calls took would say which part of the rows a failure came from.
        return dict(status=RunStatus.SUCCEEDED, duration_s=None, device="scoring", **fields)
    result = score_predictions(challenge.metric, y_true, predictions, classes=dataset.classes or None)
    fields = dict(
        test_score=float(result.score),
        outcomes=Run.pack_outcomes(result.outcomes),
        **score_parts(submission, y_true, predictions),
    )
    return dict(status=RunStatus.SUCCEEDED, duration_s=time.monotonic() - started, device="scoring", **fields)


def _board_parts(submission: Submission) -> list[tuple[str, np.ndarray]]:
    """``(part, row mask)`` of the public board and (where the phase scores it) the private board."""
    return [(part, rows) for part, rows in scoring_parts(submission.challenge, submission.phase) if part != "test"]


def score_with_program(
    submission: Submission, predictions: np.ndarray, expected_ids: list[str], runner: ProgramRunner | None
) -> dict:
    """The result fields of one run scored by the host's program, called on the test rows and on each board's
    part alone (a non-decomposable metric needs the part by itself): the primary metric's in ``test_score``,
    ``outcomes``, ``public_*``, ``private_*``; the others' in ``extra_scores`` and ``extra_outcomes``.

    Raises ScoringProgramError (for the hosts) when the program fails.
    """
    challenge = submission.challenge
    if runner is None:
        raise RuntimeError("scoring programs run on a worker, which passes the sandbox's runner")
    with challenge.scoring_program.open("rb") as handle:
        source = handle.read()
    ids = [str(i) for i in expected_ids]
    y_true, y_pred = program_truth(challenge.dataset, ids), program_predictions(challenge, predictions, ids)
    primary = next(metric.name for metric in program_metrics(challenge) if metric.primary)
    fields: dict = {}
    extra_scores: dict[str, dict[str, float]] = {}
    extra_outcomes: dict[str, np.ndarray] = {}
    results = _call_every_part(challenge, submission, source, y_true, y_pred, runner)
    for part, rows in scoring_parts(challenge, submission.phase):
        if not rows.any():
            continue
        result = results[np.packbits(rows).tobytes()]
        if primary not in result.outcomes:
            raise ScoringProgramError(f"the primary metric {primary!r} returned no per-example outcomes.")
        prefix = "" if part == "test" else f"{part}_"
        fields[f"{prefix or 'test_'}score"] = float(result.scores[primary])
        fields[f"{prefix}outcomes"] = Run.pack_outcomes(result.outcomes[primary])
        extra_scores[part] = {name: float(value) for name, value in result.scores.items() if name != primary}
        extra_outcomes.update({f"{part}/{name}": values for name, values in result.outcomes.items() if name != primary})
    fields.update(extra_scores=extra_scores, extra_outcomes=Run.pack_extra_outcomes(extra_outcomes))
    return fields


def _call_every_part(challenge, submission, source, y_true, y_pred, runner) -> dict[bytes, ProgramScores]:
    """The program's result on each part (keyed by its packed row mask; a part equal to another is called
    once). Every part is called even after one failed, and the first failure raised then: which part failed
    (all rows, public or private) must not show in how long the run took."""
    results: dict[bytes, ProgramScores] = {}
    failure: ScoringProgramError | None = None
    for _part, rows in scoring_parts(challenge, submission.phase):
        key = np.packbits(rows).tobytes()
        if rows.any() and key not in results:
            try:
                results[key] = runner(source, y_true[rows], y_pred[rows])
            except ScoringProgramError as exc:
                failure = failure or exc
                results[key] = None  # type: ignore[assignment]
    if failure is not None:
        raise failure
    return results


def score_parts(submission: Submission, y_true, predictions) -> dict:
    """Scores and outcomes on the public board's rows and (where the phase scores it) the private board's,
    each computed on its part alone; the secondary metrics' on the test rows and the same parts."""
    challenge, dataset = submission.challenge, submission.challenge.dataset
    parts = _board_parts(submission)
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


def _score_or_fail(
    submission: Submission,
    run: Run,
    expected_ids: list[str],
    y_true,
    runner: ProgramRunner | None = None,
    refund: bool = True,
) -> dict:
    """Scored result fields, or failed ones naming the problem; transient errors propagate. ``refund``: a
    platform fault refunds the submission (not on a rescore of an old one)."""
    try:
        return _score_one(submission, run, expected_ids, y_true, runner)
    except PredictionFileError as exc:  # validated at upload; only a changed dataset gets here
        return dict(status=RunStatus.FAILED, error_message=str(exc))
    except ScoringProgramError as exc:  # the host's program: its message is for the hosts only; charged
        program_failure_record(
            challenge_id=submission.challenge_id,
            team_id=submission.team_id,
            submission_id=submission.pk,
            run_index=run.index,
            error=exc,
        )
        return dict(status=RunStatus.FAILED, error_message=PROGRAM_FAILED)
    except (DatabaseError, PlatformError):
        raise  # transient: the task retries
    except (OSError, *STORAGE_DOWN) as exc:  # a disk or the object store: transient, retried with backoff
        raise PlatformError(f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # the platform's fault (a bug, an inconsistent challenge): fail, don't loop
        logger.exception("scoring run %s of submission %s failed", run.index, submission.pk)
        if refund:
            submission_refund(submission_id=submission.pk)
        # Named by its type only: its text (numpy's, scikit-learn's, a host's program's) could quote hidden labels.
        return dict(
            status=RunStatus.FAILED,
            error_message=f"platform error while scoring: {type(exc).__name__}, logged for the operators {NOT_CHARGED}",
        )


def submission_score(
    *, submission_id: int, delivery: str = "", cause: str = "", runner: ProgramRunner | None = None
) -> Submission:
    """Score every run of a prediction submission that has not ended yet (``runner``: the sandbox's, for a
    challenge with a scoring program).

    Each run is claimed (a lease, an attempt counted) and stored with its attempt as token, so
    a redelivered or resent task scores only what is left and writes nothing twice.
    """
    submission = Submission.objects.select_related("challenge", "challenge__dataset", "phase").get(pk=submission_id)
    if submission.kind != SubmissionKind.PREDICTIONS:
        raise ValueError(f"submission {submission_id} is a {submission.kind}, not predictions")
    if submission.has_ended:
        return submission
    if submission.challenge.scoring_program:  # a check due or running: wait (retried) before claiming any run,
        program_scoring_gate(submission.challenge_id, submission.team_id)  # so the wait spends no attempt
    with log_context(submission_id=submission_id):
        dataset = submission.challenge.dataset
        expected_ids = dataset_test_ids(dataset=dataset)
        y_true = dataset_hidden_labels(dataset=dataset)
        for run_id in submission.runs.order_by("index").values_list("pk", flat=True):
            run = run_claim(run_id=run_id, delivery=delivery, cause=cause)
            if run is None:
                continue
            with log_context(run_id=run_id), run_heartbeat(run):
                result = _score_or_fail(submission, run, expected_ids, y_true, runner)
                run_store_retrying(run_id=run_id, attempt=run.attempts, **result)
    return Submission.objects.get(pk=submission_id)


def submission_rescore(*, submission_id: int, runner: ProgramRunner | None = None) -> int:
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
        fields = _score_or_fail(submission, run, expected_ids, y_true, runner, refund=False)
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
    if submission.rescore_requested_at is not None:  # done, unless asked again meanwhile
        Submission.objects.filter(pk=submission_id, rescore_requested_at=submission.rescore_requested_at).update(
            rescore_requested_at=None
        )
    return changed


def submission_rescore_gave_up(*, submission_id: int, reason: str) -> None:
    """A rescore retried until it gave up (its file lost from the storage, say) is answered: kept requested, the
    janitor sent it again at every pass, each retried again, for ever. Logged for the operators, as a scoring is.

    Unless it gave up on a storage fault (the store down or hung, a full disk: :func:`is_storage_cause`): an outage
    longer than the task's retries (93-122 s) cleared the request, and the entry kept its score against the old
    labels or metric for good. Its request is renewed instead: the janitor sends it again ``REQUEUE_AFTER_S`` later,
    and again while the outage lasts, one rescore in flight per submission.
    """
    extra = {"submission_id": submission_id}
    if is_storage_cause(reason):
        logger.warning("rescore of submission %s waits for the storage: %s", submission_id, reason, extra=extra)
        Submission.objects.filter(pk=submission_id, rescore_requested_at__isnull=False).update(
            rescore_requested_at=timezone.now()
        )
        return
    logger.error("rescore of submission %s gave up: %s", submission_id, reason, extra=extra)
    Submission.objects.filter(pk=submission_id).update(rescore_requested_at=None)
