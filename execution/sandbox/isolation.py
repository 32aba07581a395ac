"""Which isolation runs get here, checked once per process, and the backend that gives it."""

from __future__ import annotations

import functools
import logging
import os

from .backend import Backend, Probe
from .bubblewrap import Bubblewrap, bwrap_path
from .limits import IsolationUnavailable
from .unconfined import ALLOW_ENV, WARNING, Unconfined

__all__ = ["probe", "select_backend", "unsandboxed_allowed"]

logger = logging.getLogger("execution.sandbox")


@functools.cache
def _probe(path: str | None, euid: int) -> Probe:
    if path is None:
        return Probe(ok=False, backend="bubblewrap", missing="bubblewrap is not installed (apt-get install bubblewrap)")
    return Bubblewrap(path).probe()


def probe() -> Probe:
    """Whether bubblewrap isolates runs here; run once per process (and per bwrap path).

    Returns a `Probe`: ``ok``, the ``isolation`` a run gets, or what is ``missing``.
    """
    return _probe(bwrap_path(), os.geteuid())


def unsandboxed_allowed() -> bool:
    return os.environ.get(ALLOW_ENV, "") == "1"


def select_backend() -> Backend:
    """The bubblewrap backend; the unconfined one only where explicitly allowed.

    Raises IsolationUnavailable (naming what is missing) when bubblewrap cannot isolate
    runs and ``VARBOARD_ALLOW_UNSANDBOXED`` is not ``1``.
    """
    found = probe()
    if found.ok:
        path = bwrap_path()
        assert path is not None  # probe() is ok only when bwrap_path() found a bwrap
        return Bubblewrap(path)
    if unsandboxed_allowed():
        logger.warning("sandbox: %s; %s", found.missing, WARNING)
        return Unconfined()
    raise IsolationUnavailable(f"recipes cannot be isolated on this machine: {found.missing}")
