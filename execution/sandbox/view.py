"""The file system a bubblewrap sandbox shows: read-only system folders, Python at
/opt/python and /opt/venv (`execution.sandbox.interpreter`), and nothing else of the host
(no home, /root, /run, /var, project, media or database folders)."""

from __future__ import annotations

import functools
import glob
import os

from .interpreter import python_view, readable_by_others

__all__ = ["SANDBOX_HOME", "device_binds", "readonly_view", "view_problem"]

#: Where the run's workspace appears inside the sandbox (its cwd and HOME).
SANDBOX_HOME = "/sandbox/work"

#: Top-level names that are symbolic links into /usr on a merged-/usr system, or folders.
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: What the dynamic loader, numpy, torch and transformers read from /etc (found by running
#: ``import numpy, sklearn, torch, transformers`` with /etc empty and adding what it asked for).
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")


def _mirror(path: str) -> list[str]:
    """bwrap arguments that show host `path` read-only: a link as the same link, else a bind."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.exists(path):
        return ["--ro-bind", path, path]
    return []


@functools.lru_cache(maxsize=1)
def readonly_view() -> tuple[str, ...]:
    """bwrap arguments for /usr, the merged-/usr links, the few /etc files and Python at its neutral paths."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        args += _mirror("/" + name)
    for path in _ETC:
        args += _mirror(path)
    for host, inside in python_view().binds:
        args += ["--ro-bind", host, inside]
    return tuple(args)


def _secret_folders() -> list[str]:
    """Folders that must never be in view: the project (settings, .env), var/ and media/."""
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folders = [project]
    for name in ("VARBOARD_VAR_DIR", "VARBOARD_MEDIA_ROOT"):
        if os.environ.get(name):
            folders.append(os.path.abspath(os.environ[name]))
    return [os.path.realpath(f) for f in folders]


def view_problem() -> str | None:
    """Why the Python folders cannot be shown safely, or None."""
    try:
        binds = python_view().binds
    except OSError as exc:
        return f"the interpreter cannot be shown to the sandbox's uid: {exc}"
    secrets = _secret_folders()
    for path, _ in binds:
        if os.geteuid() == 0 and not readable_by_others(path):
            return (
                f"the Python folder {path} is out of the sandbox uid's reach (every folder above it "
                "needs o+x, and it o+rx): install the environment where other users may read it"
            )
        for secret in secrets:
            if secret == path or secret.startswith(path.rstrip("/") + "/"):
                return (
                    f"the Python folder {path} contains {secret}; showing it to recipes would "
                    "show that too (install the environment elsewhere)"
                )
    return None


def device_binds(device: str) -> list[str]:
    """On a CUDA device, the NVIDIA device nodes that exist (CUDA_VISIBLE_DEVICES picks one)."""
    if device == "cpu":
        return []
    args = []
    for node in sorted(glob.glob("/dev/nvidia*")):
        args += ["--dev-bind-try", node, node]
    return args
