"""Which Python the sandbox starts, and where the sandbox shows it: at neutral paths.

Whatever the host's layout (a pyenv build under root's home, a virtualenv in a project,
Debian's /usr/bin/python3.11, a Docker image's /usr/local), a run sees the same thing:

- ``/opt/python``: the worker's base interpreter, ``bin/pythonX.Y``, ``lib/libpythonX.Y*.so*``
  (a shared build; then ``LD_LIBRARY_PATH=/opt/python/lib``) and the standard library
  ``lib/pythonX.Y``, each bound read-only from the host;
- ``/opt/venv/site-packages`` (``site-packages-2`` ...): the worker's site-packages folders;

and no host path above them: no home, no ``/root``, no project folder. The interpreter
starts as ``/opt/python/bin/pythonX.Y -S -s -B``: its prefix is then ``/opt/python``, and
the site-packages come in through ``VARBOARD_SITE_PACKAGES`` (added by the harness with
`site.addsitedir`) and ``PYTHONPATH`` (for interpreters a recipe starts itself, e.g.
joblib's workers).

A root worker runs each sandbox as a fresh uid, which must reach what is bound (bwrap
resolves the sources as that uid). Where it cannot reach the interpreter (e.g. a pyenv
build under a 0700 /root), those files are bound from **a copy** made once per interpreter
under ``$VARBOARD_PYTHON_COPY_DIR`` (default ``/var/cache/varboard``; hard links where the
file system allows, so no extra disk). A site-packages folder it cannot reach is refused
(`view_problem`), not silently left out. A worker of another uid runs its sandboxes as its
own uid, which reaches what it runs itself: nothing is copied.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from dataclasses import dataclass

__all__ = [
    "PYTHON_ROOT",
    "SITE_ROOT",
    "PythonView",
    "python_command",
    "python_view",
    "readable_by_others",
    "searchable_by_others",
    "world_usable",
]

#: Where the sandbox shows the base interpreter, and the site-packages folders.
PYTHON_ROOT = "/opt/python"
SITE_ROOT = "/opt/venv"
COPY_DIR_ENV = "VARBOARD_PYTHON_COPY_DIR"
_COPY_COMPLETE = ".varboard-complete"


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


def readable_by_others(path: str) -> bool:
    """Whether a user with no privileges can reach and read `path`: a folder o+rx, a file o+r
    (o+rx if anyone may execute it), every folder above it o+x."""
    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    needed = 0o005 if stat.S_ISDIR(mode) or mode & 0o100 else 0o004
    return mode & needed == needed and searchable_by_others(os.path.dirname(path))


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


def _site_dirs() -> list[str]:
    """This process's site-packages (real paths): its scheme's, or, under ``-S``, those on sys.path."""
    candidates = [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    if sys.flags.no_site:
        candidates = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    found = []
    for path in map(os.path.realpath, candidates):
        if path not in found and os.path.isdir(path):
            found.append(path)
    return found


def _interpreter_files(prefix: str) -> tuple[str, list[str]]:
    """(the executable, every file or folder to show), relative to the base `prefix`."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    executable = os.path.relpath(os.path.realpath(sys.executable), prefix)
    if executable.startswith(".."):  # a copied or linked executable elsewhere: the prefix's own
        executable = os.path.join("bin", version)
    libraries = sorted(os.path.relpath(p, prefix) for p in glob.glob(os.path.join(prefix, "lib", f"lib{version}*.so*")))
    return executable, [executable, *libraries, os.path.join("lib", version)]


