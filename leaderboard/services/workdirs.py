"""Temporary working folders of uploads: a dataset prepared, a bundle unpacked, prediction files checked.

Each folder is removed when its request ends. A web process killed meanwhile (a deploy, gunicorn's
timeout, the out-of-memory killer) leaves its folder behind, up to a dataset's limit in size; so every
new folder first removes the folders of any kind here that are older than :data:`STALE_AFTER_S`, which no
request lives to see (the guarded child that reads an upload is stopped within minutes).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

#: The kinds of working folder, each ``varboard-<kind>-*`` in the system's temporary folder.
KINDS = ("dataset", "bundle", "predictions")
#: A working folder untouched for this long belongs to a process that is gone.
STALE_AFTER_S = 6 * 3600


@contextmanager
def work_folder(kind: str) -> Iterator[str]:
    """A new ``varboard-<kind>-*`` folder for one request, removed at its end; stale ones removed first."""
    if kind not in KINDS:
        raise ValueError(f"Unknown working folder kind {kind!r}; one of {', '.join(KINDS)}.")
    work_folders_sweep()
    with tempfile.TemporaryDirectory(prefix=f"varboard-{kind}-") as folder:
        yield folder


def work_folders_sweep(*, now: float | None = None) -> int:
    """Remove the working folders older than :data:`STALE_AFTER_S` (by modification time); returns how many."""
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    removed = 0
    for kind in KINDS:
        for path in Path(tempfile.gettempdir()).glob(f"varboard-{kind}-*"):
            try:
                if not path.is_dir() or path.is_symlink() or path.stat().st_mtime >= cutoff:
                    continue
            except FileNotFoundError:  # another request removed it meanwhile
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
            logger.warning("removed the working folder %s, left by a process that ended mid-request", path)
    return removed
