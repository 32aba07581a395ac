"""Run untrusted code (contestants' recipes) isolated by bubblewrap, or not at all.

What one call of `run_sandboxed` gives the child (docs/DESIGN.md §5, docs/sandbox.md):

- **new namespaces** from bubblewrap: user, PID, IPC, UTS (hostname ``sandbox``), network
  (only a loopback of its own: nothing of the host's network, 127.0.0.1 included, is
  reachable), mount and, where the kernel has it, cgroup; no nested user namespaces
  (``--disable-userns``), no capabilities, a new session, and SIGKILL when the worker dies;
- **a read-only view of only what Python needs**: /usr and the merged-/usr links, a few
  /etc files (loader cache, time zone; passwd, group and hosts made for the run), the
  Python environment at /opt/python and /opt/venv whatever the host's layout
  (`execution.sandbox.interpreter`); a private /proc and /dev; a /dev/shm of
  at most half the memory limit; the workspace at ``/sandbox/work`` as the only writable
  folder, with /tmp pointing into it. No home, /root, /run, /var, media, database file,
  Unix socket or secret is in view;
- **a seccomp filter** (`execution.sandbox.seccomp`): ptrace, mount, namespaces, keyrings,
  bpf, io_uring, System V IPC and more fail with EPERM;
- **its own uid**: as root, a fresh uid/gid per run (no supplementary groups, umask 077),
  so RLIMIT_NPROC counts this run only and runs cannot see each other's files; as another
  user (the Docker image's workers), the worker's uid inside a user namespace;
- **a clean environment** (PATH, HOME, TMPDIR, LANG, thread counts, offline switches,
  CUDA_VISIBLE_DEVICES, and the caller's extra variables, which may not look like
  credentials);
- **limits**: RLIMIT_CPU, RLIMIT_AS (CPU device only: the CUDA driver maps tens of GB),
  RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE = 0 set by ``prlimit`` inside the sandbox; a
  wall-clock limit; the memory (RSS, then PSS, plus what /dev/shm holds) and tasks of the
  run's processes (found by their PID namespace) and the disk used by the workspace,
  polled; the run is killed when over;
- **capped output**: the first and last quarter of `max_output_bytes` of each stream are
  kept; a run that prints more than `max_output_bytes` in total is killed;
- **nothing outlives the run**: killing the PID namespace's init kills every process in it,
  double-forked daemons included.

Isolation **fails closed**: when bubblewrap cannot isolate (see `probe()` and ``python -m
execution.sandbox.probe``), `run_sandboxed` raises `IsolationUnavailable` naming what is
missing, unless ``VARBOARD_ALLOW_UNSANDBOXED=1`` (a developer's laptop), when the recipe
runs as a plain child process and the result's isolation is ``("unsandboxed",)``.

Memory: RLIMIT_AS is per process and counts reserved address space, not memory used.
``import torch, transformers, sklearn, pandas`` reserves about 1.06 GB of address space
for 0.48 GB resident (torch 2.13 CPU, transformers 5.23, one thread; it fails under
1024 MB), so the default ``memory_mb=4096`` leaves room for real work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .backend import RunSpec
from .environment import check_device, check_extra_env
from .interpreter import python_command
from .isolation import probe, select_backend
from .limits import IsolationUnavailable, Limits, SandboxResult, SandboxUnavailable
from .supervise import execute

__all__ = [
    "IsolationUnavailable",
    "Limits",
    "SandboxResult",
    "SandboxUnavailable",
    "probe",
    "python_command",
    "run_sandboxed",
]


def run_sandboxed(
    argv: Sequence[str],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    device: str = "cpu",
    uid: int | None = None,
) -> SandboxResult:
    """Run `argv` isolated (see the module docstring) and report what happened.

    Parameters
    ----------
    argv : sequence of str
        Program and arguments; the program is looked up with the sandbox's PATH
        (``/usr/local/bin:/usr/bin:/bin``), so pass an absolute path for a virtualenv.
    workdir : str
        Existing directory: the run's only writable folder, seen inside as
        ``/sandbox/work`` (its cwd and HOME), with a ``tmp`` subdirectory as TMPDIR and
        /tmp. As root it is handed (recursively, links not followed) to the run's uid and
        every folder above it must let others through (o+x).
    env : mapping of str to str, optional
        Extra environment variables. Names that look like credentials (``*SECRET*``,
        ``*TOKEN*``, ``DJANGO_*``, ``DATABASE_URL``, ``CELERY_*``, ...) are refused.
    limits : Limits, optional
        Defaults to ``Limits()``.
    device : {"cpu", "cuda", "cuda:N"}
        "cpu" hides every GPU; "cuda:N" shows GPU N only; "cuda" keeps the worker's
        CUDA_VISIBLE_DEVICES. On a CUDA device the /dev/nvidia* nodes are shown.
    uid : int, optional
        As root, run as this uid/gid instead of a fresh one (e.g. 65534 for nobody).

    Returns
    -------
    SandboxResult

    Raises
    ------
    ValueError
        For a bad argument.
    IsolationUnavailable
        This machine cannot isolate the run (nothing was started); the message says why.
    SandboxUnavailable
        The sandboxed process could not be started (a platform failure).
    """
    limits = limits or Limits()
    device = check_device(device)
    if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("`argv` must be a non-empty list of strings")
    workdir = os.path.abspath(workdir)
    if not os.path.isdir(workdir):
        raise ValueError(f"`workdir` {workdir!r} is not a directory")
    spec = RunSpec(argv=tuple(argv), workdir=workdir, env=check_extra_env(env), limits=limits, device=device, uid=uid)
    return execute(select_backend(), spec)
