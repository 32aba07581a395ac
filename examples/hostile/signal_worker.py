"""Hostile, but its run succeeds: sends SIGKILL to its parent (the worker, in an earlier
sandbox), to pid 1, to every other process it can see, and to -1 (every process it may
signal: as the worker's own uid, the worker itself). It prints what each call returned as one
line, ``SIGNALS {json}``, and returns valid predictions; the test checks that the worker and
the machine's other processes are alive and that the next run succeeds."""

import json
import os
import signal

import numpy as np


def _kill(target: int) -> str:
    try:
        os.kill(target, signal.SIGKILL)
        return "sent"
    except OSError as exc:
        return exc.strerror


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    me = os.getpid()
    targets = [os.getppid(), 1] + sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    results = {str(t): _kill(t) for t in dict.fromkeys(targets) if t != me}
    results["-1"] = _kill(-1)
    print("SIGNALS " + json.dumps(results))
    return np.full(len(test_inputs.X), train.y[0])
