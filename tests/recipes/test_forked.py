"""Forked runs (execution.forked): the same scores as cold and warm runs; nothing one run plants
is seen by the next fork of the same template (as root, and as the workers' uid 1000); one
template per process, rebuilt when the imports change; fallbacks. The hostile recipes run
forked in test_hostile.py."""

from __future__ import annotations

import numpy as np
import pytest

from execution.forked import FORK_ENV, template_pool
from execution.runners import LocalRunner
from execution.sandbox import Limits
from execution.sandbox.zygote import ForkFailed, Template
from execution.warm import WARM_ENV

from .conftest import RECIPES, needs_linux, run_file
from .unprivileged import needs_worker_uid, run_as_worker

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

LIMITS = Limits(wall_time_s=60)

#: Run 1 plants state of every kind; run 2 (the same recipe, the next fork) reports what it finds.
PLANT = """
import json, os, signal, socket, sys, threading, time
import numpy as np

MARK = "/sandbox/work/tmp/planted"

def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    found = {
        "module": getattr(np, "PLANTED", None),
        "threads": sorted(t.name for t in threading.enumerate() if t.name == "planted"),
        "handler": signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, None),
        "files": sorted(p for p in ("/sandbox/work/tmp/planted", "/dev/shm/planted", "/tmp/planted")
                        if os.path.exists(p)),
        "env": os.environ.get("PLANTED"),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    }
    try:
        socket.create_connection(("127.0.0.1", 47999), timeout=1).close()
        found["socket"] = "connected"
    except OSError as exc:
        found["socket"] = type(exc).__name__
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect("\\0varboard-planted")
        found["abstract"] = "connected"
    except OSError as exc:
        found["abstract"] = type(exc).__name__
    print("FOUND " + json.dumps(found), flush=True)
    np.PLANTED = "yes"
    threading.Thread(target=time.sleep, args=(3600,), name="planted", daemon=True).start()
    signal.signal(signal.SIGUSR1, lambda *_: None)
    for path in ("/sandbox/work/tmp/planted", "/dev/shm/planted"):
        with open(path, "w") as handle:
            handle.write("planted")
    os.environ["PLANTED"] = "yes"
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 47999))
    listener.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\\0varboard-planted")
    abstract.listen()
    sys.modules["json"].dumps = lambda *a, **k: "PLANTED"
    globals()["keep"] = (listener, abstract)
    if os.fork() == 0:  # a child left behind, detached
        os.setsid()
        time.sleep(3600)
    return np.full(len(test_inputs.X), train.y[0])
"""
CLEAN = {
    "module": None,
    "threads": [],
    "handler": False,
    "files": [],
    "env": None,
    "socket": "ConnectionRefusedError",
    "abstract": "ConnectionRefusedError",
}


@pytest.fixture
def forked(monkeypatch):
    monkeypatch.setenv(FORK_ENV, "1")
    monkeypatch.setenv(WARM_ENV, "0")
    yield LocalRunner()
    if template_pool() is not None:
        template_pool().discard()


def _found(out) -> dict:
    import json

    assert out.status == "succeeded", (out.error, out.log[-2000:])
    line = next(line for line in out.log.splitlines() if line.startswith("FOUND "))
    return json.loads(line[len("FOUND ") :])


def _check_clean(first: dict, second: dict) -> None:
    for found in (first, second):
        assert {key: found[key] for key in CLEAN} == CLEAN, found
        assert found["pids"] == [1, 2]  # the run's own init and harness, nothing of the template or run 1


def test_nothing_planted_by_one_forked_run_reaches_the_next(digits, forked, tmp_path):
    path = tmp_path / "recipe.py"
    path.write_text(PLANT)
    assert forked.prefork(LIMITS, recipe=PLANT.encode())
    template = template_pool().held.template
    first = run_file(path, digits, limits=LIMITS, runner=forked)
    second = run_file(path, digits, limits=LIMITS, runner=forked)
    assert "forked from a template" in second.isolation and template_pool().held.template is template
    assert template.forks == 2 and template.alive()
    _check_clean(_found(first), _found(second))


@needs_worker_uid
def test_nothing_planted_reaches_the_next_forked_run_as_the_workers_uid():
    results = run_as_worker(
        f"""
    import os, shutil, tempfile
    os.environ["{FORK_ENV}"] = "1"
    from pathlib import Path
    folder = tempfile.mkdtemp()
    path = Path(folder) / "recipe.py"
    path.write_text({PLANT!r})
    from execution.runners import LocalRunner
    from execution.forked import template_pool
    from execution.sandbox import Limits
    from tests.recipes.helpers import load_digits_data, run_file
    runner, data, limits = LocalRunner(), load_digits_data(), Limits(wall_time_s=60)
    outs = [run_file(path, data, limits=limits, runner=runner) for _ in range(2)]
    made = template_pool().made
    template_pool().discard()
    shutil.rmtree(folder)
    print(json.dumps({{"made": made, "runs": [[o.status, o.error, o.log, list(o.isolation)] for o in outs]}}))
    """,
        timeout=300,
    )
    assert results["made"] == 1
    found = []
    for status, error, log, isolation in results["runs"]:
        assert status == "succeeded", error
        assert "forked from a template" in isolation and "uid 1000 (the worker's)" in isolation
        found.append(next(__import__("json").loads(line[6:]) for line in log.splitlines() if line.startswith("FOUND ")))
    _check_clean(*found)


