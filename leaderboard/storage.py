"""Where stored files live: Django's storage API, never a path on a shared disk.

Two storages, chosen in ``settings.STORAGES`` from ``VARBOARD_STORAGE``:

* ``default``: datasets' public parts, prediction files and recipes. The local file system under
  ``VARBOARD_MEDIA_ROOT`` on one machine (the embedded default); an S3-compatible bucket
  (django-storages; MinIO in docker-compose.yml) when web processes and workers run on many.
* ``hidden``: the hidden test labels, in a location of their own (a private bucket, or a
  ``private/`` prefix that only the platform's credentials read; locally a folder that is never
  served). Nothing that serves public files can reach them.

Code reads and writes files through ``FieldFile.open``/``Storage.save``/``Storage.delete``, never
``.path``: an object store has no path.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from botocore.exceptions import ConnectionError as _BotoConnectionError
from botocore.exceptions import HTTPClientError as _BotoHTTPClientError
from django.apps import apps
from django.conf import settings
from django.core.files.storage import FileSystemStorage, storages
from django.core.signals import setting_changed
from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.functional import LazyObject, empty

logger = logging.getLogger(__name__)

HIDDEN = "hidden"


class _HiddenStorage(LazyObject):
    """``storages["hidden"]``, looked up on first use (and again after the STORAGES setting changes)."""

    def _setup(self):
        self._wrapped = storages[HIDDEN]


hidden_storage = _HiddenStorage()


def hidden_labels_storage():
    """The storage of ``Dataset.hidden_labels_file`` (a callable, so migrations do not freeze a backend)."""
    return hidden_storage


def _reset(*, setting, **kwargs) -> None:
    if setting in ("STORAGES", "MEDIA_ROOT"):
        hidden_storage._wrapped = empty


setting_changed.connect(_reset)


#: The object store is unreachable or hung (refused, timed out, connection closed): transient, retried.
STORAGE_DOWN = (_BotoConnectionError, _BotoHTTPClientError)

#: A local disk that cannot take a write: full, over quota, or mounted read-only.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def is_storage_fault(exc: BaseException) -> bool:
    """A fault of the file storage (store down, disk full), not of the file: worth retrying later."""
    return isinstance(exc, STORAGE_DOWN) or is_disk_full(exc)


#: Per thread, the name a ``MediaStorage._save`` is writing (None: none of its own yet).
_writing = threading.local()


class MediaStorage(FileSystemStorage):
    """The local storage, which never leaves a half-written file behind: a full or read-only disk, an I/O error
    (a failing disk, a network share), or any other error while the file is written. A failed save returns no
    name, so no row can name what it wrote and nothing else would ever delete it."""

    def get_available_name(self, name, max_length=None):
        within = getattr(_writing, "active", False)
        if within:  # from ``_save``: ``name`` is another's file (created since it was chosen), never this save's
            _writing.name = None
        chosen = super().get_available_name(name, max_length=max_length)
        if within:  # Django writes under this name now
            _writing.name = chosen
        return chosen

    def _save(self, name, content):
        # The name this save writes: the one given unless another's file has it (Django then chooses another, in
        # ``get_available_name``); only that one's part is deleted, never the name first given.
        _writing.active, _writing.name = True, None if os.path.lexists(self.path(name)) else name
        try:
            return super()._save(name, content)
        except BaseException:
            if _writing.name is not None:
                _remove_partial(self.path(_writing.name))
            raise
        finally:
            _writing.active = False


@contextmanager
def atomic_deleting_on_failure(delete_files: Callable[[], None], row_stored: Callable[[], bool]) -> Iterator[None]:
    """``transaction.atomic()`` for a block that stores files beside the rows naming them: when the block fails,
    ``delete_files()`` deletes what it stored, unless the failure came at or after the commit and the rows may be
    stored all the same.

    PostgreSQL can commit and then lose the connection before the client reads its answer (a network cut, a
    pooler restarted, a crash just after the commit record): the error at ``COMMIT`` is no rollback. Taken for
    one, a prediction upload's files were deleted while its rows stayed (tests/integration/test_faults_v3.py).
    Past the block's last statement, ``row_stored()`` asks a fresh connection whether the row is there; when
    even that fails the files are kept: a file no row names is less harm than a row naming a file gone.

    ``delete_files`` deletes through :func:`discard`. A delete that fails (the store went down with the save it
    rolls back) never replaces the block's error, which is raised as it came (the store's 503 for a store that
    is down); the clean-up's error is logged, and the file recorded as a ``StorageOrphan`` for the janitor, once
    the outermost such block has ended: a record written inside a transaction that rolls back would go with it.
    """
    nested = transaction.get_connection().in_atomic_block  # then the outer transaction's end decides, not this one
    outermost = _cleanup.orphans is None
    if outermost:
        _cleanup.orphans = []
    reached_commit = False
    try:
        with transaction.atomic():
            yield
            reached_commit = True
    except BaseException as failure:
        if nested or not reached_commit or not _stored_after_all(row_stored):
            _clean_up(delete_files, failure)
        raise
    finally:
        if outermost:
            orphans, _cleanup.orphans = _cleanup.orphans, None
            _record(orphans)


@dataclass(frozen=True)
class Orphan:
    """A stored file that no row names and whose delete failed."""

    storage: str  # its alias in ``settings.STORAGES``
    path: str
    reason: str  # the error that rolled back the block that stored it
    error: str  # its delete's
    not_before: datetime | None = None  # not deleted before (a file readers may still open for a while)


class _CleanUp(threading.local):
    orphans: list[Orphan] | None = None  # while an outermost ``atomic_deleting_on_failure`` is open
    cause: BaseException | None = None  # while a rollback's clean-up runs: the error that rolled back


_cleanup = _CleanUp()


def _clean_up(delete_files: Callable[[], None], failure: BaseException) -> None:
    """Run a rolled-back block's ``delete_files``; whatever it raises is logged, never raised in ``failure``'s
    place."""
    outer, _cleanup.cause = _cleanup.cause, failure
    try:
        delete_files()
    except Exception:
        logger.exception("the clean-up after a rolled-back block failed (%s: %s)", type(failure).__name__, failure)
    finally:
        _cleanup.cause = outer


def discard(storage, name: str, *, reason: str = "") -> None:
    """Delete the file ``name``, which no row names (a rolled-back block stored it, or a committed change replaced
    it); when the delete fails, log it and record the file for the janitor (``services.orphans``), never raise.
    Inside an ``atomic_deleting_on_failure`` the record waits for the outermost block's end. ``reason``: why the
    file is no longer needed (by default the error that rolled the block back)."""
    try:
        storage.delete(name)
    except Exception as exc:
        cause = _cleanup.cause
        if not reason and cause is not None:
            reason = f"{type(cause).__name__}: {cause}"
        orphan = Orphan(storage_alias(storage), name, reason, f"{type(exc).__name__}: {exc}")
        if not orphan.storage:  # a storage that settings.STORAGES does not name: nothing could find it again
            logger.error("could not delete %s, which no row names (%s); it stays", name, orphan.error)
            return
        logger.warning(
            "could not delete %s, which no row names, from storage %r (%s); recorded for the janitor",
            name,
            orphan.storage,
            orphan.error,
            extra={"storage": orphan.storage, "path": name},
        )
        if _cleanup.orphans is None:
            _record([orphan])
        else:
            _cleanup.orphans.append(orphan)


def discard_replaced(field, name: str | None, *, reason: str, keep_s: float = 0.0) -> None:
    """The one rule for a file that a change replaced or removed (the old ``name`` of ``field``, a ``FieldFile``):
    deleted once the change is committed, through :func:`discard`. The delete comes after the change and is not
    part of it: a store that refuses it (down, hung) never turns a change that was made into an error (a 503 for a
    replaced scoring program that was stored, tests/platform/test_storage_faults.py), and the file it leaves is
    recorded for the janitor instead of staying unknown. ``keep_s``: readers may still open the file that long after
    the change (a task that read the row before the commit): recorded at once for the janitor to delete then
    (``services.orphans``, which never deletes a file a row names). Nothing when ``name`` is empty or still the
    field's. Inside an outer transaction the delete waits for its commit: rolled back, the row names the file again."""
    if not name or name == field.name:
        return
    storage = field.storage
    if not keep_s:
        transaction.on_commit(lambda: discard(storage, name, reason=reason))
        return
    later = Orphan(storage_alias(storage), name, reason, "")
    transaction.on_commit(lambda: _record([replace(later, not_before=timezone.now() + timedelta(seconds=keep_s))]))


