"""Hostile: returns 10 predictions whatever the number of rows asked for."""

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    return np.full(10, train.y[0])
