"""Hostile: open files, which are kernel memory no RSS shows and slots of the host's file table.

hyperparameters["procs"] processes each raise their RLIMIT_NOFILE to its hard limit and open
eventfds until refused, then report ``OPENED <n> <hard limit>`` and close them. Each file costs
about 1.25 KB of kernel memory (measured: 20,000 eventfds grew the host's slab by 25 MB), and
``fs.file-max`` is host-wide: without a limit of the run's own, a process may hold as many as the
worker may (20,000 here, 524,288 or 1,048,576 in a Docker container), times its process limit.
"""

import os
import resource
import sys

import numpy as np


def _flood() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fds = []
    try:
        while len(fds) < 2_000_000:
            fds.append(os.eventfd(0))
    except OSError:
        pass
    sys.stdout.write(f"OPENED {len(fds)} {hard}\n")
    sys.stdout.flush()
    for fd in fds:
        os.close(fd)


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    children = []
    for _ in range(int(hyperparameters["procs"]) - 1):
        pid = os.fork()
        if pid == 0:
            _flood()
            os._exit(0)
        children.append(pid)
    _flood()
    for pid in children:
        os.waitpid(pid, 0)
    return np.full(len(test_inputs.X), train.y[0])
