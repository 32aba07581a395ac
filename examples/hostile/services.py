"""Hostile: tries the worker's services. Redis (``PING``, hoping for ``+PONG``) and
PostgreSQL on 127.0.0.1 over TCP, then their Unix sockets (PostgreSQL's
/var/run/postgresql/.s.PGSQL.5432, anything under /var/run/redis, /run/redis and /run).

If one connection succeeds it prints ``REACHED`` and returns valid predictions (the run
would succeed: the test fails); if every attempt fails it raises ConnectionError listing them."""

import glob
import socket

import numpy as np

UNIX_SOCKETS = ["/var/run/postgresql/.s.PGSQL.5432", "/run/postgresql/.s.PGSQL.5432"]


def _tcp(host: str, port: int, hello: bytes) -> str:
    with socket.create_connection((host, port), timeout=2) as conn:
        conn.sendall(hello)
        return conn.recv(64).decode("latin-1")


def _unix(path: str) -> str:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(2)
        conn.connect(path)
        return "connected"


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    reached, failures = [], []
    for host, port, hello in [("127.0.0.1", 6379, b"PING\r\n"), ("127.0.0.1", 5432, b"\0\0\0\x08\x04\xd2\x16\x2f")]:
        try:
            reached.append(f"{host}:{port} answered {_tcp(host, port, hello)!r}")
        except OSError as exc:
            failures.append(f"{host}:{port} {exc.strerror or exc}")
    paths = UNIX_SOCKETS + glob.glob("/var/run/redis/*") + glob.glob("/run/redis/*") + glob.glob("/run/*")
    for path in paths:
        try:
            reached.append(f"{path} {_unix(path)}")
        except OSError as exc:
            failures.append(f"{path} {exc.strerror or exc}")
    if reached:
        print("REACHED", reached)
        return np.full(len(test_inputs.X), train.y[0])
    raise ConnectionError("; ".join(failures))
