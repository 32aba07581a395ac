"""Hostile, but its run succeeds: looks at every process it can see through /proc, where an
earlier sandbox showed the worker's environment (DJANGO_SECRET_KEY, DATABASE_URL) and every
process's command line: the parent's and pid 1's environ and cmdline, then every other pid's.

It prints what it read as one line, ``PROC-SNOOP {json}``, and returns valid predictions;
the test checks that only the run's own processes were in view and that no secret was."""

import json
import os

import numpy as np


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(20_000).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    pids = sorted({int(p) for p in os.listdir("/proc") if p.isdigit()} | {os.getppid(), 1})
    seen = {
        str(pid): {"cmdline": _read(f"/proc/{pid}/cmdline"), "environ": _read(f"/proc/{pid}/environ")} for pid in pids
    }
    print("PROC-SNOOP " + json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "processes": seen}))
    return np.full(len(test_inputs.X), train.y[0])
