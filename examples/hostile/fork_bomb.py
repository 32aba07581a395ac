"""Hostile: a fork bomb. The run must fail on the process limit, and no process may survive."""

import os


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    while True:
        try:
            os.fork()
        except OSError:
            pass
