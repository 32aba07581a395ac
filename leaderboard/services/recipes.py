"""Recipe runs: the seed plan, enqueueing one task per run, executing a run in the sandbox.

Run i of every submission of a challenge gets the same seed record and split
(DESIGN.md §4), so comparisons between recipe entries are paired. ``run_execute`` is
idempotent: a redelivered or duplicated task finds the run ended and writes nothing.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta

import numpy as np
import pandas as pd
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation.metrics import get_metric, score_predictions
from evaluation.seeds import seed_record
from evaluation.splits import fixed_split, out_of_bootstrap_split
from tasks.runner import RecipeData, execute_recipe_run, inspect_recipe
from tasks.sandbox import Limits

from ..choices import Device, HpoMode, RunStatus, SplitScheme, SubmissionStatus
from ..models import Challenge, Dataset, Run, Submission
from ..selectors import dataset_frame, dataset_hidden_labels
from .reports import report_request
from .submissions import submission_refresh_status

logger = logging.getLogger(__name__)

# A run redelivered after a worker crash is retried this many times before it is failed.
MAX_RUN_ATTEMPTS = 3


class PlatformError(Exception):
    """A fault of the platform, not of the recipe: the run is retried, and never charged to a quota."""


def recipe_data(*, challenge: Challenge) -> tuple[RecipeData, np.ndarray | None, np.ndarray | None]:
    """The pool the splits index into, and (fixed scheme) the fixed train/test row indices.

    Under the fixed scheme the hidden test rows join the pool; only their inputs ever reach
    the sandbox (the runner scores outside it). A worker builds it once per dataset version
    and split scheme (the arrays are read-only), not once per run.
    """
    dataset = challenge.dataset
    return _recipe_data_cached(dataset.pk, dataset.version, challenge.split_scheme)


@functools.lru_cache(maxsize=8)
def _recipe_data_cached(dataset_id: int, version: str, split_scheme: str):
    data, train_idx, test_idx = _build_recipe_data(Dataset.objects.get(pk=dataset_id), split_scheme)
    for array in (data.X, data.y, data.ids, train_idx, test_idx):
        if array is not None:
            array.setflags(write=False)
    return data, train_idx, test_idx


def _build_recipe_data(dataset, split_scheme: str):
    frames = [dataset_frame(dataset=dataset, part="train")]
    fixed = split_scheme == SplitScheme.FIXED
    if fixed:
        test = dataset_frame(dataset=dataset, part="test_inputs")
        test[dataset.label_column] = dataset_hidden_labels(dataset=dataset)
        frames.append(test)
    pool = pd.concat(frames, ignore_index=True)
    features = pool[dataset.feature_columns]
    numeric = features.apply(pd.to_numeric, errors="coerce")
    if not numeric.isna().any().any():
        X = numeric.to_numpy(dtype=np.float64)
    elif len(dataset.feature_columns) == 1:
        X = features.iloc[:, 0].astype(str).to_numpy(dtype=str)
    else:
        X = features.astype(str).agg(" ".join, axis=1).to_numpy(dtype=str)
    labels = pool[dataset.label_column]
    y = labels.astype(float).to_numpy() if dataset.task == "regression" else labels.astype(str).to_numpy(dtype=str)
    data = RecipeData(X=X, y=y, ids=pool[dataset.id_column].astype(str).to_numpy(dtype=str),
                      feature_names=list(dataset.feature_columns), classes=list(dataset.classes or []),
                      task=dataset.task)
    if fixed:
        n_train = len(frames[0])
        return data, np.arange(n_train), np.arange(n_train, len(pool))
    return data, None, None


def run_split(*, challenge: Challenge, data: RecipeData, seeds: dict, fixed_idx=None):
    train_idx, test_idx = fixed_idx if fixed_idx is not None else (None, None)
    if challenge.split_scheme == SplitScheme.FIXED:
        return fixed_split(train_idx, test_idx, seed=challenge.master_seed)
    stratify = data.y if (challenge.stratify and data.task != "regression") else None
    return out_of_bootstrap_split(len(data.y), seeds["split"], test_fraction=challenge.test_fraction,
                                  stratify=stratify)


def run_plan(*, challenge: Challenge) -> list[tuple[dict, str]]:
    """(seed record, split id) of runs 0..k-1: the same for every submission of the challenge."""
    data, train_idx, test_idx = recipe_data(challenge=challenge)
    plan = []
    for index in range(challenge.k_runs):
        seeds = seed_record(challenge.master_seed, index, challenge.randomize_sources)
        split = run_split(challenge=challenge, data=data, seeds=seeds,
                          fixed_idx=(train_idx, test_idx) if train_idx is not None else None)
        plan.append((seeds, split.split_id))
    return plan


def run_queue(*, challenge: Challenge, submission: Submission | None = None) -> str:
    """``gpu`` when the host asks for GPUs or the recipe declares ``NEEDS_GPU = True``, else ``cpu``."""
    if challenge.device == Device.GPU:
        return "gpu"
    if submission is not None and submission.recipe_file:
        with submission.recipe_file.open("rb") as handle:
            if inspect_recipe(handle.read().decode("utf-8")).needs_gpu:
                return "gpu"
    return "cpu"


def enqueue_runs(*, submission_id: int) -> int:
    """One task per queued run, on the challenge's cpu or gpu queue."""
    from tasks.runs import execute_run

    submission = Submission.objects.select_related("challenge").get(pk=submission_id)
    queue = run_queue(challenge=submission.challenge, submission=submission)
    run_ids = list(submission.runs.filter(status=RunStatus.QUEUED).values_list("pk", flat=True))
    for run_id in run_ids:
        execute_run.apply_async((run_id,), queue=queue)
    return len(run_ids)


