"""Hosting challenges: create, update, store the dataset (public part and hidden labels apart)."""

from __future__ import annotations

import hashlib
import hmac
import io
import math
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pandas as pd
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.core.files.base import File
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.datasets import DatasetSpec, shuffle_test_rows, validate_dataset
from evaluation.io.guarded import ChildLimitExceeded, memory_message, run_guarded
from evaluation.io.read import TableError, read_table
from evaluation.metrics import get_metric
from evaluation.public_hidden import join_public_hidden, split_public_hidden
from evaluation.report.sections import runs_for_rank_interval
from evaluation.row_moves import UNBOUNDED_PER_ROW
from evaluation.seeds import SOURCES
from evaluation.stats.boon import (
    MIN_RUNS_MEAN_INTERVAL,
    RUNS_PER_N,
    min_runs_flag,
    min_runs_for_interval,
    min_runs_rule,
)

from ..choices import Feedback, ProgramStatus, Visibility
from ..limits import upload_child_limits, upload_file_count_limit, upload_limit
from ..models import Challenge, Dataset, Event, validate_dates, validate_public_fraction
from ..selectors import submissions_readable, user_is_host
from ..storage import atomic_deleting_on_failure, delete_stored
from .audit import audit_record, audit_save
from .boards import RESAMPLED_NOTE, board_assign_parts, board_draw_mask, board_has_private, ladder_margin
from .errors import NotAllowed, ServiceError
from .metrics import PROGRAM_LADDER_REFUSAL, check_program_fits, check_secondary_metrics, metric_fit_error
from .notifications import event_record
from .phases import FIRST_PHASE_FIELDS, SHARED_WITH_PHASE, phase_default, phase_update_single
from .reports import report_request
from .workdirs import work_folder

# Fields a host sets on a challenge; the serializer and the form validate their types. Dates and quotas
# belong to phases: create and update also take FIRST_PHASE_FIELDS for the first (the only) phase.
CHALLENGE_FIELDS = (
    "title",
    "description",
    "metric",
    "higher_is_better",
    "secondary_metrics",
    "allow_predictions",
    "allow_recipes",
    "k_runs",
    "boo_n",
    "gamma",
    "alpha",
    "bootstrap_resamples",
    "ranking_statistic",
    "correction",
    "master_seed",
    "randomize_sources",
    "split_scheme",
    "stratify",
    "hpo_mode",
    "hpo_method",
    "hpo_budget",
    "device",
    "run_time_limit_s",
    "run_memory_limit_mb",
    "visibility",
    "public_fraction",
    "final_entries",
    "board_version",
    "feedback",
    "feedback_digits",
    "ladder_margin",
    "rules",
    "registration_required",
)
# Changing these once a submission exists would change what the stored runs mean, publish what an earlier rule
# hid, or compare entries made under different rules (Kaggle fixes the evaluation at launch): each with why.
_RUNS_MEANING = "the stored runs were made under the old values."
FROZEN_REASONS = {
    "metric": _RUNS_MEANING,
    "higher_is_better": _RUNS_MEANING,
    "secondary_metrics": _RUNS_MEANING,
    "master_seed": "it draws every run's seeds and which hidden rows are public: " + _RUNS_MEANING,
    "randomize_sources": _RUNS_MEANING,
    "split_scheme": _RUNS_MEANING,
    "stratify": _RUNS_MEANING,
    "hpo_mode": _RUNS_MEANING,
    "hpo_method": _RUNS_MEANING,
    "hpo_budget": _RUNS_MEANING,
    "k_runs": "the entries already made hold the old number of runs each (one per seed); later ones would hold "
    "another, and the board would compare entries of unequal precision on their shared seeds only.",
    "public_fraction": "it re-draws which hidden rows are public: scores contestants read on the old public rows "
    "would then tell about rows of the private board.",
    "feedback": "the submissions already made were read under the old rule; another would publish what it hid "
    "(exact feedback shows the exact public scores of probes made under rounded or Ladder feedback) or release "
    "them again under a new one.",
    "feedback_digits": "the submissions already made were shown rounded to the old digits; more digits publish "
    "what that rounding hid, and any other re-rounds every earlier score, a second view of the same probes.",
    "ladder_margin": "the submissions already made were released under the old η; a smaller η releases probes it "
    "held back, and any other recomputes every person's releases, a second view of the same submissions.",
}
FROZEN_AFTER_FIRST_SUBMISSION = tuple(FROZEN_REASONS)


