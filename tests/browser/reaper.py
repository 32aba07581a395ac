"""Run a program so that nothing it starts outlives this process (standard library, Linux).

    python tests/browser/reaper.py PROGRAM [ARGS...]

Why: chromedriver starts Chromium, which starts its own helpers; a chromedriver that is
killed leaves them running. Started with ``PR_SET_PDEATHSIG`` (the browser fixture's
``die_with_parent``), this process gets SIGTERM when the test run dies, however it dies.
It is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every orphaned descendant is
re-parented to it; when PROGRAM exits, or this process gets SIGTERM, SIGINT or SIGHUP, it
SIGKILLs every descendant left and exits with PROGRAM's status (128 + N after signal N).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[int]:
    """Live (not zombie) processes below `root`, from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def kill_descendants(timeout: float = 10.0) -> None:
    """SIGKILL every descendant and reap them, until none is left (or `timeout` passed)."""
    deadline = time.monotonic() + timeout
    while (left := descendants(os.getpid())) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
        reap()
    reap()


def reap() -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: reaper.py PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    child = subprocess.Popen(argv)
    try:
        return child.wait()
    finally:
        kill_descendants()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
