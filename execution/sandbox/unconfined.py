"""The unsandboxed backend, for a developer's laptop only (``VARBOARD_ALLOW_UNSANDBOXED=1``).

A plain child process with the clean environment, the rlimits (RLIMIT_NPROC left out: it
would count the developer's own processes), the polling and the output cap, and nothing
else: the recipe runs as the worker's user, sees the whole file system and the network,
and a process that leaves its session can outlive the run. Its result's ``isolation`` is
exactly ``("unsandboxed",)``.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from .backend import Backend, Probe, RunSpec, Started, check_program
from .capture import Output
from .environment import clean_env
from .interpreter import python_view
from .limits import SandboxUnavailable, prlimit_argv
from .procs import pids_in_session

__all__ = ["ALLOW_ENV", "Unconfined"]

ALLOW_ENV = "VARBOARD_ALLOW_UNSANDBOXED"
WARNING = (
    "the recipe ran UNSANDBOXED (VARBOARD_ALLOW_UNSANDBOXED=1): it could read the worker's "
    "files, reach the network and signal the worker's processes"
)


@dataclass(eq=False)
class PlainRun(Started):
    """A run in its own session; its processes are those still in that session."""

    def members(self) -> list[int]:
        return pids_in_session(self.proc.pid)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in self.members():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def returncode(self, wait_status: int, killed: bool) -> int | None:
        return os.waitstatus_to_exitcode(wait_status)


class Unconfined(Backend):
    name = "unsandboxed"

    def probe(self) -> Probe:
        return Probe(ok=True, backend=self.name, isolation=("unsandboxed",))

    def start(self, spec: RunSpec) -> PlainRun:
        check_program(spec.argv[0])
        os.makedirs(os.path.join(spec.workdir, "tmp"), exist_ok=True)
        # no mount namespace: the sandbox's Python paths (/opt/python, /opt/venv) are the host's own
        view = python_view()
        extra = {name: view.on_host_env(value) for name, value in spec.env.items()}
        env = clean_env(spec.workdir, extra, spec.limits, spec.device)
        argv = prlimit_argv(spec.limits, spec.device, nproc=False) + [view.on_host(a) for a in spec.argv]
        try:
            proc = subprocess.Popen(
                argv,
                cwd=spec.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
                start_new_session=True,
                umask=0o077,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"could not start the sandboxed process: {exc}") from exc
        output = Output(proc.stdout, proc.stderr, spec.limits.max_output_bytes)
        return PlainRun(proc=proc, output=output, workdir=spec.workdir, isolation=("unsandboxed",), warnings=[WARNING])
