"""Hostile: System V shared memory, which an earlier sandbox shared between runs (a segment
written by one run was read by the next, of another uid, and 600 MB stayed allocated after
the run). With hyperparameters["mode"] == "write" it creates a 600 MB segment under a fixed
key and writes hyperparameters["token"] into it; with "read" it looks that key up and reads it.

If it wrote or read anything it prints ``SHM`` and returns valid predictions (the run would
succeed: the test fails); otherwise it raises PermissionError naming what failed."""

import ctypes
import os

import numpy as np

KEY = 0x5EC2E7
IPC_CREAT = 0o1000


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    mode = hyperparameters.get("mode", "write")
    size, flags = ((600 << 20), IPC_CREAT | 0o666) if mode == "write" else (0, 0)
    shmid = libc.shmget(KEY, size, flags)
    if shmid < 0:
        raise PermissionError(
            f"System V shared memory: shmget({KEY:#x}) for {mode} failed: {os.strerror(ctypes.get_errno())}"
        )
    address = libc.shmat(shmid, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise PermissionError(f"System V shared memory: shmat failed: {os.strerror(ctypes.get_errno())}")
    token = str(hyperparameters.get("token", "")).encode()
    if mode == "write":
        ctypes.memmove(address, token + b"\0", len(token) + 1)
        print("SHM wrote", token)
    else:
        print("SHM read", ctypes.string_at(address, 200))
    return np.full(len(test_inputs.X), train.y[0])
