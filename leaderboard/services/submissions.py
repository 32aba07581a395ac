"""Submitting: validate every file first, then store the submission and its runs at once, then enqueue.

A rejected upload stores nothing (docs/DESIGN.md §7). Quotas are checked under a row lock on the
team, so two concurrent uploads cannot both take the last slot.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile, File
from django.db import transaction
from django.utils import timezone

from evaluation.io.guarded import ChildLimitExceeded, limit_exceeded_message, memory_message, run_guarded
from evaluation.io.read import TableError, check_columns, check_lines
from evaluation.predictions import PredictionFileError, parse_predictions
from evaluation.recipes import RecipeError, RecipeInfo, inspect_recipe
from evaluation.seeds import seed_record

from ..choices import Device, Moderation, RunQueue, RunStatus, SubmissionKind, SubmissionStatus, TestRows
from ..limits import upload_child_limits, upload_file_count_limit, upload_limit
from ..models import Challenge, Phase, PredictionFile, Run, Submission, Team, TeamModeration
from ..selectors import phase_quota_usage, submission_can_see_details, user_teams
from ..storage import atomic_deleting_on_failure, discard
from .boards import board_has_private, board_private_revealed
from .dispatch import EXECUTE_RUN, SCORE_SUBMISSION, enqueue_on_commit
from .errors import ChallengeClosed, NotAllowed, QuotaExceeded, ServiceError, TooLarge
from .phases import phase_open
from .programs import program_ready
from .registrations import registration_check
from .reports import report_request_after, report_request_for_choice
from .teams import team_for_submission, team_lock_for_entry
from .workdirs import work_folder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UploadedFile:
    name: str
    data: bytes


def _open_phase(challenge: Challenge, user: User, kind: str) -> Phase:
    """The phase taking submissions now, if it takes this kind and the user may submit (rules, registration)."""
    phase = phase_open(challenge=challenge)
    allowed = phase.allow_predictions if kind == SubmissionKind.PREDICTIONS else phase.allow_recipes
    if not allowed:
        raise ServiceError(
            f"The {phase.name} phase does not take {SubmissionKind(kind).label.lower()} submissions.", field="kind"
        )
    registration_check(challenge=challenge, user=user)
    return phase


def content_hash(parts: list[bytes]) -> str:
    """SHA-256 over the SHA-256 of each part, sorted: the same file set in any order hashes alike."""
    return digests_hash([hashlib.sha256(part).hexdigest() for part in parts])


def digests_hash(digests: list[str]) -> str:
    """``content_hash`` from the parts' SHA-256 hex digests."""
    return hashlib.sha256("\n".join(sorted(digests)).encode()).hexdigest()


def _check_not_disqualified(challenge: Challenge, team: Team) -> None:
    """Refuse a submission from a team its hosts disqualified on this challenge (``services.moderation``)."""
    moderation = TeamModeration.objects.filter(challenge=challenge, team=team, state=Moderation.DISQUALIFIED).first()
    if moderation is not None:
        raise NotAllowed(
            f"The team {team.name} is disqualified from this challenge ({moderation.reason}): it takes no "
            "more submissions from it."
        )


def _check_not_resubmitted(challenge: Challenge, team: Team, sha256: str, phase) -> None:
    """Refuse a file set or recipe the team has submitted already on the same test rows (failures of the platform
    aside). A phase that scores other rows takes it again: a file made in a development phase on the public rows
    could otherwise never reach the private board unchanged (found by a new host)."""
    earlier = (
        Submission.objects.filter(
            challenge=challenge,
            team=team,
            content_sha256=sha256,
            counts_toward_quota=True,
            phase__test_rows=phase.test_rows,
        )
        .exclude(status=SubmissionStatus.FAILED)
        .order_by("created")
        .first()
    )
    if earlier is not None:
        raise ServiceError(
            f"Your team submitted exactly this already: submission {earlier.pk} "
            f"(“{earlier.method_name}”, {earlier.created:%Y-%m-%d %H:%M} UTC). An identical "
            "resubmission would only count twice in the multiplicity correction.",
            field="files",
        )


