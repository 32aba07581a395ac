"""Warm starts (execution.warm): what a waiting sandbox holds, that runs in one give the same
scores as cold runs, that it imports ahead without touching CUDA, and that anything
unusable falls back to a cold start. The hostile recipes run warm in test_hostile.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from execution import warm as warm_module
from execution.runners import LocalRunner
from execution.sandbox import Limits
from execution.sandbox.procs import pids_in_namespace
from execution.sandbox.warm import Waiting
from execution.warm import WARM_ENV, WARMABLE, recipe_imports, warm_pool
from execution.workspace import HARNESS_FILES

from .conftest import RECIPES, needs_linux, run_file

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

LIMITS = Limits(wall_time_s=120)
REPORT_PRELOADED = """
import sys
PRELOADED = sorted(name for name in ("torch", "transformers", "sklearn") if name in sys.modules)
import numpy as np
import torch

def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    print("REPORT", PRELOADED, torch.cuda.is_initialized(), sys.stdin.read(), sorted(__import__("os").environ))
    return np.full(len(test_inputs.X), train.y[0])
"""


@pytest.fixture
def warm(monkeypatch):
    monkeypatch.setenv(WARM_ENV, "1")
    yield LocalRunner()
    if warm_pool() is not None:
        warm_pool().discard()


def _run(path_or_source, data, runner, run_index=0, tmp_path=None):
    path = path_or_source
    if tmp_path is not None:
        path = tmp_path / "recipe.py"
        path.write_text(path_or_source)
    return run_file(path, data, run_index=run_index, limits=LIMITS, runner=runner)


def test_recipe_imports_are_read_from_the_source():
    source = (
        b"import os\nimport torch.nn as nn\nfrom transformers import AutoModel\nfrom . import x\n"
        b"def f():\n    import sklearn.linear_model\n"
    )
    assert recipe_imports(source) == ("sklearn.linear_model", "torch._dynamo", "torch.nn", "transformers:AutoModel")
    assert recipe_imports(b"this is not python(") == () and "torch" in WARMABLE


def test_the_imports_made_ahead_never_call_into_torch_cuda():
    """What a waiting sandbox imports for the example torch and transformers recipes calls none of
    torch.cuda's entry points (a CPU build here: on a GPU machine this is what keeps the CUDA
    context for the run, made on its pinned device)."""
    imports = sorted(
        {
            *recipe_imports((RECIPES / "torch_cnn_digits.py").read_bytes()),
            *recipe_imports((RECIPES / "tiny_transformer_text.py").read_bytes()),
        }
    )
    code = textwrap.dedent(f"""
        import importlib, torch
        calls = []
        for name in ("is_available", "device_count", "init", "_lazy_init", "current_device", "set_device",
                     "get_device_properties", "get_device_name", "manual_seed_all", "synchronize"):
            original = getattr(torch.cuda, name)
            def wrapper(*args, _original=original, _name=name, **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)
            setattr(torch.cuda, name, wrapper)
        for entry in {imports!r}:
            module, _, name = entry.partition(":")
            loaded = importlib.import_module(module)
            if name:
                getattr(loaded, name)
        print(calls, torch.cuda.is_initialized())
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert "transformers:BertForSequenceClassification" in imports and "torch._dynamo" in imports
    assert out.stdout.strip().splitlines()[-1] == "[] False", out.stderr[-2000:]


def test_a_waiting_sandbox_holds_only_the_harness(warm):
    assert warm.prewarm(LIMITS, recipe=b"import torch\n")
    waiting = warm_pool().warm
    assert sorted(os.listdir(waiting.work)) == sorted([*HARNESS_FILES, "outputs", "tmp"])
    assert os.listdir(os.path.join(waiting.work, "outputs")) == []
    assert waiting.preloaded == ("torch", "torch._dynamo") and waiting.waiting.alive()


@pytest.mark.parametrize("recipe, run_index", [("torch_mlp", 0), ("torch_mlp", 1), ("logistic_regression", 2)])
def test_same_seeds_give_the_same_scores_warm_or_cold(recipe, run_index, digits, warm, monkeypatch):
    path = RECIPES / f"{recipe}.py"
    monkeypatch.setenv(WARM_ENV, "0")
    cold = _run(path, digits, warm, run_index)
    monkeypatch.setenv(WARM_ENV, "1")
    assert warm.prewarm(LIMITS, recipe=path.read_bytes())
    hot = _run(path, digits, warm, run_index)
    assert cold.status == hot.status == "succeeded", (cold.error, hot.error)
    assert (cold.fingerprint["warm_start"], hot.fingerprint["warm_start"]) == (False, True)
    assert hot.test_score == cold.test_score and hot.valid_score == cold.valid_score
    np.testing.assert_array_equal(hot.outcomes, cold.outcomes)


def _report(out) -> str:
    assert out.status == "succeeded", out.error
    return next(line for line in out.log.splitlines() if line.startswith("REPORT "))


