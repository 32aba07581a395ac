"""Stored files that no row names and whose delete failed (``StorageOrphan``): recorded, then deleted by the janitor.

A creation that stores files and then rolls back deletes them (``storage.atomic_deleting_on_failure``). When the
store went down between a save and that delete (an entry's first file stored, its second refused, then the first
one's delete refused too), the file stayed in the bucket for ever, named by no row and known to nothing. Now it
is recorded (``storage._record``, once the rolled-back transaction has ended) and each janitor pass deletes
the recorded files that are due (:func:`orphans_delete`). A file that a committed change replaced or removed (a
scoring program, ``storage.discard_replaced``) is deleted after the commit the same way: a refused delete is
recorded here, never an error for the change.

The janitor's rules:

* never a file that a row names: every ``FileField`` is asked first, and a file one names is kept (its record
  dropped: it is no orphan);
* a delete that fails again is tried later: after ``VARBOARD_JANITOR_INTERVAL_S``, doubled with each failure, at
  most a day;
* the first failure of a store that is down or hung ends the pass's deletes, so that a pass waits out one call's
  timeouts (``VARBOARD_S3_CONNECT_TIMEOUT_S``, ``..._READ_TIMEOUT_S``, ``..._MAX_ATTEMPTS``), never one per file.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.apps import apps
from django.conf import settings
from django.core.files.storage import storages
from django.db import models
from django.utils import timezone

from ..models import StorageOrphan
from ..storage import ERROR_CHARS, is_storage_fault

logger = logging.getLogger(__name__)

#: Recorded files tried in one pass at most (a pass stays short whatever an outage left behind).
BATCH = 100
#: The longest wait between two tries of one file's delete.
RETRY_MAX_S = 86_400.0


def orphan_named_by(orphan: StorageOrphan) -> str:
    """The model field (``app.Model.field``) of a row that names the recorded file's path, "" when none does.

    Every file field is asked, whatever its storage: two storages can be one place (locally, ``default`` and
    ``hidden`` share ``VARBOARD_MEDIA_ROOT`` unless ``VARBOARD_PRIVATE_MEDIA_ROOT`` is set), and a path that a row
    of the other storage names keeps a file that could have gone, never deletes one in use."""
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, models.FileField) and model._base_manager.filter(**{field.name: orphan.path}).exists():
                return f"{model._meta.label}.{field.name}"
    return ""


def orphans_delete(*, now=None) -> int:
    """Delete the recorded files that are due and that no row names; returns how many were deleted."""
    now = now or timezone.now()
    deleted = 0
    for orphan in StorageOrphan.objects.filter(next_attempt_at__lte=now).order_by("next_attempt_at", "pk")[:BATCH]:
        named_by = orphan_named_by(orphan)
        if named_by:
            logger.warning(
                "janitor: %s in storage %r is named by %s: kept, its orphan record dropped",
                orphan.path,
                orphan.storage,
                named_by,
            )
            orphan.delete()
            continue
        try:
            storages[orphan.storage].delete(orphan.path)  # a file gone already is no error
        except Exception as exc:
            _retry_later(orphan, exc, now)
            if is_storage_fault(exc):
                break  # the store is down: the others wait for a later pass, not for its timeouts one by one
            continue
        orphan.delete()
        deleted += 1
        logger.info(
            "janitor: deleted %s from storage %r, a file no row names (left by %s; %d failed delete(s) before)",
            orphan.path,
            orphan.storage,
            orphan.reason or "a rollback",
            orphan.attempts,
        )
    return deleted


def _retry_later(orphan: StorageOrphan, exc: Exception, now) -> None:
    attempts = orphan.attempts + 1
    delay = min(RETRY_MAX_S, settings.VARBOARD["JANITOR_INTERVAL_S"] * 2 ** min(attempts - 1, 20))
    error = f"{type(exc).__name__}: {exc}"
    StorageOrphan.objects.filter(pk=orphan.pk).update(
        attempts=attempts, last_error=error[:ERROR_CHARS], next_attempt_at=now + timedelta(seconds=delay)
    )
    logger.warning(
        "janitor: could not delete %s from storage %r (%d failed deletes; %s): tried again in %.0f s",
        orphan.path,
        orphan.storage,
        attempts,
        error,
        delay,
    )
