"""Hostile: returns NaN in three predictions."""

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    predictions = np.full(len(test_inputs.X), float(train.y[0]))
    predictions[[0, 5, 7]] = np.nan
    return predictions
