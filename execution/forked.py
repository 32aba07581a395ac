"""Forked runs: one template process per worker process, one fresh confined fork per run.

With ``VARBOARD_FORK_RUNS=1`` a `LocalRunner` keeps a template (`execution.sandbox.zygote`):
the harness started under bubblewrap with numpy and the recipe's heavy imports
(`execution.warm.recipe_imports`) done and no CUDA context; each run is a fork of it that
enters namespaces of its own, a fresh /proc, /dev/shm and workspace tmpfs, drops every
capability and loads the seccomp filter before it reads its inputs. A run of the same
recipe right after another costs a fork, not the imports.

A template serves runs with the same `WarmKey` (interpreter command, environment, limits,
device, workspace root, harness files) and the same imports: a template never holds more
than its run's recipe imports itself, so a forked run's memory is a cold run's. A run
that fits no template discards it and starts one for its own key (the run pays its imports
once, as a cold run would). At most one template per process, counted in `TemplatePool.made`.

Fallbacks: when forking is off or unavailable here (no bubblewrap), today's warm sandboxes
and cold starts; when the template cannot be made or a fork fails, the run starts cold (or
warm) and its log says why (`ForkFailed` messages become the run's warnings).
Default off (see docs/sandbox.md, "Forked runs").
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from .sandbox.zygote import ForkFailed, Template, start_template
from .warm import WarmKey, _available_mb

__all__ = ["FORK_ENV", "TEMPLATE_FILE", "TemplatePool", "discard_template", "forking_enabled", "template_pool"]

logger = logging.getLogger(__name__)

#: The setting: "1" turns forked runs on (default off).
FORK_ENV = "VARBOARD_FORK_RUNS"
#: The template's own file, beside the harness in the template's workspace only.
TEMPLATE_FILE = "varboard_template.py"


def forking_enabled() -> bool:
    return os.environ.get(FORK_ENV, "0").strip() == "1"


@dataclass(eq=False)
class Held:
    """A template, what it was made for, and its workspace (``run_root/work``)."""

    template: Template
    key: WarmKey
    imports: tuple[str, ...]
    run_root: str

    def fits(self, key: WarmKey, imports: tuple[str, ...]) -> bool:
        return self.key == key and self.imports == imports and self.template.alive()

    def discard(self) -> None:
        try:
            self.template.discard()
        finally:
            shutil.rmtree(self.run_root, ignore_errors=True)


class TemplatePool:
    """At most one template for this process (see the module docstring)."""

    def __init__(self):
        self.pid = os.getpid()
        self.held: Held | None = None
        self.made = 0  # templates started by this process

    def template(
        self,
        key: WarmKey,
        imports: tuple[str, ...],
        harness: dict,
        template_file: bytes,
        make_workspace: Callable[[], tuple[str, str]],
    ) -> Template:
        """The template for `key` and `imports`, started (and its imports awaited) if need be.

        Raises ForkFailed (with the reason) when none can be made.
        """
        if self.held is not None and self.held.fits(key, imports):
            return self.held.template
        self.discard()
        if _available_mb() < key.limits.memory_mb:
            raise ForkFailed(f"less memory available than the run's limit of {key.limits.memory_mb} MB")
        run_root, work = make_workspace()
        try:
            for name, content in {**harness, TEMPLATE_FILE: template_file}.items():
                with open(os.path.join(work, name), "wb") as handle:
                    handle.write(content)
            template = start_template(
                key.argv,
                workdir=work,
                env=dict(key.env),
                limits=key.limits,
                device=key.device,
                imports=("numpy", *imports),
            )
        except (OSError, ValueError) as exc:
            shutil.rmtree(run_root, ignore_errors=True)
            raise exc if isinstance(exc, ForkFailed) else ForkFailed(str(exc)) from exc
        self.held = Held(template, key, imports, run_root)
        self.made += 1
        return template

    def discard(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.discard()


_POOL: TemplatePool | None = None


def template_pool() -> TemplatePool | None:
    """This process's pool, or None when forked runs are off."""
    global _POOL
    if _POOL is not None and _POOL.pid != os.getpid():
        _POOL = None  # inherited through fork: the template belongs to the parent
    if not forking_enabled():
        if _POOL is not None:
            _POOL.discard()
        return None
    if _POOL is None:
        _POOL = TemplatePool()
        atexit.register(_discard_at_exit, _POOL)
    return _POOL


def discard_template() -> None:
    """Kill and reap this process's template, if it has one (a Celery pool process's shutdown)."""
    if _POOL is not None and _POOL.pid == os.getpid():
        _POOL.discard()


def _discard_at_exit(pool: TemplatePool) -> None:
    if pool.pid == os.getpid():
        pool.discard()