@dataclass(frozen=True)
class DatasetUpload:
    """What a host uploads: one table (test rows marked by ``test_column``) or a train and a test table.

    Each table is its bytes, or the path of the file an upload was spooled to: then only the child
    that prepares the dataset reads it, never the web process (issue 22).
    """

    data: bytes | Path
    filename: str
    id_column: str
    label_column: str
    test_column: str | None = None
    test_data: bytes | Path | None = None
    test_filename: str | None = None
    feature_columns: tuple[str, ...] | None = None
    # With this, ``test_data`` holds the test inputs only and these are their labels (id + label).
    test_labels_data: bytes | Path | None = None
    test_labels_filename: str | None = None


def _unique_slug(title: str, requested: str | None) -> str:
    if requested:
        slug = slugify(requested)
        if not slug:
            raise ServiceError("The slug must contain letters or digits.", field="slug")
        if Challenge.objects.filter(slug=slug).exists():
            raise ServiceError(f"The slug {slug!r} is taken.", field="slug")
        return slug
    base = slugify(title)[:50] or "challenge"
    slug, n = base, 1
    while Challenge.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _check_field_values(fields: dict) -> None:
    """Each value by its model field's own rules (type, choices, range: ``Field.clean``), as the API's serializer
    and the forms check them, converted in place ("10" -> 10). The one check every path goes through: a bundle's
    manifest reached the database with ``boo_n`` 0 or ``gamma`` 1.5 (found by a new host), and the challenge list
    then answered 500 to every reader."""
    for name, value in list(fields.items()):
        try:
            field = Challenge._meta.get_field(name)
        except FieldDoesNotExist:  # a first phase's field, checked by the phase
            continue
        if value is None and name == "higher_is_better":
            continue  # a scoring program's primary metric gives it (program_restore)
        try:
            fields[name] = field.clean(value, None)
        except ValidationError as exc:
            raise ServiceError(f"{name}: {' '.join(exc.messages)}", field=name) from None


def check_direction(metric, higher_is_better: bool | None) -> bool:
    """The board's direction: the metric's own when None; one that contradicts the metric is refused (the one
    rule of challenge settings, bundles and results-only challenges: "Accuracy, lower is better" ranked the
    worst classifier first)."""
    if higher_is_better is None:
        return metric.higher_is_better
    if higher_is_better != metric.higher_is_better:
        direction = "higher" if metric.higher_is_better else "lower"
        raise ServiceError(
            f"{metric.label} is better when {direction}; the direction contradicts the metric.",
            field="higher_is_better",
        )
    return higher_is_better


def _check_settings(fields: dict, *, program: bool = False, changing=None) -> None:
    """``program``: the challenge has a scoring program, whose primary metric gives the direction. ``changing``: the
    fields an update changes (None: a new challenge, all of them)."""
    _check_field_values(fields)
    metric = get_metric(fields["metric"]) if fields.get("metric") else None
    if program:
        check_program_fits(allow_recipes=fields.get("allow_recipes"), secondary_metrics=fields.get("secondary_metrics"))
    elif metric is not None and "higher_is_better" in fields:
        check_direction(metric, fields["higher_is_better"])
    if changing is None or {"feedback", "metric"} & set(changing):
        check_ladder_metric(metric, fields.get("feedback"), program=program)
    if "secondary_metrics" in fields and metric is not None:
        fields["secondary_metrics"] = check_secondary_metrics(fields["secondary_metrics"], primary=metric.name)
    if not fields.get("allow_predictions", True) and not fields.get("allow_recipes", False):
        raise ServiceError("Allow predictions, recipes, or both.", field="allow_predictions")
    unknown = sorted(set(fields.get("randomize_sources") or []) - set(SOURCES))
    if unknown:
        raise ServiceError(
            f"Unknown sources of variation {unknown}; choose from {list(SOURCES)}.", field="randomize_sources"
        )
    try:
        validate_dates(fields.get("opens_at"), fields.get("closes_at"))
    except ValidationError as exc:
        raise ServiceError(exc.message_dict["closes_at"][0], field="closes_at") from None
    if fields.get("boo_n") and fields.get("k_runs") and fields["boo_n"] < 1:
        raise ServiceError("Boo n must be at least 1.", field="boo_n")
    if fields.get("public_fraction") is not None:
        try:
            validate_public_fraction(fields["public_fraction"])
        except ValidationError as exc:
            raise ServiceError(exc.messages[0], field="public_fraction") from None


