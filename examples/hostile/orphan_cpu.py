"""Hostile: CPU time spent in orphans, to hide it from the run's CPU-time limit.

Each child forks a grandchild and exits at once; the grandchild, reparented to the run's init
(pid 1 of its PID namespace), burns hyperparameters["each_s"] of CPU and exits, and the init
reaps it, so its time is only in the init's ``cutime``. The run must be stopped for its CPU
time (all its processes together) before it burned hyperparameters["total_s"], whatever the start.
"""

import os
import time

import numpy as np


def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    total, each = float(hyperparameters["total_s"]), float(hyperparameters["each_s"])
    burned = 0.0
    while burned < total:
        pid = os.fork()
        if pid == 0:
            if os.fork() == 0:
                _burn(each)
            os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(each + 0.2)  # the grandchild ends; the init reaps it
        burned += each
    print(f"BURNED {burned:.1f} s of CPU in orphans", flush=True)
    return np.full(len(test_inputs.X), train.y[0])
