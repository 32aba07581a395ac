"""Run untrusted code (contestants' recipes) in a confined child process.

What one call of `run_sandboxed` gives the child (DESIGN.md §5):

- **a separate process** in a new session, stdin closed, SIGKILLed if the worker dies;
- **a clean environment**: PATH, HOME (= the workdir), TMPDIR, LANG, PYTHONHASHSEED,
  thread-count variables, offline switches for Hugging Face, CUDA_VISIBLE_DEVICES, and
  the caller's extra variables, which may not look like credentials. Nothing is
  inherited from the worker's environment;
- **its own working directory**, owned by the sandbox user, mode 0700;
- **no network**: a new network namespace with only a downed loopback, so every
  connection (127.0.0.1, the internet) fails with "Network is unreachable". As root the
  child also gets a private mount namespace with an empty /run (the Unix sockets of
  PostgreSQL, Redis or Docker are unreachable) and a fresh /dev/shm of at most half
  the memory limit. When not root, a user+network namespace is used. When no namespace
  can be made, the result says so in `warnings` and a warning is logged: that run is
  *not* network-isolated;
- **an unprivileged user**: as root, every run gets a fresh uid/gid from a high range
  (no passwd entry; USER/LOGNAME are set), no supplementary groups, umask 077 and
  ``PR_SET_NO_NEW_PRIVS``. A fresh uid per run, rather than a shared "nobody", makes
  RLIMIT_NPROC count this run's tasks only, keeps a recipe out of a concurrent run's
  files and /proc entries, and lets the sandbox kill *every* process of the run with
  ``kill(-1)`` as that uid, including processes that left the session;
- **resource limits**: RLIMIT_CPU, RLIMIT_AS (CPU device only, see below),
  RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE = 0; a wall-clock limit; the total resident
  memory and the number of tasks (threads included) of all the run's processes,
  polled from /proc, and the disk space used by the workdir and the uid's files in
  /tmp, /var/tmp, polled; the run is killed when over. Files the uid left in the
  shared temporary directories are deleted after the run;
- **capped output**: stdout and stderr are read by threads that keep the first and
  last quarter of `max_output_bytes` of each; a run that prints more than
  `max_output_bytes` in total is killed.

Memory: RLIMIT_AS is per process and counts reserved address space, not memory used.
``import torch, transformers, sklearn, pandas`` reserves about 1.06 GB of address space
for 0.48 GB resident (measured here: torch 2.13 CPU, transformers 5.23, one thread; it
fails under 1024 MB), and the example recipes train within 1024 MB, so the default
``memory_mb=4096`` leaves room for real work. On a CUDA device RLIMIT_AS is not set (the
CUDA driver maps tens of GB of address space): only the polled limit applies. Polled
memory is the sum of the RSS of the run's processes; when that exceeds the limit, the
sum of their PSS (which counts pages shared after fork once) decides. Polling every
0.1-0.25 s can miss a fast spike: the kernel's OOM killer (reported as "killed by
SIGKILL") remains the last line.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import re
import resource
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Limits", "SandboxResult", "SandboxUnavailable", "run_sandboxed", "python_command"]

logger = logging.getLogger(__name__)

# -- public types ---------------------------------------------------------------------


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
        total of all its processes.
    max_processes : int
        Tasks (processes and threads) the run may have at once (RLIMIT_NPROC).
    max_file_mb : int
        Size of any one file the run writes (RLIMIT_FSIZE).
    max_disk_mb : int
        Total size of the files under the working directory (polled).
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
        for name in ("wall_time_s", "memory_mb", "max_processes", "max_file_mb",
                     "max_disk_mb", "max_output_bytes", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"`{name}` must be a positive number, got {value!r}")
        if self.cpu_time_s is not None and (
            isinstance(self.cpu_time_s, bool)
            or not isinstance(self.cpu_time_s, (int, float))
            or self.cpu_time_s <= 0
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
        Peak resident memory seen (the child's own peak, or the polled total of the run).
    isolation : tuple of str
        The confinement that was in force, e.g. ``("network namespace", "uid 1000123")``.
    warnings : tuple of str
        Confinement that could not be set up ("no network isolation: ...").
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

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class SandboxUnavailable(OSError):
    """The sandbox could not start the process: a platform failure, not the recipe's.

    An OSError, so callers that treat OS errors as platform faults retry the run.
    """


# -- Linux plumbing --------------------------------------------------------------------

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38

_libc = ctypes.CDLL(None, use_errno=True)
_unshare = _libc.unshare
_unshare.argtypes = [ctypes.c_int]
_mount = _libc.mount
_mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

#: Fresh per-run uids/gids are drawn from [_UID_BASE, _UID_BASE + _UID_SPAN).
_UID_BASE = 1_000_000_000
_UID_SPAN = 1 << 24
_SHARED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_SECRET_NAME = re.compile(
    r"SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|API_?KEY|PRIVATE|"
    r"^(DJANGO|DATABASE|CELERY|REDIS|POSTGRES|PG|AWS|GOOGLE|AZURE)_|^DATABASE_URL$"
)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _try_in_child(flags: int, private_mounts: bool) -> bool:
    """Whether a child can unshare `flags` (and mount its tmpfs): probe with /bin/true."""

    def probe():
        _check(_unshare(flags), "unshare")
        if private_mounts:
            _private_mounts(b"size=1m,mode=1777")

    try:
        return subprocess.run(
            ["/bin/true"], preexec_fn=probe, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={}, timeout=30,
        ).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _private_mounts(shm_options: bytes) -> None:
    """In a new mount namespace: an empty /run (no Unix sockets of the host's services)
    and a fresh, size-limited /dev/shm (shared memory is RAM the RSS polling misses)."""
    _check(_mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    if os.path.isdir("/run"):
        _check(_mount(b"tmpfs", b"/run", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      b"size=1m,mode=755"), "mount tmpfs /run")
    if os.path.isdir("/dev/shm"):
        _check(_mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, shm_options),
               "mount tmpfs /dev/shm")


@functools.lru_cache(maxsize=None)
def _isolation_plan() -> tuple[int, bool, tuple[str, ...], tuple[str, ...]]:
    """(unshare flags, remount /run, isolation descriptions, warnings), probed once."""
    if os.geteuid() == 0:
        if _try_in_child(CLONE_NEWNET | CLONE_NEWNS, True):
            return CLONE_NEWNET | CLONE_NEWNS, True, (
                "network namespace", "private /run and /dev/shm"), ()
        if _try_in_child(CLONE_NEWNET, False):
            return CLONE_NEWNET, False, ("network namespace",), (
                "no private mount namespace: Unix sockets under /run stay reachable and "
                "/dev/shm is shared",)
    elif _try_in_child(CLONE_NEWUSER | CLONE_NEWNET, False):
        return CLONE_NEWUSER | CLONE_NEWNET, False, ("user+network namespace",), (
            "not root: the run keeps the worker's uid, and the process limit is only polled",)
    return 0, False, (), ("no network isolation: this system allows no new network namespace "
                          "(run the worker as root or with CAP_SYS_ADMIN)",)


def _allocate_uid() -> int:
    in_use = {info[0] for info in _scan_processes().values()}
    while True:
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        if uid not in in_use:
            return uid


def _status_field(status: bytes, key: bytes) -> bytes:
    at = status.find(key)
    if at < 0:
        return b"0"
    return status[at + len(key):].split(None, 1)[0]


def _scan_processes(with_session: bool = False) -> dict[int, tuple[int, int, int, int]]:
    """pid -> (real uid, session id or 0, threads, rss kB) of every live process.

    Reads /proc/<pid>/status (the real uid there cannot be hidden the way the owner of
    /proc/<pid> can, with PR_SET_DUMPABLE); zombies are left out.
    """
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as fh:
                status = fh.read()
            if _status_field(status, b"\nState:") == b"Z":
                continue
            sid = 0
            if with_session:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat_line = fh.read()
                sid = int(stat_line[stat_line.rfind(b")") + 2:].split()[3])  # state ppid pgrp session
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry.name)] = (int(_status_field(status, b"\nUid:")), sid,
                                  int(_status_field(status, b"\nThreads:")),
                                  int(_status_field(status, b"\nVmRSS:")))
    return table


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`, atomically, by calling kill(-1) as that uid.

    A forked helper (not an exec: exec would fail with EAGAIN when the uid is at its
    RLIMIT_NPROC) switches to the uid and signals everything it may signal, i.e. every
    process of the uid; kill(-1) is atomic with respect to fork, so a fork bomb cannot
    outrun it.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the helper child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _world_usable(path: str) -> bool:
    """Whether a user with no privileges can reach `path` (every parent o+x) and read it."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_mode & 0o005 != 0o005:  # others may read and execute (or list) it
        return False
    parent = os.path.dirname(path)
    while True:
        try:
            if not os.stat(parent).st_mode & 0o001:
                return False
        except OSError:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


@functools.lru_cache(maxsize=None)
def python_command() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], str | None]:
    """How to start this Python's environment as the sandbox user.

    Returns ``(argv prefix, extra environment, note)``. Normally ``(sys.executable,
    "-s", "-B")``. When running as root and the interpreter is not usable by other
    users (e.g. a pyenv build under a 0700 /root), the same major.minor version from
    /usr/local/bin or /usr/bin is used instead, started with ``-S`` so that only this
    environment's site-packages, passed as VARBOARD_SITE_PACKAGES and added by the
    harness with `site.addsitedir`, are importable; `note` then says so.
    """
    exe = sys.executable
    if os.geteuid() != 0 or (_world_usable(exe) and _world_usable(sys.base_prefix)):
        return (exe, "-s", "-B"), (), None
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_dirs = []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths()[key]
        if path not in site_dirs and _world_usable(path):
            site_dirs.append(path)
    for base in ("/usr/local/bin", "/usr/bin"):
        candidate = os.path.join(base, version)
        if _world_usable(candidate):
            note = (f"{exe} is not usable by the sandbox user; running {candidate} with "
                    f"the site-packages of {sys.prefix}")
            return ((candidate, "-S", "-s", "-B"),
                    (("VARBOARD_SITE_PACKAGES", os.pathsep.join(site_dirs)),), note)
    return (exe, "-s", "-B"), (), f"{exe} may not be usable by the sandbox user"


