"""The hostile recipes' runs, shared by the tests as root and the driver run as the workers' uid.

Plain functions (no pytest): `tests/recipes/unprivileged.py` imports this module in a
process that runs as uid 1000. Each case is one or more runs of recipes from
examples/hostile/ followed by a run of the trivial recipe (which must succeed); the
outcome of each run is reduced to a JSON-able dict that test_hostile.py checks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from execution.forked import FORK_ENV
from execution.recipe_data import RecipeData
from execution.runners import LocalRunner
from execution.sandbox import Limits
from execution.warm import WARM_ENV

from .helpers import HOSTILE, RECIPES, run_file

#: Runs that end on their own (or are refused) have 20 s: a cold sandbox (Python, numpy, the harness) on a loaded
#: 2-core machine can take more than 3 s before the recipe's first line. Only the endless loop keeps 3 s.
LIMITS = Limits(wall_time_s=20, memory_mb=1024, max_processes=32, max_file_mb=10)
LOOP_LIMITS = Limits(wall_time_s=3, memory_mb=1024, max_processes=32, max_file_mb=10)
SLOW_LIMITS = Limits(wall_time_s=10, memory_mb=1024, max_file_mb=10)
FORK_LIMITS = Limits(wall_time_s=20, max_processes=32)
SHM_LIMITS = Limits(wall_time_s=10, memory_mb=512, max_file_mb=10)
CPU_LIMITS = Limits(wall_time_s=30, cpu_time_s=2, memory_mb=1024, max_processes=32, max_file_mb=10)

#: Secrets the worker holds (its environment, files on its disk); no run may show them.
SECRETS = {
    "DJANGO_SECRET_KEY": "fake-django-secret-5f1e9c",
    "DATABASE_URL": "postgres://varboard:db-password-71c0a2@127.0.0.1:5432/varboard",
    "CELERY_BROKER_URL": "redis://:broker-password-0b3e77@127.0.0.1:6379/0",
}
DB_CONTENT = "SQLITE-DATABASE-CONTENT-93be4d"
MEDIA_CONTENT = "CONTESTANT-UPLOAD-CONTENT-4c81aa"
SHM_TOKEN = "shm-token-2f9d51"
DAEMON_MARKER = "86400.424242"


@dataclass(frozen=True)
class Step:
    recipe: str
    limits: Limits = LIMITS
    hyperparameters: dict = field(default_factory=dict)


def cases(host_files: dict) -> dict[str, list[Step]]:
    """Name -> runs; `host_files` holds the paths of the database file and the media upload."""
    secrets_paths = {"paths": [host_files["db"], host_files["media"]]}
    return {
        "raises": [Step("raises")],
        "infinite_loop": [Step("infinite_loop", LOOP_LIMITS)],
        "memory_hog": [Step("memory_hog", SLOW_LIMITS)],
        "memory_children": [Step("memory_children", SLOW_LIMITS)],
        "huge_file": [Step("huge_file")],
        "nan_predictions": [Step("nan_predictions")],
        "garbage_output": [Step("garbage_output")],
        "wrong_length": [Step("wrong_length")],
        "fork_bomb": [Step("fork_bomb", FORK_LIMITS)],
        "network": [Step("network")],
        "services": [Step("services", SLOW_LIMITS)],
        "read_secrets": [Step("read_secrets", hyperparameters=secrets_paths)],
        "symlink_swap": [Step("symlink_swap", hyperparameters={"target": host_files["labels_npy"]})],
        "daemon_escape": [Step("daemon_escape", hyperparameters={"marker": DAEMON_MARKER})],
        "proc_snoop": [Step("proc_snoop")],
        "signal_worker": [Step("signal_worker")],
        "list_host": [Step("list_host")],
        "sysv_shm": [
            Step("sysv_shm", hyperparameters={"mode": "write", "token": SHM_TOKEN}),
            Step("sysv_shm", hyperparameters={"mode": "read"}),
        ],
        "posix_shm": [
            Step("posix_shm", hyperparameters={"mode": "write", "token": SHM_TOKEN}),
            Step("posix_shm", hyperparameters={"mode": "read"}),
        ],
        "shm_filler": [Step("shm_filler", SHM_LIMITS)],
        "fd_flood": [Step("fd_flood", hyperparameters={"procs": 4})],
        "orphan_cpu": [Step("orphan_cpu", CPU_LIMITS, hyperparameters={"total_s": 12, "each_s": 0.4})],
        "previous_run": [
            Step("previous_run", hyperparameters={"mode": "write", "token": SHM_TOKEN}),
            Step("previous_run", hyperparameters={"mode": "read"}),
        ],
    }


def _summary(out) -> dict:
    return {
        "status": out.status,
        "error": out.error,
        "log": out.log,
        "sandbox_status": out.sandbox_status,
        "duration_s": out.duration_s,
        "isolation": list(out.isolation),
        "warnings": list(out.warnings),
        "warm_start": out.fingerprint.get("warm_start"),
    }


def run_case(steps: list[Step], data: RecipeData, start: str = "cold") -> dict:
    """Each step's outcome, then whether the next (trivial) run in this process succeeded.

    ``start="cold"`` runs every step with warm starts off; ``"warm"`` first prepares, for
    each step, a waiting sandbox for its limits and recipe and waits for its imports, so
    that the step runs in a sandbox started ahead (the second step of a case in one that
    was started while the first step ran); ``"forked"`` forks every step from this process's
    template (execution.forked), the second step of a case from the same template as the first.
    """
    runner = LocalRunner()
    previous = {name: os.environ.get(name) for name in (WARM_ENV, FORK_ENV)}
    os.environ[WARM_ENV] = "1" if start == "warm" else "0"
    os.environ[FORK_ENV] = "1" if start == "forked" else "0"
    try:
        runs = []
        for step in steps:
            recipe = HOSTILE / f"{step.recipe}.py"
            if start == "warm" and not runner.prewarm(step.limits, recipe=recipe.read_bytes()):
                raise RuntimeError("no waiting sandbox could be prepared")
            if start == "forked" and not runner.prefork(step.limits, recipe=recipe.read_bytes()):
                raise RuntimeError("no template could be made")
            runs.append(
                _summary(
                    run_file(recipe, data, limits=step.limits, hyperparameters=step.hyperparameters, runner=runner)
                )
            )
        after = run_file(RECIPES / "trivial.py", data, limits=LIMITS, runner=runner)
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
    return {"runs": runs, "next_ok": after.status == "succeeded", "next_error": after.error}


def make_host_files(base: str) -> dict:
    """A database file, a media upload and hidden labels at mode 0644 in 0755 folders.

    Plain permissions would let any uid read them: only the sandbox's view keeps them out.
    """
    media = os.path.join(base, "media", "submissions", "alice")
    os.makedirs(media)
    paths = {
        "db": os.path.join(base, "db.sqlite3"),
        "media": os.path.join(media, "recipe.py"),
        "labels_npy": os.path.join(base, "hidden_labels.npy"),
    }
    with open(paths["db"], "w") as fh:
        fh.write(DB_CONTENT)
    with open(paths["media"], "w") as fh:
        fh.write(MEDIA_CONTENT)
    np.save(paths["labels_npy"], np.arange(10))
    for dirpath, _, filenames in os.walk(base):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return paths