def _check_method_name(method_name: str) -> str:
    method_name = (method_name or "").strip()
    if not method_name:
        raise ServiceError("Name the method of this entry (method_name).", field="method_name")
    if len(method_name) > 120:
        raise ServiceError("The method name is longer than 120 characters.", field="method_name")
    return method_name


def _lock_team_and_check_quota(phase: Phase, team: Team, user: User, n_files: int = 1) -> None:
    """Inside a transaction: lock the team and its members' rows (``teams.team_lock_for_entry``), then count.

    Concurrent submitters queue on the locks.

    The phase's quotas (submissions and files, per day and in total) hold for the team and for
    the user across all their teams, so creating more teams does not buy more submissions.
    """
    team_lock_for_entry(team=team, user=user, challenge=phase.challenge)
    for who, used in (
        (f"Team {team.name}", phase_quota_usage(phase=phase, team=team)),
        (f"User {user.username}", phase_quota_usage(phase=phase, user=user)),
    ):
        daily, total = used.seconds_until_a_daily_slot(), _seconds_until_closing(phase)
        if phase.daily_quota and used.submissions_today >= phase.daily_quota:
            raise QuotaExceeded(
                f"{who} has used its {phase.daily_quota} submissions of the last 24 hours; {_next_slot(daily)}.",
                retry_after=daily,
            )
        if phase.total_quota and used.submissions_total >= phase.total_quota:
            raise QuotaExceeded(
                f"{who} has used all {phase.total_quota} of its submissions in the {phase.name} phase.",
                retry_after=total,
            )
        if phase.daily_file_quota and used.files_today + n_files > phase.daily_file_quota:
            raise QuotaExceeded(
                f"{who} has used {used.files_today} of its {phase.daily_file_quota} files of the "
                f"last 24 hours; these {n_files} would exceed it ({_next_slot(daily)}).",
                retry_after=daily,
            )
        if phase.total_file_quota and used.files_total + n_files > phase.total_file_quota:
            raise QuotaExceeded(
                f"{who} has used {used.files_total} of its {phase.total_file_quota} files in the "
                f"{phase.name} phase; these {n_files} would exceed it.",
                retry_after=total,
            )


def _next_slot(seconds: float) -> str:
    """When the oldest counted submission of the last 24 hours leaves the window, in words (UTC, to the minute, rounded
    up): the 429's ``Retry-After`` said it only to clients that read headers (a contestant's review)."""
    at = timezone.now() + timezone.timedelta(seconds=seconds + 59)
    return f"the next slot opens at {at:%Y-%m-%d %H:%M} UTC"


def _seconds_until_closing(phase: Phase) -> float:
    """Until the phase closes (a new phase may open then); a day when it has no closing date."""
    if phase.closes_at is None:
        return 24 * 3600.0
    return max(1.0, (phase.closes_at - timezone.now()).total_seconds())


def _parse_prediction_files(challenge: Challenge, files: list[UploadedFile]) -> tuple[list[str], list[str]]:
    """Validate every file completely, in a child under a memory limit; the SHA-256 hex digests of their bytes,
    and of their predictions (:func:`_predictions_digest`).

    Raises ServiceError naming the file and the problem. The web process reads neither the files
    (a spooled upload is read by the child from its path) nor the test set: the stored test inputs
    are streamed to a local file, whose ids the child reads (issue 22).
    """
    dataset = challenge.dataset
    max_files = min(max(challenge.k_runs, 1), upload_file_count_limit())
    if not files:
        raise ServiceError("Upload at least one predictions file.", field="files")
    if len(files) > max_files:
        raise ServiceError(
            f"{len(files)} files were uploaded; this challenge takes at most {max_files} "
            f"(one per seed, k = {challenge.k_runs}).",
            field="files",
        )
    limits = settings.VARBOARD
    check = {
        "id_column": dataset.id_column,
        "classes": list(dataset.classes or []),
        "metric": challenge.metric_info,
        "max_bytes": upload_limit("prediction").max_bytes,
    }
    with work_folder("predictions") as folder:
        ids_file = os.path.join(folder, "test_inputs.csv")
        with dataset.test_inputs_file.open("rb") as source, open(ids_file, "wb") as copy:
            shutil.copyfileobj(source, copy, 1024 * 1024)
        try:
            return run_guarded(
                _check_prediction_files,
                files,
                ids_file,
                check,
                **upload_child_limits(),
            )
        except ChildLimitExceeded as exc:
            names = ", ".join(upload.name for upload in files)
            if exc.kind == "time":
                seconds = limits["UPLOAD_CHECK_S"]
                raise ServiceError(
                    f"{names}: the files took more than {seconds:g} s to check; the limit is {seconds:g} s.",
                    field="files",
                ) from None
            raise ServiceError(f"{names}: {memory_message('to parse', exc.limit)}", field="files") from None


