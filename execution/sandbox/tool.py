"""Which bubblewrap the sandbox uses, and its version."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

__all__ = ["BWRAP_ENV", "bwrap_path", "bwrap_version"]

BWRAP_ENV = "VARBOARD_BWRAP"


def bwrap_path() -> str | None:
    """The bwrap to use: ``$VARBOARD_BWRAP``, else bwrap on the system's PATH."""
    return os.environ.get(BWRAP_ENV) or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


@functools.cache
def bwrap_version(path: str) -> str:
    """``"bubblewrap 0.8.0"``; OSError when `path` does not run."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, env={})
    except subprocess.SubprocessError as exc:
        raise OSError(f"{path} --version did not answer: {exc}") from None
    text = out.stdout.strip()
    if out.returncode != 0 or not text.startswith("bubblewrap "):
        raise OSError(f"{path} is not bubblewrap: {(out.stderr or text).strip()[:200]!r}")
    return text
