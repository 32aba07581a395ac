"""Hostile: four processes, each below the per-process address-space limit, together far
above the run's memory limit. The sandbox's polling of the whole run must catch it."""

import os
import time

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    mb = int(hyperparameters.get("mb_per_process", 400))
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            block = np.ones(mb * 131072)  # mb MB of float64, resident
            time.sleep(60)
            os._exit(int(block[0]))
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    raise RuntimeError("the memory limit was not enforced")