#: The longest error text an orphan's record keeps.
ERROR_CHARS = 2_000


def _record(orphans: list[Orphan]) -> int:
    """Record files whose delete failed (one ``StorageOrphan`` per file, which ``services.orphans`` deletes later);
    returns how many. A database that cannot take them is logged with every file's name: the log is then their only
    trace. The model is looked up by name: the models import this module."""
    if not orphans:
        return 0
    record = apps.get_model("leaderboard", "StorageOrphan")
    try:
        with transaction.atomic():
            record.objects.bulk_create(
                [
                    record(
                        storage=orphan.storage,
                        path=orphan.path,
                        reason=orphan.reason[:ERROR_CHARS],
                        last_error=orphan.error[:ERROR_CHARS],
                        **({"attempts": 0, "next_attempt_at": orphan.not_before} if orphan.not_before else {}),
                    )
                    for orphan in orphans
                ],
                ignore_conflicts=True,  # recorded already (an outer rollback's clean-up met it again)
            )
    except DatabaseError:
        logger.exception(
            "could not record %d file(s) whose delete failed; they stay in storage: %s",
            len(orphans),
            ", ".join(f"{orphan.storage}:{orphan.path}" for orphan in orphans),
        )
        return 0
    return len(orphans)


def storage_alias(storage) -> str:
    """The alias in ``settings.STORAGES`` of ``storage`` (a field's, maybe a lazy one); "" for one of none."""
    if isinstance(storage, LazyObject):
        if storage._wrapped is empty:
            storage._setup()
        storage = storage._wrapped
    return next((alias for alias in settings.STORAGES if storages[alias] is storage), "")


