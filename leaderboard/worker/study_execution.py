"""Executing one run of a variance study (worker side), with the leaderboard runs' machinery.

The same split (``run_split``), limits, device and sandboxed ``execute_recipe_run`` as
``worker.run_execution``; only the seed record and whether hyperparameters are searched
come from the study's plan. Like a leaderboard run, a study run also stores its score on the
public part of the hidden rows (``public_score``): all a non-host reads before the reveal.
Idempotent like ``run_execute``: a run is claimed under a row lock and its result written
once; a redelivery of an ended run does nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from execution.run import execute_recipe_run
from execution.runners import configured_runner

from ..choices import RUN_ENDED, RunStatus
from ..models import StudyRun
from ..services.errors import PlatformError
from ..services.lifecycle import run_is_stuck
from ..services.variance_studies import study_run_fail, variance_study_refresh
from .run_data import run_predicted_rows, run_split, run_test_parts
from .run_execution import _metric, run_device, run_limits  # the leaderboard runs' own metric and limits


def study_run_claim(*, study_run_id: int) -> StudyRun | None:
    """Mark the run running and count the attempt; None when it has ended or is running elsewhere."""
    with transaction.atomic():
        run = StudyRun.objects.select_for_update().select_related("study__challenge").get(pk=study_run_id)
        if run.status in RUN_ENDED or (run.status == RunStatus.RUNNING and not run_is_stuck(run)):
            return None
        if run.attempts >= settings.VARBOARD["MAX_RUN_ATTEMPTS"]:
            worn_out = True
        else:
            worn_out = False
            run.status, run.started_at, run.attempts = RunStatus.RUNNING, timezone.now(), run.attempts + 1
            run.save(update_fields=["status", "started_at", "attempts"])
    if worn_out:
        study_run_fail(study_run_id=study_run_id, reason=f"started {run.attempts} times without finishing")
        return None
    return run


def study_run_execute(*, study_run_id: int) -> StudyRun | None:
    """Execute one study run in the sandbox and store its result once; None for a duplicate delivery."""
    run = study_run_claim(study_run_id=study_run_id)
    if run is None:
        return None
    study = run.study
    submission, challenge = study.submission, study.challenge
    hpo = (
        {"mode": "search", "method": challenge.hpo_method, "budget": challenge.hpo_budget}
        if run.search_hyperparameters
        else {"mode": "fixed"}
    )
    try:
        with submission.recipe_file.open("rb") as handle:
            source = handle.read().decode("utf-8")
        data, split = run_split(challenge=challenge, seeds=run.seeds)
        outcome = execute_recipe_run(
            recipe_source=source,
            data=data,
            split=split,
            seeds=run.seeds,
            hyperparameters=submission.hyperparameters or None,
            hpo=hpo,
            metric=_metric(challenge, data.classes),
            prediction_kind=challenge.metric_info.prediction_kind,
            limits=run_limits(challenge),
            device=run_device(run.queue),
            higher_is_better=challenge.higher_is_better,
            runner=configured_runner(),
            test_parts=run_test_parts(challenge=challenge, split=split, phase=submission.phase),
            test_rows=run_predicted_rows(challenge=challenge),
        )
    except (OSError, MemoryError) as exc:
        raise PlatformError(f"{type(exc).__name__}: {exc}") from exc
    with transaction.atomic():
        locked = StudyRun.objects.select_for_update().get(pk=study_run_id)
        if locked.status in RUN_ENDED:
            return locked
        locked.status = RunStatus.SUCCEEDED if outcome.status == "succeeded" else RunStatus.FAILED
        locked.test_score, locked.valid_score = outcome.test_score, outcome.valid_score
        # what non-hosts read before the reveal; an outcome without part scores leaves it unset (shown to no one)
        locked.public_score = (getattr(outcome, "part_scores", None) or {}).get("public")
        locked.error_message, locked.log = outcome.error or "", outcome.log or ""
        locked.duration_s, locked.device, locked.finished_at = outcome.duration_s, outcome.device, timezone.now()
        locked.save()
    variance_study_refresh(study_id=study.pk)
    return StudyRun.objects.get(pk=study_run_id)
