"""Submitting: validate every file first, then store the submission and its runs at once, then enqueue.

A rejected upload stores nothing (DESIGN.md §7). Quotas are checked under a row lock on the
team, so two concurrent uploads cannot both take the last slot.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from evaluation.predictions import PredictionFileError, parse_predictions
from tasks.runner import RecipeError, inspect_recipe

from ..choices import RunStatus, SubmissionKind, SubmissionStatus
from ..models import Challenge, PredictionFile, Run, Submission, Team
from ..selectors import dataset_test_ids, submission_quota_usage
from .errors import ChallengeClosed, NotAllowed, QuotaExceeded, ServiceError
from .teams import team_for_submission

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UploadedFile:
    name: str
    data: bytes


def _check_open(challenge: Challenge) -> None:
    now = timezone.now()
    if challenge.opens_at and now < challenge.opens_at:
        raise ChallengeClosed(f"The challenge opens at {challenge.opens_at:%Y-%m-%d %H:%M} UTC.")
    if challenge.closes_at and now >= challenge.closes_at:
        raise ChallengeClosed(f"The challenge closed at {challenge.closes_at:%Y-%m-%d %H:%M} UTC.")


def _check_method_name(method_name: str) -> str:
    method_name = (method_name or "").strip()
    if not method_name:
        raise ServiceError("Name the method of this entry (method_name).", field="method_name")
    if len(method_name) > 120:
        raise ServiceError("The method name is longer than 120 characters.", field="method_name")
    return method_name


def _lock_team_and_check_quota(challenge: Challenge, team: Team, user: User) -> None:
    """Inside a transaction: lock the team and user rows, then count. Concurrent submitters queue on the locks.

    The quota holds for the team and for the user across all their teams, so creating more
    teams does not buy more submissions.
    """
    Team.objects.select_for_update().get(pk=team.pk)
    User.objects.select_for_update().get(pk=user.pk)
    for who, today, total in ((f"Team {team.name}", *submission_quota_usage(challenge=challenge, team=team)),
                              (f"User {user.username}", *submission_quota_usage(challenge=challenge, user=user))):
        if challenge.daily_quota and today >= challenge.daily_quota:
            raise QuotaExceeded(f"{who} has used its {challenge.daily_quota} submissions of the last 24 hours.")
        if challenge.total_quota and total >= challenge.total_quota:
            raise QuotaExceeded(f"{who} has used all {challenge.total_quota} of its submissions.")


def _parse_prediction_files(challenge: Challenge, files: list[UploadedFile]) -> None:
    """Validate every file completely; raise naming the file and the problem."""
    dataset = challenge.dataset
    max_files = min(max(challenge.k_runs, 1), settings.VARBOARD["MAX_PREDICTION_FILES"])
    if not files:
        raise ServiceError("Upload at least one predictions file.", field="files")
    if len(files) > max_files:
        raise ServiceError(f"{len(files)} files were uploaded; this challenge takes at most {max_files} "
                           f"(one per seed, k = {challenge.k_runs}).", field="files")
    expected_ids = dataset_test_ids(dataset=dataset)
    for number, upload in enumerate(files, start=1):
        try:
            parse_predictions(upload.data, filename=upload.name, id_column=dataset.id_column,
                              expected_ids=expected_ids, metric=challenge.metric_info,
                              classes=dataset.classes or None,
                              max_bytes=settings.VARBOARD["MAX_PREDICTION_MB"] * 1024 * 1024)
        except PredictionFileError as exc:
            message = str(exc)
            if not message.startswith(upload.name):
                message = f"{upload.name}: {message}"
            if len(files) > 1:
                message = f"file {number} of {len(files)}: {message}"
            raise ServiceError(message, field="files") from None


def _enqueue_scoring(submission_id: int) -> None:
    """Queue the scoring after commit. If the broker is down, fail the submission for the
    platform's reasons (not charged to the quota) rather than leave it queued forever."""
    from tasks.scoring import score_submission

    from .scoring import submission_fail_for_platform

    try:
        score_submission.delay(submission_id)
    except Exception as exc:  # kombu raises OperationalError and friends; any failure means "not queued"
        logger.exception("could not queue the scoring of submission %s", submission_id)
        submission_fail_for_platform(submission_id=submission_id,
                                     reason=f"the task queue is unreachable ({type(exc).__name__}); "
                                            "please submit again")