# -- output capture --------------------------------------------------------------------


class _Capture(threading.Thread):
    """Reads one pipe to EOF, keeping its first and last `keep` bytes.

    `shared` is ``[total bytes of all streams, lock]``; past `cap` bytes in total the
    `overflow` event is set (the run is then killed). Memory stays below 3 * keep.
    """

    def __init__(self, pipe, keep: int, shared: list, cap: int, overflow: threading.Event):
        super().__init__(daemon=True)
        self.pipe, self.keep, self.shared, self.cap, self.overflow = pipe, keep, shared, cap, overflow
        self.head = bytearray()
        self.tail = bytearray()
        self.seen = 0

    def run(self):
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.seen += len(chunk)
            with self.shared[1]:
                self.shared[0] += len(chunk)
                if self.shared[0] > self.cap:
                    self.overflow.set()
            room = self.keep - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > 2 * self.keep:
                    del self.tail[: len(self.tail) - self.keep]
        self.pipe.close()

    def text(self) -> str:
        tail = bytes(self.tail[-self.keep:])
        omitted = self.seen - len(self.head) - len(tail)
        marker = f"\n[… {omitted} bytes omitted …]\n".encode() if omitted > 0 else b""
        return (bytes(self.head) + marker + tail).decode("utf-8", errors="replace")


