"""The sandbox's public types: a run's limits, its result, and the platform errors."""

from __future__ import annotations

import resource
from dataclasses import dataclass, field

__all__ = ["MAX_OPEN_FILES", "IsolationUnavailable", "Limits", "SandboxResult", "SandboxUnavailable", "prlimit_argv"]

#: RLIMIT_NOFILE of every process of a run (or the worker's own hard limit, if lower). Each open file is
#: about 1.25 KB of kernel memory that no RSS shows and a slot of the host-wide file table (fs.file-max,
#: which only root exceeds): with the worker's limit (20,000 here, up to 1,048,576 in a container), 32
#: processes of one run held 640,000 files (a reviewer, 2026-11-30).
MAX_OPEN_FILES = 4096


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run.

    Attributes
    ----------
    wall_time_s : float
        Wall-clock seconds before the whole run is killed.
    cpu_time_s : float or None
        CPU seconds per process (RLIMIT_CPU); None for no limit beyond the wall time.
    memory_mb : int
        Memory of the whole run, in MB: RLIMIT_AS per process on CPU, and the polled
        total of all its processes plus what they stored in /dev/shm.
    max_processes : int
        Tasks (processes and threads) the run may have at once (RLIMIT_NPROC).
    max_file_mb : int
        Size of any one file the run writes (RLIMIT_FSIZE).
    max_disk_mb : int
        Total size of what the run writes: under bubblewrap the size of its workspace, a tmpfs
        the kernel caps (`execution.sandbox.scratch`); polled under the unconfined backend.
    max_output_bytes : int
        Bytes of stdout plus stderr; more kills the run. The log keeps the head and tail.
    threads : int
        Value of OMP_NUM_THREADS, MKL_NUM_THREADS and friends (1 keeps torch CPU results
        identical across machines with different core counts).
    """

    wall_time_s: float = 600
    cpu_time_s: float | None = None
    memory_mb: int = 4096
    max_processes: int = 64
    max_file_mb: int = 256
    max_disk_mb: int = 2048
    max_output_bytes: int = 1_000_000
    threads: int = 1

    def __post_init__(self):
        for name in (
            "wall_time_s",
            "memory_mb",
            "max_processes",
            "max_file_mb",
            "max_disk_mb",
            "max_output_bytes",
            "threads",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"`{name}` must be a positive number, got {value!r}")
        if self.cpu_time_s is not None and (
            isinstance(self.cpu_time_s, bool) or not isinstance(self.cpu_time_s, (int, float)) or self.cpu_time_s <= 0
        ):
            raise ValueError(f"`cpu_time_s` must be a positive number or None, got {self.cpu_time_s!r}")
        if self.max_output_bytes < 1024:
            raise ValueError(f"`max_output_bytes` must be at least 1024, got {self.max_output_bytes}")


@dataclass(frozen=True)
class SandboxResult:
    """What happened to a sandboxed process.

    Attributes
    ----------
    returncode : int or None
        Exit status (negative: killed by that signal); None if it could not be collected.
    status : str
        ``"ok"``, ``"error"`` (non-zero exit), ``"timeout"``, ``"cpu_time"``,
        ``"memory"``, ``"processes"``, ``"file_size"``, ``"disk"``, ``"output_limit"``
        or ``"killed"`` (another signal).
    message : str
        One sentence for the user, e.g. "exceeded the wall-time limit of 5 s"; empty
        when ``status == "ok"``.
    stdout_tail, stderr_tail : str
        Captured output (UTF-8, undecodable bytes replaced), head and tail kept with a
        ``[… N bytes omitted …]`` marker in between when it was longer.
    duration_s : float
        Wall-clock seconds from start to exit.
    max_rss_mb : float
        Peak memory seen (the child's own peak, or the polled total of the run).
    isolation : tuple of str
        The confinement that was in force, e.g. ``("bubblewrap 0.8.0", "user, pid, ipc,
        uts, net, mount, cgroup namespaces", "seccomp", "uid 1000123", "rlimits")``, or
        exactly ``("unsandboxed",)`` when an operator allowed runs without isolation.
    warnings : tuple of str
        Notes about the run's confinement (e.g. that it ran unsandboxed).
    warm_start : bool
        Whether the process was started ahead of the run (`execution.sandbox.warm`).
    """

    returncode: int | None
    status: str
    message: str
    stdout_tail: str
    stderr_tail: str
    duration_s: float
    max_rss_mb: float
    isolation: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    warm_start: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class SandboxUnavailable(OSError):
    """The sandbox could not start the process: a platform failure, not the recipe's.

    An OSError, so callers that treat OS errors as platform faults retry the run.
    """


class IsolationUnavailable(SandboxUnavailable):
    """This machine cannot isolate a recipe (no bubblewrap, user namespaces refused, ...).

    Raised before anything runs; the message names what is missing and how to fix it.
    Set ``VARBOARD_ALLOW_UNSANDBOXED=1`` (a developer's laptop only) to run unconfined.
    """


def prlimit_argv(limits: Limits, device: str, nproc: bool) -> list[str]:
    """The ``prlimit`` command line (util-linux) that sets a run's rlimits, then execs.

    RLIMIT_NOFILE at `MAX_OPEN_FILES` (or the worker's hard limit, which a process without
    privileges cannot raise, if lower).

    RLIMIT_AS only on the CPU device (the CUDA driver maps tens of GB of address space);
    RLIMIT_NPROC only when `nproc` (it counts every task of the real uid in the user
    namespace where it is set).
    """
    mb = 1024 * 1024
    fsize = int(limits.max_file_mb * mb)
    hard_files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    files = MAX_OPEN_FILES if hard_files == resource.RLIM_INFINITY else min(MAX_OPEN_FILES, hard_files)
    argv = ["/usr/bin/prlimit", "--core=0:0", f"--fsize={fsize}:{fsize}", f"--nofile={files}:{files}"]
    if limits.cpu_time_s is not None:
        cpu = max(1, int(limits.cpu_time_s + 0.999))
        argv.append(f"--cpu={cpu}:{cpu + 2}")
    if device == "cpu":
        memory = int(limits.memory_mb * mb)
        argv.append(f"--as={memory}:{memory}")
    if nproc:
        argv.append(f"--nproc={int(limits.max_processes)}:{int(limits.max_processes)}")
    return [*argv, "--"]