def _upload_bytes(upload, max_bytes: int) -> bytes:
    """A prediction file's bytes: from the path it was spooled to (at most `max_bytes` + 1), or in memory."""
    path = getattr(upload, "path", None)
    if path is None:
        return upload.data
    with open(path, "rb") as handle:
        return handle.read(max_bytes + 1)  # parse_predictions names the size limit if there is more


def _check_prediction_files(files, ids_file: str, check: dict) -> list[str]:
    """Run in the child of ``_parse_prediction_files``: parse every file against the test ids; their digests."""
    expected_ids = pd.read_csv(ids_file, dtype=str, keep_default_na=False, usecols=[check["id_column"]])[
        check["id_column"]
    ].tolist()
    digests, contents = [], []
    for number, upload in enumerate(files, start=1):
        try:
            data = _upload_bytes(upload, check["max_bytes"])
            _bound_prediction_file(
                UploadedFile(upload.name, data),
                n_test=len(expected_ids),
                classes=check["classes"],
                max_bytes=check["max_bytes"],
            )
            predictions = parse_predictions(
                data,
                filename=upload.name,
                id_column=check["id_column"],
                expected_ids=expected_ids,
                metric=check["metric"],
                classes=check["classes"] or None,
                max_bytes=check["max_bytes"],
            )
        except (PredictionFileError, TableError, MemoryError) as exc:
            message = (
                str(exc)
                if not isinstance(exc, MemoryError)
                else memory_message("to parse", settings.VARBOARD["DATASET_PARSE_MB"] * 1024 * 1024)
            )
            if not message.startswith(upload.name):
                message = f"{upload.name}: {message}"
            if len(files) > 1:
                message = f"file {number} of {len(files)}: {message}"
            raise ServiceError(message, field="files") from None
        digests.append(hashlib.sha256(data).hexdigest())
        contents.append(_predictions_digest(predictions))
        del data, predictions
    return digests, contents


def _predictions_digest(predictions: np.ndarray) -> str:
    """SHA-256 of a file's predictions in the test ids' order, whatever its bytes: a BOM, CRLF line ends, spaces
    after the commas or the columns in another order re-encoded one file four times past the resubmission check
    (found by a contestant). Floats by their binary value, labels by their text."""
    values = np.asarray(predictions)
    numeric = values.dtype.kind in "fiub"
    if numeric:
        body = np.ascontiguousarray(values, dtype=np.float64).tobytes()
    else:
        body = "\n".join(map(str, values.ravel().tolist())).encode()
    return hashlib.sha256(f"{values.shape}:{numeric}\n".encode() + body).hexdigest()


#: Columns a prediction file may have beyond the id and one per class (or one prediction).
_EXTRA_PREDICTION_COLUMNS = 10


def _bound_prediction_file(upload: UploadedFile, *, n_test: int, classes, max_bytes: int) -> None:
    """Refuse a prediction file too wide or too long for the test set before anything parses it.

    A prediction row per test id is all a file needs, so its line count is bounded by the
    test set (plus ``PREDICTION_EXTRA_ROWS`` for blank lines) and its columns by the id and
    the prediction columns: a 2 M-row file for 100 test ids is refused in milliseconds.
    """
    if len(upload.data) > max_bytes:
        return  # parse_predictions names the size limit
    width = 1 + max(1, len(classes or ())) + _EXTRA_PREDICTION_COLUMNS
    check_columns(upload.data, filename=upload.name, max_columns=width)
    check_lines(upload.data, filename=upload.name, max_rows=n_test + settings.VARBOARD["PREDICTION_EXTRA_ROWS"])


