"""Warm starts: each worker process keeps the next run's sandbox started and its imports done.

While a run executes, `LocalRunner` prepares the next run's sandbox
(`execution.sandbox.warm.start_waiting`): the harness started in a fresh empty workspace
that holds only the harness's two files, confined exactly as a cold run (same bubblewrap
command line, seccomp, rlimits, a fresh uid as root), numpy and the heavy modules the last
recipe imported already imported, no CUDA context. When the next run comes, its inputs
are written into that workspace, handed to the sandbox's uid, and the harness is let go.
One sandbox serves one run and is then discarded with its workspace: nothing carries
from one run, or one team, to the next.

A waiting sandbox serves a run only when it was made for the same confinement (the
same interpreter command, extra environment, limits and device, workspace root and
harness files) and preloaded nothing the run's recipe does not import itself
(`recipe_imports`): a warm run then uses the memory and address space a cold run of
the same recipe would, only its imports happened earlier. Otherwise, or when the waiting
sandbox died, or when warming fails, the run starts cold.

Bounded cost: at most one waiting sandbox per process (a Celery pool process or a runner
service worker), made only while the machine's available memory is at least the run's
memory limit; a waiting sandbox with numpy and torch holds about 0.3-0.4 GB resident
(see docs/sandbox.md). ``VARBOARD_WARM_SANDBOXES=0`` turns warming off.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from .sandbox import Limits, SandboxUnavailable
from .sandbox.warm import Waiting, start_waiting

__all__ = [
    "COMPANIONS",
    "WARM_ENV",
    "WARMABLE",
    "WarmKey",
    "WarmPool",
    "discard_waiting",
    "recipe_imports",
    "warm_pool",
    "warming_enabled",
]

logger = logging.getLogger(__name__)

#: The setting: "0" turns warm starts off (default on where the sandbox isolates).
WARM_ENV = "VARBOARD_WARM_SANDBOXES"
#: Packages whose imports a waiting sandbox makes ahead when the last recipe made them (numpy
#: always: the harness needs it).
WARMABLE = ("torch", "transformers", "sklearn", "pandas", "scipy")
#: What a package loads lazily on first use, imported ahead with it: torch.optim loads
#: torch._dynamo (2-3 s here) when the first optimizer is made.
COMPANIONS = {"torch": ("torch._dynamo",)}
MAX_IMPORTS = 32


def warming_enabled() -> bool:
    return os.environ.get(WARM_ENV, "1").strip() != "0"


def recipe_imports(source: bytes) -> tuple[str, ...]:
    """The imports of `WARMABLE` packages that recipe.py makes anywhere, as the harness makes them
    ahead: ``"a.b"`` for ``import a.b``, ``"a.b:c"`` for ``from a.b import c`` (the name is looked
    up, which loads lazily exported objects such as transformers' classes), plus `COMPANIONS`.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [f"{node.module}:{alias.name}" for alias in node.names if alias.name != "*"]
    found = [name for name in found if name.split(".")[0].split(":")[0] in WARMABLE]
    for package, extra in COMPANIONS.items():
        if any(name.split(".")[0].split(":")[0] == package for name in found):
            found += extra
    return tuple(sorted(set(found)))[:MAX_IMPORTS]


@dataclass(frozen=True)
class WarmKey:
    """What a waiting sandbox was made for; it serves only a run with the same key."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    limits: Limits
    device: str
    workdir_root: str | None
    harness: str  # digest of the harness files

    @classmethod
    def of(cls, argv, env: dict, limits: Limits, device: str, workdir_root: str | None, harness: dict) -> WarmKey:
        digest = hashlib.sha256()
        for name in sorted(harness):
            digest.update(name.encode() + b"\0" + harness[name] + b"\0")
        return cls(tuple(argv), tuple(sorted(env.items())), limits, device, workdir_root, digest.hexdigest())


@dataclass(eq=False)
class Warm:
    """A waiting sandbox and its workspace (``run_root/work``)."""

    waiting: Waiting
    key: WarmKey
    run_root: str
    work: str

    @property
    def preloaded(self) -> tuple[str, ...]:
        """The imports it made ahead (`recipe_imports`), numpy aside."""
        return tuple(name for name in self.waiting.imports if name != "numpy")

    def fits(self, key: WarmKey, imports: tuple[str, ...]) -> bool:
        """Whether it may serve a run with `key` whose recipe imports `imports`."""
        return self.key == key and set(self.preloaded) <= set(imports) and self.waiting.alive()

    def discard(self) -> None:
        try:
            self.waiting.discard()
        finally:
            shutil.rmtree(self.run_root, ignore_errors=True)


def _available_mb() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


class WarmPool:
    """At most one waiting sandbox for this process (see the module docstring)."""

    def __init__(self):
        self.pid = os.getpid()
        self.warm: Warm | None = None

    def take(self, key: WarmKey, imports: tuple[str, ...]) -> Warm | None:
        """The waiting sandbox if it fits a run with `key` whose recipe imports `imports`; else None
        (a waiting sandbox that does not fit is discarded)."""
        warm, self.warm = self.warm, None
        if warm is None:
            return None
        if warm.fits(key, imports):
            return warm
        warm.discard()
        return None

    def prepare(
        self, key: WarmKey, imports: tuple[str, ...], harness: dict, make_workspace: Callable[[], tuple[str, str]]
    ) -> None:
        """Start the next run's sandbox unless one fitting `key` and `imports` waits already.

        Failures only log: the next run then starts cold.
        """
        if self.warm is not None:
            if self.warm.preloaded == imports and self.warm.fits(key, imports):
                return
            self.discard()
        if _available_mb() < key.limits.memory_mb:
            logger.info("warm start skipped: less memory available than the run's limit of %s MB", key.limits.memory_mb)
            return
        run_root = None
        try:
            run_root, work = make_workspace()
            for name, content in harness.items():
                with open(os.path.join(work, name), "wb") as handle:
                    handle.write(content)
            os.makedirs(os.path.join(work, "outputs"))
            waiting = start_waiting(
                key.argv,
                workdir=work,
                env=dict(key.env),
                limits=key.limits,
                device=key.device,
                imports=("numpy", *imports),
            )
        except (SandboxUnavailable, OSError, ValueError) as exc:
            if run_root is not None:
                shutil.rmtree(run_root, ignore_errors=True)
            logger.warning("warm start unavailable, runs start cold: %s", exc)
            return
        self.warm = Warm(waiting, key, run_root, work)

    def discard(self) -> None:
        warm, self.warm = self.warm, None
        if warm is not None:
            warm.discard()


_POOL: WarmPool | None = None


def warm_pool() -> WarmPool | None:
    """This process's pool, or None when warming is off (``VARBOARD_WARM_SANDBOXES=0``)."""
    global _POOL
    if _POOL is not None and _POOL.pid != os.getpid():
        _POOL = None  # inherited through fork: the sandbox belongs to the parent
    if not warming_enabled():
        if _POOL is not None:
            _POOL.discard()
        return None
    if _POOL is None:
        _POOL = WarmPool()
        atexit.register(_discard_at_exit, _POOL)
    return _POOL


def discard_waiting() -> None:
    """Kill and reap this process's waiting sandbox, if it has one.

    A Celery pool process ends through ``os._exit``, which skips ``atexit``: its waiting sandbox
    would die with it (``--die-with-parent``) but be left, unreaped, to the worker's main
    process. ``tasks`` calls this on ``worker_process_shutdown``.
    """
    if _POOL is not None and _POOL.pid == os.getpid():
        _POOL.discard()


def _discard_at_exit(pool: WarmPool) -> None:
    if pool.pid == os.getpid():
        pool.discard()
