"""Read uploaded files with their size checked before anything is read into memory."""

from __future__ import annotations

from django.conf import settings

from .services.errors import ServiceError
from .services.submissions import UploadedFile


def read_upload(upload, *, limit_mb: int, field: str) -> UploadedFile:
    size = getattr(upload, "size", None)
    if size is not None and size > limit_mb * 1024 * 1024:
        raise ServiceError(f"{upload.name} is {size / 1024 / 1024:.1f} MB; the limit is {limit_mb} MB.", field=field)
    return UploadedFile(name=upload.name, data=upload.read())


def read_prediction_uploads(uploads) -> list[UploadedFile]:
    limit = settings.VARBOARD["MAX_PREDICTION_MB"]
    return [read_upload(upload, limit_mb=limit, field="files") for upload in uploads]


def read_recipe_upload(upload) -> UploadedFile:
    return read_upload(upload, limit_mb=max(1, settings.VARBOARD["MAX_RECIPE_KB"] // 1024 + 1), field="recipe")


def read_dataset_upload(upload, *, field: str = "dataset") -> UploadedFile:
    return read_upload(upload, limit_mb=settings.VARBOARD["MAX_DATASET_MB"], field=field)