def _enqueue_scoring(submission_id: int) -> None:
    """Queue the scoring after commit. A broker that refuses it loses nothing: the submission stays
    queued in the database and the janitor sends it once the broker is back (services.janitor)."""
    enqueue_on_commit(SCORE_SUBMISSION, submission_id)


def run_queue(
    *, challenge: Challenge, recipe_source: str, name: str = "recipe.py", info: RecipeInfo | None = None
) -> RunQueue:
    """The queue of a new recipe run, decided once when its runs are created and stored on them (``Run.queue``):
    the challenge's device. A recipe declaring ``NEEDS_GPU = True`` on a challenge whose host chose the CPU is
    refused (ServiceError naming the file): no run of that challenge ever gets a GPU."""
    if challenge.device == Device.GPU:
        return RunQueue.GPU
    if (info or recipe_inspect(name, recipe_source)).needs_gpu:
        raise ServiceError(
            f"{name} declares NEEDS_GPU = True, but this challenge runs recipes on CPUs only "
            "(its host chose the CPU): remove NEEDS_GPU to run on the CPU.",
            field="recipe",
        )
    return RunQueue.CPU


def _enqueue_runs(submission: Submission) -> None:
    """Queue one task per run after commit, on the run's stored queue (a refused one is resent by the janitor)."""
    for run_id, queue in submission.runs.filter(status=RunStatus.QUEUED).values_list("pk", "queue"):
        enqueue_on_commit(EXECUTE_RUN, run_id, queue=queue)


def run_seed_plan(*, challenge: Challenge) -> list[dict]:
    """The seed records of runs 0..k-1: the same for every submission of the challenge.

    Run i's split is drawn from its ``split`` seed by the worker that executes it (the
    upload request never loads the dataset); ``Run.split_id`` records it then.
    """
    return [seed_record(challenge.master_seed, index, challenge.randomize_sources) for index in range(challenge.k_runs)]


def _taking_submissions(challenge: Challenge) -> None:
    """Refuse a submission the challenge does not take now: :func:`phase_open`'s 409 with its reason. A
    results-only challenge (no dataset) never takes one, and says what to do instead: its phase closes at
    creation, and "The main phase closed at ..." said only that (409 after the closed reason, else 400)."""
    instead = (
        "This challenge holds imported results only: it takes no submissions. Its hosts add entries by "
        f"importing results (POST /api/challenges/{challenge.slug}/imports/, or the challenge's import page)."
    )
    try:
        phase_open(challenge=challenge)
    except ChallengeClosed as closed:
        if challenge.results_only:
            raise ChallengeClosed(f"{closed.message} {instead}") from None
        raise
    if challenge.results_only:
        raise ServiceError(instead)


def submission_create_predictions(
    *,
    challenge: Challenge,
    user: User,
    method_name: str,
    files: list[UploadedFile],
    description: str = "",
    team_id: int | None = None,
) -> Submission:
    """Validate prediction files, store them as one entry (file i is run i) and queue the scoring."""
    _taking_submissions(challenge)  # a closed challenge says so first (409), whatever else it lacks
    if not challenge.allow_predictions:
        raise ServiceError("This challenge does not take prediction files.", field="kind")
    if challenge.results_only or not challenge.dataset.test_inputs_file:
        raise ServiceError("This challenge has no test set to score predictions against.")
    phase = _open_phase(challenge, user, SubmissionKind.PREDICTIONS)
    method_name = _check_method_name(method_name)
    team = team_for_submission(user=user, team_id=team_id, challenge=challenge)
    not_ready = program_ready(challenge, team.pk)
    if not_ready:
        raise ServiceError(not_ready, field="kind")
    digests, contents = _parse_prediction_files(challenge, files)
    sha256 = digests_hash(contents)  # by the predictions, not the bytes: a re-encoded file is the same entry
    stored: list[PredictionFile] = []
    created: list[int] = []

    def delete_files() -> None:
        for record in stored:
            discard(record.file.storage, record.file.name)

    with atomic_deleting_on_failure(delete_files, lambda: Submission.objects.filter(pk__in=created).exists()):
        _check_program_unchanged(challenge, _lock_challenge_open(challenge, phase))
        _lock_team_and_check_quota(phase, team, user, n_files=len(files))
        _check_not_disqualified(challenge, team)
        _check_not_resubmitted(challenge, team, sha256, phase)
        submission = Submission.objects.create(
            challenge=challenge,
            team=team,
            submitted_by=user,
            kind=SubmissionKind.PREDICTIONS,
            method_name=method_name,
            description=description,
            runs_expected=len(files),
            phase=phase,
            n_files=len(files),
            content_sha256=sha256,
        )
        created.append(submission.pk)
        for index, upload in enumerate(files):
            record = PredictionFile(
                submission=submission, index=index, original_name=upload.name[:255], sha256=digests[index]
            )
            with _stored_content(upload) as content:  # streamed from the spooled upload, never read here
                record.file.save(f"predictions-{submission.pk}-{index}.csv", content, save=False)
            stored.append(record)
            record.save()
            Run.objects.create(
                submission=submission,
                index=index,
                queue=RunQueue.SCORING,
                seeds={"contestant_file": index},
                split_id="hidden-test",
            )
        _enqueue_scoring(submission.pk)
    return Submission.objects.get(pk=submission.pk)  # the enqueue may have changed its status


