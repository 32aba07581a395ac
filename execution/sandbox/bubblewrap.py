"""The bubblewrap backend: every run in new namespaces, under seccomp, as its own uid.

The command line, built once per run (the read-only view and the seccomp program are
built once per process)::

    bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session
          --cap-drop ALL --hostname sandbox --clearenv --setenv NAME VALUE ...
          --ro-bind /usr /usr --symlink usr/bin /bin ... (merged-/usr links as on the host)
          --ro-bind /etc/ld.so.cache ... --symlink /usr/share/zoneinfo/... /etc/localtime ...
          --ro-bind <interpreter file or folder> /opt/python/... --ro-bind <site-packages> /opt/venv/...
          --proc /proc --dev /dev --size <memory/2> --tmpfs /dev/shm [--dev-bind-try /dev/nvidia* ...]
          --size <max_disk> --perms 0700 --tmpfs /sandbox/work --dir /sandbox/work/tmp
          --symlink /sandbox/work/tmp /tmp
          --ro-bind-data FD /etc/passwd --ro-bind-data FD /etc/group --ro-bind-data FD /etc/hosts
          --remount-ro /dev --remount-ro / --chdir /sandbox/work
          --seccomp FD --json-status-fd FD --block-fd FD
          -- /usr/bin/prlimit --core=0:0 --fsize=... --nofile=... [--cpu=...] [--as=...] --nproc=N:N -- ARGV...

As root the worker's child first switches to a fresh uid/gid (Popen's ``user``, ``group``
and ``extra_groups=[]``: setgroups, setgid, setuid) and execs bwrap unprivileged, which maps
that uid into the new user namespace. As another user, bwrap maps the worker's own uid.

bwrap reports its sandbox's init (host pid and namespace ids) on ``--json-status-fd``,
then waits on ``--block-fd`` with everything set up: the worker takes a pidfd of that init
and handles on the run's /dev/shm and workspace tmpfs, copies the workspace's files in
(`execution.sandbox.scratch`: the run's writable space is that size-capped tmpfs, never the
host's disk; its ``outputs/`` is copied back once the run ended), then lets the program start. The exit code comes on
the same status pipe only when the program was executed: without it, the sandbox never
started (a platform failure).

The rlimits are set by ``prlimit`` *inside* the namespaces, not before bwrap: since Linux
5.14 an RLIMIT_NPROC in force when a user namespace is created caps, in the parent
namespace, every task of the creating uid, so a non-root worker with more threads than
the limit could not even start bwrap (measured). Set inside, it counts this run's tasks.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import secrets
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from .backend import Backend, Probe, RunSpec, Started, check_program
from .capture import Output
from .environment import clean_env
from .interpreter import searchable_by_others
from .limits import SandboxUnavailable, prlimit_argv
from .procs import pid_namespace, pids_in_namespace, uids_in_use
from .scratch import copy_in, copy_out
from .seccomp import program_fd
from .shm import INODE_CHARGE_BYTES, ShmWatch
from .tool import BWRAP_ENV, bwrap_path, bwrap_version
from .view import SANDBOX_HOME, device_binds, readonly_view

__all__ = ["BWRAP_ENV", "UID_BASE", "UID_SPAN", "Bubblewrap", "allocate_uid", "bwrap_path", "hand_over"]

#: Fresh per-run uids/gids are drawn from [UID_BASE, UID_BASE + UID_SPAN).
UID_BASE = 1_000_000_000
UID_SPAN = 1 << 24
_NAMESPACES = (
    ("user", "user"),
    ("pid", "pid"),
    ("ipc", "ipc"),
    ("uts", "uts"),
    ("net", "net"),
    ("mnt", "mount"),
    ("cgroup", "cgroup"),
)
_START_TIMEOUT_S = 30
#: How long killing a run waits for its sandbox's init to exit, then for any process left in its namespace.
_KILL_WAIT_S = 10
_PR_SET_CHILD_SUBREAPER = 36
#: Tasks a template's RLIMIT_NPROC allows beyond a run's: bubblewrap's init, the template, and
#: the two processes of each forked run that are not the run's (`execution.sandbox.zygote`).
TEMPLATE_TASKS = 4


def allocate_uid() -> int:
    """A uid/gid from the per-run range that no live process uses."""
    in_use = uids_in_use()
    while True:
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        if uid not in in_use:
            return uid


def hand_over(workdir: str, uid: int) -> None:
    """Give the workspace (recursively, links not followed) to `uid`, mode 0700."""
    if not searchable_by_others(os.path.dirname(workdir)):
        raise ValueError(
            f"`workdir` {workdir!r} must be reachable by the sandbox's uid: every "
            "folder above it needs o+x (e.g. a 0711 parent)"
        )
    os.lchown(workdir, uid, uid)
    for dirpath, dirnames, filenames in os.walk(workdir):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)
    os.chmod(workdir, 0o700)


def _data_fd(text: str) -> int:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, text.encode())
    finally:
        os.close(write_end)
    return read_end


def _read_line(fd: int, timeout: float, data: bytes = b"") -> tuple[bytes, bytes]:
    """(first line, what came after it) of what `fd` gives within `timeout` seconds."""
    while b"\n" not in data:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest


def _json(line: bytes) -> dict:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _kill_in_namespace(pid: int, namespace: str) -> None:
    """SIGKILL `pid` through a pidfd, if it is still the process of `namespace` it was (a freed pid may
    be taken by an unrelated process meanwhile: the pidfd pins the process, then its namespace is checked)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # gone
    try:
        if pid_namespace(pid) == namespace:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


