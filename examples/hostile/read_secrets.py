"""Hostile: tries to read the worker's secrets: files whose paths come in
hyperparameters["paths"] (e.g. the database file, the hidden labels, a contestant's upload
in the media folder) and their directories, the environment (DJANGO_SECRET_KEY,
DATABASE_URL, CELERY_BROKER_URL), and the worker's environment through
/proc/<parent pid>/environ.

It prints whatever it manages to read. If it read anything it returns valid predictions
(the run would succeed: the test fails); if every attempt failed (an empty file counts as
nothing) it raises, listing the errors, so the run fails with FileNotFoundError,
PermissionError or KeyError in its message."""

import os

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    found, errors = [], []
    paths = list(hyperparameters.get("paths", []))
    for path in paths + [f"/proc/{os.getppid()}/environ"]:
        try:
            with open(path, "rb") as fh:
                content = fh.read(10_000)
            if content:
                found.append((path, content))
            else:
                errors.append(f"nothing in {path}")
        except OSError as exc:
            errors.append(f"{type(exc).__name__} reading {path}")
    for directory in sorted({os.path.dirname(p) for p in paths}):
        try:
            found.append((directory, repr(os.listdir(directory)).encode()))
        except OSError as exc:
            errors.append(f"{type(exc).__name__} listing {directory}")
    for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        try:
            found.append((name, os.environ[name].encode()))
        except KeyError:
            errors.append(f"KeyError {name}")
    print("found:", found)
    if found:
        return np.full(len(test_inputs.X), train.y[0])
    raise PermissionError("could not read anything: " + "; ".join(errors))
