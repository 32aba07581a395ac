"""Hostile: prints megabytes of random bytes, then returns valid predictions. The run must
fail on the output limit, and the worker must not hold the whole output in memory."""

import os
import sys

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    for _ in range(50):
        sys.stdout.buffer.write(os.urandom(100_000))  # 5 MB in all
    sys.stdout.flush()
    return np.full(len(test_inputs.X), train.y[0])
