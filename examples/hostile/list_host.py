"""Hostile, but its run succeeds: looks for the host in the file system: lists /, /home,
/root, /var, /run, /media, /mnt, /srv, /opt, /data, /etc, /dev and /sandbox, reads
/etc/passwd, and asks the host name. It prints what it found as one line, ``HOST-VIEW
{json}``, and returns valid predictions; the test checks that none of it is the host's."""

import json
import os
import socket

import numpy as np

FOLDERS = ("/", "/home", "/root", "/var", "/run", "/media", "/mnt", "/srv", "/opt", "/data", "/etc", "/dev", "/sandbox")


def _list(path: str):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    seen = {path: _list(path) for path in FOLDERS}
    with open("/etc/passwd") as fh:
        seen["/etc/passwd"] = fh.read()
    seen["hostname"] = socket.gethostname()
    print("HOST-VIEW " + json.dumps(seen))
    return np.full(len(test_inputs.X), train.y[0])
