"""Hostile: what an earlier run (another team's, on the same worker) left behind, looked for from
a sandbox that may have been started before that run ended (a warm start).

With hyperparameters["mode"] == "write" it leaves hyperparameters["token"] in its workspace,
its /tmp, /dev/shm and its outputs folder, and succeeds. With "read" it walks /sandbox (its
workspace and /tmp) and /dev/shm, reading every file: any file that is not one of this run's
own inputs is reported.

The reader prints ``FOUND`` and returns valid predictions if it sees anything of another run
(the test then fails); otherwise it raises FileNotFoundError listing what it saw.
"""

import os

import numpy as np

OWN = {
    "harness.py",
    "varboard_recipe.py",
    "recipe.py",
    "inputs/train.npz",
    "inputs/valid.npz",
    "inputs/test_inputs.npz",
    "inputs/spec.json",
}


def _files(top):
    for dirpath, _, filenames in os.walk(top):
        for name in filenames:
            yield os.path.join(dirpath, name)


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    token = str(hyperparameters.get("token", "token"))
    if hyperparameters.get("mode", "write") == "write":
        for folder in (".", "/tmp", "/dev/shm", "outputs"):
            with open(os.path.join(folder, f"left-by-previous-run-{token}"), "w") as fh:
                fh.write(token)
        return np.full(len(test_inputs.X), train.y[0])
    seen, found = [], {}
    for top in ("/sandbox", "/dev/shm"):  # /tmp is /sandbox/work/tmp
        for path in _files(top):
            seen.append(path)
            with open(path, "rb") as fh:
                content = fh.read(100)
            if top == "/dev/shm" or os.path.relpath(path, "/sandbox/work") not in OWN:
                found[path] = content
    if found:
        print("FOUND", found)
        return np.full(len(test_inputs.X), train.y[0])
    raise FileNotFoundError(f"nothing of another run in view; saw {len(seen)} files, all this run's own")
