"""Which Python the sandbox starts, and which folders make up its environment."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

__all__ = ["python_command", "python_paths", "world_usable"]


def world_usable(path: str) -> bool:
    """Whether a user with no privileges can reach `path` (every parent o+x) and read it."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_mode & 0o005 != 0o005:  # others may read and execute (or list) it
        return False
    return searchable_by_others(os.path.dirname(path))


def searchable_by_others(directory: str) -> bool:
    """Whether every folder from `directory` up to / lets others through (o+x)."""
    directory = os.path.abspath(directory)
    while True:
        try:
            if not os.stat(directory).st_mode & 0o001:
                return False
        except OSError:
            return False
        if directory == "/":
            return True
        directory = os.path.dirname(directory)


def _site_dirs(usable_only: bool) -> list[str]:
    """This process's site-packages: its scheme's, or, under ``-S``, those put on sys.path."""
    candidates = [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    if sys.flags.no_site:
        candidates = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    found = []
    for path in candidates:
        if path not in found and os.path.isdir(path) and (not usable_only or world_usable(path)):
            found.append(path)
    return found


def _site_env(site_dirs: list[str]) -> tuple[tuple[str, str], ...]:
    joined = os.pathsep.join(site_dirs)
    return (("VARBOARD_SITE_PACKAGES", joined), ("PYTHONPATH", joined))


@functools.lru_cache(maxsize=None)
def python_command() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], str | None]:
    """How to start this Python's environment as the sandbox user.

    Returns ``(argv prefix, extra environment, note)``. Normally ``(sys.executable,
    "-s", "-B")``. When running as root and the interpreter is not usable by other
    users (e.g. a pyenv build under a 0700 /root), the same major.minor version from
    /usr/local/bin or /usr/bin is used instead, started with ``-S`` so that only this
    environment's site-packages, passed as VARBOARD_SITE_PACKAGES and added by the
    harness with `site.addsitedir`, are importable; `note` then says so. They are also
    passed as PYTHONPATH, for the interpreters a recipe starts itself (joblib's loky workers
    start ``sys.executable -S ...``). A worker that itself runs with ``-S`` (its packages
    put on sys.path by hand) passes them the same way.
    """
    exe = sys.executable
    if os.geteuid() != 0 or (world_usable(exe) and world_usable(sys.base_prefix)):
        if sys.flags.no_site:
            return (exe, "-S", "-s", "-B"), _site_env(_site_dirs(usable_only=False)), None
        return (exe, "-s", "-B"), (), None
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for base in ("/usr/local/bin", "/usr/bin"):
        candidate = os.path.join(base, version)
        if world_usable(candidate):
            note = (f"{exe} is not usable by the sandbox user; running {candidate} with "
                    f"the site-packages of {sys.prefix}")
            return (candidate, "-S", "-s", "-B"), _site_env(_site_dirs(usable_only=True)), note
    return (exe, "-s", "-B"), (), f"{exe} may not be usable by the sandbox user"


@functools.lru_cache(maxsize=None)
def python_paths() -> tuple[str, ...]:
    """Folders the sandbox shows read-only so that `python_command()` works inside.

    The interpreter's prefixes (a virtualenv and the Python it was made from) and
    site-packages, each under its own path and, where a link leads elsewhere, under the
    real path too; folders already under /usr are left out (/usr is shown whole).
    """
    prefix, env_items, _ = python_command()
    exe = prefix[0]
    paths = [os.path.dirname(os.path.dirname(exe)), os.path.dirname(os.path.dirname(os.path.realpath(exe)))]
    if exe == sys.executable:
        paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    for name, value in env_items:
        if name == "VARBOARD_SITE_PACKAGES":
            paths += [p for p in value.split(os.pathsep) if p]
    shown = []
    for path in paths:
        for candidate in (os.path.abspath(path), os.path.realpath(path)):
            if candidate not in shown and os.path.isdir(candidate):
                shown.append(candidate)
    return tuple(p for p in shown if p != "/usr" and not p.startswith("/usr/") and p != "/")