def _enqueue_runs(submission_id: int) -> None:
    """Queue the recipe runs after commit; on a broker failure fail them without charging the quota."""
    from .recipes import enqueue_runs, run_fail_for_platform

    try:
        enqueue_runs(submission_id=submission_id)
    except Exception as exc:
        logger.exception("could not queue the runs of submission %s", submission_id)
        for run_id in Run.objects.filter(submission_id=submission_id, status=RunStatus.QUEUED).values_list(
                "pk", flat=True):
            run_fail_for_platform(run_id=run_id, reason=f"the task queue is unreachable ({type(exc).__name__}); "
                                                        "please submit again")


def submission_create_predictions(*, challenge: Challenge, user: User, method_name: str,
                                  files: list[UploadedFile], description: str = "",
                                  team_id: int | None = None) -> Submission:
    """Validate prediction files, store them as one entry (file i is run i) and queue the scoring."""
    if not challenge.allow_predictions:
        raise ServiceError("This challenge does not take prediction files.", field="kind")
    if not hasattr(challenge, "dataset") or not challenge.dataset.test_inputs_file:
        raise ServiceError("This challenge has no test set to score predictions against.")
    _check_open(challenge)
    method_name = _check_method_name(method_name)
    team = team_for_submission(user=user, team_id=team_id)
    _parse_prediction_files(challenge, files)
    stored: list[PredictionFile] = []
    try:
        with transaction.atomic():
            _lock_team_and_check_quota(challenge, team, user)
            submission = Submission.objects.create(
                challenge=challenge, team=team, submitted_by=user, kind=SubmissionKind.PREDICTIONS,
                method_name=method_name, description=description, runs_expected=len(files))
            for index, upload in enumerate(files):
                record = PredictionFile(submission=submission, index=index, original_name=upload.name[:255],
                                        sha256=hashlib.sha256(upload.data).hexdigest())
                record.file.save(f"predictions-{submission.pk}-{index}.csv", ContentFile(upload.data), save=False)
                stored.append(record)
                record.save()
                Run.objects.create(submission=submission, index=index,
                                   seeds={"contestant_file": index}, split_id="hidden-test")
            transaction.on_commit(lambda: _enqueue_scoring(submission.pk))
    except BaseException:
        for record in stored:
            record.file.storage.delete(record.file.name)
        raise
    return Submission.objects.get(pk=submission.pk)  # the enqueue may have changed its status


def _check_recipe_source(name: str, data: bytes) -> str:
    limit_kb = settings.VARBOARD["MAX_RECIPE_KB"]
    if not data:
        raise ServiceError(f"{name}: the recipe file is empty.", field="recipe")
    if len(data) > limit_kb * 1024:
        raise ServiceError(f"{name}: the recipe is {len(data) / 1024:.0f} KB; the limit is {limit_kb} KB.",
                           field="recipe")
    if not name.endswith(".py"):
        raise ServiceError(f"{name}: a recipe is one Python file ending in .py.", field="recipe")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(f"{name}: the recipe is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                           f"{exc.start}).", field="recipe") from None
    try:
        inspect_recipe(source)  # reads the declarations with ast; runs nothing
    except RecipeError as exc:
        raise ServiceError(f"{name}: {exc}", field="recipe") from None
    return source


