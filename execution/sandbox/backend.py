"""What a sandbox backend provides: a probe, and a way to start a run's process.

A backend only *starts* the process (`Backend.start` returns a `Started` handle, the
process running); `execution.sandbox.supervise` then watches it until it exits. Keeping
the two apart lets a later version start a sandboxed interpreter ahead of its run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from .capture import Output
from .environment import SAFE_PATH
from .interpreter import PYTHON_ROOT, SITE_ROOT, python_view, world_usable
from .limits import Limits, SandboxUnavailable

__all__ = ["Backend", "Probe", "RunSpec", "Started", "check_program"]


def check_program(program: str, other_uid: bool = False) -> None:
    """A missing program (or, with `other_uid`, one another uid may not run) is the
    platform's failure, found before anything starts. The sandbox's Python (under /opt/python,
    /opt/venv) is looked for where the sandbox binds it from."""
    if program.startswith((PYTHON_ROOT + "/", SITE_ROOT + "/")):
        program = python_view().on_host(program)
    found = program if os.path.isabs(program) else shutil.which(program, path=SAFE_PATH)
    if not found or not os.path.isfile(found):
        raise SandboxUnavailable(f"could not start the sandboxed process: {program}: no such file")
    if other_uid and not world_usable(found):
        raise SandboxUnavailable(f"could not start the sandboxed process: {found} is not usable by the sandbox's uid")


@dataclass(frozen=True)
class RunSpec:
    """One run, as `run_sandboxed` checked it.

    `workdir` is the host path of the workspace; `env` the caller's extra variables
    (already checked for credentials); `uid` a uid the caller chose (root only). A run
    started ahead of its inputs (`execution.sandbox.warm`) gets a pipe as its stdin
    (`stdin_pipe`) and keeps the file descriptors `pass_fds` open. A `template`
    (`execution.sandbox.zygote`) is started without the seccomp filter and with user
    namespaces allowed: it never runs contestant code, and each run it forks applies both.
    """

    argv: tuple[str, ...]
    workdir: str
    env: dict
    limits: Limits
    device: str
    uid: int | None = None
    stdin_pipe: bool = False
    pass_fds: tuple[int, ...] = ()
    template: bool = False


@dataclass(frozen=True)
class Probe:
    """Whether a backend can isolate a run here.

    Attributes
    ----------
    ok : bool
    backend : str
        "bubblewrap" or "unsandboxed".
    isolation : tuple of str
        What a run gets (when ok), e.g. ``("bubblewrap 0.8.0", "user, pid, ... namespaces",
        "seccomp", "fresh uid per run", "rlimits")``.
    missing : str
        When not ok: what is missing and how to fix it, in words.
    """

    ok: bool
    backend: str
    isolation: tuple[str, ...] = ()
    missing: str = ""


@dataclass(eq=False)
class Started(ABC):
    """A run's process, started and running: what the supervision loop needs.

    `proc` is the worker's direct child (bwrap, or the program itself); `output` captures
    its stdout and stderr.
    """

    proc: subprocess.Popen
    output: Output
    workdir: str
    isolation: tuple[str, ...]
    warnings: list = field(default_factory=list)
    uid: int | None = None  # the run's fresh uid (root workers), else None
    #: Whether the kernel refuses writes past the disk limit (a size-capped file system). Then a
    #: run that reached it is never stopped for it: it got ENOSPC, and it fails (reporting as it
    #: likes) or recovers. Otherwise the limit is polled, and the run is stopped once over it.
    disk_capped_by_kernel: ClassVar[bool] = False

    @abstractmethod
    def members(self) -> list[int]:
        """Pids of the run's live processes (for memory and task polling)."""

    def cpu_members(self, members: list[int]) -> list[int]:
        """Pids whose CPU time (their own and their reaped children's) is the run's, given `members`:
        those, plus any process of the run that is not a member but reaps its orphans."""
        return members

    def extra_memory_kb(self) -> int:
        """Memory the run holds outside its processes' resident pages (e.g. /dev/shm)."""
        return 0

    def memory_exhausted(self) -> bool:
        """Whether the run filled a memory-backed space it was given (e.g. /dev/shm)."""
        return False

    def disk_exceeded(self, max_disk_mb: float) -> bool:
        """Whether the run's files reached its disk limit (here polled: the unconfined backend
        has no size-capped file system; bubblewrap's workspace is one, see `bubblewrap`)."""
        from .procs import tree_size_mb

        return tree_size_mb(self.workdir) > max_disk_mb

    def collect(self) -> None:  # noqa: B027 (a hook: most backends have nothing to collect)
        """Bring the run's ``outputs/`` back to `workdir` once it ended (a no-op where the
        run wrote to `workdir` itself)."""

    def wait4(self, options: int):
        """(pid, wait status, rusage) of the run's main process, as os.wait4 (pid 0: still running)."""
        return os.wait4(self.proc.pid, options)

    @abstractmethod
    def kill(self) -> None:
        """SIGKILL every process of the run; return once they are gone (or after a while)."""

    @abstractmethod
    def returncode(self, wait_status: int, killed: bool) -> int | None:
        """The program's exit status from the child's wait status (negative: a signal).

        Raises SandboxUnavailable when the program never started (a platform failure).
        """

    def stop(self) -> None:
        """Kill a run nobody waits for (a waiting sandbox, a template) and release what it holds: the
        second kill reaps the sandbox's init, left to this process once bwrap's monitor is gone."""
        self.kill()
        if self.proc.returncode is None:
            self.proc.wait()
        self.kill()
        self.output.join(timeout=1)
        self.close()

    def close(self) -> None:  # noqa: B027 (a hook: most backends hold nothing)
        """Release what the handle holds (file descriptors); the run has ended."""


class Backend(ABC):
    """A way to isolate runs."""

    name: str = ""

    @abstractmethod
    def probe(self) -> Probe:
        """Whether runs can be isolated here (called once per process and cached)."""

    @abstractmethod
    def start(self, spec: RunSpec) -> Started:
        """Start the run's process, confined; raise SandboxUnavailable when it cannot start."""
