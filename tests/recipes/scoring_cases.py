"""Hostile and broken host scoring programs, shared by the tests as root and the driver run as
the workers' uid (tests/recipes/unprivileged.py imports this in a process of uid 1000).

Plain functions (no pytest). Each case is a program's source and the limits it runs under;
`run_case` runs it on a small test set and reduces what happened to a JSON-able dict.
"""

from __future__ import annotations

import textwrap

import pandas as pd

from evaluation.scoring_programs import ScoringProgramError
from execution.sandbox import Limits
from execution.scoring_program import run_scoring_program

#: The endless loop's limit (it must be reached); every other case gets SLOW_LIMITS, so that a cold
#: sandbox importing pandas on a loaded machine never hits the wall time before its own failure.
LIMITS = Limits(wall_time_s=3, memory_mb=1024, max_processes=16, max_file_mb=10)
SLOW_LIMITS = Limits(wall_time_s=20, memory_mb=1024, max_processes=16, max_file_mb=10)

#: Secrets the worker holds in its environment; no scoring call may show them.
SECRETS = {
    "DJANGO_SECRET_KEY": "fake-django-secret-scoring-8d02b1",
    "DATABASE_URL": "postgres://varboard:db-password-scoring-1f6e3a@127.0.0.1:5432/varboard",
    "VARBOARD_WORKER_SECRET": "worker-secret-scoring-77c4e0",
}
HOST_FILE_CONTENT = "HOST-FILE-CONTENT-scoring-5a9e12"

_HEADER = 'METRICS = [{"name": "accuracy", "higher_is_better": True}]\n'

RAISES = _HEADER + textwrap.dedent(
    """
    def score(y_true, y_pred):
        total = 0
        for step in range(3):
            total += step
        raise ValueError(f"boom after {total} steps")
    """
)

INFINITE_LOOP = _HEADER + textwrap.dedent(
    """
    def score(y_true, y_pred):
        while True:
            pass
    """
)

MEMORY_HOG = _HEADER + textwrap.dedent(
    """
    import numpy as np

    def score(y_true, y_pred):
        chunks = []
        while True:
            chunks.append(np.ones(10_000_000))
    """
)

NETWORK = _HEADER + textwrap.dedent(
    """
    import socket

    def score(y_true, y_pred):
        failures = []
        for host, port in [("127.0.0.1", 5432), ("1.1.1.1", 53)]:
            try:
                with socket.create_connection((host, port), timeout=2):
                    print(f"CONNECTED to {host}:{port}")
            except OSError as exc:
                failures.append(f"{host}:{port} {exc}")
        if len(failures) == 2:
            raise ConnectionError("; ".join(failures))
        return {"accuracy": 1.0}
    """
)

# Reads what the worker holds: files of the machine (/etc/shadow, a file of the worker's,
# this repository's own files, root's home), the environment of the sandbox's init and its
# own, and the worker's secret variables. Raises listing what failed when it found
# nothing; returns a score (the call succeeds: the test fails) when it found anything.
# A template: `cases` fills in the paths and the variables' names.
READ_SECRETS = textwrap.dedent(
    """
    import os

    PATHS = {paths!r}
    SECRET_NAMES = {names!r}

    def score(y_true, y_pred):
        found, errors = [], []
        for path in PATHS + ["/etc/shadow", "/proc/1/environ", f"/proc/{{os.getppid()}}/environ"]:
            try:
                with open(path, "rb") as fh:
                    content = fh.read(10_000)
                (found if content else errors).append(f"{{path}}: {{content!r}}" if content else f"nothing in {{path}}")
            except OSError as exc:
                errors.append(f"{{type(exc).__name__}} reading {{path}}")
        for directory in sorted({{os.path.dirname(p) for p in PATHS}} | {{"/root", "/home", "/var/cache"}}):
            try:
                found.append(f"{{directory}}: {{os.listdir(directory)}}")
            except OSError as exc:
                errors.append(f"{{type(exc).__name__}} listing {{directory}}")
        with open("/proc/self/environ", "rb") as fh:
            own = fh.read().decode(errors="replace")
        for name in SECRET_NAMES:
            if name in os.environ or name in own:
                found.append(f"{{name}}={{os.environ.get(name)}}")
            else:
                errors.append(f"KeyError {{name}}")
        print("found:", found)
        if found:
            return {{"accuracy": 1.0}}
        raise PermissionError("could not read anything: " + "; ".join(errors))
    """
)


def cases(paths: list[str]) -> dict:
    """Name -> (program source, limits); `paths` are files of the worker the programs try to read."""
    return {
        "raises": (RAISES, SLOW_LIMITS),
        "infinite_loop": (INFINITE_LOOP, LIMITS),
        "memory_hog": (MEMORY_HOG, SLOW_LIMITS),
        "network": (NETWORK, SLOW_LIMITS),
        "read_secrets": (_HEADER + READ_SECRETS.format(paths=list(paths), names=sorted(SECRETS)), SLOW_LIMITS),
    }


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A four-row test set: the ground truth's ``label`` and the submission's ``prediction``."""
    ids = pd.Index(["r1", "r2", "r3", "r4"], name="id")
    y_true = pd.DataFrame({"label": ["a", "b", "a", "b"]}, index=ids)
    y_pred = pd.DataFrame({"prediction": ["a", "b", "b", "b"]}, index=ids)
    return y_true, y_pred


def run_case(source: str, limits: Limits) -> dict:
    """What a scoring call of `source` gave: its error (message, kind, log) or its scores."""
    y_true, y_pred = frames()
    try:
        got = run_scoring_program(source.encode(), y_true, y_pred, limits=limits)
    except ScoringProgramError as exc:
        return {"error": str(exc), "kind": exc.kind, "log": exc.log, "scores": None}
    return {"error": None, "kind": None, "log": got.log, "scores": got.scores}