def _stored_after_all(row_stored: Callable[[], bool]) -> bool:
    try:
        stored = row_stored()
    except DatabaseError:
        logger.warning("a commit failed and whether it was stored is unknown (the database is away): files kept")
        return True
    if stored:
        logger.warning("a commit answered an error but was stored: its files are kept")
    return stored


def forget_unsaved(field, kept: str | None) -> None:
    """After a rolled-back transaction: delete the file ``field`` stored meanwhile (no row names it) and give the
    field back the name ``kept`` it had, the one its row still names."""
    if field.name != kept:
        discard(field.storage, field.name)
        field.name = kept


def delete_stored(field) -> None:
    """Delete a stored file (a ``FieldFile``) that a failed creation wrote, and on the local disk the folders it
    leaves empty (a challenge's ``challenges/<slug>/`` and its ``scoring/``), up to the storage's root: a refused
    bundle import left them behind. Only for the folders of an object being rolled back, which nothing else
    writes into: a folder shared with other uploads (``submissions/<year>/<month>/``) may be in use."""
    storage, name = field.storage, field.name
    discard(storage, name)
    if not isinstance(storage, FileSystemStorage):
        return  # an object store has no folders
    root = os.path.realpath(storage.location)
    folder = os.path.dirname(os.path.realpath(os.path.join(root, name)))  # the file's folder on the local disk
    while folder != root and folder.startswith(root + os.sep):
        try:
            os.rmdir(folder)  # only when empty
        except OSError:
            return
        folder = os.path.dirname(folder)


def _remove_partial(full_path: str) -> None:
    """Delete what a failed save wrote at ``full_path`` (Django's ``_save`` creates it exclusively)."""
    try:
        os.remove(full_path)
    except OSError:
        pass