def check_ladder_metric(metric, feedback, *, program: bool = False) -> None:
    """The Ladder on a metric one row's prediction moves without bound is refused (API and form alike): Blum & Hardt's
    argument needs a loss bounded per row, and on MAE or RMSE one probe's right row beat any η (docs/integrity.md §2;
    a stored one releases each person's first score alone, ``services.boards.ladder_margin``). So is it with a
    scoring program (``program``), whose metric's move per row is the host's code's: a cost-weighted error moved
    4/60 per row past η = 0.01, and single-row probes read every label (tests/platform/test_ladder_programs.py)."""
    if feedback == Feedback.LADDER and program:
        choice = "choose rounded or exact feedback, or remove the scoring program."
        raise ServiceError(PROGRAM_LADDER_REFUSAL.format(choice=choice), field="feedback")
    if feedback == Feedback.LADDER and metric is not None and metric.name in UNBOUNDED_PER_ROW:
        raise ServiceError(
            "The Ladder protects only metrics one row moves by a bounded amount (Blum & Hardt 2015); "
            f"{metric.name} is unbounded per row: choose rounded or exact feedback, or a bounded metric.",
            field="feedback",
        )


def _check_dataset_fits(fields: dict, dataset: Dataset | None) -> None:
    """The metric and the schemes must suit the stored dataset (checked again on every change)."""
    if dataset is None:
        return
    metric = get_metric(fields["metric"])
    problem = metric_fit_error(metric, task=dataset.task, classes=dataset.classes)
    if problem:
        raise ServiceError(problem, field="metric")
    check_secondary_metrics(
        fields.get("secondary_metrics"), primary=metric.name, task=dataset.task, classes=dataset.classes
    )
    if not dataset.test_inputs_file:
        raise ServiceError(
            "This challenge's dataset has no hidden test rows, which predictions and recipe runs "
            "are scored on; upload the data again with test rows.",
            field="dataset",
        )


