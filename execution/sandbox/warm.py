"""A sandboxed process started ahead of its run (a warm start).

`start_waiting` starts the run's program exactly as `run_sandboxed` would (the same
bubblewrap command line: namespaces, read-only view, seccomp, rlimits, a fresh uid as
root, the same clean environment), except that its stdin is a pipe and it keeps one more
file descriptor, the *ack* pipe, whose number it finds in ``VARBOARD_WARM``. What to
import ahead comes as the first line of its stdin (``"imports numpy,torch,transformers:BertConfig"``:
a module, or a module and a name to look up in it), never in its environment or command line,
which the run could read back (``/proc/self/environ``; bwrap, the sandbox's pid 1, shows its
``--setenv`` arguments in ``/proc/1/cmdline``): the import list is the previous recipe's,
maybe another team's. The harness imports them, forgets the list, writes
``ready`` on the ack pipe, and blocks reading its stdin. `Waiting.release` hands the
workspace (by then holding the run's inputs) to the run's uid and writes ``go``; the
harness replaces its stdin with /dev/null, closes the ack pipe after writing
``started``, drops ``VARBOARD_WARM`` from its environment and only then reads its inputs
and the recipe. `Waiting.finish` supervises the run from that moment, as a cold run is
supervised from its start.

A waiting process that died before it took the go (killed, out of memory) raises
`WarmStartFailed`: the caller runs the same inputs cold. One waiting process serves one
run; `Waiting.discard` kills it (closing its stdin alone also ends it).

No CUDA context is made ahead: importing torch does not initialise CUDA (nothing before
the go calls into ``torch.cuda``), so the run initialises its pinned device itself, as
in a cold start.
"""

from __future__ import annotations

import os
import re
import select
import time
from collections.abc import Mapping, Sequence

from .backend import RunSpec
from .bubblewrap import Bubblewrap, BwrapRun, hand_over
from .environment import check_device, check_extra_env
from .isolation import select_backend
from .limits import Limits, SandboxResult, SandboxUnavailable
from .supervise import finish

__all__ = ["WARM_ENV", "Waiting", "WarmStartFailed", "start_waiting"]

#: The harness's switch into warm mode: ``"<ack fd>"`` (the imports come on stdin).
WARM_ENV = "VARBOARD_WARM"


class WarmStartFailed(SandboxUnavailable):
    """The waiting process ended before its run started: nothing of the run executed."""


class Waiting:
    """A sandboxed program blocked before its run (see the module docstring)."""

    def __init__(self, started: BwrapRun, limits: Limits, ack_fd: int, imports: tuple[str, ...]):
        self.started, self.limits, self.imports = started, limits, imports
        self.created = time.monotonic()
        self._ack_fd, self._ack = ack_fd, b""
        self._released = False

    def _read_ack(self, timeout: float) -> bytes:
        """What the harness wrote on the ack pipe so far, waiting up to `timeout` s for a first byte."""
        while self._ack_fd >= 0:
            ready, _, _ = select.select([self._ack_fd], [], [], timeout)
            if not ready:
                break
            chunk = os.read(self._ack_fd, 64)
            if not chunk:
                self._close_ack()
                break
            self._ack += chunk
            timeout = 0.0
        return self._ack

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether its imports are done and it waits for the go (waiting up to `timeout` s)."""
        deadline = time.monotonic() + timeout
        while b"ready\n" not in self._read_ack(max(0.0, deadline - time.monotonic())):
            if self._ack_fd < 0 or time.monotonic() >= deadline:
                return False
        return True

    def alive(self) -> bool:
        """Whether it still waits (its process runs and the go was not sent)."""
        return not self._released and self.started.proc.poll() is None

    def release(self) -> None:
        """Give the workspace, now holding the run's inputs, to the run's uid; send the go."""
        if not self.alive():
            raise WarmStartFailed("the waiting sandbox ended before its run")
        if self.started.uid is not None:
            hand_over(self.started.workdir, self.started.uid)
        self._released = True
        assert self.started.proc.stdin is not None  # started with a stdin pipe (`start_waiting`)
        try:
            self.started.bring_in()  # the inputs, into the sandbox's own workspace
            self.started.proc.stdin.write(b"go\n")
            self.started.proc.stdin.close()
        except OSError as exc:
            self.discard()
            raise WarmStartFailed(f"the waiting sandbox did not take its run: {exc}") from exc

    def finish(self) -> SandboxResult:
        """Supervise the released run to its end (its wall clock starts now) and report."""
        try:
            result = finish(self.started, self.limits)
        except SandboxUnavailable as exc:
            failure: Exception | None = exc
        else:
            failure = None
        if b"started\n" not in self._read_ack(0):
            raise WarmStartFailed(f"the waiting sandbox ended before its run started ({failure or result.status})")
        self._close_ack()
        if failure is not None:
            raise failure
        return result

    def _close_ack(self) -> None:
        if self._ack_fd >= 0:
            os.close(self._ack_fd)
            self._ack_fd = -1

    def discard(self) -> None:
        """Kill it (if it still runs) and release what it holds."""
        started = self.started
        try:
            if started.proc.stdin and not started.proc.stdin.closed:
                started.proc.stdin.close()
        except OSError:
            pass
        started.stop()
        self._close_ack()


def start_waiting(
    argv: Sequence[str],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    device: str = "cpu",
    imports: Sequence[str] = (),
) -> Waiting:
    """Start `argv` (the harness) confined exactly as `run_sandboxed` would, importing
    `imports` and then waiting for its run (see the module docstring).

    Raises SandboxUnavailable when it cannot start, or where runs are not isolated by
    bubblewrap (warm starts are made only there); IsolationUnavailable when nothing
    can be isolated.
    """
    limits = limits or Limits()
    device = check_device(device)
    backend = select_backend()
    if not isinstance(backend, Bubblewrap):
        raise SandboxUnavailable("warm starts need bubblewrap")
    for name in imports:
        if not re.fullmatch(r"[A-Za-z_][\w.]*(:\w+)?", name):
            raise ValueError(f"`imports` holds {name!r}, which is neither 'module' nor 'module:name'")
    ack_read, ack_write = os.pipe()
    extra = {**check_extra_env(env), WARM_ENV: str(ack_write)}
    spec = RunSpec(
        argv=tuple(argv),
        workdir=os.path.abspath(workdir),
        env=extra,
        limits=limits,
        device=device,
        stdin_pipe=True,
        pass_fds=(ack_write,),
    )
    try:
        started = backend.start(spec)
    except BaseException:
        os.close(ack_read)
        raise
    finally:
        os.close(ack_write)
    waiting = Waiting(started, limits, ack_read, tuple(imports))
    assert started.proc.stdin is not None  # spec.stdin_pipe
    try:  # on stdin, not in the environment or argv: /proc/1/cmdline shows bwrap's --setenv
        started.proc.stdin.write(f"imports {','.join(imports)}\n".encode())
        started.proc.stdin.flush()
    except OSError as exc:
        waiting.discard()
        raise WarmStartFailed(f"the waiting sandbox did not take its imports: {exc}") from exc
    return waiting
