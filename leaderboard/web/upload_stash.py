"""Files kept between two posts of a web form (a submission's recipe, a new challenge's dataset files).

Browsers cannot re-fill a file input, so when a form is refused for something else (the
hyperparameters, a label-column typo) the chosen files are kept server-side: saved in the default
storage's temporary area under a random name, referenced only from the poster's session (with
their user and the form's scope: which challenge, or a new one), at most one per file field, and
deleted once used, replaced, refused themselves, or an hour old (:func:`stash_sweep` removes the
forgotten ones each time a file is stashed). A form that keeps files mixes in ``forms.KeepsUploads``;
its view calls :func:`kept_uploads` before validating and :func:`keep_uploads` after a refusal.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from typing import IO

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone

from ..limits import KB, MB, upload_limit
from ..services.errors import ServiceError
from ..storage import discard
from ..upload_handlers import FIELD_KINDS

STASH_DIR = "tmp/upload-stash"
STASH_TTL = timedelta(hours=1)
SESSION_KEY = "varboard_upload_stash"  # {file field: entry}


def in_units(size: int) -> str:
    """A file's size as the form shows it: "512 bytes", "20 KB", "1.5 MB"."""
    return f"{size} bytes" if size < KB else f"{size / KB:.0f} KB" if size < MB else f"{size / MB:.1f} MB"


@dataclass(frozen=True)
class Kept:
    """A stashed file: the field it was chosen in, its original name, its size, and where it lies in the storage."""

    field: str
    name: str
    size: int
    path: str

    def describe(self) -> str:
        """What the form says under the file input."""
        return f"{self.name} ({in_units(self.size)}, kept; choose another to replace it)"

    def as_upload(self) -> KeptUpload:
        return KeptUpload(self)


class KeptUpload:
    """A kept file standing in for the upload not chosen again: read by the same size-checked readers (``uploads``).

    Gone (swept between the page and the post), it is the field's error, in words."""

    def __init__(self, kept: Kept):
        self.kept, self.name, self.size = kept, kept.name, kept.size
        self._spool: IO[bytes] | None = None  # the copy on disk temporary_file_path made, if any

    def _gone(self) -> ServiceError:
        return ServiceError(f"The kept {self.name} is no longer here: choose the file again.", field=self.kept.field)

    def read(self, size: int = -1) -> bytes:
        try:
            with default_storage.open(self.kept.path, "rb") as handle:
                return handle.read(size)
        except OSError:  # FileNotFoundError included
            raise self._gone() from None

    def seek(self, offset: int) -> None:  # each read opens the file afresh
        return None

    def __getattr__(self, name: str):
        """``temporary_file_path`` of a kept file over ``FILE_UPLOAD_MAX_MEMORY_SIZE``: a copy on this machine's disk,
        read through the storage API in chunks (an object store has no path) and deleted with this object, as
        Django's spooled upload is; a dataset is then read by the child that prepares it. A smaller file has none:
        it is read into memory, bounded, as a small upload is."""
        if name != "temporary_file_path" or self.size <= settings.FILE_UPLOAD_MAX_MEMORY_SIZE:
            raise AttributeError(name)

        def temporary_file_path() -> str:
            if self._spool is None:
                spool = tempfile.NamedTemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR, suffix=".upload")
                try:
                    with default_storage.open(self.kept.path, "rb") as handle:
                        shutil.copyfileobj(handle, spool, MB)
                    spool.flush()
                except OSError:  # FileNotFoundError included
                    spool.close()
                    raise self._gone() from None
                self._spool = spool
            return self._spool.name

        return temporary_file_path


def kept_uploads(request, *, scope: str, fields) -> dict[str, Kept]:
    """The files this session kept for ``fields`` of the form at ``scope``; a stale or foreign entry is dropped."""
    entries = request.session.get(SESSION_KEY) or {}
    kept = {}
    for field in fields:
        entry = entries.get(field)
        if not entry:
            continue
        fresh = timezone.now().timestamp() - entry.get("at", 0) < STASH_TTL.total_seconds()
        if entry.get("scope") != scope:
            continue  # another form's (another challenge's): left alone, replaced when this field is stashed
        if not fresh or entry.get("user") != request.user.pk or not default_storage.exists(entry["path"]):
            stash_drop(request, [field])
            continue
        kept[field] = Kept(field=field, name=entry["name"], size=entry["size"], path=entry["path"])
    return kept


def keep_uploads(request, form, *, scope: str) -> None:
    """After ``form`` was refused: keep each file newly chosen for the next post, unless that file itself was
    refused (then drop it, and any kept before it); a field with no new file keeps what it kept."""
    kept = dict(form.kept)
    for field in form.kept_fields:
        if field not in form.fields:
            continue
        if field in form.errors:
            stash_drop(request, [field])
            kept.pop(field, None)
            continue
        upload = form.files.get(field)
        if upload is None or not form.keeps_upload(field) or upload_limit(FIELD_KINDS[field]).exceeded_by(upload.size):
            continue
        kept[field] = stash_put(request, scope=scope, field=field, upload=upload)
    form.keep(kept)


def stash_put(request, *, scope: str, field: str, upload) -> Kept:
    """Keep ``upload`` (chosen in ``field``) for this session's next post; replaces the field's earlier one."""
    stash_drop(request, [field])
    stash_sweep()
    upload.seek(0)
    path = default_storage.save(f"{STASH_DIR}/{secrets.token_urlsafe(24)}", upload)  # streamed, by chunks
    entries = request.session.get(SESSION_KEY) or {}
    entries[field] = {
        "name": upload.name,
        "size": upload.size,
        "path": path,
        "user": request.user.pk,
        "scope": scope,
        "at": timezone.now().timestamp(),
    }
    request.session[SESSION_KEY] = entries
    return Kept(field=field, name=upload.name, size=upload.size, path=path)


def stash_drop(request, fields) -> None:
    """Delete this session's kept files for ``fields``, if any: after the post that used them too, so a delete the
    store refuses is recorded for the janitor (``storage.discard``), never an error for an entry that was made."""
    entries = request.session.get(SESSION_KEY) or {}
    for field in fields:
        entry = entries.pop(field, None)
        if entry and entry.get("path", "").startswith(f"{STASH_DIR}/"):
            discard(default_storage, entry["path"], reason="an upload kept between two posts, used or replaced")
    request.session[SESSION_KEY] = entries


def stash_sweep(*, now=None) -> int:
    """Delete kept files older than :data:`STASH_TTL` (their sessions never came back); returns how many."""
    now = now or timezone.now()
    try:
        _, names = default_storage.listdir(STASH_DIR)
    except FileNotFoundError:
        return 0
    removed = 0
    for name in names:
        path = f"{STASH_DIR}/{name}"
        if now - default_storage.get_modified_time(path) >= STASH_TTL:
            default_storage.delete(path)
            removed += 1
    return removed