@pytest.mark.parametrize(
    "recipe, run_index", [("torch_mlp", 0), ("torch_mlp", 1), ("trivial", 2), ("logistic_regression", 0)]
)
def test_same_seeds_give_the_same_scores_cold_warm_and_forked(recipe, run_index, digits, forked, monkeypatch):
    path = RECIPES / f"{recipe}.py"
    outs = {}
    for start, fork, warm in (("cold", "0", "0"), ("warm", "0", "1"), ("forked", "1", "0")):
        monkeypatch.setenv(FORK_ENV, fork)
        monkeypatch.setenv(WARM_ENV, warm)
        if start == "warm":
            assert forked.prewarm(LIMITS, recipe=path.read_bytes())
        outs[start] = run_file(path, digits, run_index=run_index, limits=LIMITS, runner=forked)
        if start == "warm":
            from execution.warm import warm_pool

            warm_pool().discard()
    cold, warm, fork = outs["cold"], outs["warm"], outs["forked"]
    assert cold.status == warm.status == fork.status == "succeeded", (cold.error, warm.error, fork.error)
    assert [o.fingerprint["warm_start"] for o in (cold, warm, fork)] == [False, True, True]
    assert "forked from a template" in fork.isolation
    assert fork.test_score == warm.test_score == cold.test_score
    assert fork.valid_score == warm.valid_score == cold.valid_score
    np.testing.assert_array_equal(fork.outcomes, cold.outcomes)


def test_one_template_per_process_rebuilt_when_the_imports_change(digits, forked):
    trivial, torch_recipe = RECIPES / "trivial.py", RECIPES / "torch_mlp.py"
    pool = template_pool()
    made = pool.made
    for path in (trivial, trivial, torch_recipe, torch_recipe):
        out = run_file(path, digits, limits=LIMITS, runner=forked)
        assert out.status == "succeeded" and "forked from a template" in out.isolation, out.error
    assert pool.made == made + 2 and pool.held.imports[:2] == ("torch", "torch._dynamo")


def test_a_template_that_cannot_be_made_starts_the_run_cold_and_says_why(digits, forked, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise ForkFailed("refused for the test")

    monkeypatch.setattr("execution.forked.start_template", refuse)
    out = run_file(RECIPES / "trivial.py", digits, limits=LIMITS, runner=forked)
    assert out.status == "succeeded" and out.fingerprint["warm_start"] is False
    assert "forked from a template" not in out.isolation
    assert any("forked run unavailable (refused for the test)" in warning for warning in out.warnings)


def test_a_dead_template_is_replaced(digits, forked):
    assert forked.prefork(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    old = template_pool().held.template
    old.started.kill()
    out = run_file(RECIPES / "trivial.py", digits, limits=LIMITS, runner=forked)
    assert out.status == "succeeded" and "forked from a template" in out.isolation
    assert template_pool().held.template is not old


def test_a_fork_that_fails_falls_back_and_discards_the_template(digits, forked, monkeypatch):
    def failing(self, workdir):
        raise ForkFailed("no fork for the test")

    assert forked.prefork(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    monkeypatch.setattr(Template, "fork", failing)
    out = run_file(RECIPES / "trivial.py", digits, limits=LIMITS, runner=forked)
    assert out.status == "succeeded" and "forked from a template" not in out.isolation
    assert template_pool().held is None


def test_the_setting_turns_forking_off(forked, monkeypatch):
    assert forked.prefork(LIMITS, recipe=(RECIPES / "trivial.py").read_bytes())
    held = template_pool().held
    monkeypatch.setenv(FORK_ENV, "0")
    assert template_pool() is None and not held.template.alive()
    assert not forked.prefork(LIMITS)


def test_a_template_left_with_threads_by_its_imports_is_refused_and_the_run_says_why(digits, forked, monkeypatch):
    """fork(2) copies only the calling thread, so a template whose imports leave a thread is refused
    and the run starts cold, with the same score and the reason in its log. Here: scikit-learn's
    import with pyarrow's jemalloc background thread turned back on (the sandbox turns it off)."""
    argv, env, note = forked.command()
    monkeypatch.setattr(
        forked, "command", lambda: (argv, {**env, "JE_ARROW_MALLOC_CONF": "background_thread:true"}, note)
    )
    out = run_file(RECIPES / "logistic_regression.py", digits, limits=LIMITS, runner=forked)
    assert out.status == "succeeded" and "forked from a template" not in out.isolation
    assert any("threads after its imports: fork is unsafe" in warning for warning in out.warnings), out.warnings