def _lock_challenge_open(challenge: Challenge, phase: Phase) -> Challenge:
    """Under the challenge's row lock, which the reveal takes while it closes every phase (``challenge_reveal``):
    the phase the entry was checked against still takes it, so no entry is accepted after the reveal (its
    private score would be public at once). Taken before the team's lock, as every path that takes both.
    Returns the challenge as locked."""
    locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
    if phase_open(challenge=locked).pk != phase.pk:
        raise ChallengeClosed(f"The {phase.name} phase closed while you submitted.")
    return locked


def _check_program_unchanged(challenge: Challenge, locked: Challenge) -> None:
    """``locked``: the challenge read under its row lock (``program_upload`` takes it too). The program approved
    before the files were read is still the challenge's, so the first submission freezes the program it was
    accepted under."""
    if locked.scoring_program.name != challenge.scoring_program.name or (
        locked.scoring_program and locked.program_status != challenge.program_status
    ):
        raise ServiceError("The challenge's scoring program changed while you submitted; submit again.", field="kind")


@contextmanager
def _stored_content(upload):
    path = getattr(upload, "path", None)
    if path is None:
        yield ContentFile(upload.data)
        return
    with open(path, "rb") as handle:
        yield File(handle, name=os.path.basename(path))


def _check_recipe_source(name: str, data: bytes) -> tuple[str, RecipeInfo]:
    limit = upload_limit("recipe")
    if not data:
        raise ServiceError(f"{name}: the recipe file is empty.", field="recipe")
    if limit.exceeded_by(len(data)):
        raise TooLarge(f"{name}: the recipe is {limit.size(len(data))}; the limit is {limit.label}.", field="recipe")
    if not name.endswith(".py"):
        raise ServiceError(f"{name}: a recipe is one Python file ending in .py.", field="recipe")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(
            f"{name}: the recipe is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}).",
            field="recipe",
        ) from None
    return source, recipe_inspect(name, source)


def recipe_inspect(name: str, source: str) -> RecipeInfo:
    """The recipe's declarations (``inspect_recipe``: ast, runs nothing), read in a forked child under the
    parse limit (``DATASET_PARSE_MB``, ``UPLOAD_CHECK_S``): a syntax tree takes many times its source
    (512 KB of one-name lines took +461 MB), so the web process never builds one. ServiceError naming
    the file when the recipe is unusable or too costly to read."""
    try:
        return run_guarded(
            inspect_recipe,
            source,
            **upload_child_limits(),
        )
    except RecipeError as exc:
        raise ServiceError(f"{name}: {exc}", field="recipe") from None
    except ChildLimitExceeded as exc:
        raise ServiceError(limit_exceeded_message(exc, name, "to read"), field="recipe") from None


