"""Hostile: opens network connections (the database port on localhost, a public DNS
server). Every attempt must fail; the recipe raises with what it saw. If one connection
succeeded it would return valid predictions, and the run would wrongly succeed."""

import socket

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    failures = []
    for host, port in [("127.0.0.1", 5432), ("1.1.1.1", 53)]:
        try:
            with socket.create_connection((host, port), timeout=3):
                print(f"CONNECTED to {host}:{port}")
        except OSError as exc:
            failures.append(f"{host}:{port} {exc}")
    print("network attempts:", failures)
    if len(failures) == 2:
        raise ConnectionError("; ".join(failures))
    return np.full(len(test_inputs.X), train.y[0])