# -- the run ---------------------------------------------------------------------------


def _clean_env(workdir: str, extra: Mapping[str, str] | None, limits: Limits, device: str) -> dict:
    threads = str(int(limits.threads))
    env = {
        "PATH": _SAFE_PATH,
        "HOME": workdir,
        "TMPDIR": os.path.join(workdir, "tmp"),
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MALLOC_ARENA_MAX": "2",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
    }
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[name] = threads
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif device.startswith("cuda:"):
        env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
    elif os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    for name, value in (extra or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"`env` must map strings to strings, got {name!r}: {value!r}")
        if _SECRET_NAME.search(name.upper()):
            raise ValueError(
                f"`env` variable {name!r} looks like a credential; the sandbox's "
                "environment must not contain secrets"
            )
        env[name] = value
    return env


def _device_iv(device: str) -> str:
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ValueError(f"`device` must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return device


def _chown_tree(root: str, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def _tree_size_mb(root: str) -> float:
    total = 0
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    else:
                        total += st.st_blocks * 512
        except OSError:
            continue
    return total / 2**20


def _disk_used_mb(workdir: str, uid: int | None) -> float:
    """Size of the workdir plus, for a fresh uid, what it wrote in the shared temp dirs."""
    total = _tree_size_mb(workdir)
    if uid is not None:
        for base in _SHARED_TMP_DIRS:
            try:
                with os.scandir(base) as it:
                    for entry in it:
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if st.st_uid == uid:
                            total += (_tree_size_mb(entry.path) if stat.S_ISDIR(st.st_mode)
                                      else st.st_blocks * 512 / 2**20)
            except OSError:
                continue
    return total


def _remove_leftovers(uid: int) -> None:
    """Delete what the run's uid left at the top of the shared temporary directories."""
    for base in _SHARED_TMP_DIRS:
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


_MEMORY_PATTERNS = ("MemoryError", "Cannot allocate memory", "can't allocate memory",
                    "std::bad_alloc", "out of memory", "failed to map segment from shared object")


def _classify(returncode, stderr_tail: str, limits: Limits, cpu_used: float) -> tuple[str, str]:
    last = stderr_tail[-4000:]
    if returncode == 0:
        return "ok", ""
    if returncode is not None and returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU or (
            sig == signal.SIGKILL and limits.cpu_time_s is not None
            and cpu_used >= limits.cpu_time_s
        ):
            return "cpu_time", f"exceeded the CPU-time limit of {limits.cpu_time_s:g} s"
        if sig == signal.SIGXFSZ:
            return "file_size", (f"was killed by signal SIGXFSZ: a file exceeded the "
                                 f"{limits.max_file_mb} MB limit")
        if sig == signal.SIGKILL:
            return "killed", ("was killed by signal SIGKILL (possibly the system ran out of "
                              "memory)")
        return "killed", f"was killed by signal {_signal_name(sig)}"
    if "[Errno 27] File too large" in last:
        return "file_size", f"tried to write a file larger than the {limits.max_file_mb} MB limit"
    if any(p in last for p in _MEMORY_PATTERNS):
        return "memory", f"ran out of memory (limit {limits.memory_mb} MB)"
    if "Resource temporarily unavailable" in last and ("fork" in last or "thread" in last.lower()):
        return "processes", f"reached the limit of {limits.max_processes} processes"
    return "error", f"exited with status {returncode}"


def run_sandboxed(
    argv: Sequence[str],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    device: str = "cpu",
    uid: int | None = None,
) -> SandboxResult:
    """Run `argv` confined (see the module docstring) and report what happened.

    Parameters
    ----------
    argv : sequence of str
        Program and arguments; the program is looked up with the sandbox's PATH
        (``/usr/local/bin:/usr/bin:/bin``), so pass an absolute path for a virtualenv.
    workdir : str
        Existing directory: the child's cwd and HOME. When running as root it is handed
        (recursively, without following symlinks) to the sandbox user, and a ``tmp``
        subdirectory becomes TMPDIR.
    env : mapping of str to str, optional
        Extra environment variables. Names that look like credentials (``*SECRET*``,
        ``*TOKEN*``, ``DJANGO_*``, ``DATABASE_URL``, ``CELERY_*``, ...) are refused.
    limits : Limits, optional
        Defaults to ``Limits()``.
    device : {"cpu", "cuda", "cuda:N"}
        "cpu" hides every GPU; "cuda:N" shows GPU N only; "cuda" keeps the worker's
        CUDA_VISIBLE_DEVICES.
    uid : int, optional
        As root, run as this uid/gid instead of a fresh one (e.g. 65534 for nobody).
        Leftover processes are then killed by session only, and leftover files in /tmp
        are not removed.

    Returns
    -------
    SandboxResult

    Raises
    ------
    ValueError
        For a bad argument.
    SandboxUnavailable
        If the child could not be started (a platform failure).
    """
    limits = limits or Limits()
    device = _device_iv(device)
    if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("`argv` must be a non-empty list of strings")
    workdir = os.path.abspath(workdir)
    if not os.path.isdir(workdir):
        raise ValueError(f"`workdir` {workdir!r} is not a directory")

    flags, private_mounts, isolation, warnings = _isolation_plan()
    for warning in warnings:
        logger.warning("sandbox: %s", warning)
    isolation, warnings = list(isolation), list(warnings)
    is_root = os.geteuid() == 0
    fresh_uid = is_root and uid is None
    run_uid = (_allocate_uid() if fresh_uid else uid) if is_root else None
    os.makedirs(os.path.join(workdir, "tmp"), exist_ok=True)
    if run_uid is not None:
        _chown_tree(workdir, run_uid, run_uid)
        os.chmod(workdir, 0o700)
        isolation.append(f"uid {run_uid}")
    child_env = _clean_env(workdir, env, limits, device)

    mb = 1024 * 1024
    rlimits = [
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_FSIZE, int(limits.max_file_mb * mb), int(limits.max_file_mb * mb)),
    ]
    if limits.cpu_time_s is not None:
        cpu = max(1, int(limits.cpu_time_s + 0.999))
        rlimits.append((resource.RLIMIT_CPU, cpu, cpu + 2))
    if device == "cpu":
        rlimits.append((resource.RLIMIT_AS, int(limits.memory_mb * mb), int(limits.memory_mb * mb)))
    if run_uid is not None:
        rlimits.append((resource.RLIMIT_NPROC, int(limits.max_processes), int(limits.max_processes)))
    isolation.append("rlimits")
    shm_options = f"size={max(1, int(limits.memory_mb) // 2)}m,mode=1777".encode()

    def preexec():  # runs in the child between fork and exec: no imports, no logging
        if flags:
            _check(_unshare(flags), "unshare")
            if private_mounts:
                _private_mounts(shm_options)
        os.umask(0o077)
        for res, soft, hard in rlimits:
            resource.setrlimit(res, (soft, hard))
        if run_uid is not None:
            os.setgroups([])
            os.setgid(run_uid)
            os.setuid(run_uid)
        _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it

    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv), cwd=workdir, env=child_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec,
            start_new_session=True, close_fds=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"could not start the sandboxed process: {exc}") from exc

    overflow = threading.Event()
    shared = [0, threading.Lock()]
    keep = max(256, limits.max_output_bytes // 4)
    readers = [_Capture(p, keep, shared, limits.max_output_bytes, overflow)
               for p in (proc.stdout, proc.stderr)]
    for reader in readers:
        reader.start()

    by_uid = run_uid is not None and fresh_uid

    def members(table) -> list[int]:
        if by_uid:
            return [pid for pid, info in table.items() if info[0] == run_uid]
        return [pid for pid, info in table.items() if info[1] == proc.pid]

    def kill_all():
        if run_uid is not None and fresh_uid:
            _kill_uid(run_uid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        if not by_uid:
            for pid in members(_scan_processes(with_session=True)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    reason = None
    wait_status = rusage = None
    peak_rss_kb = 0
    next_scan = next_disk = start
    deadline = start + limits.wall_time_s
    try:
        while True:
            pid, wait_status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.monotonic()
            if now >= deadline:
                reason = "timeout"
            elif overflow.is_set():
                reason = "output_limit"
            elif now >= next_scan:
                table = _scan_processes(with_session=not by_uid)
                pids = members(table)
                tasks = sum(table[p][2] for p in pids)
                rss_kb = sum(table[p][3] for p in pids)
                if rss_kb > limits.memory_mb * 1024:
                    rss_kb = sum(_pss_kb(p) for p in pids) or rss_kb
                peak_rss_kb = max(peak_rss_kb, rss_kb)
                if rss_kb > limits.memory_mb * 1024:
                    reason = "memory"
                elif tasks >= limits.max_processes:
                    reason = "processes"
                next_scan = now + (0.1 if now - start < 2 else 0.25)
            if reason is None and now >= next_disk:
                if _disk_used_mb(workdir, run_uid if fresh_uid else None) > limits.max_disk_mb:
                    reason = "disk"
                next_disk = now + 1.0
            if reason is not None:
                kill_all()
                _, wait_status, rusage = os.wait4(proc.pid, 0)
                break
            timeout = min(0.05 if now - start < 1 else 0.1, max(0.0, deadline - now))
            if pidfd is not None:
                select.select([pidfd], [], [], timeout)
            else:
                time.sleep(timeout)
        duration = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
        kill_all()  # leftovers: children that outlived the main process
    except BaseException:
        kill_all()
        proc.wait()
        raise
    finally:
        if pidfd is not None:
            os.close(pidfd)
        for reader in readers:
            reader.join(timeout=5)
        if any(r.is_alive() for r in readers):
            warnings.append("some output could not be collected: a process kept the pipe open")
        if run_uid is not None and fresh_uid:
            _remove_leftovers(run_uid)

    if reason is None and overflow.is_set():
        # The process printed past the cap and exited before the loop looked: still a failure.
        reason = "output_limit"
    stdout, stderr = readers[0].text(), readers[1].text()
    cpu_used = (rusage.ru_utime + rusage.ru_stime) if rusage else 0.0
    max_rss_mb = max(peak_rss_kb, rusage.ru_maxrss if rusage else 0) / 1024
    if reason == "timeout":
        status, message = "timeout", f"exceeded the wall-time limit of {limits.wall_time_s:g} s"
    elif reason == "output_limit":
        status, message = "output_limit", (
            f"printed more than the {limits.max_output_bytes:,}-byte output limit")
    elif reason == "memory":
        status, message = "memory", f"ran out of memory (limit {limits.memory_mb} MB)"
    elif reason == "processes":
        status, message = "processes", f"reached the limit of {limits.max_processes} processes"
    elif reason == "disk":
        status, message = "disk", f"wrote more than the {limits.max_disk_mb} MB disk limit"
    else:
        status, message = _classify(proc.returncode, stderr, limits, cpu_used)
    return SandboxResult(
        returncode=proc.returncode, status=status, message=message, stdout_tail=stdout,
        stderr_tail=stderr, duration_s=round(duration, 3), max_rss_mb=round(max_rss_mb, 1),
        isolation=tuple(isolation), warnings=tuple(warnings),
    )
