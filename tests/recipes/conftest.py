"""Fixtures for the recipe tests: the digits and text datasets, an accuracy metric, a
helper that runs a recipe file through `execute_recipe_run`, a workspace folder for the
sandbox, and a check that no sandboxed process outlives a test."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from execution.forked import template_pool
from execution.recipe_data import RecipeData
from execution.sandbox.bubblewrap import Bubblewrap
from execution.sandbox.procs import pids_in_namespace
from execution.sandbox.zygote import Template
from execution.warm import warm_pool

from .helpers import HOSTILE, MASTER_SEED, RECIPES, ROOT, accuracy, load_digits_data, plan, proba_accuracy, run_file  # noqa: F401

needs_linux = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (fresh uids, setpriv to another uid)")


@pytest.fixture(scope="session")
def digits() -> RecipeData:
    return load_digits_data()


@pytest.fixture(scope="session")
def text_data() -> RecipeData:
    import pandas as pd

    df = pd.read_csv(ROOT / "examples" / "datasets" / "text_sentiment.csv")
    return RecipeData(
        X=df["text"].to_numpy(dtype=str),
        y=df["label"].to_numpy(dtype=str),
        ids=df["id"].to_numpy(dtype=str),
        feature_names=["text"],
        classes=["negative", "neutral", "positive"],
        task="classification",
    )


#: How long a process the sandbox killed may still be listed: SIGKILLed, a process that holds gigabytes is still
#: freeing them, or its parent has yet to reap it, on a loaded machine (a forked memory hog's pid was listed once
#: under -n 2 beside other tests, and gone when looked at again). It no longer runs any code of the recipe.
EXIT_GRACE_S = 3.0


def leftovers(namespaces) -> list[int]:
    """Processes in any of the PID namespaces (``"pid:[inode]"``) but the waiting sandbox's, once those the sandbox
    killed have had :data:`EXIT_GRACE_S` to leave the process table."""
    waiting = waiting_namespaces()
    deadline = time.monotonic() + EXIT_GRACE_S
    while True:
        left = [pid for ns in namespaces if ns and ns not in waiting for pid in pids_in_namespace(ns)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def no_leftovers(monkeypatch):
    """After the test: no process is left in the PID namespace of any run it started.

    Every process of a run lives in the run's PID namespace (a daemon that double-forks
    and calls setsid included), and the sandbox kills the namespace before it returns, so
    this checks at once, allowing only a killed process's exit (:data:`EXIT_GRACE_S`).
    Yields the set of namespaces.
    """
    namespaces = set()
    start = Bubblewrap.start

    def recording(self, spec):
        run = start(self, spec)
        namespaces.add(run.namespace)
        return run

    fork = Template.fork

    def recording_fork(self, workdir):
        run = fork(self, workdir)
        namespaces.add(run.namespace)
        return run

    monkeypatch.setattr(Bubblewrap, "start", recording)
    monkeypatch.setattr(Template, "fork", recording_fork)
    yield namespaces
    assert leftovers(namespaces) == [], "a sandboxed process outlived its run"


def waiting_namespaces() -> set:
    """The PID namespaces of this process's waiting sandbox and of its template (not runs: they
    wait for the next; a template's runs each have a PID namespace of their own)."""
    pool, templates = warm_pool(), template_pool()
    waiting = {pool.warm.waiting.started.namespace} if pool and pool.warm else set()
    if templates and templates.held:
        waiting.add(templates.held.template.started.namespace)
    return waiting


@pytest.fixture
def workspace():
    """An empty folder for run_sandboxed, below a 0711 folder the run's uid may pass."""
    root = tempfile.mkdtemp(prefix="varboard-test-run-")
    os.chmod(root, 0o711)
    work = Path(root) / "work"
    work.mkdir()
    yield work
    shutil.rmtree(root, ignore_errors=True)
