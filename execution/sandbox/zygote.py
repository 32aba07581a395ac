"""Forked runs: a sandboxed template process ("zygote") that forks one confined process per run.

`start_template` starts the harness under bubblewrap exactly as a cold run (same view,
namespaces, rlimits through prlimit, ``--cap-drop ALL``, a fresh uid as root) except that
bubblewrap neither loads the seccomp filter nor passes ``--disable-userns`` (`RunSpec.template`):
the template's forks must make namespaces of their own, and load the filter themselves.
Its control channel is a unix SOCK_SEQPACKET socket, not its environment or argv: it gets
the imports to make and the compiled seccomp program (`seccomp.bpf_program`) as its first
two messages, imports, makes itself non-dumpable and answers ``ready``. It runs no
contestant code.

`Template.fork` sends ``fork`` with three descriptors (SCM_RIGHTS): the run's own channel
and its stdout and stderr pipes. The forked process enters new user, mount, pid, ipc, net,
uts and cgroup namespaces, mounts a fresh /proc, /dev/shm and workspace tmpfs and answers
``ready`` on the run's channel; its host pid comes with that message as SCM_CREDENTIALS
(the kernel translates it into the worker's pid namespace). The worker then holds that
process (the run's init) through a pidfd and its tmpfs mounts through /proc/<init>/root,
copies the inputs in and sends ``go``: the process drops every capability, sets no_new_privs,
loads the seccomp filter and forks the harness (see execution/harness/varboard_template.py).
`ForkedRun` is then supervised like a cold run (`supervise.finish`); its wait status comes
on the run's channel from the process that forked the init, which waits for nothing else.

What crosses between runs: nothing writable. Memory is copy-on-write from the template; each
run has its own namespaces, tmpfs mounts and /proc; the template is neither visible (another
pid namespace, its own /proc) nor readable (PR_SET_DUMPABLE 0) from a run; runs of one
template are serial, and killing a run's init kills its whole pid namespace (pid_namespaces(7)).
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .backend import RunSpec
from .bubblewrap import _KILL_WAIT_S, Bubblewrap, BwrapRun, _disk_bytes, _shm_bytes
from .capture import Output
from .environment import check_device, check_extra_env
from .isolation import select_backend
from .limits import Limits, SandboxUnavailable
from .procs import pid_namespace, pids_in_namespace
from .seccomp import bpf_program
from .shm import ShmWatch
from .view import SANDBOX_HOME

__all__ = ["TEMPLATE_ENV", "ForkFailed", "ForkedRun", "Template", "start_template"]

#: The harness's switch into template mode: ``"<control socket fd>"``.
TEMPLATE_ENV = "VARBOARD_TEMPLATE"
_READY_TIMEOUT_S = 120
_FORK_TIMEOUT_S = 30
_UCRED = struct.Struct("iII")


class ForkFailed(SandboxUnavailable):
    """The template could not be made, or a run could not be forked from it: nothing of the run executed."""


def _recv(sock: socket.socket, timeout: float) -> tuple[bytes, int | None]:
    """(message, sender's pid in this pid namespace or None); b"" at end or timeout."""
    if not select.select([sock], [], [], timeout)[0]:
        return b"", None
    space = socket.CMSG_SPACE(_UCRED.size)
    try:
        message, ancillary, _, _ = sock.recvmsg(65536, space)
    except OSError:
        return b"", None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= _UCRED.size:
            return message, _UCRED.unpack(data[: _UCRED.size])[0]
    return message, None


class _ForkedProc:
    """Stands for `subprocess.Popen` in the supervision loop: the run's init is not the worker's child."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None
        self.stdin = None

    def wait(self) -> int | None:
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode


@dataclass(eq=False)
class ForkedRun(BwrapRun):
    """One run forked from a template. Its processes are those of its own PID namespace,
    whose init (`proc.pid`) is held through a pidfd; the wait status comes on `channel`."""

    channel: Any = None
    report: dict | None = None

    def members(self) -> list[int]:
        """The run's processes but its init (platform code, a copy of the template's pages)."""
        init = self.proc.pid
        return [pid for pid in pids_in_namespace(self.namespace) if pid != init]

    def cpu_members(self, members: list[int]) -> list[int]:
        """The members and the init: orphans (a double fork) are reaped by the init, so their CPU time
        is in its ``cutime`` only (its own is the run's set-up: a fork starts with none)."""
        return [self.proc.pid, *members]

    def wait4(self, options: int):
        if self.report is None:
            timeout = 0.0 if options & os.WNOHANG else _KILL_WAIT_S
            message, _ = _recv(self.channel, timeout)
            if message or not (options & os.WNOHANG):
                try:
                    self.report = json.loads(message)
                except ValueError:  # no report: the template is gone; the run was killed with it
                    self.report = {"status": signal.SIGKILL, "rusage": None}
        if self.report is None:
            return 0, 0, None
        usage = self.report.get("rusage")
        return self.proc.pid, int(self.report["status"]), resource.struct_rusage(usage) if usage else None

    def kill(self) -> None:
        if self.init_fd is not None:
            try:
                signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
            except OSError:
                pass
            select.select([self.init_fd], [], [], _KILL_WAIT_S)
            self._kill_members()

    def returncode(self, wait_status: int, killed: bool) -> int | None:
        if self.setup_error:
            raise SandboxUnavailable(f"could not start the sandboxed process: {self.setup_error}")
        code = os.waitstatus_to_exitcode(wait_status)
        return -(code - 128) if 128 < code <= 128 + 64 else code  # the init reports a signal as 128+N

    def close(self) -> None:
        super().close()
        if self.channel is not None:
            self.channel.close()
            self.channel = None


class Template:
    """A started template (see the module docstring)."""

    def __init__(self, started: BwrapRun, control: socket.socket, limits: Limits, imports: tuple[str, ...]):
        self.started, self.control, self.limits, self.imports = started, control, limits, imports
        self.answer = b""
        self.forks = 0

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether its imports are done (waiting up to `timeout` s); ForkFailed if it refused."""
        if not self.answer:
            self.answer, _ = _recv(self.control, timeout)
        if self.answer.startswith(b"error "):
            raise ForkFailed(self.answer[6:].decode(errors="replace"))
        return self.answer == b"ready"

    def alive(self) -> bool:
        return self.started.proc.poll() is None

    def fork(self, workdir: str) -> ForkedRun:
        """A confined process for one run, its workspace holding `workdir`'s files, started."""
        if not self.ready(_READY_TIMEOUT_S) or not self.alive():
            raise ForkFailed(f"the template is not ready ({self.started.output.stderr()[-300:]!r})")
        run, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        run.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        spec = RunSpec(("harness",), workdir, {}, self.limits, "cpu")
        shm, disk = _shm_bytes(spec), _disk_bytes(spec)
        try:
            nproc = self.limits.max_processes + 2  # the run's, plus the two processes above its harness
            socket.send_fds(self.control, [f"fork {shm} {disk} {nproc}".encode()], [child.fileno(), out_w, err_w])
        except OSError as exc:
            for fd in (out_r, err_r):
                os.close(fd)
            run.close()
            raise ForkFailed(f"the template did not take the fork: {exc}") from exc
        finally:
            child.close()
            os.close(out_w)
            os.close(err_w)
        self.forks += 1
        output = Output(os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"), self.limits.max_output_bytes)
        return self._attach(run, output, workdir, shm, disk)

    def _attach(self, run: socket.socket, output: Output, workdir: str, shm: int, disk: int) -> ForkedRun:
        message, pid = _recv(run, _FORK_TIMEOUT_S)
        forked = ForkedRun(
            proc=_ForkedProc(pid or 0),  # type: ignore[arg-type]
            output=output,
            workdir=workdir,
            isolation=(*self.started.isolation, "forked from a template"),
            uid=self.started.uid,
            channel=run,
        )
        if message != b"ready" or pid is None:
            forked.close()
            output.join(timeout=1)
            raise ForkFailed(f"the forked run did not start: {message[:300].decode(errors='replace') or 'no answer'}")
        forked.init_fd = os.pidfd_open(pid)
        forked.namespace = pid_namespace(pid) or ""
        forked.shm = ShmWatch(pid, shm)
        forked.work = ShmWatch(pid, disk, inner=SANDBOX_HOME, host=workdir)
        forked.max_file_bytes = int(self.limits.max_file_mb * 2**20)
        forked.disk_mb = disk // 2**20
        return forked

    def release(self, forked: ForkedRun) -> None:
        """Copy the run's inputs into its workspace and let it start; ForkFailed if it cannot."""
        try:
            if not (forked.shm and forked.shm.attach()):
                raise OSError("the run's /dev/shm could not be reached")
            forked.bring_in()
            forked.channel.send(b"go")
        except OSError as exc:
            forked.kill()
            forked.close()
            forked.output.join(timeout=1)
            raise ForkFailed(f"the forked run could not take its inputs: {exc}") from exc

    def discard(self) -> None:
        """Kill it and everything it forked (its pid namespace holds theirs), and reap it."""
        try:
            self.control.close()
        except OSError:
            pass
        self.started.stop()


def start_template(
    argv: Sequence[str],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    device: str = "cpu",
    imports: Sequence[str] = (),
) -> Template:
    """Start `argv` (the harness, with varboard_template.py beside it in `workdir`) as a template.

    Raises ForkFailed where bubblewrap does not isolate runs or the template cannot start.
    """
    limits = limits or Limits()
    device = check_device(device)
    backend = select_backend()
    if not isinstance(backend, Bubblewrap):
        raise ForkFailed("forked runs need bubblewrap")
    host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    spec = RunSpec(
        argv=tuple(argv),
        workdir=os.path.abspath(workdir),
        env={**check_extra_env(env), TEMPLATE_ENV: str(child.fileno())},
        limits=limits,
        device=device,
        pass_fds=(child.fileno(),),
        template=True,
    )
    try:
        started = backend.start(spec)
    except BaseException:
        host.close()
        raise
    finally:
        child.close()
    template = Template(started, host, limits, tuple(imports))
    try:
        host.send(f"imports {','.join(imports)}".encode())
        host.send(bpf_program())
    except OSError as exc:
        template.discard()
        raise ForkFailed(f"the template did not take its imports: {exc}") from exc
    return template
