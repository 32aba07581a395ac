"""Hostile: POSIX shared memory (/dev/shm), shared by every process of a host unless each run
gets its own. With hyperparameters["mode"] == "write" it leaves hyperparameters["token"] in
/dev/shm/varboard-hostile-<token> and succeeds; with "read" it lists /dev/shm and reads every
file there, looking for what an earlier run left.

The reader prints ``FOUND`` and returns valid predictions if it finds anything (the test then
fails); if /dev/shm is empty it raises FileNotFoundError."""

import os

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    token = str(hyperparameters.get("token", "token"))
    if hyperparameters.get("mode", "write") == "write":
        with open(f"/dev/shm/varboard-hostile-{token}", "w") as fh:
            fh.write(token)
        return np.full(len(test_inputs.X), train.y[0])
    found = {}
    for name in os.listdir("/dev/shm"):
        with open(os.path.join("/dev/shm", name), "rb") as fh:
            found[name] = fh.read(200)
    if found:
        print("FOUND", found)
        return np.full(len(test_inputs.X), train.y[0])
    raise FileNotFoundError("/dev/shm is empty: no other run's file is in view")