_SUBREAPER_PID: int | None = None


def _become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants.

    bwrap's monitor can exit before the sandbox's init (its child) has; the init would then
    be reparented to the machine's pid 1, which in a container without an init process
    never reaps it. As a subreaper this process gets it, and reaps it through its pidfd.
    Once per process: a forked process (a prefork pool process) does not inherit the flag,
    and would otherwise leave its sandboxes' inits to its parent, which never reaps them.
    """
    global _SUBREAPER_PID
    if _SUBREAPER_PID == os.getpid():
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _SUBREAPER_PID = os.getpid()


@dataclass(frozen=True)
class _Fds:
    """The pipes one run shares with bwrap: the seccomp program, bwrap's status, the
    passwd, group and hosts files, and the "go" pipe bwrap waits on before it executes."""

    seccomp: int
    status_read: int
    status_write: int
    passwd: int
    group: int
    hosts: int
    block_read: int
    block_write: int

    @classmethod
    def make(cls, uid: int) -> _Fds:
        status_read, status_write = os.pipe()
        block_read, block_write = os.pipe()
        return cls(
            program_fd(),
            status_read,
            status_write,
            _data_fd(f"sandbox:x:{uid}:{uid}:sandbox:{SANDBOX_HOME}:/usr/sbin/nologin\n"),
            _data_fd(f"sandbox:x:{uid}:\n"),
            _data_fd("127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n"),
            block_read,
            block_write,
        )

    def for_child(self) -> tuple[int, ...]:
        return (self.seccomp, self.status_write, self.passwd, self.group, self.hosts, self.block_read)

    def close_child_ends(self) -> None:
        for fd in self.for_child():
            os.close(fd)


def _shm_bytes(spec: RunSpec) -> int:
    """Size of the run's /dev/shm: at most half its memory limit (tmpfs pages are RAM)."""
    return max(1, int(spec.limits.memory_mb) // 2) * 2**20


def _disk_bytes(spec: RunSpec) -> int:
    """Size of the run's workspace tmpfs: its disk limit (see `execution.sandbox.scratch`)."""
    return max(1, int(spec.limits.max_disk_mb)) * 2**20


def _argv(bwrap: str, spec: RunSpec, fds: _Fds) -> list[str]:
    env = clean_env(SANDBOX_HOME, spec.env, spec.limits, spec.device)
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        *([] if spec.template else ["--disable-userns"]),  # a template's runs make their own
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += [
        *readonly_view(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(_shm_bytes(spec)),
        "--tmpfs",
        "/dev/shm",
        *device_binds(spec.device),
        "--size",
        str(_disk_bytes(spec)),
        "--perms",
        "0700",
        "--tmpfs",
        SANDBOX_HOME,
        "--dir",
        SANDBOX_HOME + "/tmp",
        "--symlink",
        SANDBOX_HOME + "/tmp",
        "/tmp",
        "--ro-bind-data",
        str(fds.passwd),
        "/etc/passwd",
        "--ro-bind-data",
        str(fds.group),
        "/etc/group",
        "--ro-bind-data",
        str(fds.hosts),
        "/etc/hosts",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        SANDBOX_HOME,
        *([] if spec.template else ["--seccomp", str(fds.seccomp)]),  # a template's runs load it
        "--json-status-fd",
        str(fds.status_write),
        "--block-fd",
        str(fds.block_read),
        "--",
    ]
    limits = spec.limits
    if spec.template:  # the template and, per run, the two processes that fork the harness (`zygote`)
        limits = dataclasses.replace(limits, max_processes=limits.max_processes + TEMPLATE_TASKS)
    return argv + prlimit_argv(limits, spec.device, nproc=True) + list(spec.argv)


def _describe(header: dict, version: str, uid: int | None) -> tuple[str, ...]:
    names = [shown for key, shown in _NAMESPACES if key == "user" or f"{key}-namespace" in header]
    who = f"uid {uid}" if uid is not None else f"uid {os.getuid()} (the worker's)"
    return (version, ", ".join(names) + " namespaces", "seccomp", who, "rlimits")


@dataclass(eq=False)
class BwrapRun(Started):
    """A run inside bwrap. Its processes are those of its PID namespace, whose init is
    held through a pidfd: SIGKILL to that init kills every process in the namespace."""

    disk_capped_by_kernel: ClassVar[bool] = True  # the workspace is a size-capped tmpfs
    status_fd: int = -1
    status_rest: bytes = b""
    init_fd: int | None = None
    namespace: str = ""
    shm: ShmWatch | None = None
    work: ShmWatch | None = None  # the workspace tmpfs (`execution.sandbox.scratch`)
    max_file_bytes: int = 0
    disk_mb: int = 0
    setup_error: str = ""

    @classmethod
    def attach(cls, proc, output, fds: _Fds, spec: RunSpec, describe, uid: int | None) -> BwrapRun:
        """The handle, once bwrap reported its sandbox's init (or failed before it);
        `describe(header)` names the isolation from bwrap's report."""
        line, rest = _read_line(fds.status_read, _START_TIMEOUT_S)
        header = _json(line)
        run = cls(
            proc=proc,
            output=output,
            workdir=spec.workdir,
            isolation=describe(header),
            status_fd=fds.status_read,
            status_rest=rest,
            uid=uid,
        )
        init = header.get("child-pid")
        if isinstance(init, int) and "pid-namespace" in header:
            run.namespace = f"pid:[{header['pid-namespace']}]"
            try:
                run.init_fd = os.pidfd_open(init)
            except OSError:
                run.init_fd = None
            if run.init_fd is not None and pid_namespace(init) != run.namespace:
                os.close(run.init_fd)  # gone already, its pid taken by another process
                run.init_fd = None
            run.shm = ShmWatch(init, _shm_bytes(spec))
            run.work = ShmWatch(init, _disk_bytes(spec), inner=SANDBOX_HOME, host=spec.workdir)
        run.max_file_bytes = int(spec.limits.max_file_mb * 2**20)
        run.disk_mb = _disk_bytes(spec) // 2**20
        run._go(fds.block_write)
        return run

    def _go(self, block_write: int) -> None:
        """Let the program start, once the sandbox is set up (its /dev/shm is then watched).

        bwrap waits on ``--block-fd`` after its mounts and before it executes the program.
        """
        deadline = time.monotonic() + _START_TIMEOUT_S
        while self.shm and self.work and self.init_fd is not None and time.monotonic() < deadline:
            if (self.shm.attach() and self.work.attach()) or select.select([self.init_fd], [], [], 0.0005)[0]:
                break  # set up; or it failed, and bwrap's message will say why
        if self.shm and not self.shm.attach() and self.init_fd is not None:
            self.warnings.append(
                "the run's /dev/shm could not be watched: what it stores there is not counted as memory"
            )
        try:
            if self.work is not None:
                self.bring_in()
            os.write(block_write, b"g")
        except OSError as exc:
            if self.init_fd is not None and not select.select([self.init_fd], [], [], 0)[0]:
                # set up, but without its inputs: it must not start (a platform failure, not the recipe's)
                self.setup_error = f"the run's files could not be put in its {self.disk_mb} MB workspace: {exc}"
                signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
        finally:
            os.close(block_write)

    def bring_in(self) -> None:
        """Copy the host workspace into the run's tmpfs (again at a warm start's release, when
        the inputs were written after the sandbox started). OSError if the tmpfs is not held."""
        if not (self.work and self.work.attach()):
            raise OSError(errno.ENOENT, "the run's workspace could not be reached")
        assert self.work.fd is not None  # attach() returned True: the tmpfs is held
        copy_in(self.workdir, self.work.fd, self.uid)

    def disk_exceeded(self, max_disk_mb: float) -> bool:
        """Whether the run filled its workspace tmpfs: the kernel refused its writes past the limit."""
        return bool(self.work and self.work.full())

    def collect(self) -> None:
        if self.work and self.work.fd is not None:
            copy_out(self.work.fd, self.workdir, self.max_file_bytes, self.disk_mb * 2**20 or None)

    def members(self) -> list[int]:
        return pids_in_namespace(self.namespace) if self.namespace else []

    def extra_memory_kb(self) -> int:
        """Memory the run holds that no process's RSS shows: its /dev/shm's pages, and an inode and a
        name for each file in its tmpfs mounts, /dev/shm and the workspace (`INODE_CHARGE_BYTES` each)."""
        inodes = sum(watch.used_inodes() for watch in (self.shm, self.work) if watch)
        return ((self.shm.used_bytes() if self.shm else 0) + inodes * INODE_CHARGE_BYTES) // 1024

    def memory_exhausted(self) -> bool:
        return bool(self.shm and self.shm.full())

    def kill(self) -> None:
        if self.init_fd is not None:
            try:
                signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
            except OSError:
                pass
            # readable once the init has exited, which it does after its namespace emptied
            select.select([self.init_fd], [], [], _KILL_WAIT_S)
            self._reap_init()  # if bwrap's monitor left it to this process (see _become_subreaper)
            self._kill_members()
        if self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)  # not reaped yet: the pid is still ours
            except OSError:
                pass
            self._await_monitor_exit()
            self._reap_init()  # the monitor gone, an init it had not reaped is this process's child

    def _await_monitor_exit(self) -> None:
        """Wait (up to a while) until bwrap's monitor has exited, leaving it unreaped (WNOWAIT): the
        caller reaps it for its status and resource usage. Its children are reparented by then."""
        deadline = time.monotonic() + _KILL_WAIT_S
        while time.monotonic() < deadline:
            try:
                if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
            except ChildProcessError:
                return
            time.sleep(0.002)

    def _reap_init(self) -> None:
        """Reap the sandbox's init if it has ended and was left to this process."""
        if self.init_fd is not None:
            try:
                os.waitid(os.P_PIDFD, self.init_fd, os.WEXITED | os.WNOHANG)
            except (ChildProcessError, OSError):
                pass

    def _kill_members(self) -> None:
        """SIGKILL, and wait for, any process still in the run's PID namespace.

        The init's exit should have emptied it; on a loaded machine the init can take longer
        than the wait above (a fork bomb's many processes, each to be scheduled to die), and a
        CI run once found two processes left at once. Each pass kills what is left and sleeps
        a little; a process still there after the last pass is logged (never left silently).
        """
        deadline = time.monotonic() + _KILL_WAIT_S
        while (left := self.members()) and time.monotonic() < deadline:
            for pid in left:
                _kill_in_namespace(pid, self.namespace)
            time.sleep(0.01)
        if left:
            self.warnings.append(f"{len(left)} process(es) of the run were still exiting after {2 * _KILL_WAIT_S:g} s")

    def returncode(self, wait_status: int, killed: bool) -> int | None:
        code = os.waitstatus_to_exitcode(wait_status)
        reported = _json(_read_line(self.status_fd, 1, self.status_rest)[0]).get("exit-code")
        if self.setup_error:
            raise SandboxUnavailable(f"could not start the sandboxed process: {self.setup_error}")
        if reported is None and not killed:
            # bwrap reports the exit code only once the program was executed
            lines = [line for line in self.output.stderr().splitlines() if line.strip()]
            raise SandboxUnavailable(
                "could not start the sandboxed process: " + (lines[-1] if lines else f"bwrap exited with status {code}")
            )
        code = reported if isinstance(reported, int) else code
        return -(code - 128) if 128 < code <= 128 + 64 else code  # bwrap reports a signal as 128+N

    def close(self) -> None:
        for fd in (self.status_fd, self.init_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self.status_fd, self.init_fd = -1, None
        for watch in (self.shm, self.work):
            if watch:
                watch.close()  # the last reference to its tmpfs: what the run wrote is freed


class Bubblewrap(Backend):
    """Runs each recipe through bwrap (see the module docstring)."""

    name = "bubblewrap"

    def __init__(self, path: str):
        self.path = path

    def probe(self) -> Probe:
        from .diagnose import probe_bubblewrap

        return probe_bubblewrap(self)

    def _run_uid(self, spec: RunSpec) -> int | None:
        if os.geteuid() != 0:
            return None
        return allocate_uid() if spec.uid is None else spec.uid

    def start(self, spec: RunSpec) -> BwrapRun:
        uid = self._run_uid(spec)
        check_program(spec.argv[0], other_uid=uid is not None)
        _become_subreaper()
        version = bwrap_version(self.path)
        os.makedirs(os.path.join(spec.workdir, "tmp"), exist_ok=True)
        identity: dict[str, Any] = {}
        if uid is not None:
            hand_over(spec.workdir, uid)
            identity = {"user": uid, "group": uid, "extra_groups": []}
        fds = _Fds.make(uid if uid is not None else os.getuid())
        argv = _argv(self.path, spec, fds)
        try:
            stdin = subprocess.PIPE if spec.stdin_pipe else subprocess.DEVNULL
            proc = subprocess.Popen(
                argv,
                env={},
                cwd="/",
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(*fds.for_child(), *spec.pass_fds),
                close_fds=True,
                umask=0o077,
                **identity,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            fds.close_child_ends()
            os.close(fds.status_read)
            os.close(fds.block_write)
            raise SandboxUnavailable(f"could not start the sandboxed process: {exc}") from exc
        fds.close_child_ends()
        output = Output(proc.stdout, proc.stderr, spec.limits.max_output_bytes)
        return BwrapRun.attach(proc, output, fds, spec, lambda header: _describe(header, version, uid), uid)