def test_torch_is_imported_ahead_without_cuda_and_the_recipe_sees_a_cold_process(digits, warm, tmp_path, monkeypatch):
    monkeypatch.setenv(WARM_ENV, "0")
    cold = _report(_run(REPORT_PRELOADED, digits, warm, tmp_path=tmp_path))
    monkeypatch.setenv(WARM_ENV, "1")
    assert warm.prewarm(LIMITS, recipe=REPORT_PRELOADED.encode())
    out = _run(REPORT_PRELOADED, digits, warm, tmp_path=tmp_path)
    assert out.fingerprint["warm_start"]
    hot = _report(out)
    assert cold.startswith("REPORT [] False  [") and "VARBOARD_WARM" not in cold  # no CUDA context, stdin empty
    assert hot == cold.replace("[]", "['torch']", 1)  # preloaded; the same environment, stdin, no CUDA


def test_a_sandbox_preloaded_beyond_the_recipes_imports_is_not_used(digits, warm):
    assert warm.prewarm(LIMITS, recipe=b"import torch\n")
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False
    assert warm_pool().warm.preloaded == ()  # the next one is made for the trivial recipe


def test_other_limits_start_cold(digits, warm):
    assert warm.prewarm(Limits(wall_time_s=99), recipe=(RECIPES / "trivial.py").read_bytes())
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False
    assert warm_pool().warm.key.limits == LIMITS


def test_a_dead_waiting_sandbox_falls_back_to_a_cold_start(digits, warm):
    assert warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    warm_pool().warm.waiting.started.kill()
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False


def test_a_sandbox_that_dies_at_the_go_reruns_cold(digits, warm, monkeypatch):
    release = Waiting.release

    def dying(self):
        self.started.kill()  # the harness and its init are gone; bwrap's monitor may not be yet
        release(self)

    monkeypatch.setattr(Waiting, "release", dying)
    assert warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False, out.error


def test_the_setting_turns_warming_off(digits, warm, monkeypatch):
    assert warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    waiting = warm_pool().warm
    monkeypatch.setenv(WARM_ENV, "0")
    assert warm_pool() is None and not waiting.waiting.alive() and not os.path.exists(waiting.run_root)
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False
    assert not warm.prewarm(LIMITS)


def test_no_waiting_sandbox_without_the_memory_for_its_run(digits, warm, monkeypatch):
    monkeypatch.setattr(warm_module, "_available_mb", lambda: LIMITS.memory_mb - 1.0)
    assert not warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    out = _run(RECIPES / "trivial.py", digits, warm)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False and warm_pool().warm is None


def test_a_forked_process_does_not_use_its_parents_sandbox(warm):
    assert warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    pid = os.fork()
    if pid == 0:
        pool = warm_pool()
        os._exit(0 if pool is not None and pool.warm is None else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert warm_pool().warm.waiting.alive()
    assert sys.modules["execution.warm"]._POOL is warm_pool()


def zombie_sandboxes(parent: int) -> list[int]:
    """bwrap processes that ended and that `parent` has not reaped (state Z in /proc/<pid>/stat)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if comm == "bwrap" and fields[0] == "Z" and int(fields[1]) == parent:
            found.append(int(entry))
    return found


def test_a_forked_worker_process_reaps_its_sandboxes_and_leaves_none_to_its_parent(digits, warm):
    """A prefork pool process is forked from a worker's main process that has started sandboxes (its
    isolation probe). Killing a waiting sandbox kills bwrap's monitor before it reaps the sandbox's
    init; the init then goes to the nearest subreaper. Each process must be its own subreaper and
    reap it: a worker once held 146 zombie bwrap processes after one test run (a slow PID leak)."""
    trivial = (RECIPES / "trivial.py").read_bytes()
    assert warm.prewarm(LIMITS, recipe=trivial)  # this process has started a sandbox, as the probe does
    warm_pool().discard()
    before = zombie_sandboxes(os.getpid())
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            runner = LocalRunner()
            for _ in range(3):
                assert runner.prewarm(LIMITS, recipe=trivial)
                warm_pool().discard()
            succeeded = _run(RECIPES / "trivial.py", digits, runner).status == "succeeded"
            if warm_pool() is not None:
                warm_pool().discard()  # the next run's sandbox, started after this one (a pool process exiting)
            code = 0 if succeeded and not zombie_sandboxes(os.getpid()) else 1
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert zombie_sandboxes(os.getpid()) == before  # none adopted by the parent either


def test_a_pool_process_that_ends_kills_and_reaps_its_waiting_sandbox(warm):
    """Celery's pool processes end through ``os._exit``, which skips ``atexit``: the
    ``worker_process_shutdown`` handler (``tasks``) discards the waiting sandbox, reaped."""
    from celery.signals import worker_process_shutdown

    import tasks  # noqa: F401 - connects the handler

    before = zombie_sandboxes(os.getpid())  # the suite's fault tests SIGKILL workers: pytest adopts theirs
    assert warm.prewarm(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    started = warm_pool().warm.waiting.started
    worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=0)
    assert warm_pool().warm is None
    assert pids_in_namespace(started.namespace) == [] and started.proc.returncode is not None
    assert zombie_sandboxes(os.getpid()) == before
