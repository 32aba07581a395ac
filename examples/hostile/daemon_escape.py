"""Hostile, but its run succeeds: it starts a detached process (new session, double fork)
that would outlive the run: ``sleep <hyperparameters["marker"]>``, so that the test can look
for it among the host's processes. The sandbox must kill it when the run ends."""

import os
import time

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open("daemon.pid", "w") as fh:
                fh.write(str(os.getpid()))
            os.execv("/usr/bin/sleep", ["sleep", str(hyperparameters.get("marker", "3600"))])
        os._exit(0)
    deadline = time.time() + 5
    while not os.path.exists("daemon.pid") and time.time() < deadline:
        time.sleep(0.01)
    return np.full(len(test_inputs.X), train.y[0])
