"""Hostile: raises an exception. The run must fail naming the error and its line."""


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    values = [1, 2, 3]
    raise ValueError(f"boom after {len(values)} steps")  # line 6
