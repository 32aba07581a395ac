"""A recipe file kept between two posts of the submission form.

Browsers cannot re-fill a file input, so when the form is refused for something else (the
hyperparameters, the method name) the chosen recipe is kept server-side: saved in the default
storage's temporary area under a random name, referenced only from the poster's session (with
their user and challenge), and deleted once used, replaced, or an hour old (:func:`stash_sweep`
removes the forgotten ones each time a file is stashed).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from ..services.submissions import UploadedFile

STASH_DIR = "tmp/upload-stash"
STASH_TTL = timedelta(hours=1)
SESSION_KEY = "varboard_recipe_stash"


@dataclass(frozen=True)
class Kept:
    """A stashed recipe: its original file name and where it lies in the storage."""

    name: str
    path: str

    def read(self) -> UploadedFile:
        with default_storage.open(self.path, "rb") as handle:
            return UploadedFile(name=self.name, data=handle.read())


def stash_get(request, *, challenge_id: int) -> Kept | None:
    """The recipe this session kept for ``challenge_id``; None (and the stash dropped) when absent or stale."""
    entry = request.session.get(SESSION_KEY)
    if not entry:
        return None
    fresh = timezone.now().timestamp() - entry.get("at", 0) < STASH_TTL.total_seconds()
    if (
        not fresh
        or entry.get("user") != request.user.pk
        or entry.get("challenge") != challenge_id
        or not default_storage.exists(entry["path"])
    ):
        stash_drop(request)
        return None
    return Kept(name=entry["name"], path=entry["path"])


def stash_put(request, *, challenge_id: int, recipe: UploadedFile) -> Kept:
    """Keep ``recipe`` (already size-checked) for this session's next post; replaces any earlier one."""
    stash_drop(request)
    stash_sweep()
    path = default_storage.save(f"{STASH_DIR}/{secrets.token_urlsafe(24)}", ContentFile(recipe.data))
    request.session[SESSION_KEY] = {
        "name": recipe.name,
        "path": path,
        "user": request.user.pk,
        "challenge": challenge_id,
        "at": timezone.now().timestamp(),
    }
    return Kept(name=recipe.name, path=path)


def stash_drop(request) -> None:
    """Delete this session's kept recipe, if any."""
    entry = request.session.pop(SESSION_KEY, None)
    if entry and entry.get("path", "").startswith(f"{STASH_DIR}/"):
        default_storage.delete(entry["path"])


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
