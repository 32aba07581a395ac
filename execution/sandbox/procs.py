"""What the sandbox reads from /proc and the disk: a run's processes, their memory and
tasks, the uids in use, and the size of a folder tree."""

from __future__ import annotations

import os
import stat

__all__ = [
    "cpu_seconds",
    "pid_namespace",
    "pids_in_namespace",
    "pids_in_session",
    "pss_kb",
    "tree_size_mb",
    "uids_in_use",
    "usage",
]


def _status_field(status: bytes, key: bytes) -> bytes:
    at = status.find(key)
    if at < 0:
        return b"0"
    return status[at + len(key) :].split(None, 1)[0]


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def pid_namespace(pid: int | str) -> str | None:
    """``"pid:[inode]"`` of a process's PID namespace, or None (gone, or not ours to read)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def pids_in_namespace(namespace: str) -> list[int]:
    """Every process whose PID namespace is `namespace` (``"pid:[inode]"``).

    A PID namespace keeps its processes: one that double-forks and calls setsid stays in
    it, reparented to the namespace's init. As root, or as the user that created the
    namespace, the link is readable even for a process that made itself non-dumpable.
    """
    return [pid for pid in _pids() if pid_namespace(pid) == namespace]


def _stat_fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name, from the state (field 3) on: the name,
    in parentheses, may hold spaces and parentheses itself. OSError when the process is gone."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        line = fh.read()
    return line[line.rfind(b")") + 2 :].split()


def pids_in_session(sid: int) -> list[int]:
    """Processes of session `sid` (the unsandboxed mode's only way to find a run's processes)."""
    found = []
    for pid in _pids():
        try:
            if int(_stat_fields(pid)[3]) == sid:  # state ppid pgrp session
                found.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return found


def usage(pids: list[int]) -> tuple[int, int]:
    """(tasks, resident kB) of `pids` together; zombies and vanished processes count 0."""
    tasks = rss_kb = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                status = fh.read()
        except OSError:
            continue
        if _status_field(status, b"\nState:") == b"Z":
            continue
        tasks += int(_status_field(status, b"\nThreads:"))
        rss_kb += int(_status_field(status, b"\nVmRSS:"))
    return tasks, rss_kb


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of `pids` and of every descendant they reaped, together: the sum over the processes of
    ``utime + stime + cutime + cstime`` (``/proc/<pid>/stat``). A process that ended counts in its
    reaper's ``cutime``/``cstime`` (or as a zombie, its own, until reaped), so a run's processes,
    living or ended, are each counted once. RLIMIT_CPU counts each process alone: eight children of
    1.5 s each passed a limit of 2 s (a reviewer, 2026-11-30)."""
    ticks = 0
    for pid in pids:
        try:
            ticks += sum(int(v) for v in _stat_fields(pid)[11:15])  # utime stime cutime cstime (fields 14-17)
        except (OSError, ValueError, IndexError):
            continue
    return ticks / _TICKS


def pss_kb(pids: list[int]) -> int:
    """Proportional set size of `pids` together: pages shared after fork counted once."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def uids_in_use() -> set[int]:
    """Real uids of every live process."""
    uids = set()
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                uids.add(int(_status_field(fh.read(), b"\nUid:")))
        except (OSError, ValueError):
            continue
    return uids


def tree_size_mb(root: str) -> float:
    """Disk space (allocated blocks) of every file under `root`, links not followed."""
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
