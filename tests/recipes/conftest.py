"""Fixtures for the recipe tests: the digits and text datasets, an accuracy metric, a
helper that runs a recipe file through `execute_recipe_run`, and a check that no
sandboxed process or temporary file outlives a test."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from evaluation.seeds import SOURCES, seed_record
from evaluation.splits import out_of_bootstrap_split
from tasks import sandbox
from tasks.runner import RecipeData, execute_recipe_run
from tasks.sandbox import Limits

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "examples" / "recipes"
HOSTILE = ROOT / "examples" / "hostile"
MASTER_SEED = 2024

needs_linux = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the sandbox needs Linux")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (fresh uids, RLIMIT_NPROC)")


def accuracy(y_true, y_pred):
    """Accuracy and per-example correctness, the metric signature the runner expects."""
    outcomes = (np.asarray(y_true) == np.asarray(y_pred)).astype(float)
    return float(outcomes.mean()), outcomes


def proba_accuracy(y_true, proba, classes=tuple(range(10))):
    return accuracy(y_true, np.asarray(classes)[np.argmax(proba, axis=1)])


@pytest.fixture(scope="session")
def digits() -> RecipeData:
    from sklearn.datasets import load_digits

    d = load_digits()
    return RecipeData(X=d.data, y=d.target, ids=np.array([f"d{i}" for i in range(len(d.target))]),
                      feature_names=[f"pixel_{i}" for i in range(64)], classes=list(range(10)),
                      task="classification")


@pytest.fixture(scope="session")
def text_data() -> RecipeData:
    import pandas as pd

    df = pd.read_csv(ROOT / "examples" / "datasets" / "text_sentiment.csv")
    return RecipeData(X=df["text"].to_numpy(dtype=str), y=df["label"].to_numpy(dtype=str),
                      ids=df["id"].to_numpy(dtype=str), feature_names=["text"],
                      classes=["negative", "neutral", "positive"], task="classification")


def plan(data: RecipeData, run_index: int, randomize=SOURCES):
    seeds = seed_record(MASTER_SEED, run_index, randomize)
    stratify = data.y if data.task == "classification" else None
    return seeds, out_of_bootstrap_split(len(data.y), seeds["split"], stratify=stratify)


def run_file(path: Path, data: RecipeData, *, run_index: int = 0, limits: Limits | None = None,
             metric=accuracy, prediction_kind: str = "label", **kwargs):
    seeds, split = plan(data, run_index)
    return execute_recipe_run(
        recipe_source=path.read_text(), data=data, split=split, seeds=seeds, metric=metric,
        prediction_kind=prediction_kind, limits=limits or Limits(wall_time_s=120), **kwargs)


def sandbox_processes(uids) -> list[int]:
    """Live (non-zombie) processes running as one of `uids`."""
    return [pid for pid, info in sandbox._scan_processes().items() if info[0] in uids]


def sandbox_files(uids) -> list[str]:
    """Entries of the shared temporary directories owned by one of `uids`."""
    found = []
    for base in sandbox._SHARED_TMP_DIRS:
        try:
            for entry in os.scandir(base):
                if entry.stat(follow_symlinks=False).st_uid in uids:
                    found.append(entry.path)
        except OSError:
            continue
    return found


@pytest.fixture
def no_leftovers(monkeypatch):
    """After the test: no process or /tmp file of the uids its sandboxed runs used.

    Only this test's uids are checked: other sandboxes may run on the machine meanwhile.
    """
    uids = set()
    allocate = sandbox._allocate_uid

    def recording():
        uid = allocate()
        uids.add(uid)
        return uid

    monkeypatch.setattr(sandbox, "_allocate_uid", recording)
    yield uids
    deadline = time.monotonic() + 3
    while sandbox_processes(uids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes(uids) == [], "a sandboxed process outlived its run"
    assert sandbox_files(uids) == [], "a sandboxed run left files in a shared temporary directory"
