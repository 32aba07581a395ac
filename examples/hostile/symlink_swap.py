"""Hostile: a background process waits for the harness to write the predictions, then
replaces them with a symbolic link to a file the worker can read but the recipe cannot
(hyperparameters["target"], e.g. the hidden labels stored as .npy). The runner must not
follow it: the run fails, it does not score the hidden labels as predictions."""

import atexit
import os
import time

import numpy as np


def _until_swapped():
    """Wait (at most 20 s) for the background process's link: a fixed 1 s sleep lost the race on a loaded machine
    (the run ended, its output read, before the swap: a full run saw it succeed as root)."""
    deadline = time.time() + 20
    while time.time() < deadline and not os.path.islink("outputs/predictions_0.npy"):
        time.sleep(0.01)


_real_exit = os._exit


def _exit_after_swap(status):
    """The harness ends through ``os._exit`` (no interpreter teardown), which skips ``atexit``: the recipe, running in
    its process, wraps it so that the harness waits for the swap too (without it a loaded run saw the run succeed, as
    uid 1000: the sandbox ended the background process before its swap)."""
    _until_swapped()
    _real_exit(status)


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    target = hyperparameters["target"]
    if os.fork() == 0:
        os.setsid()
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.lexists("outputs/predictions_0.npy"):
            time.sleep(0.001)
        os.symlink(target, "outputs/link.tmp")
        os.replace("outputs/link.tmp", "outputs/predictions_0.npy")
        os._exit(0)
    atexit.register(_until_swapped)  # keep the harness alive until the swap is done, however it exits
    os._exit = _exit_after_swap
    return np.full(len(test_inputs.X), train.y[0])
