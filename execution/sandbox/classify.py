"""From how a run ended to a status and one sentence for the user."""

from __future__ import annotations

import signal

from .limits import Limits

__all__ = ["classify", "limit_message"]

_MEMORY_PATTERNS = (
    "MemoryError",
    "Cannot allocate memory",
    "can't allocate memory",
    "std::bad_alloc",
    "out of memory",
    "failed to map segment from shared object",
)

_DISK_PATTERNS = ("No space left on device", "[Errno 28]")


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def limit_message(reason: str, limits: Limits) -> tuple[str, str]:
    """(status, message) for a run the supervisor stopped on `reason`."""
    messages = {
        "timeout": f"exceeded the wall-time limit of {limits.wall_time_s:g} s",
        "output_limit": f"printed more than the {limits.max_output_bytes:,}-byte output limit",
        "memory": f"ran out of memory (limit {limits.memory_mb} MB)",
        "processes": f"reached the limit of {limits.max_processes} processes",
        "disk": f"wrote more than the {limits.max_disk_mb} MB disk limit",
        "cpu_time": f"exceeded the CPU-time limit of {limits.cpu_time_s or 0:g} s (all its processes together)",
    }
    return reason, messages[reason]


def _by_signal(sig: int, limits: Limits, cpu_used: float) -> tuple[str, str]:
    if sig == signal.SIGXCPU or (
        sig == signal.SIGKILL and limits.cpu_time_s is not None and cpu_used >= limits.cpu_time_s
    ):
        return "cpu_time", f"exceeded the CPU-time limit of {limits.cpu_time_s:g} s"
    if sig == signal.SIGXFSZ:
        return "file_size", (f"was killed by signal SIGXFSZ: a file exceeded the {limits.max_file_mb} MB limit")
    if sig == signal.SIGKILL:
        return "killed", "was killed by signal SIGKILL (possibly the system ran out of memory)"
    return "killed", f"was killed by signal {_signal_name(sig)}"


def classify(
    returncode: int | None,
    stderr_tail: str,
    limits: Limits,
    cpu_used: float,
    memory_full: bool = False,
    disk_full: bool = False,
) -> tuple[str, str]:
    """(status, message) of a run that ended by itself.

    `memory_full`: the run filled its memory-backed /dev/shm, so a failure is for memory.
    `disk_full`: the run filled its size-capped workspace, so a failure is for disk.
    """
    last = stderr_tail[-4000:]
    if returncode == 0:
        return "ok", ""
    if returncode is not None and returncode < 0:
        return _by_signal(-returncode, limits, cpu_used)
    if "[Errno 27] File too large" in last:
        return "file_size", f"tried to write a file larger than the {limits.max_file_mb} MB limit"
    if disk_full:
        return limit_message("disk", limits)
    if memory_full:
        return limit_message("memory", limits)
    if any(p in last for p in _DISK_PATTERNS):  # the workspace tmpfs refused a write (ENOSPC)
        return limit_message("disk", limits)
    if any(p in last for p in _MEMORY_PATTERNS):
        return limit_message("memory", limits)
    if "Resource temporarily unavailable" in last and ("fork" in last or "thread" in last.lower()):
        return limit_message("processes", limits)
    return "error", f"exited with status {returncode}"