def _source_bytes(data: bytes | Path, limit: int) -> bytes:
    """The table's bytes: given, or read (at most `limit` + 1 bytes) from the file Django spooled it to."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return data
    with open(data, "rb") as handle:
        return handle.read(limit + 1)  # read_table names the size limit if there is more


def _table(data: bytes | Path, filename: str, text_columns: tuple[str, ...], field: str = "dataset") -> pd.DataFrame:
    """One uploaded table parsed; run only in the child of ``_prepare_guarded`` (its memory is limited there)."""
    max_bytes = upload_limit("dataset").max_bytes
    try:
        return read_table(
            _source_bytes(data, max_bytes),
            filename=filename,
            max_bytes=max_bytes,
            text_columns=text_columns,
            max_columns=settings.VARBOARD["MAX_DATASET_COLUMNS"],
            max_decoded_bytes=upload_limit("dataset_decoded").max_bytes,
        )
    except TableError as exc:
        message = str(exc) if str(exc).startswith(f"{filename}:") else f"{filename}: {exc}"
        raise ServiceError(message, field=field) from None
    except MemoryError:
        raise ServiceError(
            f"{filename}: {memory_message('to parse', settings.VARBOARD['DATASET_PARSE_MB'] * 1024 * 1024)}",
            field=field,
        ) from None
    except (ValueError, OSError, ArithmeticError, LookupError) as exc:  # the parser's own failure
        raise ServiceError(
            f"{filename}: the file could not be read ({type(exc).__name__}: {exc})", field=field
        ) from None


def _csv_bytes(df: pd.DataFrame) -> bytes:
    buffer = io.StringIO()
    df.to_csv(buffer, index=False)
    return buffer.getvalue().encode("utf-8")


NEEDS_TEST_ROWS = (
    "A challenge needs hidden test rows, whose labels contestants never see: predictions and "
    "recipe runs are scored on them. Mark them with a test-row column or upload a separate test file."
)


def _prepare_dataset(upload: DatasetUpload, *, task: str):
    """Validate the upload and cut it into public train, public test inputs and hidden labels (in the child)."""
    # Ids (and class labels) stay text: "007" is not 7.
    text_columns = (upload.id_column,) if task == "regression" else (upload.id_column, upload.label_column)
    frame = _table(upload.data, upload.filename, text_columns)
    test_column = upload.test_column or None
    if upload.test_data is not None:
        if test_column:
            raise ServiceError("Give either a test-row column or a separate test file, not both.", field="test_column")
        test_frame = _table(upload.test_data, upload.test_filename or "test.csv", text_columns, "test_dataset")
        if upload.test_labels_data is not None:
            test_frame = _attach_test_labels(upload, frame, test_frame, text_columns)
        missing = [c for c in frame.columns if c not in test_frame.columns]
        if missing:
            raise ServiceError(
                f"The test file lacks the columns {missing} that the training file has.", field="test_dataset"
            )
        test_frame = test_frame[list(frame.columns)]
        test_column = "__varboard_is_test__"
        frame = pd.concat(
            [frame.assign(**{test_column: False}), test_frame.assign(**{test_column: True})], ignore_index=True
        )
    elif upload.test_labels_data is not None:
        raise ServiceError("Hidden labels were uploaded without the test inputs they label.", field="test_labels")
    try:
        spec = validate_dataset(
            frame,
            id_column=upload.id_column,
            label_column=upload.label_column,
            feature_columns=list(upload.feature_columns) if upload.feature_columns else None,
            test_column=test_column,
            task=task,
        )
    except TableError as exc:  # a column setting that names no column is that setting's error, not the file's
        raise ServiceError(str(exc), field=_COLUMN_SETTING_FIELDS.get(exc.setting or "", "dataset")) from None
    if test_column is None:
        raise ServiceError(NEEDS_TEST_ROWS, field="test_column")
    try:
        train_df, test_inputs_df, hidden_df = split_public_hidden(frame, spec)
    except TableError as exc:
        raise ServiceError(str(exc), field="dataset") from None
    if len(test_inputs_df) == 0:
        raise ServiceError(f"The test-row column marks no row. {NEEDS_TEST_ROWS}", field="test_column")
    if len(train_df) < 2:
        raise ServiceError("The training data needs at least 2 rows.", field="dataset")
    return spec, train_df, test_inputs_df, hidden_df


#: The upload's field of each column setting a :class:`TableError` may name (``TableError.setting``).
_COLUMN_SETTING_FIELDS = {"id": "id_column", "label": "label_column", "test": "test_column"}


def _attach_test_labels(
    upload: DatasetUpload, frame: pd.DataFrame, test_inputs: pd.DataFrame, text_columns: tuple[str, ...]
) -> pd.DataFrame:
    """Test inputs and hidden labels uploaded as two files: join them on the id (every id exactly once)."""
    name = upload.test_labels_filename or "labels.csv"
    labels = _table(upload.test_labels_data, name, text_columns, "test_labels")
    id_column, label_column = upload.id_column, upload.label_column
    try:
        joined = join_public_hidden(
            frame,
            test_inputs,
            labels,
            id_column=id_column,
            label_column=label_column,
            test_column="__varboard_joined__",
        )
    except TableError as exc:  # a column setting that names no column of the labels file is that setting's error
        raise ServiceError(
            f"{name}: {exc}", field=_COLUMN_SETTING_FIELDS.get(exc.setting or "", "test_labels")
        ) from None
    joined = joined[joined["__varboard_joined__"].astype(bool)].drop(columns="__varboard_joined__")
    return joined.reset_index(drop=True)


def _test_row_seed(slug: str, hidden_bytes: bytes) -> int:
    """The challenge's secret seed for the order of its test rows: fixed per challenge and data, unguessable.

    Keyed with the server's secret and the hidden labels, which no contestant knows: a public seed
    (such as the master seed) would let anyone undo the shuffle and read the host's order again.
    The slug (unique) makes it the challenge's own; it is known before the row is stored.
    """
    key = settings.SECRET_KEY.encode() + hashlib.sha256(hidden_bytes).digest()
    digest = hmac.new(key, f"test-row-order:{slug}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


#: The parts the child writes into its folder, in ``Dataset`` field order.
PART_FILES = {
    "train_file": "train.csv",
    "test_inputs_file": "test_inputs.csv",
    "hidden_labels_file": "hidden_labels.csv",
}


@dataclass(frozen=True)
class PreparedDataset:
    """What the child hands back: the spec, counts, the version hash and the board's public mask.

    The three parts are the files ``PART_FILES`` in the folder the parent gave it.
    """

    spec: DatasetSpec
    n_train: int
    n_test: int
    version: str
    public_mask: bytes | None


def _prepare_in_child(upload: DatasetUpload, *, task: str, challenge: Challenge, folder: str) -> PreparedDataset:
    """Parse, check, split, shuffle and write the parts to `folder`: all in the child, nothing handed back big.

    `challenge` is the unsaved row (its slug, master seed and public fraction); the database is never used.
    """
    try:
        spec, train_df, test_inputs_df, hidden_df = _prepare_dataset(upload, task=task)
        # The host's row order may follow the labels: test rows are stored in a fixed shuffled order.
        seed = _test_row_seed(challenge.slug, _csv_bytes(hidden_df))
        test_inputs_df, hidden_df = shuffle_test_rows(test_inputs_df, hidden_df, seed=seed)
        version = hashlib.sha256()
        parts = {"train_file": train_df, "test_inputs_file": test_inputs_df, "hidden_labels_file": hidden_df}
        for i, (field, frame) in enumerate(parts.items()):
            data = _csv_bytes(frame)
            version.update((b"\0" if i else b"") + data)
            with open(os.path.join(folder, PART_FILES[field]), "wb") as out:
                out.write(data)
            del data
        labels = hidden_df[spec.label_column].to_numpy().astype(str) if spec.task != "regression" else None
        mask = board_draw_mask(
            n_test=len(hidden_df),
            public_fraction=challenge.public_fraction,
            master_seed=challenge.master_seed,
            labels=labels,
        )
    except MemoryError:
        raise ServiceError(_prepare_memory_message(upload), field="dataset") from None
    return PreparedDataset(
        spec=spec, n_train=len(train_df), n_test=len(test_inputs_df), version=version.hexdigest(), public_mask=mask
    )


def _prepare_memory_message(upload: DatasetUpload) -> str:
    limit = settings.VARBOARD["DATASET_PARSE_MB"] * 1024 * 1024
    return f"{upload.filename}: {memory_message('to parse and split', limit)}"


def _prepare_guarded(upload: DatasetUpload, *, task: str, challenge: Challenge, folder: str) -> PreparedDataset:
    """``_prepare_in_child`` in a forked child under ``RLIMIT_AS`` (``DATASET_PARSE_MB``, ``UPLOAD_CHECK_S``).

    The web process never holds a parsed table: its memory does not grow with the upload (issue 22).
    """
    limits = settings.VARBOARD
    try:
        return run_guarded(
            _prepare_in_child,
            upload,
            task=task,
            challenge=challenge,
            folder=folder,
            **upload_child_limits(),
        )
    except ChildLimitExceeded as exc:
        if exc.kind == "time":
            seconds = limits["UPLOAD_CHECK_S"]
            raise ServiceError(
                f"{upload.filename}: the dataset took more than {seconds:g} s to check and split; "
                f"the limit is {seconds:g} s.",
                field="dataset",
            ) from None
        raise ServiceError(_prepare_memory_message(upload), field="dataset") from None


def _store_dataset(
    challenge: Challenge, upload: DatasetUpload, prepared: PreparedDataset, folder: str, saved: list
) -> Dataset:
    """The parts the child wrote, streamed into storage (``saved`` collects each stored file as it lands)."""
    spec = prepared.spec
    dataset = Dataset(
        challenge=challenge,
        id_column=spec.id_column,
        label_column=spec.label_column,
        feature_columns=list(spec.feature_columns),
        task=spec.task,
        classes=list(spec.classes or []),
        original_name=upload.filename[:255],
        n_train=prepared.n_train,
        n_test=prepared.n_test,
        version=prepared.version,
        public_mask=prepared.public_mask,
    )
    for field_name, name in PART_FILES.items():
        if field_name != "train_file" and not prepared.n_test:
            continue
        field = getattr(dataset, field_name)
        with open(os.path.join(folder, name), "rb") as handle:
            field.save(name, File(handle, name=name), save=False)
        saved.append(field)
    dataset.save()
    return dataset


def _delete_files(saved: list) -> None:
    for field in saved:
        delete_stored(field)


def challenge_create(*, created_by: User, dataset: DatasetUpload, slug: str | None = None, **fields) -> Challenge:
    """Create a challenge with its dataset; on any error nothing (row or file) is left behind.

    The dataset is parsed, checked, split and written to a temporary folder by a forked child
    under a memory limit (``_prepare_guarded``); this process only streams the parts into storage.
    """
    unknown = sorted(set(fields) - set(CHALLENGE_FIELDS) - set(FIRST_PHASE_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown challenge fields: {unknown}.")
    if not fields.get("title"):
        raise ServiceError("A challenge needs a title.", field="title")
    if not fields.get("metric"):
        raise ServiceError("A challenge needs a metric.", field="metric")
    try:
        metric = get_metric(fields["metric"])
    except ValueError as exc:
        raise ServiceError(str(exc), field="metric") from None
    if fields.get("higher_is_better") is None:
        fields["higher_is_better"] = metric.higher_is_better
    _check_settings(fields)
    first_phase = {name: value for name in FIRST_PHASE_FIELDS if (value := fields.pop(name, None)) is not None}
    task = "regression" if metric.task == "regression" else "classification"
    challenge = Challenge(slug=_unique_slug(fields["title"], slug), created_by=created_by, **fields)
    saved: list = []
    with work_folder("dataset") as folder:
        prepared = _prepare_guarded(dataset, task=task, challenge=challenge, folder=folder)
        problem = metric_fit_error(metric, task=task, classes=prepared.spec.classes)
        if problem:
            raise ServiceError(problem.replace("the dataset has", "the label column has"), field="metric")
        check_secondary_metrics(
            fields.get("secondary_metrics"), primary=metric.name, task=task, classes=prepared.spec.classes
        )

        def stored() -> bool:
            return challenge.pk is not None and Challenge.objects.filter(pk=challenge.pk).exists()

        try:
            with atomic_deleting_on_failure(lambda: _delete_files(saved), stored):
                challenge.save(force_insert=True)
                challenge.hosts.add(created_by)
                _store_dataset(challenge, dataset, prepared, folder, saved)
                phase_default(challenge=challenge, **first_phase)
        except IntegrityError as exc:
            raise ServiceError(f"The challenge could not be saved: {exc}") from None
    return challenge


def challenge_settings_warnings(
    *, k_runs: int, boo_n: int, k_fixed: bool = False, statistic: str = "mean", recipes: bool = True
) -> list[str]:
    """What a challenge's settings will cost its board, said when they are chosen (creation, update, planner).

    k runs per entry below the mean's 6 (:data:`evaluation.stats.boon.MIN_RUNS_MEAN_INTERVAL`) leave every
    recipe entry's mean (and a mean-ranked board's ranks) without an interval; below 10n, and never fewer
    than 6 (:func:`evaluation.stats.boon.min_runs_for_interval`: below it the interval covers less than its level),
    Boo_n too, each entry flagged on the board. Lowering n is advised only where it brings Boo_n's interval back
    at an n of 2 or more (Boo_1 is the mean the board already shows). With ``k_fixed`` (submissions exist: k is frozen,
    ``FROZEN_REASONS``) raising k is not advised, only lowering n. A board ranked by Boo_n (``statistic``) below the
    rule also shows its recipe entries without rank intervals (``evaluation.report.coverage``), said too; so does one
    ranked by the mean (or Boo_1) below 16 runs (:func:`_mean_rank_warning`, rank23). Both
    recipe-only costs are said only where the challenge takes ``recipes``: a prediction entry's mean interval and rank
    interval come from its test examples whatever its number of files, and its section ranks by the mean.
    """
    runs = f"k = {k_runs} run{'' if k_runs == 1 else 's'} per entry"
    warnings = []
    if recipes and k_runs < MIN_RUNS_MEAN_INTERVAL:
        warnings.append(
            f"{runs} is fewer than the {MIN_RUNS_MEAN_INTERVAL} the mean's interval needs: the leaderboard will show "
            f'every recipe entry\'s mean without an interval, flagged "k < {MIN_RUNS_MEAN_INTERVAL}". '
            + (K_FIXED + "." if k_fixed else f"Raise k to {MIN_RUNS_MEAN_INTERVAL}.")
        )
    warnings += _mean_rank_warning(runs, k_runs, boo_n, k_fixed, statistic) if recipes else []
    need = min_runs_for_interval(boo_n)
    if k_runs < need and (recipes or boo_n > 1):  # a prediction entry's Boo_1 is its mean: no flag (report.rows)
        lower = k_runs // RUNS_PER_N if k_runs >= MIN_RUNS_MEAN_INTERVAL and k_runs >= 2 * RUNS_PER_N else 0
        rule = (  # Boo_1: "fewer than 6, as for the mean (...) for Boo_1" read as one garbled clause (a new user)
            f"the {need} Boo_1 needs, as for the mean (Boo_1 is the mean of the runs)"
            if boo_n == 1
            else f"{min_runs_rule(boo_n)} for Boo_{boo_n}"
        )
        warnings.append(
            f"{runs} is fewer than {rule}: the leaderboard will show "
            f'Boo_{boo_n} without an interval and flag every entry "{min_runs_flag(boo_n)}"'
            + (
                ", and, ranked by it, every recipe entry without a rank interval. "
                if recipes and statistic == "boo_n" and boo_n > 1  # Boo_1's rank intervals: _mean_rank_warning (16)
                else ". "
            )
            + _boo_n_advice(need, lower, k_fixed)
        )
    return warnings


def _mean_rank_warning(runs: str, k_runs: int, boo_n: int, k_fixed: bool, statistic: str) -> list[str]:
    """A board ranked by the mean (or Boo_1, the mean of the runs) below the runs its rank intervals need
    (:func:`evaluation.report.sections.runs_for_rank_interval`: 16; a Boo_n board's 10n is said with Boo_n's)."""
    need = runs_for_rank_interval(statistic, boo_n)
    if (statistic == "boo_n" and boo_n > 1) or k_runs >= need:
        return []
    which = "the mean (Boo_1 is the mean of the runs)" if statistic == "boo_n" else "the mean"
    return [
        f"{runs} is fewer than the {need} a board ranked by {which} needs for rank intervals (with fewer, on many "
        "close entries they cover less than 93 % of true ranks): the leaderboard will rank every recipe entry "
        f"without a rank interval. " + (K_FIXED + "." if k_fixed else f"Raise k to {need}.")
    ]


#: Said instead of "Raise k" once submissions exist (k is frozen then: FROZEN_REASONS["k_runs"]).
K_FIXED = "k is fixed now that submissions exist"


def _boo_n_advice(need: int, lower: int, k_fixed: bool) -> str:
    """What brings Boo_n's interval back: raising k to ``need`` (not once k is fixed), or lowering n to ``lower``."""
    if k_fixed:
        return f"{K_FIXED}: lower n to {lower}." if lower else f"{K_FIXED}."
    return f"Raise k to {need}" + (f" or lower n to {lower}." if lower else ".")


