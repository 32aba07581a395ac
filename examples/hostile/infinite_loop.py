"""Hostile: never returns. The run must fail on the wall-time limit."""


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    n = 0
    while True:
        n += 1
