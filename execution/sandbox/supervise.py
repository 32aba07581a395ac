"""Watching a started run until it ends, and turning that into a `SandboxResult`.

The supervisor polls the run's processes (found by the backend: a PID namespace under
bubblewrap) for memory and tasks, the workspace for disk (under bubblewrap a size-capped
tmpfs: the kernel enforces the limit, the poll only reports it), and the output for its cap, and
kills the whole run when one is exceeded or the wall time is up. Memory is the sum of the
processes' RSS; over the limit, the sum of their PSS (pages shared after fork counted once)
decides; plus what the run stored in its /dev/shm. Polling every 0.1-0.25 s can miss a
fast spike: the kernel's OOM killer (reported as "killed by SIGKILL") remains the last line.
"""

from __future__ import annotations

import os
import resource
import select
import time
from dataclasses import dataclass

from .backend import Backend, RunSpec, Started
from .classify import classify, limit_message
from .limits import Limits, SandboxResult
from .procs import cpu_seconds, pss_kb, usage

__all__ = ["Ended", "execute", "finish", "supervise"]


@dataclass
class Ended:
    """How a supervised run ended: `reason` is the limit it was stopped for, or None."""

    reason: str | None = None
    wait_status: int = 0
    rusage: resource.struct_rusage | None = None
    duration_s: float = 0.0
    peak_memory_kb: int = 0


class _Poll:
    """One look at the run's processes: memory and tasks against the limits."""

    def __init__(self, started: Started, limits: Limits, ended: Ended):
        self.started, self.limits, self.ended = started, limits, ended

    def check(self) -> str | None:
        pids = self.started.members()
        tasks, memory_kb = usage(pids)
        limit_kb = self.limits.memory_mb * 1024
        if memory_kb > limit_kb:
            memory_kb = pss_kb(pids) or memory_kb
        memory_kb += self.started.extra_memory_kb()
        self.ended.peak_memory_kb = max(self.ended.peak_memory_kb, memory_kb)
        if memory_kb > limit_kb:
            return "memory"
        if tasks >= self.limits.max_processes:
            return "processes"
        if self.limits.cpu_time_s is not None and cpu_seconds(self.started.cpu_members(pids)) > self.limits.cpu_time_s:
            return "cpu_time"  # the run's processes together: RLIMIT_CPU holds each one alone
        return None


def supervise(started: Started, limits: Limits) -> Ended:
    """Wait for the run's process to exit, stopping the run at its first exceeded limit."""
    proc, ended, start = started.proc, Ended(), time.monotonic()
    poll = _Poll(started, limits, ended)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        pidfd = None
    next_scan = next_disk = start
    deadline = start + limits.wall_time_s
    try:
        while True:
            pid, ended.wait_status, ended.rusage = started.wait4(os.WNOHANG)
            if pid:
                break
            now = time.monotonic()
            if now >= deadline:
                ended.reason = "timeout"
            elif started.output.overflow.is_set():
                ended.reason = "output_limit"
            elif now >= next_scan:
                ended.reason = poll.check()
                next_scan = now + (0.1 if now - start < 2 else 0.25)
            if ended.reason is None and now >= next_disk and not started.disk_capped_by_kernel:
                if started.disk_exceeded(limits.max_disk_mb):
                    ended.reason = "disk"
                next_disk = now + 1.0
            if ended.reason is not None:
                started.kill()
                _, ended.wait_status, ended.rusage = started.wait4(0)
                break
            timeout = min(0.05 if now - start < 1 else 0.1, max(0.0, deadline - now))
            if pidfd is not None:
                select.select([pidfd], [], [], timeout)
            else:
                time.sleep(timeout)
        ended.duration_s = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(ended.wait_status)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return ended


def _result(started: Started, ended: Ended, limits: Limits) -> SandboxResult:
    """The result of a run whose processes are all gone and whose output is read."""
    stderr = started.output.stderr()
    killed = ended.reason is not None
    returncode = started.returncode(ended.wait_status, killed)  # SandboxUnavailable: never ran
    reason = ended.reason
    if reason is None and started.output.overflow.is_set():
        reason = "output_limit"  # printed past the cap and exited before the loop looked
    cpu_used = (ended.rusage.ru_utime + ended.rusage.ru_stime) if ended.rusage else 0.0
    if reason is not None:
        status, message = limit_message(reason, limits)
    else:
        status, message = classify(
            returncode,
            stderr,
            limits,
            cpu_used,
            memory_full=returncode != 0 and started.memory_exhausted(),
            disk_full=returncode != 0 and started.disk_exceeded(limits.max_disk_mb),
        )
    max_rss_kb = max(ended.peak_memory_kb, ended.rusage.ru_maxrss if ended.rusage else 0)
    warnings = list(started.warnings)
    return SandboxResult(
        returncode=returncode,
        status=status,
        message=message,
        stdout_tail=started.output.stdout(),
        stderr_tail=stderr,
        duration_s=round(ended.duration_s, 3),
        max_rss_mb=round(max_rss_kb / 1024, 1),
        isolation=tuple(started.isolation),
        warnings=tuple(warnings),
    )


def execute(backend: Backend, spec: RunSpec) -> SandboxResult:
    """Start `spec` on `backend`, supervise it, kill what is left, and report."""
    return finish(backend.start(spec), spec.limits)


def finish(started: Started, limits: Limits) -> SandboxResult:
    """Supervise a started run (its wall clock starts now), kill what is left, and report."""
    try:
        try:
            ended = supervise(started, limits)
        finally:
            started.kill()  # leftovers: processes that outlived the main one
            if started.proc.returncode is None:  # interrupted before the child was reaped
                started.proc.wait()
        started.collect()  # its outputs, out of a workspace that ends with the handle
        if not started.output.join(timeout=5):
            started.warnings.append("some output could not be collected: a process kept the pipe open")
        return _result(started, ended, limits)
    finally:
        started.close()
