"""Dataset downloads, shared by the web pages and the API. Hidden labels go to hosts only."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse

from evaluation.samples import sample_submission

from .models import Challenge
from .selectors import user_is_host
from .services.dataset_files import dataset_test_ids

PUBLIC_PARTS = ("train", "test_inputs", "sample_submission")


def dataset_download(*, challenge: Challenge, part: str, user) -> HttpResponse:
    if not hasattr(challenge, "dataset"):
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
        text = sample_submission(dataset_test_ids(dataset=dataset), challenge.metric_info, dataset.classes or None,
                                 id_column=dataset.id_column)
        return _csv_response(text.encode("utf-8"), f"{challenge.slug}-sample_submission.csv")
    else:
        raise Http404(f"Unknown download {part!r}; choose from {', '.join(PUBLIC_PARTS)}.")
    if not field:
        raise Http404(f"This challenge has no {part.replace('_', ' ')} file.")
    with field.open("rb") as handle:
        return _csv_response(handle.read(), f"{challenge.slug}-{part}.csv")


def _csv_response(content: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