def challenge_warnings(*, challenge: Challenge, user) -> list[str]:
    """:func:`challenge_settings_warnings` of a stored challenge as ``user`` reads them; none for a results-only one
    (no dataset), whose entries are imported with the runs they have: no k for its host to raise.

    Whether k is fixed follows the submissions ``user`` may open (``selectors.submissions_readable``; the hosts: every
    one): the API publishes the warnings to anyone, and counted over every submission their advice changed when a
    rival's first try was made, still queued or failed, which nobody else may open (tests/platform/test_leaks_v8.py).
    """
    if challenge.results_only:
        return []
    settings = {
        "k_runs": challenge.k_runs,
        "boo_n": challenge.boo_n,
        "statistic": challenge.ranking_statistic,
        "recipes": challenge.allow_recipes,
    }
    files = _files_warnings(challenge) + _ladder_warnings(challenge, user)
    if not challenge_settings_warnings(**settings):
        return files  # no query for the submissions of a challenge whose settings cost nothing (a list of them)
    k_fixed = submissions_readable(user=user, challenge=challenge).exists()
    return challenge_settings_warnings(**settings, k_fixed=k_fixed) + files


def _files_warnings(challenge: Challenge) -> list[str]:
    """A prediction entry uploads at most min(k, ``upload_file_count_limit``) files (``submissions``' check): where
    that is fewer than the runs Boo_n's interval needs though k is not, no prediction entry can ever show it."""
    need, most = min_runs_for_interval(challenge.boo_n), upload_file_count_limit()
    if not challenge.allow_predictions or not most < need <= challenge.k_runs:
        return []
    return [
        f"A prediction entry uploads at most {most} files (this site's limit), fewer than the "
        f"{min_runs_rule(challenge.boo_n)} Boo_{challenge.boo_n}'s interval needs: the leaderboard will show every "
        f"prediction entry's Boo_{challenge.boo_n} without an interval. Lower n to {most // RUNS_PER_N}."
    ]


