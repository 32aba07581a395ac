"""Downloads shared by the web pages and the API: a dataset's parts (hidden labels to hosts only), and a
submission's files and recipe (to the challenge's hosts and the submitting team only, each download audited)."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import PurePath

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponse

from evaluation.samples import sample_submission

from .models import Challenge, PredictionFile, Submission
from .selectors import submission_can_see_details, user_is_host
from .services.audit import audit_record
from .services.dataset_files import dataset_test_ids
from .services.errors import ServiceError
from .services.paging import whole_number

#: The content type of each kind of file a submission stores.
SUBMISSION_CONTENT_TYPES = {"csv": "text/csv", "recipe": "text/x-python", "zip": "application/zip"}

PUBLIC_PARTS = ("train", "test_inputs", "sample_submission")


def dataset_download(*, challenge: Challenge, part: str, user) -> HttpResponse:
    if challenge.results_only:
        raise Http404("This challenge has no dataset.")
    dataset = challenge.dataset
    if part == "hidden_labels":
        if not user_is_host(user=user, challenge=challenge):
            raise PermissionDenied("Hidden labels are visible to the challenge's hosts only.")
        field = dataset.hidden_labels_file
    elif part == "train":
        field = dataset.train_file
    elif part == "test_inputs":
        field = dataset.test_inputs_file
    elif part == "sample_submission":
        if not dataset.test_inputs_file:
            raise Http404("This challenge has no fixed test set (recipes are scored on out-of-bootstrap splits).")
        text = sample_submission(
            dataset_test_ids(dataset=dataset),
            challenge.metric_info,
            dataset.classes or None,
            id_column=dataset.id_column,
        )
        return _csv_response(text.encode("utf-8"), f"{challenge.slug}-sample_submission.csv")
    else:
        raise Http404(f"Unknown download {part!r}; choose from {', '.join(PUBLIC_PARTS)}.")
    if not field:
        raise Http404(f"This challenge has no {part.replace('_', ' ')} file.")
    # streamed a chunk at a time: a part is an upload of up to a dataset's limit, and anyone may download the public
    # ones (read whole, and compressed whole again, a part took twice its size of the web process per request)
    return FileResponse(
        field.open("rb"),
        as_attachment=True,
        filename=f"{challenge.slug}-{part}.csv",
        content_type="text/csv; charset=utf-8",
    )


def _csv_response(content: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def submission_download(*, submission: Submission, user, file: str | None = None) -> FileResponse:
    """A submission's recipe, one of its prediction files (``file``: its index), or all of them as a zip
    archive (``file`` None and several files); streamed, and recorded in the challenge's audit log.

    Only the challenge's hosts and the submitting team's members get it; anyone else gets a 404, as
    for anything hidden from them."""
    if not submission_can_see_details(user=user, submission=submission):
        raise Http404("No submission here.")
    files = list(submission.prediction_files.all())
    if submission.recipe_file:
        response = _stream(submission.recipe_file.open("rb"), f"submission-{submission.pk}-recipe.py", "recipe")
        names = [response.filename]
    elif not files:
        raise Http404("This submission stores no file (its results were imported).")
    elif file is not None or len(files) == 1:
        chosen = files[0] if file is None else _chosen(files, file)
        response = _stream(chosen.file.open("rb"), _safe_name(chosen), "csv")
        names = [chosen.original_name]
    else:
        response = _stream(_zipped(files), f"submission-{submission.pk}-files.zip", "zip")
        names = [f.original_name for f in files]
    audit_record(
        challenge=submission.challenge,
        actor=user,
        action="submission_downloaded",
        submission=submission.pk,
        team=submission.team.name,
        files=names,
    )
    return response


def _chosen(files: list[PredictionFile], file: str) -> PredictionFile:
    """The prediction file whose index ``file`` names."""
    if whole_number(str(file)) is None:
        raise ServiceError(
            f"file must be a prediction file's index (0 to {len(files) - 1}); got {file!r}.", field="file"
        )
    by_index = {f.index: f for f in files}
    if whole_number(str(file)) not in by_index:
        raise Http404(f"This submission has no file {file}; its files are 0 to {len(files) - 1}.")
    return by_index[whole_number(str(file))]


def _safe_name(record: PredictionFile) -> str:
    """The file's name as uploaded (its last part only), or one made from its index."""
    return PurePath(record.original_name.replace("\\", "/")).name or f"predictions-{record.index}.csv"


def _zipped(files: list[PredictionFile]):
    """A zip archive of the prediction files, each as ``<index>-<name as uploaded>`` (spooled to disk when large)."""
    archive = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for record in files:
            with record.file.open("rb") as handle, bundle.open(f"{record.index}-{_safe_name(record)}", "w") as out:
                while chunk := handle.read(1 << 20):
                    out.write(chunk)
    archive.seek(0)
    return archive


def _stream(handle, filename: str, kind: str) -> FileResponse:
    return FileResponse(handle, as_attachment=True, filename=filename, content_type=SUBMISSION_CONTENT_TYPES[kind])
