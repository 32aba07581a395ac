"""Hostile recipes (examples/hostile/): each fails its own run with a message naming the
problem, leaves nothing behind, and the next run in the same process succeeds."""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np
import pytest

from tasks.sandbox import Limits

from .conftest import HOSTILE, RECIPES, needs_linux, needs_root, plan, run_file

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

LIMITS = Limits(wall_time_s=3, memory_mb=1024, max_processes=32, max_file_mb=10)
SECRET_KEY = "fake-django-secret-5f1e9c"
DB_PASSWORD = "db-password-71c0a2"
DB_CONTENT = "SQLITE-DATABASE-CONTENT-93be4d"
LABEL_CONTENT = "HIDDEN-LABEL-CONTENT-0d6a11"


def n_rows(data):
    _, split = plan(data, 0)
    return len(split.valid) + len(split.test)


def assert_next_run_succeeds(data):
    out = run_file(RECIPES / "trivial.py", data, limits=LIMITS)
    assert out.status == "succeeded", out.error


@pytest.fixture
def root_only_dir():
    """A 0700 directory owned by root, holding a database file and hidden labels (0644)."""
    base = tempfile.mkdtemp(prefix="varboard-secrets-")  # 0700
    paths = {"db": os.path.join(base, "db.sqlite3"), "labels": os.path.join(base, "hidden_labels.csv"),
             "labels_npy": os.path.join(base, "hidden_labels.npy")}
    with open(paths["db"], "w") as fh:
        fh.write(DB_CONTENT)
    with open(paths["labels"], "w") as fh:
        fh.write(f"id,label\nd0,{LABEL_CONTENT}\n")
    np.save(paths["labels_npy"], np.arange(10))
    for path in paths.values():
        os.chmod(path, 0o644)
    yield paths
    for path in paths.values():
        os.unlink(path)
    os.rmdir(base)


@pytest.mark.parametrize("name, expected", [
    ("raises", "the recipe raised ValueError: boom after 3 steps (line 6 of recipe.py)"),
    ("infinite_loop", "the run exceeded the wall-time limit of 3 s"),
    ("memory_hog", re.compile(r"the run ran out of memory \(limit 1024 MB\) \(MemoryError: .*line 9 of recipe.py\)")),
    ("memory_children", "the run ran out of memory (limit 1024 MB)"),
    ("huge_file", re.compile(r"the recipe tried to write a file larger than the 10 MB limit \(OSError: "
                             r"\[Errno 27\] File too large, line 8 of recipe.py\)")),
    ("nan_predictions", "the recipe returned NaN in 3 predictions"),
    ("garbage_output", "the run printed more than the 1,000,000-byte output limit"),
])
def test_hostile_recipe_fails_its_run(digits, name, expected):
    limits = Limits(wall_time_s=10, memory_mb=1024, max_file_mb=10) if name.startswith("memory") else LIMITS
    out = run_file(HOSTILE / f"{name}.py", digits, limits=limits)
    assert out.status == "failed" and out.test_score is None and out.outcomes is None
    if isinstance(expected, str):
        assert out.error == expected
    else:
        assert expected.fullmatch(out.error), out.error
    assert_next_run_succeeds(digits)


def test_wrong_number_of_predictions(digits):
    out = run_file(HOSTILE / "wrong_length.py", digits, limits=LIMITS)
    assert out.error == f"the recipe returned 10 predictions for {n_rows(digits)} rows of test_inputs"
    assert_next_run_succeeds(digits)


def test_garbage_output_is_capped(digits):
    out = run_file(HOSTILE / "garbage_output.py", digits, limits=LIMITS)
    assert out.sandbox_status == "output_limit"
    assert len(out.log) < 1_100_000 and "bytes omitted …]" in out.log


@needs_root
def test_fork_bomb(digits):
    out = run_file(HOSTILE / "fork_bomb.py", digits, limits=Limits(wall_time_s=20, max_processes=32))
    assert out.status == "failed" and out.error == "the run reached the limit of 32 processes"
    assert out.duration_s < 10
    assert_next_run_succeeds(digits)


def test_network_is_unreachable(digits):
    out = run_file(HOSTILE / "network.py", digits, limits=LIMITS)
    assert out.status == "failed"
    assert out.error.startswith("the recipe raised ConnectionError: 127.0.0.1:5432 ")
    assert "1.1.1.1:53" in out.error and "CONNECTED" not in out.log
    assert out.error.count("Network is unreachable") == 2 or os.geteuid() != 0
    assert_next_run_succeeds(digits)


@needs_root
def test_secrets_database_and_hidden_labels_are_out_of_reach(digits, root_only_dir, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("DATABASE_URL", f"postgres://varboard:{DB_PASSWORD}@127.0.0.1:5432/varboard")
    monkeypatch.setenv("CELERY_BROKER_URL", f"redis://:{DB_PASSWORD}@127.0.0.1:6379/0")
    paths = [root_only_dir["db"], root_only_dir["labels"]]
    out = run_file(HOSTILE / "read_secrets.py", digits, limits=LIMITS, hyperparameters={"paths": paths})
    assert out.status == "failed", out.log
    assert out.error.startswith("the recipe raised PermissionError: could not read anything: ")
    for path in paths:
        assert f"PermissionError reading {path}" in out.error
    assert "PermissionError listing" in out.error and "/environ" in out.error
    for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        assert f"KeyError {name}" in out.error
    everything = out.log + out.error + repr(out.fingerprint) + repr(out.hyperparameters)
    for secret in (SECRET_KEY, DB_PASSWORD, DB_CONTENT, LABEL_CONTENT):
        assert secret not in everything
    assert_next_run_succeeds(digits)


@needs_root
def test_symlinked_outputs_are_not_followed(digits, root_only_dir):
    out = run_file(HOSTILE / "symlink_swap.py", digits, limits=LIMITS,
                   hyperparameters={"target": root_only_dir["labels_npy"]})
    assert out.status == "failed"
    assert out.error == ("outputs/predictions_0.npy is a symbolic link; the recipe must not replace the "
                         "harness's output files")
    assert_next_run_succeeds(digits)


def test_detached_daemon_does_not_outlive_its_run(digits):
    out = run_file(HOSTILE / "daemon_escape.py", digits, limits=LIMITS)
    assert out.status == "succeeded", out.error
    # the no_leftovers fixture asserts the daemon is gone