def _ladder_warnings(challenge: Challenge, user) -> list[str]:
    """To the hosts of a Ladder board whose η is below twice the largest move one public row's prediction makes to the
    metric (known once the public rows are cut): the board releases with twice that move instead
    (``services.boards.ladder_margin``), or, unbounded, each person's first score alone."""
    if challenge.feedback != Feedback.LADDER or not user_is_host(user=user, challenge=challenge):
        return []
    margin = ladder_margin(challenge)
    if math.isinf(margin.value) and margin.program:
        return [
            PROGRAM_LADDER_REFUSAL.format(choice="this board releases each person's first score alone. Choose rounded")
            + " or exact feedback, or remove the scoring program."
        ]
    if math.isinf(margin.value):
        return [
            f"The Ladder protects only metrics one row moves by a bounded amount (Blum & Hardt 2015); {margin.metric} "
            "is unbounded per row, so this board releases each person's first score alone. Choose rounded or exact "
            "feedback, or a bounded metric."
        ]
    if not margin.raised:
        return []
    return [
        f"η = {margin.host:g} is below twice the largest move one of the {margin.rows} public rows can make to "
        f"{margin.metric}{RESAMPLED_NOTE if margin.resampled else ''} ({margin.value:g}): a release is rounded to η's grid, so a file may score up to η/2 past it "
        f"and a probe changing one row's prediction would beat it; the board releases with η = {margin.value:g}."
    ]


