"""Issue 21's resource and warm-sandbox attacks, as plain functions (no pytest): run as root by
test_kernel_limits.py and, through tests/recipes/unprivileged.py, by a driver as uid 1000.

Each attack is a recipe (source below) run through `execute_recipe_run` with a `LocalRunner`
whose workspaces live under a folder of the caller's, so that what a run leaves on the
host's disk can be listed afterwards.

- ``chmod0300``: a folder the worker cannot list (mode 0300), 10 fallocated files of 16 MB
  inside it, over a 64 MB disk limit (the polled limit could not see them, nor delete them).
- ``nested``: the same files 12 folders of 250-character names deep.
- ``burst``: the same files in /tmp as fast as fallocate allows (no poll in between).
- ``memfd``: 32 anonymous files of 16 MB (memfd_create) held under a 256 MB memory limit.
- ``warm``: a run started in a sandbox warmed with the previous recipe's imports reads its
  environment, /proc/self/environ, /proc/1/cmdline and /proc/1/environ.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from execution.runners import LocalRunner
from execution.sandbox import Limits
from execution.warm import WARM_ENV, warm_pool

from .helpers import run_file

DISK_LIMITS = Limits(wall_time_s=30, memory_mb=1024, max_file_mb=32, max_disk_mb=64)
MEMORY_LIMITS = Limits(wall_time_s=30, memory_mb=256, max_file_mb=32)
WARM_LIMITS = Limits(wall_time_s=30, memory_mb=1024)

FILL = """
import os

import numpy as np

MB = 2 ** 20


def _fill(folder, count, size):
    written = 0
    for i in range(count):
        try:
            fd = os.open(os.path.join(folder, f"blob{i}"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, size)
            finally:
                os.close(fd)
        except OSError as exc:
            return written, exc.errno
        written += size
    return written, 0


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    mode = hyperparameters["mode"]
    folder = "/tmp"
    if mode == "chmod0300":
        folder = "hidden"
        os.mkdir(folder)
        os.chmod(folder, 0o300)
    elif mode == "nested":
        folder = "."
        for i in range(12):
            folder = os.path.join(folder, chr(97 + i) * 250)
            os.mkdir(folder)
    written, err = _fill(folder, hyperparameters.get("count", 10), hyperparameters.get("mb", 16) * MB)
    if written > hyperparameters.get("limit_mb", 64) * MB:
        return np.full(len(test_inputs.X), train.y[0])  # the limit did not hold
    raise OSError(err, f"WROTE {written // MB} MB")  # ENOSPC expected: the cap held
"""

MEMFD = """
import os

import numpy as np

MB = 2 ** 20


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    held = []
    try:
        size = hyperparameters.get("mb", 16)  # under the file-size limit (RLIMIT_FSIZE caps a memfd too)
        for i in range(hyperparameters.get("count", 32)):
            fd = os.memfd_create(f"hold{i}")
            os.posix_fallocate(fd, 0, size * MB)
            held.append(fd)
    except OSError as exc:
        raise RuntimeError(f"HELD {len(held) * size} MB errno {exc.errno}") from None
    return np.full(len(test_inputs.X), train.y[0])  # 512 MB held under a 256 MB limit
"""

WARM_WRITER = """
from scipy import special  # the import list the next sandbox is warmed with

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    return np.full(len(test_inputs.X), train.y[0])
"""

WARM_READER = """
from scipy import special  # so that the sandbox warmed for the previous recipe fits this one

import os


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    seen = {"os.environ": repr(dict(os.environ))}
    for path in ("/proc/self/environ", "/proc/1/cmdline", "/proc/1/environ"):
        try:
            with open(path, "rb") as fh:
                seen[path] = fh.read().replace(b"\\0", b" ").decode("utf-8", "replace")
        except OSError as exc:
            seen[path] = f"unreadable: {exc}"
    raise RuntimeError("SEEN " + repr(seen))
"""


def _write(folder: str, name: str, source: str) -> Path:
    path = Path(folder) / name
    path.write_text(source)
    return path


def host_leftovers(root: str) -> list[str]:
    """Everything under `root` (the runs' workspaces' parent), as paths; links not followed."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found += [os.path.join(dirpath, name) for name in dirnames + filenames]
    return found


def _outcome(out, root: str) -> dict:
    return {
        "status": out.status,
        "error": out.error,
        "log": out.log,
        "sandbox_status": out.sandbox_status,
        "warm_start": out.fingerprint.get("warm_start"),
        "left_on_host": host_leftovers(root),
    }


def run_attacks(data) -> dict:
    """Name -> outcome of each attack (see the module docstring), warm starts off but for ``warm``."""
    recipes, root = tempfile.mkdtemp(prefix="varboard-k-recipes-"), tempfile.mkdtemp(prefix="varboard-k-runs-")
    os.chmod(root, 0o711)
    runner = LocalRunner(workdir_root=root)
    previous = os.environ.get(WARM_ENV)
    results = {}
    try:
        os.environ[WARM_ENV] = "0"
        fill = _write(recipes, "fill.py", FILL)
        for mode in ("chmod0300", "nested", "burst"):
            out = run_file(fill, data, limits=DISK_LIMITS, hyperparameters={"mode": mode}, runner=runner)
            results[mode] = _outcome(out, root)
        out = run_file(_write(recipes, "memfd.py", MEMFD), data, limits=MEMORY_LIMITS, runner=runner)
        results["memfd"] = _outcome(out, root)
        os.environ[WARM_ENV] = "1"
        results["warm"] = _warm_attack(recipes, runner, data, root)
    finally:
        pool = warm_pool()
        if pool:
            pool.discard()
        if previous is None:
            os.environ.pop(WARM_ENV, None)
        else:
            os.environ[WARM_ENV] = previous
        results["left_after_all"] = host_leftovers(root)
        shutil.rmtree(recipes, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    return results


def _warm_attack(recipes: str, runner: LocalRunner, data, root: str) -> dict:
    writer = _write(recipes, "warm_writer.py", WARM_WRITER)
    reader = _write(recipes, "warm_reader.py", WARM_READER)
    run_file(writer, data, limits=WARM_LIMITS, runner=runner)  # warms the next sandbox with its imports
    if not runner.prewarm(WARM_LIMITS, recipe=writer.read_bytes()):
        raise RuntimeError("no waiting sandbox could be prepared")
    return _outcome(run_file(reader, data, limits=WARM_LIMITS, runner=runner), root)