def hyperparameters_size_check(size: int) -> None:
    """ServiceError when a recipe's hyperparameters take more than their limit as JSON text (``upload_limit``):
    checked on the text before it is parsed (web form, API) and on the object before it is stored."""
    limit = upload_limit("hyperparameters")
    if limit.exceeded_by(size):
        raise TooLarge(
            f"The hyperparameters take {limit.size(size)} as JSON; the limit is {limit.label}.",
            field="hyperparameters",
        )


def submission_create_recipe(
    *,
    challenge: Challenge,
    user: User,
    method_name: str,
    recipe: UploadedFile,
    hyperparameters: dict | None = None,
    description: str = "",
    team_id: int | None = None,
) -> Submission:
    """Store a training recipe and queue its k runs (run i uses the challenge's seed record i)."""
    _taking_submissions(challenge)  # a closed challenge says so first (409), whatever else it lacks
    if not challenge.allow_recipes:
        raise ServiceError("This challenge does not take training recipes.", field="kind")
    phase = _open_phase(challenge, user, SubmissionKind.RECIPE)
    method_name = _check_method_name(method_name)
    if hyperparameters is not None and not isinstance(hyperparameters, dict):
        raise ServiceError("hyperparameters must be a JSON object.", field="hyperparameters")
    hyperparameters_size_check(
        len(json.dumps(hyperparameters or {}, separators=(",", ":"), ensure_ascii=False).encode())
    )
    source, info = _check_recipe_source(recipe.name, recipe.data)
    queue = run_queue(challenge=challenge, recipe_source=source, name=recipe.name, info=info)
    team = team_for_submission(user=user, team_id=team_id, challenge=challenge)
    plan = run_seed_plan(challenge=challenge)
    sha256 = content_hash([recipe.data, json.dumps(hyperparameters or {}, sort_keys=True).encode()])
    submission = None

    def delete_file() -> None:
        if submission is not None and submission.recipe_file:
            discard(submission.recipe_file.storage, submission.recipe_file.name)

    def stored() -> bool:
        return submission is not None and Submission.objects.filter(pk=submission.pk).exists()

    with atomic_deleting_on_failure(delete_file, stored):
        _lock_challenge_open(challenge, phase)
        _lock_team_and_check_quota(phase, team, user)
        _check_not_disqualified(challenge, team)
        _check_not_resubmitted(challenge, team, sha256, phase)
        submission = Submission(
            challenge=challenge,
            team=team,
            submitted_by=user,
            kind=SubmissionKind.RECIPE,
            method_name=method_name,
            description=description,
            phase=phase,
            runs_expected=challenge.k_runs,
            hyperparameters=hyperparameters or {},
            content_sha256=sha256,
        )
        submission.recipe_file.save(
            f"recipe-{hashlib.sha256(recipe.data).hexdigest()[:16]}.py", ContentFile(recipe.data), save=False
        )
        submission.save()
        Run.objects.bulk_create(
            [Run(submission=submission, index=i, seeds=seeds, queue=queue) for i, seeds in enumerate(plan)]
        )
        _enqueue_runs(submission)
    return Submission.objects.get(pk=submission.pk)  # the enqueue may have changed its status


def submission_cancel(*, submission: Submission, user: User) -> Submission:
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
        submission.runs.filter(status=RunStatus.QUEUED).update(
            status=RunStatus.FAILED, error_message="cancelled before it ran"
        )
    report_request_after(submission=submission)
    return submission