def challenge_update(*, challenge: Challenge, user: User, **fields) -> Challenge:
    """Change a challenge's settings (hosts only). Settings that give runs their meaning freeze at the first submission."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can change it.")
    unknown = sorted(set(fields) - set(CHALLENGE_FIELDS) - set(FIRST_PHASE_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown challenge fields: {unknown}.")
    _check_results_only_fields(challenge, fields)
    if challenge.submissions.exists():
        frozen = [
            name
            for name in FROZEN_AFTER_FIRST_SUBMISSION
            if name in fields and fields[name] != getattr(challenge, name)
        ]
        if frozen:
            raise ServiceError(
                f"{', '.join(frozen)} cannot change once submissions exist: {FROZEN_REASONS[frozen[0]]}",
                field=frozen[0],
            )
    _check_program_fields(challenge, fields)
    merged = {name: getattr(challenge, name) for name in CHALLENGE_FIELDS} | fields
    changing = [name for name in fields if name in CHALLENGE_FIELDS and fields[name] != getattr(challenge, name)]
    _check_settings(merged, program=bool(challenge.scoring_program), changing=changing)
    _check_dataset_fits(merged, getattr(challenge, "dataset", None))
    phase_fields = {name: fields.pop(name) for name in FIRST_PHASE_FIELDS if name in fields}
    with transaction.atomic():
        changes = audit_save(
            challenge, fields, challenge=challenge, actor=user, action="settings_changed", tracked=CHALLENGE_FIELDS
        )
        if phase_fields or set(changes) & set(SHARED_WITH_PHASE):
            phase_update_single(challenge=challenge, user=user, fields=phase_fields)
        if set(changes) & {"public_fraction", "master_seed"}:
            board_assign_parts(challenge=challenge)
        # in the change's transaction: after it, a database gone here answered 503 for a change that was stored, and
        # the board kept its old settings (tests/platform/test_half_stored.py)
        report_request(challenge_id=challenge.pk)
    return challenge


#: Settings that plan the runs of entries scored here; a results-only challenge (no dataset) has none to plan.
RUN_PLAN_FIELDS = ("k_runs",)


def _check_results_only_fields(challenge: Challenge, fields: dict) -> None:
    """A results-only challenge's entries are imported with the runs they have: a change of ``k_runs`` (taken
    without a word, planning nothing) is refused, naming it and why."""
    if not challenge.results_only:
        return
    changed = [name for name in RUN_PLAN_FIELDS if name in fields and fields[name] != getattr(challenge, name)]
    if changed:
        raise ServiceError(
            f"{changed[0]} cannot change on a results-only challenge: it plans no runs, its entries are imported "
            "results with the runs they have (the board reads each entry's own run count).",
            field=changed[0],
        )


def _check_program_fields(challenge: Challenge, fields: dict) -> None:
    """With a scoring program the direction is its primary metric's, and the challenge is published only
    once the program passed its check on the sample submission."""
    if not challenge.scoring_program:
        return
    if "higher_is_better" in fields and fields["higher_is_better"] != challenge.higher_is_better:
        raise ServiceError(
            "The direction is the scoring program's primary metric's; change the program instead.",
            field="higher_is_better",
        )
    publishing = fields.get("visibility") == Visibility.PUBLIC and challenge.visibility != Visibility.PUBLIC
    if publishing and challenge.program_status != ProgramStatus.OK:
        why = {
            ProgramStatus.CHECKING: "its check on the sample submission has not finished yet",
            ProgramStatus.FAILED: f"its check on the sample submission failed: {challenge.program_error[:500]}",
            ProgramStatus.SUSPENDED: "it is suspended after failing on contestants' files; resume it once fixed",
        }.get(challenge.program_status, "it has not been checked")
        raise ServiceError(
            f"The challenge cannot be published while its scoring program is not checked: {why}. "
            "Upload a corrected program, or remove it.",
            field="visibility",
        )


def challenge_reveal(*, challenge: Challenge, user: User) -> Challenge:
    """Reveal the private board (hosts only): from now on everyone sees both boards.

    The reveal closes the competition: every phase (and the challenge) still taking submissions
    ends now, so no private score made afterwards is public at once (issue 21).
    """
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can reveal the private board.")
    if not board_has_private(challenge):
        raise ServiceError("This challenge has no private board to reveal (its public_fraction is 1).")
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if challenge.private_revealed_at is None:
            now = timezone.now()
            challenge.private_revealed_at = now
            challenge.save(update_fields=["private_revealed_at"])
            ended = _end_open_phases(challenge, now)
            audit_record(challenge=challenge, actor=user, action="private_board_revealed", phases_ended=ended)
            event_record(kind=Event.Kind.BOARD_REVEALED, challenge=challenge)
        report_request(challenge_id=challenge.pk)  # in the reveal's transaction, as for a settings change
    return challenge


def _end_open_phases(challenge: Challenge, now) -> list[str]:
    """Close every phase not closed by ``now``: the reveal ends the competition."""
    ended = []
    for phase in challenge.phases.all():
        if phase.closes_at is None or phase.closes_at > now:
            phase.closes_at = (
                now if phase.opens_at is None or phase.opens_at < now else phase.opens_at + timedelta(microseconds=1)
            )
            phase.save(update_fields=["closes_at"])
            ended.append(phase.name)
    return ended


def challenge_add_host(*, challenge: Challenge, user: User, added_by: User) -> None:
    if not user_is_host(user=added_by, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can add hosts.")
    challenge.hosts.add(user)