def _copy_interpreter(prefix: str, files: list[str]) -> str:
    """A copy of `files` of `prefix` that every uid may read, made once; its folder.

    Under ``$VARBOARD_PYTHON_COPY_DIR``, named after the prefix and its executable's identity
    (a rebuilt interpreter gets a new copy); hard links where possible. The standard
    library's ``site-packages`` and ``test`` are left out (the sandbox starts with ``-S``).
    Raises OSError when the folder cannot be made or is not safe (writable by others).
    """
    root = os.path.abspath(os.environ.get(COPY_DIR_ENV) or "/var/cache/varboard")
    st = os.stat(os.path.join(prefix, files[0]))
    key = hashlib.sha256(f"{prefix}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    target = os.path.join(root, f"python-{sys.version_info.major}.{sys.version_info.minor}-{key}")
    if os.path.exists(os.path.join(target, _COPY_COMPLETE)):
        return _checked_copy(target)
    os.makedirs(root, mode=0o755, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".partial-", dir=root)

    def link_or_copy(source: str, destination: str) -> None:
        try:
            os.link(source, destination)
        except OSError:
            shutil.copy2(source, destination)

    try:
        for name in files:
            source, destination = os.path.join(prefix, name), os.path.join(scratch, name)
            os.makedirs(os.path.dirname(destination), mode=0o755, exist_ok=True)
            if os.path.isdir(source):
                top = {"site-packages", "test"}
                shutil.copytree(
                    source,
                    destination,
                    symlinks=True,
                    copy_function=link_or_copy,
                    ignore=lambda folder, names, top=top, source=source: top & set(names) if folder == source else (),
                )
            else:
                link_or_copy(os.path.realpath(source), destination)
        for folder, _, _ in os.walk(scratch):
            os.chmod(folder, 0o755)
        open(os.path.join(scratch, _COPY_COMPLETE), "w").close()
        os.rename(scratch, target)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
        if not os.path.exists(os.path.join(target, _COPY_COMPLETE)):  # else another process made it meanwhile
            raise
    return _checked_copy(target)


def _checked_copy(target: str) -> str:
    for folder in (target, os.path.dirname(target)):
        st = os.lstat(folder)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise OSError(f"{folder} must belong to uid {os.geteuid()} and be writable by it alone")
    return target


@dataclass(frozen=True)
class PythonView:
    """How the sandbox shows and starts this process's Python.

    Attributes
    ----------
    argv : tuple of str
        ``("/opt/python/bin/pythonX.Y", "-S", "-s", "-B")``.
    env : tuple of (str, str)
        ``VARBOARD_SITE_PACKAGES``, ``PYTHONPATH`` and, for a shared build, ``LD_LIBRARY_PATH``.
    binds : tuple of (str, str)
        (host path, path inside the sandbox), each shown read-only.
    source : str
        The host folder whose files are shown under /opt/python (the prefix, or its copy).
    note : str or None
        Says so when the interpreter is shown from a copy.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    binds: tuple[tuple[str, str], ...]
    source: str
    note: str | None = None

    def on_host(self, path: str) -> str:
        """The host path that `path` (inside the sandbox) is bound from; `path` itself if none."""
        for host, inside in (*self.binds, (self.source, PYTHON_ROOT)):
            if path == inside or path.startswith(inside + "/"):
                return host + path[len(inside) :]
        return path

    def on_host_env(self, value: str) -> str:
        """`on_host` for each entry of an ``os.pathsep``-separated value."""
        return os.pathsep.join(self.on_host(part) for part in value.split(os.pathsep))


@functools.cache
def python_view() -> PythonView:
    """This process's interpreter and site-packages at the neutral paths (see the module docstring).

    Raises OSError when, as root, the interpreter is out of other uids' reach and no copy can be made.
    """
    prefix = os.path.realpath(sys.base_prefix)
    executable, files = _interpreter_files(prefix)
    source, note = prefix, None
    if os.geteuid() == 0 and not all(readable_by_others(os.path.join(prefix, name)) for name in files):
        source = _copy_interpreter(prefix, files)
        note = f"{prefix} is out of the sandbox uid's reach: the sandbox shows a copy made in {source}"
    binds = [
        (os.path.join(source, name), f"{PYTHON_ROOT}/{name}")
        for name in files
        if os.path.exists(os.path.join(source, name))
    ]
    sites = [f"{SITE_ROOT}/site-packages" + (f"-{i + 1}" if i else "") for i in range(len(_site_dirs()))]
    binds += zip(_site_dirs(), sites)
    env = [("VARBOARD_SITE_PACKAGES", os.pathsep.join(sites)), ("PYTHONPATH", os.pathsep.join(sites))]
    if any(name.startswith("lib/lib") for name in files):
        env.append(("LD_LIBRARY_PATH", f"{PYTHON_ROOT}/lib"))
    return PythonView(
        argv=(f"{PYTHON_ROOT}/{executable}", "-S", "-s", "-B"),
        env=tuple(env),
        binds=tuple(binds),
        source=source,
        note=note,
    )


def python_command() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], str | None]:
    """How to start this process's Python environment in a sandbox: ``(argv prefix, extra
    environment, note)``, e.g. ``(("/opt/python/bin/python3.11", "-S", "-s", "-B"),
    (("VARBOARD_SITE_PACKAGES", "/opt/venv/site-packages"), ...), None)`` (`python_view`).
    The note is None: the copy a root worker may need is the same interpreter."""
    view = python_view()
    return view.argv, view.env, None