def _limits(challenge: Challenge) -> Limits:
    wall = min(challenge.run_time_limit_s, settings.VARBOARD["RUN_WALL_TIME_S"])
    return Limits(wall_time_s=wall, cpu_time_s=wall * 4,
                  memory_mb=min(challenge.run_memory_limit_mb, max(settings.VARBOARD["RUN_MEMORY_MB"], 256)))


def _claim(run_id: int) -> Run | None:
    """Mark the run running; None when it has ended already (a duplicate delivery)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("submission").get(pk=run_id)
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return None
        if run.submission.status == SubmissionStatus.CANCELLED:
            return None
        if run.attempts >= MAX_RUN_ATTEMPTS:
            run.status = RunStatus.FAILED
            run.error_message = (f"platform error: the run was interrupted {run.attempts} times "
                                 "(worker lost); it was not charged to your quota")
            run.finished_at = timezone.now()
            run.save()
            Submission.objects.filter(pk=run.submission_id).update(counts_toward_quota=False)
            return None
        run.status = RunStatus.RUNNING
        run.attempts += 1
        run.started_at = timezone.now()
        run.save(update_fields=["status", "attempts", "started_at"])
        if run.submission.status == SubmissionStatus.QUEUED:
            Submission.objects.filter(pk=run.submission_id, status=SubmissionStatus.QUEUED).update(
                status=SubmissionStatus.RUNNING, started_at=timezone.now())
    return run


def _device_name(challenge: Challenge, queue: str) -> str:
    """``cuda`` on a GPU worker (one pinned by CUDA_VISIBLE_DEVICES) when CUDA works, else ``cpu``."""
    if queue == "gpu":
        try:
            import torch

            if torch.cuda.is_available():
                return "cuda"
        except Exception:  # torch missing or broken on this worker: run on the CPU and say so
            logger.warning("GPU requested but CUDA is unavailable; running on the CPU")
    return "cpu"


def run_execute(*, run_id: int) -> Run | None:
    """Execute one recipe run in the sandbox and store its result once."""
    run = _claim(run_id)
    if run is None:
        return None
    submission = Submission.objects.select_related("challenge", "challenge__dataset").get(pk=run.submission_id)
    challenge = submission.challenge
    try:
        with submission.recipe_file.open("rb") as handle:
            source = handle.read().decode("utf-8")
        data, train_idx, test_idx = recipe_data(challenge=challenge)
        split = run_split(challenge=challenge, data=data, seeds=run.seeds,
                          fixed_idx=(train_idx, test_idx) if train_idx is not None else None)
        if split.split_id != run.split_id:
            raise PlatformError(f"split {split.split_id} differs from the planned {run.split_id}: the dataset changed")
        metric = get_metric(challenge.metric)
        hpo = ({"mode": "search", "method": challenge.hpo_method, "budget": challenge.hpo_budget}
               if challenge.hpo_mode == HpoMode.SEARCH else {"mode": "fixed"})
        outcome = execute_recipe_run(
            recipe_source=source, data=data, split=split, seeds=run.seeds,
            hyperparameters=submission.hyperparameters or None, hpo=hpo,
            metric=lambda y_true, y_pred: _score(metric.name, y_true, y_pred, data.classes),
            prediction_kind=metric.prediction_kind, limits=_limits(challenge), device=_device_name(challenge, run_queue(challenge=challenge, submission=submission)),
            higher_is_better=challenge.higher_is_better)
    except PlatformError:
        raise
    except (OSError, MemoryError) as exc:
        raise PlatformError(f"{type(exc).__name__}: {exc}") from exc
    _store(run_id, outcome)
    submission_refresh_status(submission_id=submission.pk)
    report_request(challenge_id=challenge.pk)
    return Run.objects.get(pk=run_id)


def _score(metric_name: str, y_true, y_pred, classes):
    result = score_predictions(metric_name, y_true, y_pred, classes=classes or None)
    return result.score, result.outcomes


def _store(run_id: int, outcome) -> None:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return  # a duplicate delivery finished first: written once
        run.status = RunStatus.SUCCEEDED if outcome.status == "succeeded" else RunStatus.FAILED
        run.test_score = outcome.test_score
        run.valid_score = outcome.valid_score
        run.outcomes = Run.pack_outcomes(outcome.outcomes)
        run.hyperparameters = outcome.hyperparameters or {}
        run.hpo_trials = list(outcome.trials or [])
        run.duration_s = outcome.duration_s
        run.device = outcome.device
        run.fingerprint = outcome.fingerprint or {}
        run.log = outcome.log or ""
        run.error_message = outcome.error or ""
        run.finished_at = timezone.now()
        run.save()


def run_fail_for_platform(*, run_id: int, reason: str) -> None:
    """Give up on a run for the platform's own reasons; the submission stops counting toward quotas."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return
        run.status = RunStatus.FAILED
        run.error_message = f"platform error: {reason} (not charged to your quota)"
        run.finished_at = timezone.now()
        run.save()
        Submission.objects.filter(pk=run.submission_id).update(counts_toward_quota=False)
    submission = submission_refresh_status(submission_id=run.submission_id)
    report_request(challenge_id=submission.challenge_id)


def runs_fail_stuck(*, now=None) -> int:
    """Fail runs that have been ``running`` longer than their limit plus a grace period (a reaper)."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.VARBOARD["STUCK_RUN_GRACE_S"])
    failed = 0
    candidates = Run.objects.filter(status=RunStatus.RUNNING, started_at__isnull=False).select_related(
        "submission__challenge")
    for run in candidates:
        wall = min(run.submission.challenge.run_time_limit_s, settings.VARBOARD["RUN_WALL_TIME_S"])
        limit = timedelta(seconds=wall) + grace
        if run.started_at + limit < now:
            run_fail_for_platform(run_id=run.pk, reason=f"the run was still marked running {limit} after it "
                                                        "started; its worker was lost")
            failed += 1
    return failed
