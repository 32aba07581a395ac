"""Hostile: touches memory 400 MB at a time until it cannot. The run must fail on memory."""

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    blocks = []
    while True:
        blocks.append(np.ones(50_000_000))  # 400 MB, written, so resident