def submission_create_recipe(*, challenge: Challenge, user: User, method_name: str, recipe: UploadedFile,
                             hyperparameters: dict | None = None, description: str = "",
                             team_id: int | None = None) -> Submission:
    """Store a training recipe and queue its k runs (run i uses the challenge's seed record i)."""
    if not challenge.allow_recipes:
        raise ServiceError("This challenge does not take training recipes.", field="kind")
    if not hasattr(challenge, "dataset"):
        raise ServiceError("This challenge has no dataset to train recipes on.")
    _check_open(challenge)
    method_name = _check_method_name(method_name)
    if hyperparameters is not None and not isinstance(hyperparameters, dict):
        raise ServiceError("hyperparameters must be a JSON object.", field="hyperparameters")
    _check_recipe_source(recipe.name, recipe.data)
    team = team_for_submission(user=user, team_id=team_id)
    from .recipes import run_plan

    plan = run_plan(challenge=challenge)
    submission = None
    try:
        with transaction.atomic():
            _lock_team_and_check_quota(challenge, team, user)
            submission = Submission(challenge=challenge, team=team, submitted_by=user, kind=SubmissionKind.RECIPE,
                                    method_name=method_name, description=description,
                                    runs_expected=challenge.k_runs, hyperparameters=hyperparameters or {})
            submission.recipe_file.save(f"recipe-{hashlib.sha256(recipe.data).hexdigest()[:16]}.py",
                                        ContentFile(recipe.data), save=False)
            submission.save()
            Run.objects.bulk_create([Run(submission=submission, index=i, seeds=seeds, split_id=split_id)
                                     for i, (seeds, split_id) in enumerate(plan)])
            transaction.on_commit(lambda: _enqueue_runs(submission.pk))
    except BaseException:
        if submission is not None and submission.recipe_file:
            submission.recipe_file.storage.delete(submission.recipe_file.name)
        raise
    return Submission.objects.get(pk=submission.pk)  # the enqueue may have changed its status


def submission_refresh_status(*, submission_id: int) -> Submission:
    """Derive the submission's status from its runs: it ends when every run has ended."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if submission.status == SubmissionStatus.CANCELLED:
            return submission
        statuses = list(submission.runs.values_list("status", "error_message"))
        ended = [s for s in statuses if s[0] in (RunStatus.SUCCEEDED, RunStatus.FAILED)]
        succeeded = sum(1 for s, _ in statuses if s == RunStatus.SUCCEEDED)
        if statuses and len(ended) == len(statuses):
            submission.status = SubmissionStatus.SCORED if succeeded else SubmissionStatus.FAILED
            submission.finished_at = submission.finished_at or timezone.now()
            failed = [msg for s, msg in statuses if s == RunStatus.FAILED]
            if failed:
                first = failed[0] or "unknown error"
                submission.error_message = (f"{len(failed)} of {len(statuses)} runs failed; first error: {first}")
            else:
                submission.error_message = ""
        elif any(s[0] != RunStatus.QUEUED for s in statuses):
            submission.status = SubmissionStatus.RUNNING
            submission.started_at = submission.started_at or timezone.now()
        submission.save(update_fields=["status", "finished_at", "started_at", "error_message"])
    return submission


def submission_cancel(*, submission: Submission, user: User) -> Submission:
    from ..selectors import submission_can_see_details

    if not submission_can_see_details(user=user, submission=submission):
        raise NotAllowed("Only the submitting team or the hosts can cancel a submission.")
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status in (SubmissionStatus.SCORED, SubmissionStatus.FAILED):
            raise ServiceError(f"The submission has ended ({submission.status}); there is nothing to cancel.")
        submission.status = SubmissionStatus.CANCELLED
        # Refunded only when nothing has run: a team that has seen some runs' scores keeps the charge.
        submission.counts_toward_quota = submission.runs.exclude(status=RunStatus.QUEUED).exists()
        submission.finished_at = timezone.now()
        submission.save(update_fields=["status", "counts_toward_quota", "finished_at"])
        submission.runs.filter(status=RunStatus.QUEUED).update(status=RunStatus.FAILED,
                                                                error_message="cancelled before it ran")
    from .reports import report_request

    report_request(challenge_id=submission.challenge_id)
    return submission
