"""Read uploaded files with their size checked before anything is read into memory.

Django spools any upload over ``FILE_UPLOAD_MAX_MEMORY_SIZE`` to a temporary file; these
helpers refuse by the declared size first and never read more than the limit plus one
byte, so the web process's memory does not grow with what a client sends. A dataset
spooled to disk is not read at all: its path goes to the child that prepares it. Prediction
files are read lazily: a submission with too many files is refused by its count
(``_parse_prediction_files``) before any of them is read (issue 22). Before all this,
``upload_handlers.BoundedUploadHandler`` has already stopped any request over the file
count, the per-file size or (for a submission) the total size while it streamed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .limits import UploadLimit, upload_file_count_limit, upload_limit
from .services.errors import ServiceError, TooLarge
from .services.submissions import UploadedFile


def _too_large(name: str, size: int, limit: UploadLimit, field: str) -> TooLarge:
    return TooLarge(f"{name} is {limit.size(size)}; the limit is {limit.label}.", field=field)


def _read_bounded(upload, *, kind: str, field: str) -> bytes:
    limit = upload_limit(kind)
    size = getattr(upload, "size", None)
    if limit.exceeded_by(size):
        raise _too_large(upload.name, size, limit, field)
    data = upload.read(limit.max_bytes + 1)
    if limit.exceeded_by(len(data)):  # the declared size was missing or wrong
        raise _too_large(upload.name, len(data), limit, field)
    return data


def upload_file(upload, *, kind: str, field: str):
    """An uploaded file of ``kind`` left where Django put it (spooled to disk past ``FILE_UPLOAD_MAX_MEMORY_SIZE``),
    refused past its limit by its size, which Django counted as it stored the bytes; rewound for its reader."""
    limit = upload_limit(kind)
    if limit.exceeded_by(upload.size):
        raise _too_large(upload.name, upload.size, limit, field)
    upload.seek(0)
    return upload


def read_upload(upload, *, kind: str, field: str) -> UploadedFile:
    """One uploaded file of ``kind`` (``limits.KINDS``), read up to its limit and refused past it."""
    return UploadedFile(name=upload.name, data=_read_bounded(upload, kind=kind, field=field))


class LazyUpload:
    """An upload read (bounded) the first time its ``data`` is used; ``name`` costs nothing.

    ``path``: the temporary file an upload over ``FILE_UPLOAD_MAX_MEMORY_SIZE`` was spooled to
    (None for one kept in memory). The services then read it in a child and store it by streaming,
    and ``data`` is never read in the web process.
    """

    def __init__(self, upload, *, kind: str, field: str):
        self.name = upload.name
        spooled = getattr(upload, "temporary_file_path", None)
        self.path = Path(spooled()) if spooled is not None else None
        self._upload, self._kind, self._field = upload, kind, field

    @cached_property
    def data(self) -> bytes:
        return _read_bounded(self._upload, kind=self._kind, field=self._field)


def read_prediction_uploads(uploads, per: str = "submission") -> list[UploadedFile]:
    """Prediction files (or a results import's files: ``per="import"``), counted, then each by its declared size."""
    limit, most = upload_limit("prediction"), upload_file_count_limit()
    uploads = list(uploads)
    if len(uploads) > most:
        raise ServiceError(f"{len(uploads)} files were uploaded; the limit is {most} files per {per}.", field="files")
    for upload in uploads:  # refuse by the declared sizes before reading any file
        if limit.exceeded_by(getattr(upload, "size", None)):
            raise _too_large(upload.name, upload.size, limit, "files")
    return [LazyUpload(upload, kind="prediction", field="files") for upload in uploads]


def read_recipe_upload(upload) -> UploadedFile:
    return read_upload(upload, kind="recipe", field="recipe")


@dataclass(frozen=True)
class DatasetFile:
    """A host's uploaded table: its bytes (a small upload, kept in memory) or the path it was spooled to."""

    name: str
    data: bytes | Path


def read_dataset_upload(upload, *, field: str = "dataset") -> DatasetFile:
    """Size-checked; an upload spooled to disk is not read here: the child that prepares the dataset reads it."""
    spooled = getattr(upload, "temporary_file_path", None)
    if spooled is None:
        return DatasetFile(name=upload.name, data=_read_bounded(upload, kind="dataset", field=field))
    limit = upload_limit("dataset")
    if limit.exceeded_by(upload.size):
        raise _too_large(upload.name, upload.size, limit, field)
    return DatasetFile(name=upload.name, data=Path(spooled()))
