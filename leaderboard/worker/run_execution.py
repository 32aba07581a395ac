"""Executing one recipe run (worker side): claim it, run it in the sandbox, store its result once.

``run_execute`` is idempotent: a redelivered or duplicated task finds the run ended (or
claimed past its attempts) and writes nothing. Only workers import this module: it is the
one place where the web application reaches the execution engine.
"""

from __future__ import annotations

import logging

from django.conf import settings

from evaluation.metrics import get_metric, score_predictions
from execution.readiness import runs_get_cuda
from execution.run import execute_recipe_run
from execution.runners import configured_runner
from execution.sandbox import Limits

from ..choices import HpoMode, RunStatus
from ..logs import log_context
from ..models import Challenge, Run, Submission
from ..services.errors import PlatformError
from ..services.lifecycle import run_claim, run_heartbeat, run_store_retrying
from .run_data import run_predicted_rows, run_split, run_test_parts

logger = logging.getLogger(__name__)


def run_limits(challenge: Challenge) -> Limits:
    """The sandbox limits of a run: the challenge's, under the operator's ceilings."""
    wall = challenge.run_wall_time_s()
    return Limits(
        wall_time_s=wall,
        cpu_time_s=wall * 4,
        memory_mb=min(challenge.run_memory_limit_mb, max(settings.VARBOARD["RUN_MEMORY_MB"], 256)),
    )


def run_device(queue: str) -> str:
    """``cuda`` for the gpu queue when the runner (this worker, or its runner service) has a GPU, else ``cpu``."""
    if queue == "gpu":
        if runs_get_cuda():
            return "cuda"
        logger.warning("GPU requested but the runner has no CUDA device; running on the CPU")
    return "cpu"


def run_hpo(challenge: Challenge) -> dict:
    if challenge.hpo_mode == HpoMode.SEARCH:
        return {"mode": "search", "method": challenge.hpo_method, "budget": challenge.hpo_budget}
    return {"mode": "fixed"}


def _metric(challenge: Challenge, classes, name: str | None = None):
    name = get_metric(name or challenge.metric).name

    def metric(y_true, y_pred):
        result = score_predictions(name, y_true, y_pred, classes=classes or None)
        return result.score, result.outcomes

    return metric


def run_execute(*, run_id: int, delivery: str = "", cause: str = "") -> Run | None:
    """Execute one recipe run in the sandbox and store its result once; None when it did not run.

    None for a duplicate delivery (the run ended, or another worker holds its lease) and for
    an attempt that lost its lease while it ran (a later attempt stores the result). The lease
    is renewed from a heartbeat thread while the sandbox runs (``lifecycle.run_heartbeat``).
    """
    run = run_claim(run_id=run_id, delivery=delivery, cause=cause)
    if run is None:
        return None
    with log_context(run_id=run_id, submission_id=run.submission_id), run_heartbeat(run):
        submission = Submission.objects.select_related("challenge", "challenge__dataset", "phase").get(
            pk=run.submission_id
        )
        challenge = submission.challenge
        try:
            with submission.recipe_file.open("rb") as handle:
                source = handle.read().decode("utf-8")
            data, split = run_split(challenge=challenge, seeds=run.seeds)
            Run.objects.filter(pk=run_id).update(split_id=split.split_id)
            outcome = execute_recipe_run(
                recipe_source=source,
                data=data,
                split=split,
                seeds=run.seeds,
                hyperparameters=submission.hyperparameters or None,
                hpo=run_hpo(challenge),
                metric=_metric(challenge, data.classes),
                prediction_kind=challenge.metric_info.prediction_kind,
                limits=run_limits(challenge),
                device=run_device(run.queue),
                higher_is_better=challenge.higher_is_better,
                runner=configured_runner(),
                test_parts=run_test_parts(challenge=challenge, split=split, phase=submission.phase),
                test_rows=run_predicted_rows(challenge=challenge),
                extra_metrics={name: _metric(challenge, data.classes, name) for name in challenge.secondary_metrics},
            )
        except (OSError, MemoryError) as exc:
            raise PlatformError(f"{type(exc).__name__}: {exc}") from exc
        stored = run_store_retrying(run_id=run_id, attempt=run.attempts, **_result_fields(outcome))
        logger.info(
            "run %s of submission %s: %s in %.2f s%s",
            run.index,
            run.submission_id,
            outcome.status,
            outcome.duration_s or 0.0,
            "" if stored else " (not stored: another attempt holds the run)",
        )
    return Run.objects.get(pk=run_id) if stored else None


def _result_fields(outcome) -> dict:
    return dict(
        status=RunStatus.SUCCEEDED if outcome.status == "succeeded" else RunStatus.FAILED,
        test_score=outcome.test_score,
        valid_score=outcome.valid_score,
        public_score=outcome.part_scores.get("public"),
        private_score=outcome.part_scores.get("private"),
        extra_scores=dict(getattr(outcome, "extra_scores", None) or {}),
        outcomes=Run.pack_outcomes(outcome.outcomes),
        hyperparameters=outcome.hyperparameters or {},
        hpo_trials=list(outcome.trials or []),
        duration_s=outcome.duration_s,
        device=outcome.device,
        fingerprint=outcome.fingerprint or {},
        log=outcome.log or "",
        error_message=outcome.error or "",
        isolation=list(outcome.isolation),
    )
