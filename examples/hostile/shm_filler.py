"""Hostile: fills /dev/shm 8 MB at a time until it cannot. Files there live in RAM, but in
no process's resident memory, so polling RSS alone would miss them. The run must fail on
memory."""

import numpy as np

CHUNK = b"\1" * (8 << 20)


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    n = 0
    while True:
        with open(f"/dev/shm/fill-{n}", "wb") as fh:
            fh.write(CHUNK)
        n += 1
        if n > 100_000:
            return np.full(len(test_inputs.X), train.y[0])
