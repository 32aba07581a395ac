"""Rescoring: a host corrects the hidden labels or the metric, and every prediction submission is scored again.

The reports computed before are kept (``ReportVersion``), and the audit log records what was
replaced. Prediction files are stored, so they are scored again on the scoring queue; recipe
runs kept no predictions (only their scores), so a corrected label reaches them only when they
are run again: the result says how many were left as they are. A new metric cannot reach them at
all, so a metric change is refused (409) while the challenge has recipe entries: one board never
mixes two metrics.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.utils import timezone

from evaluation.io.guarded import ChildLimitExceeded, limit_exceeded_message, memory_message, run_guarded
from evaluation.io.read import TableError, read_table
from evaluation.metrics import get_metric

from ..choices import Feedback, SubmissionKind, SubmissionStatus
from ..limits import upload_child_limits, upload_limit
from ..models import Challenge, Dataset, Phase, PrivateReport, Report, ReportVersion, Submission
from ..selectors import user_is_host
from ..storage import atomic_deleting_on_failure, discard_replaced, forget_unsaved
from .audit import audit_record
from .dataset_files import dataset_test_ids, dataset_version
from .dispatch import RESCORE_SUBMISSION, enqueue_on_commit
from .errors import NotAllowed, ServiceError
from .metrics import check_secondary_metrics
from .reports import report_request


def _read_labels(dataset: Dataset, data: bytes | Path, filename: str) -> bytes:
    """The corrected hidden labels as the stored CSV (id, label), every test id exactly once.

    Read and checked in a forked child under ``DATASET_PARSE_MB`` (``run_guarded``), a Parquet file
    refused past its decoded limit from its metadata: the web process gets back only the CSV to store
    (0.11 MB of Parquet decoding to 900 MB took +1.76 GB in the web process). ``data`` is the upload's
    bytes, or the file it was spooled to (larger than a megabyte).
    """
    spec = {
        "id_column": dataset.id_column,
        "label_column": dataset.label_column,
        "regression": dataset.task == "regression",
        "classes": [str(c) for c in dataset.classes or []],
        "expected": dataset_test_ids(dataset=dataset),
        "memory_limit": upload_child_limits()["memory_limit"],
    }
    try:
        outcome, value = run_guarded(
            _checked_labels,
            data,
            filename,
            spec,
            **upload_child_limits(),
        )
    except ChildLimitExceeded as exc:
        outcome, value = "refused", limit_exceeded_message(exc, filename, "to parse")
    if outcome == "refused":
        raise ServiceError(value, field="hidden_labels")
    return value


def _checked_labels(data: bytes | Path, filename: str, spec: dict) -> tuple[str, bytes | str]:
    """In the child: ("ok", the labels' CSV) or ("refused", the message naming the problem)."""
    try:
        return _labels_csv(data, filename, spec)
    except MemoryError:
        return "refused", f"{filename}: {memory_message('to parse', spec['memory_limit'])}"
    except Exception as exc:  # noqa: BLE001 - a reader's own failure (pyarrow's failed allocations among them)
        return "refused", f"{filename}: the file could not be read ({type(exc).__name__}: {str(exc)[:200]})."


def _labels_csv(data: bytes | Path, filename: str, spec: dict) -> tuple[str, bytes | str]:
    id_column, label_column, expected = spec["id_column"], spec["label_column"], spec["expected"]
    try:
        frame = read_table(
            data.read_bytes() if isinstance(data, Path) else data,
            filename=filename,
            max_bytes=upload_limit("dataset").max_bytes,
            max_decoded_bytes=upload_limit("dataset_decoded").max_bytes,
            text_columns=(id_column, label_column),
        )
    except TableError as exc:  # most name the file already
        return "refused", str(exc) if str(exc).startswith(f"{filename}:") else f"{filename}: {exc}"
    missing_columns = [c for c in (id_column, label_column) if c not in frame.columns]
    if missing_columns:
        return "refused", f"{filename}: no column {missing_columns[0]!r}."
    ids = frame[id_column].astype(str)
    given = set(ids)
    repeated = ids[ids.duplicated()].tolist()
    unknown = sorted(given - set(expected))
    missing = [i for i in expected if i not in given]
    for problem, values in (
        ("repeats ids", repeated),
        ("has ids that are not test rows", unknown),
        ("lacks test ids", missing),
    ):
        if values:
            return "refused", f"{filename} {problem}: {', '.join(map(repr, values[:5]))}."
    labels = frame[label_column].astype(str)
    if spec["regression"]:
        if pd.to_numeric(labels, errors="coerce").isna().any():
            return "refused", f"{filename}: every label must be a number."
    else:
        strange = sorted(set(labels) - set(spec["classes"]))
        if strange:
            return "refused", (
                f"{filename}: labels {strange[:5]} are not classes of this challenge ({', '.join(spec['classes'])})."
            )
    out = pd.DataFrame({id_column: ids, label_column: labels}).set_index(id_column)
    return "ok", out.loc[expected].reset_index().to_csv(index=False).encode("utf-8")


#: How long the hidden labels a correction replaced stay for the scorings that read the dataset before it.
OLD_LABELS_KEPT_S = 3600.0

METRIC_WOULD_MIX = (
    "This challenge has {n} recipe submission(s) whose predictions are not kept (only their "
    "scores under {old}): a change of metric to {new} could not rescore them, and one board would "
    "mix the two metrics. Create a new challenge for the new metric, or correct the labels only."
)


class MetricChangeRefused(ServiceError):
    """A metric change that would leave recipe entries scored under the old metric (HTTP 409)."""

    status_code = 409


def _check_no_recipe_entries(challenge: Challenge, metric) -> None:
    """Recipe runs keep no predictions, so a new metric cannot reach them: refuse rather than mix metrics."""
    recipes = (
        Submission.objects.filter(challenge=challenge, kind=SubmissionKind.RECIPE)
        .exclude(status=SubmissionStatus.CANCELLED)
        .count()
    )
    if recipes:
        raise MetricChangeRefused(
            METRIC_WOULD_MIX.format(n=recipes, old=get_metric(challenge.metric).label, new=metric.label), field="metric"
        )


METRIC_WOULD_PUBLISH = (
    "metric cannot change once submissions exist under {feedback} feedback: every prediction file already read "
    "under {old} would be scored again under {new} and shown on the public board, a second view of the same "
    "probes that the feedback's rule does not bound. Correct the labels only, or create a new challenge."
)


def _check_feedback_hides_nothing_new(challenge: Challenge, metric) -> None:
    """Under rounded or Ladder feedback a prediction file's public score is shown coarsely, once: rescored under
    another metric, every probe is shown again, by a second function of the public labels (one row moves balanced
    accuracy by 1/(classes · class size), not 1/n, and crosses other rounding steps). Exact feedback hides nothing
    on the public board, and the private board is read exact after the reveal anyway."""
    if challenge.feedback == Feedback.EXACT:
        return
    if Submission.objects.filter(challenge=challenge, kind=SubmissionKind.PREDICTIONS).exists():
        raise ServiceError(
            METRIC_WOULD_PUBLISH.format(
                feedback=challenge.feedback, old=get_metric(challenge.metric).label, new=metric.label
            ),
            field="metric",
        )


def _archive_reports(challenge: Challenge, reason: str) -> None:
    for board, model in (("public", Report), ("private", PrivateReport)):
        report = model.objects.filter(challenge=challenge).first()
        if report is not None and report.data:
            ReportVersion.objects.create(
                challenge=challenge, board=board, data=report.data, computed_at=report.computed_at, reason=reason[:300]
            )


def challenge_rescore(
    *,
    challenge: Challenge,
    user: User,
    phase: Phase | None = None,
    hidden_labels: tuple[str, bytes | Path] | None = None,
    metric: str | None = None,
) -> dict:
    """Correct the labels and/or the metric, then score the prediction submissions again (hosts only).

    With new labels or a new metric every phase is rescored (they share the test rows);
    otherwise ``phase`` (or every phase). Returns ``{"queued": n, "recipes_left": m}``.
    """
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can rescore it.")
    if challenge.results_only:  # ``challenge.dataset`` raised: a 500
        raise ServiceError(
            "This challenge holds imported results only: it has no labels to correct and nothing to rescore. "
            f"Import the corrected results instead (POST /api/challenges/{challenge.slug}/imports/)."
        )
    dataset = challenge.dataset
    new_metric = None
    if metric and metric != challenge.metric and challenge.scoring_program:
        raise ServiceError(
            "This challenge's scoring program ranks the board; its metric only fixes the prediction files' "
            "format, which cannot change once submissions exist.",
            field="metric",
        )
    if metric and metric != challenge.metric:
        try:
            new_metric = get_metric(metric)
        except ValueError as exc:
            raise ServiceError(str(exc), field="metric") from None
        if (new_metric.task == "regression") != (dataset.task == "regression"):
            raise ServiceError(f"{new_metric.label} does not fit this dataset's labels.", field="metric")
        check_secondary_metrics(
            challenge.secondary_metrics, primary=new_metric.name, task=dataset.task, classes=dataset.classes
        )
        _check_no_recipe_entries(challenge, new_metric)
        _check_feedback_hides_nothing_new(challenge, new_metric)
    labels = _read_labels(dataset, hidden_labels[1], hidden_labels[0]) if hidden_labels else None
    submissions = Submission.objects.filter(challenge=challenge).exclude(status=SubmissionStatus.CANCELLED)
    if phase is not None and labels is None and new_metric is None:
        submissions = submissions.filter(phase=phase)
    kept = (dataset.hidden_labels_file.name, dataset.version)

    def forget() -> None:
        # Rolled back: the dataset's row names the labels it had; the corrected ones stored meanwhile go (no row
        # names them, and they are hidden labels), unless the commit was stored after all.
        if dataset.hidden_labels_file.name != kept[0]:
            dataset.version = kept[1]
        forget_unsaved(dataset.hidden_labels_file, kept[0])

    def stored() -> bool:
        return Dataset.objects.filter(pk=dataset.pk, hidden_labels_file=dataset.hidden_labels_file.name).exists()

    with atomic_deleting_on_failure(forget, stored):
        reason = _apply_corrections(challenge, dataset, user, labels, new_metric, phase)
        _archive_reports(challenge, reason)
        rescored = list(submissions.filter(kind=SubmissionKind.PREDICTIONS).values_list("pk", flat=True))
        # Recorded with the request, so that a rescore the broker loses is sent again (services.janitor).
        Submission.objects.filter(pk__in=rescored).update(rescore_requested_at=timezone.now())
        for submission_id in rescored:
            enqueue_on_commit(RESCORE_SUBMISSION, submission_id)
        queued = len(rescored)
        recipes = submissions.filter(kind=SubmissionKind.RECIPE).count()
        audit_record(
            challenge=challenge,
            actor=user,
            action="rescore",
            reason=reason,
            submissions=queued,
            recipes_not_rescored=recipes,
        )
        report_request(challenge_id=challenge.pk)  # part of the correction (tests/platform/test_half_stored.py)
    # The labels replaced: deleted by the janitor an hour later, not at once (a scoring that read the dataset's row
    # before the commit, a new entry scored during the correction, still opens them).
    discard_replaced(dataset.hidden_labels_file, kept[0], reason="hidden labels corrected", keep_s=OLD_LABELS_KEPT_S)
    return {"queued": queued, "recipes_left": recipes}


def _apply_corrections(challenge, dataset, user, labels: bytes | None, metric, phase) -> str:
    """Store the corrected labels and metric (audited); a sentence saying what the rescore is for."""
    reasons = []
    if labels is not None:
        old_version = dataset.version
        dataset.hidden_labels_file.save("hidden_labels.csv", ContentFile(labels), save=False)
        dataset.version = dataset_version(dataset=dataset, labels=labels)
        dataset.save(update_fields=["hidden_labels_file", "version"])
        audit_record(
            challenge=challenge,
            actor=user,
            action="hidden_labels_replaced",
            file="hidden_labels",
            old_version=old_version,
            new_version=dataset.version,
        )
        reasons.append("hidden labels corrected")
    if metric is not None:
        audit_record(
            challenge=challenge,
            actor=user,
            action="settings_changed",
            changes={
                "metric": [challenge.metric, metric.name],
                "higher_is_better": [challenge.higher_is_better, metric.higher_is_better],
            },
        )
        challenge.metric, challenge.higher_is_better = metric.name, metric.higher_is_better
        challenge.save(update_fields=["metric", "higher_is_better"])
        reasons.append(f"metric changed to {metric.label}")
    if not reasons:
        reasons.append(f"rescore of the {phase.name} phase" if phase else "rescore of every phase")
    return "; ".join(reasons)