def submission_select_final(*, submission: Submission, user: User, selected: bool = True) -> Submission:
    """Choose (or un-choose) a submission for the private board; at most ``final_entries`` per team."""
    challenge = submission.challenge
    if not user_teams(user=user).filter(pk=submission.team_id).exists():
        raise NotAllowed("Only members of the submitting team can choose its final entries.")
    with transaction.atomic():
        _lock_finals_open(challenge, choosing=selected)
        if selected:
            _check_final_candidate(submission)
        Team.objects.select_for_update().get(pk=submission.team_id)
        team_rows = Submission.objects.filter(challenge=challenge, team_id=submission.team_id)
        chosen = list(
            team_rows.filter(selected_for_final=True)
            .exclude(pk=submission.pk)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if selected and len(chosen) >= challenge.final_entries:
            raise ServiceError(
                f"Your team has chosen {len(chosen)} final entries already (submissions "
                f"{', '.join(map(str, chosen))}); this challenge allows {challenge.final_entries}. "
                "Un-choose one first.",
                field="selected",
            )
        team_rows.filter(pk=submission.pk).update(selected_for_final=selected)
    report_request_for_choice(challenge=challenge)
    return Submission.objects.get(pk=submission.pk)


def _lock_finals_open(challenge: Challenge, *, choosing: bool) -> None:
    """Under the challenge's row lock, which the reveal takes (``challenge_reveal``), before the team's: a
    choice that lands after the reveal is refused, not saved after the private board was shown. The
    same lock order as a submission (challenge, then team). ``choosing`` on a challenge without a private
    board is a 400 saying so: the choice was stored, and counted, for a board that does not exist."""
    locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
    if choosing and not board_has_private(locked):
        raise ServiceError(
            "This challenge has no private board (its public_fraction is 1): every entry is ranked on the "
            "public board, and there are no final entries to choose.",
            field="selected",
        )
    if board_private_revealed(challenge=locked):
        raise ChallengeClosed("The private board has been revealed: final selections are locked.")


def final_candidate_refusal(submission: Submission) -> str | None:
    """Why ``submission`` cannot be a final entry (a public-only phase; cancelled or failed), else None: the one rule
    the choice (:func:`submission_select_final`, :func:`submission_finals_choose`) and the page's ticks follow."""
    if submission.phase_id and submission.phase.test_rows == TestRows.PUBLIC:
        return (
            f"Submission {submission.pk} was made in the {submission.phase.name} phase, which "
            "scores on the public part only; it cannot be on the private board."
        )
    if submission.status in (SubmissionStatus.CANCELLED, SubmissionStatus.FAILED):
        return f"Submission {submission.pk} is {submission.status}: only scored or running submissions can be chosen."
    return None


def _check_final_candidate(submission: Submission, field: str = "selected") -> None:
    """ServiceError when ``submission`` cannot be on the private board (:func:`final_candidate_refusal`)."""
    refusal = final_candidate_refusal(submission)
    if refusal is not None:
        raise ServiceError(refusal, field=field)


def submission_finals_choose(*, challenge: Challenge, team: Team, user: User, submission_ids, among=None) -> list[int]:
    """Make ``submission_ids`` ``team``'s final entries on ``challenge``, at once (the others un-chosen).

    ``among``: the submissions the chooser was shown (a page lists the latest ones); chosen ones outside
    it stay chosen. At most ``challenge.final_entries`` in all; every id must be a submission of ``team``
    there that :func:`submission_select_final` would accept. Returns the chosen ids, ascending.
    """
    if not user_teams(user=user).filter(pk=team.pk).exists():
        raise NotAllowed("Only members of the submitting team can choose its final entries.")
    with transaction.atomic():
        _lock_finals_open(challenge, choosing=bool(submission_ids))
        Team.objects.select_for_update().get(pk=team.pk)
        team_rows = Submission.objects.filter(challenge=challenge, team=team)
        kept = (
            set()
            if among is None
            else set(team_rows.filter(selected_for_final=True).exclude(pk__in=list(among)).values_list("pk", flat=True))
        )
        ids = sorted(set(submission_ids) | kept)
        if len(ids) > challenge.final_entries:
            also = f" (with {len(kept)} chosen earlier and not listed here)" if kept else ""
            raise ServiceError(
                f"You chose {len(ids)} final entries{also}; this challenge allows "
                f"{challenge.final_entries} per team. Un-tick some and save again.",
                field="final",
            )
        chosen = list(team_rows.filter(pk__in=ids).select_related("phase"))
        unknown = sorted(set(ids) - {s.pk for s in chosen})
        if unknown:
            raise ServiceError(
                f"Submission{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))} "
                f"{'are' if len(unknown) > 1 else 'is'} not your team's on this challenge.",
                field="final",
            )
        for submission in chosen:
            _check_final_candidate(submission, field="final")
        team_rows.filter(selected_for_final=True).exclude(pk__in=ids).update(selected_for_final=False)
        team_rows.filter(pk__in=ids).update(selected_for_final=True)
    report_request_for_choice(challenge=challenge)
    return ids
