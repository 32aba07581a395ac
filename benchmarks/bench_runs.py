"""Benchmark the platform's overhead per recipe run, and run throughput with 1 and 2 workers.

Prints figures; not a test. Targets (issue: per-run overhead): the platform's overhead per
run (enqueue -> sandbox start -> result stored) for a trivial recipe at most 0.5 s (median
over >= 50 runs), and near-linear scaling of throughput from 1 to 2 worker processes
(here: a factor >= 1.8, 90 % of the ideal 2.0).

Set-up (as in production, on 127.0.0.1): a temporary PostgreSQL database (migrated, dropped
at the end), a temporary var/ and media root, a Redis database of its own as the broker
(flushed at the end; the slot is locked the way ``tests/conftest.py`` locks its slots, so a
concurrent test run does not take it), and REAL Celery workers: ``celery -A leaderboard
worker -Q cpu -c 1 --prefetch-multiplier=1 -P prefork`` subprocesses, started and pinged
before anything is submitted, so their start-up is not counted. A digits challenge (240 rows)
allows recipes; ``examples/recipes/trivial.py`` (majority class, microseconds of compute) is
submitted with ``submission_create_recipe``, which enqueues its k runs on commit.

Measured, in this order:

* reference R1: ``execution.run.execute_recipe_run`` called in this process, no Celery, no
  database: the sandboxed run itself (inputs written, sandboxed interpreter, scoring); with
  the parts of the sandbox (interpreter start, numpy import, bubblewrap, probe) timed apart;
* reference R2: ``run_execute`` called in this process on committed runs: R1 plus the
  database work of a run (claim, dataset load, store, status refresh, report request), with
  a per-part breakdown and the number of SQL queries;
* phase A: one worker process, concurrency 1, k runs back to back: per-run wall time (the
  difference of consecutive ``finished_at``), its parts from the Run rows, throughput;
  then runs submitted one at a time to the idle worker (enqueue -> claimed -> stored);
* phase B: two worker processes (two separate ``celery worker -c 1`` processes, each a
  prefork pool of one), a fresh submission of the same size: throughput and the scaling
  factor against phase A, with the machine's CPU use during each phase (the cores may be
  shared with other work: the load average is printed at each step).

Then a small torch recipe (``examples/recipes/torch_mlp.py``, 3 epochs, milliseconds of compute),
warm against cold starts (``execution.warm``; ``VARBOARD_WARM_SANDBOXES`` 1 and 0): in this process
(cold and warm runs interleaved, a warm run's sandbox ready), then one worker each way, k runs back to
back and single runs sent to the idle worker once its waiting sandbox has its imports done (its
harness blocked reading stdin, seen in /proc). The PASS/FAIL line: enqueue -> stored minus the
recipe's compute on the idle worker, warm, at most 0.5 s, printed next to the cold start.
``--torch-only`` runs only this part.

``--fork-acceptance`` (issue 28, forked runs) runs only the issue's acceptance: submissions POSTed to
``/api/challenges/{slug}/submissions/`` on a gunicorn of this benchmark's own (one process, 127.0.0.1,
a token of the host), one real worker ``-Q cpu -c 1`` per start mode (cold: ``VARBOARD_WARM_SANDBOXES=0``;
warm: ``VARBOARD_WARM_SANDBOXES=1``, today's default; forked: ``VARBOARD_FORK_RUNS=1``), each given
``--fork-runs`` (6) runs of the trivial recipe, then 6 of the same plus ``import torch``, back to back.
Per run: the difference of consecutive ``finished_at`` (5 intervals of 6 runs; the first run of each
submission, which makes the template or warm sandbox for its imports, is shown apart as POST -> stored).
PASS when ``import torch`` costs forked runs at most 0.5 s per run (median and mean) and every run forked.

Overhead per run = per-run wall time minus the recipe's own compute (its ``fit_predict``,
timed in this process on the same rows: the trivial recipe's compute is microseconds). The
per-run wall time is taken two ways: back to back on one worker (consecutive ``finished_at``,
the target's figure), and enqueue -> stored for single runs sent to an idle worker.

A run of the trivial recipe is CPU-bound (about one CPU-second per wall-second), so two
workers need two free cores: the script prints the CPU its workers and the rest of the
machine used in each phase, and the scaling that the CPU left free allowed. On a shared
machine, read the scaling verdict against that ceiling. Everything is bounded by
``--timeout`` (default 480 s); workers, database, Redis db and files are cleaned up in
``finally``. Run from the repository root::

    .venv/bin/python benchmarks/bench_runs.py              # k = 60 runs per phase
    .venv/bin/python benchmarks/bench_runs.py --quick      # k = 12, smaller references
    .venv/bin/python benchmarks/bench_runs.py --runs 100
    .venv/bin/python benchmarks/bench_runs.py --torch-only       # torch recipe, warm against cold
    .venv/bin/python benchmarks/bench_runs.py --fork-acceptance  # forked runs: issue 28's acceptance
    .venv/bin/python benchmarks/bench_runs.py --starts-direct    # light mode: cold/warm/forked, no API
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import POSTGRES, ROOT, django_setup, postgres_database  # noqa: E402

sys.path.insert(0, str(ROOT))
from dev import claim_slot  # noqa: E402

REDIS = ("127.0.0.1", 6379)
RECIPE = ROOT / "examples" / "recipes" / "trivial.py"
TORCH_RECIPE = ROOT / "examples" / "recipes" / "torch_mlp.py"
TORCH_HP = {"epochs": 3, "hidden": 32}
#: The read(2) system call's number, as /proc/PID/syscall shows it (a waiting harness blocks in it).
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}.get(platform.machine(), "0")
OVERHEAD_TARGET_S = 0.5
SCALING_TARGET = 1.8


class BenchTimeout(Exception):
    pass


# ----------------------------------------------------------------------------- helpers
def med(values) -> float:
    return float(np.median(values)) if len(values) else float("nan")


def p90(values) -> float:
    return float(np.percentile(values, 90)) if len(values) else float("nan")


def timed_median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return med(times)


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def process_cpu_s(pid: int) -> float:
    """CPU seconds of `pid`, its live children (the prefork pool) and their waited-for children."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                pids += [int(p) for p in fh.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                line = fh.read()
            fields = line[line.rfind(")") + 2 :].split()
            total += sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            continue
    return total


def rss_mb(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def maps_mention(pid: int, needle: str) -> bool:
    """Whether a shared object named like `needle` is mapped into `pid` (e.g. torch loaded)."""
    try:
        with open(f"/proc/{pid}/maps") as fh:
            return needle in fh.read()
    except OSError:
        return False


def claim_redis_slot() -> tuple[int, object]:
    """A Redis db number no varboard test process holds (the lock files tests/conftest.py uses)."""
    claimed = claim_slot(range(13, 0, -1))
    if claimed is None:
        raise RuntimeError("every Redis slot 1..13 is held by another varboard process")
    return claimed


# ----------------------------------------------------------------------------- workers
class Worker:
    def __init__(self, name: str, env: dict, log_path: Path):
        self.name = f"{name}@{socket.gethostname()}"
        self.log_path = log_path
        celery = Path(sys.executable).with_name("celery")
        prefix = [str(celery)] if celery.exists() else [sys.executable, "-m", "celery"]
        command = [
            *prefix,
            "-A",
            "leaderboard",
            "worker",
            "-Q",
            "cpu",
            "-c",
            "1",
            "--prefetch-multiplier=1",
            "-P",
            "prefork",
            "-n",
            f"{name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=INFO",
        ]
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float) -> float:
        from leaderboard.celery import app

        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited with {self.process.returncode}:\n{self.tail()}")
            if app.control.ping(destination=[self.name], timeout=0.5):
                return time.monotonic() - start
            time.sleep(0.2)
        raise RuntimeError(f"worker {self.name} did not answer ping within {timeout:.0f} s:\n{self.tail()}")

    def task_seconds(self) -> list[float]:
        """Celery's own 'succeeded in X s' figure of every task this worker ran."""
        import re

        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return [float(v) for v in re.findall(r"tasks\.runs\.execute_run\[[^\]]+\] succeeded in ([\d.e-]+)s", text)]

    def stop(self, grace: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # warm shutdown: finishes the task in hand
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the pool child too, if it lingers
        except OSError:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            pass


# ----------------------------------------------------------------------------- set-up
ENQUEUED: dict[int, tuple[float, float]] = {}


def install_enqueue_clock() -> None:
    """Record, per submission, (first start, last end) wall-clock times of its runs' on-commit publishes."""
    from leaderboard.models import Run
    from leaderboard.services import dispatch

    original = dispatch.send

    def send(task_name, args, **options):
        start = time.time()
        original(task_name, args, **options)
        if task_name == dispatch.EXECUTE_RUN:
            submission_id = Run.objects.filter(pk=args[0]).values_list("submission_id", flat=True).get()
            first = ENQUEUED.get(submission_id, (start, start))[0]
            ENQUEUED[submission_id] = (first, time.time())

    dispatch.send = send  # enqueue_on_commit looks it up at publish time


def make_challenges(k: int):
    from tests.platform.factories import digits_challenge, make_user

    host = make_user("bench-runs-host")
    main, frame = digits_challenge(
        host, title="Runs benchmark", k_runs=k, daily_quota=0, total_quota=0, allow_recipes=True
    )
    single, _ = digits_challenge(host, title="Runs latency", k_runs=1, daily_quota=0, total_quota=0, allow_recipes=True)
    return host, main, single, len(frame)


def submit(challenge, user, name: str, enqueue: bool = True, recipe: Path = RECIPE, hyperparameters=None):
    from leaderboard.services import dispatch
    from leaderboard.services.submissions import UploadedFile, submission_create_recipe

    upload = UploadedFile(name=recipe.name, data=recipe.read_bytes())
    with ExitStack() as stack:
        if not enqueue:
            stack.enter_context(mock.patch.object(dispatch, "send", lambda *args, **kwargs: None))
        start = time.perf_counter()
        # another file set each time: a team's identical resubmission is refused
        hyperparameters = {**(hyperparameters or {}), "bench_submission": name}
        submission = submission_create_recipe(
            challenge=challenge, user=user, method_name=name, recipe=upload, hyperparameters=hyperparameters
        )
        return submission, time.perf_counter() - start


def wait_runs(submission_id: int, expected: int, timeout: float, workers, poll: float = 0.25) -> None:
    from leaderboard.models import Run

    deadline = time.monotonic() + timeout
    while True:
        done = Run.objects.filter(submission_id=submission_id, status__in=("succeeded", "failed")).count()
        if done >= expected:
            return
        for worker in workers:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {worker.name} died:\n{worker.tail()}")
        if time.monotonic() > deadline:
            raise BenchTimeout(
                f"{done} of {expected} runs of submission {submission_id} ended within "
                f"{max(0.0, timeout):.0f} s; last worker log:\n{workers[0].tail()}"
            )
        time.sleep(poll)


def run_rows(submission_id: int) -> list[dict]:
    from leaderboard.models import Run

    rows = list(
        Run.objects.filter(submission_id=submission_id).values(
            "index", "status", "error_message", "started_at", "finished_at", "duration_s", "attempts"
        )
    )
    failed = [r for r in rows if r["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(rows)} runs did not succeed; first: {failed[0]['error_message']}")
    for r in rows:
        r["started"] = r["started_at"].timestamp()
        r["finished"] = r["finished_at"].timestamp()
    return sorted(rows, key=lambda r: r["finished"])


# ----------------------------------------------------------------------------- references
def run_inputs(challenge, run, recipe: Path = RECIPE, hyperparameters=None):
    """What run_execute hands to execute_recipe_run for `run`."""
    from evaluation.metrics import get_metric
    from leaderboard.worker.run_data import run_predicted_rows, run_split
    from leaderboard.worker.run_execution import _metric, run_limits

    data, split = run_split(challenge=challenge, seeds=run.seeds)
    metric = get_metric(challenge.metric)
    return (
        data,
        split,
        metric,
        dict(
            recipe_source=recipe.read_text(),
            data=data,
            split=split,
            seeds=run.seeds,
            hyperparameters=hyperparameters,
            hpo={"mode": "fixed"},
            metric=_metric(challenge, data.classes),
            prediction_kind=metric.prediction_kind,
            limits=run_limits(challenge),
            device="cpu",
            higher_is_better=challenge.higher_is_better,
            test_rows=run_predicted_rows(challenge=challenge),  # every hidden row once, as run_execute gives it
        ),
    )


def recipe_compute_s(
    data,
    split,
    prediction_kind: str,
    repeat: int = 200,
    recipe: Path = RECIPE,
    hyperparameters=None,
    seeds=None,
    test_rows=None,
) -> float:
    """A recipe's fit_predict, in this process, on the rows the harness would give it (one thread, as in
    the sandbox), median of `repeat` after one untimed call."""
    sys.path.insert(0, str(ROOT / "execution" / "harness"))
    from varboard_recipe import Inputs

    spec = importlib.util.spec_from_file_location(f"bench_recipe_{recipe.stem}", recipe)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    classes = np.asarray(data.classes)
    hp = {**getattr(module, "HYPERPARAMETERS", {}), **(hyperparameters or {})}

    def inputs(rows, labelled):
        return Inputs(
            X=data.X[rows],
            y=data.y[rows] if labelled else None,
            ids=data.ids[rows],
            feature_names=list(data.feature_names),
            classes=classes,
            task=data.task,
            prediction_kind=prediction_kind,
        )

    train, valid = inputs(split.train, True), inputs(split.valid, True)
    test = inputs(np.concatenate([split.valid, np.unique(split.test) if test_rows is None else test_rows]), False)
    module.fit_predict(train, valid, test, dict(hp), dict(seeds or {}), "cpu")
    return timed_median(lambda: module.fit_predict(train, valid, test, dict(hp), dict(seeds or {}), "cpu"), repeat)


def reference_direct(challenge, submission, repeat: int) -> dict:
    from execution.run import execute_recipe_run
    from leaderboard.models import Run

    run = Run.objects.filter(submission=submission).order_by("index").first()
    data, split, metric, kwargs = run_inputs(challenge, run)
    execute_recipe_run(**kwargs)  # warm: the isolation probe, python_command(), page cache
    walls, sandbox = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        outcome = execute_recipe_run(**kwargs)
        walls.append(time.perf_counter() - start)
        if outcome.status != "succeeded":
            raise RuntimeError(f"the trivial recipe failed in-process: {outcome.error}\n{outcome.log}")
        sandbox.append(outcome.duration_s)
    compute = recipe_compute_s(data, split, metric.prediction_kind, test_rows=kwargs["test_rows"])
    return {
        "wall": walls,
        "sandbox": sandbox,
        "compute": compute,
        "rows": len(data.y),
        "split": (len(split.train), len(split.valid), len(split.test)),
    }


def reference_sandbox_parts(repeat: int) -> dict:
    """The parts of one sandboxed process, each timed apart (median of `repeat`)."""
    from execution.sandbox import Limits, probe, python_command, run_sandboxed
    from execution.sandbox.bubblewrap import Bubblewrap, allocate_uid, bwrap_path
    from execution.sandbox.interpreter import python_view
    from execution.sandbox.view import readonly_view

    prefix, env_items, _ = python_command()  # paths inside the sandbox (/opt/python, /opt/venv)
    env = dict(env_items)
    view = python_view()
    host_prefix = [view.on_host(part) for part in prefix]  # the same interpreter, run outside
    host_env = {name: view.on_host_env(value) for name, value in env.items()}
    site = (
        "import os, site\n"
        "for d in filter(None, os.environ.pop('VARBOARD_SITE_PACKAGES', '').split(os.pathsep)):"
        " site.addsitedir(d)\n"
    )
    numpy_code = site + "import numpy, json, platform, importlib.util, traceback, dataclasses, random"
    plain_env = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", **host_env}
    bare_env = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", **env}
    bare_bwrap = [
        bwrap_path(),
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        *readonly_view(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *prefix,
        "-c",
        "pass",
    ]
    root = tempfile.mkdtemp(prefix="varboard-bench-sbx-")
    os.chmod(root, 0o711)  # the run's uid must be able to reach work/
    work = os.path.join(root, "work")
    os.mkdir(work)
    limits = Limits(wall_time_s=60)
    try:
        parts = {
            "python start": timed_median(lambda: subprocess.run([*host_prefix, "-c", "pass"], env=plain_env), repeat),
            "python + numpy & harness imports": timed_median(
                lambda: subprocess.run([*host_prefix, "-c", numpy_code], env=plain_env), repeat
            ),
            "run_sandboxed(python -c pass)": timed_median(
                lambda: run_sandboxed([*prefix, "-c", "pass"], workdir=work, env=env, limits=limits), repeat
            ),
            "run_sandboxed(python + imports)": timed_median(
                lambda: run_sandboxed([*prefix, "-c", numpy_code], workdir=work, env=env, limits=limits), repeat
            ),
            "bare bwrap --unshare-all + python -c pass": timed_median(
                lambda: subprocess.run(bare_bwrap, env=bare_env), repeat
            ),
            "fresh uid (/proc scan)": timed_median(allocate_uid, repeat),
            "probe (once per worker process)": timed_median(lambda: Bubblewrap(bwrap_path()).probe(), 3),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"parts": parts, "prefix": " ".join(prefix), "isolation": ", ".join(probe().isolation)}


def reference_run_execute(challenge, user, repeat: int) -> dict:
    """run_execute in this process (database, no Celery), part by part, with its SQL queries."""
    from django.db import connection

    from leaderboard.worker import run_execution as recipes

    submission, _ = submit(challenge, user, "reference-run-execute", enqueue=False)
    run_ids = list(submission.runs.order_by("index").values_list("pk", flat=True))[: repeat + 1]
    names = ("run_claim", "run_split", "execute_recipe_run", "run_store_retrying")
    current: dict[str, float] = defaultdict(float)

    def wrap(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                current[name] += time.perf_counter() - start

        return wrapper

    queries: list[float] = []

    def count(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            queries.append(time.perf_counter() - start)

    totals, parts, n_queries, db_time = [], defaultdict(list), [], []
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(mock.patch.object(recipes, name, wrap(name, getattr(recipes, name))))
        for i, run_id in enumerate(run_ids):
            current.clear()
            queries.clear()
            with connection.execute_wrapper(count):
                start = time.perf_counter()
                run = recipes.run_execute(run_id=run_id)
                total = time.perf_counter() - start
            if run is None or run.status != "succeeded":
                raise RuntimeError(f"run_execute in-process failed: {run and run.error_message}")
            if i == 0:
                continue  # warm-up
            totals.append(total)
            n_queries.append(len(queries))
            db_time.append(sum(queries))
            for name in names:
                parts[name].append(current[name])
            parts["rest (recipe file, split, metric, queries)"].append(total - sum(current[n] for n in names))
    return {"wall": totals, "parts": parts, "queries": n_queries, "db": db_time}


# ----------------------------------------------------------------------------- phases
def phase(
    label: str,
    workers_n: int,
    env: dict,
    tmp: Path,
    challenge,
    user,
    k: int,
    deadline: float,
    latency_runs: int = 0,
    single=None,
    recipe: Path = RECIPE,
    hyperparameters=None,
    settle=None,
) -> dict:
    """Start `workers_n` workers, wait for their ping, submit k runs, wait, read the Run rows.

    Before each single run sent to the idle worker, ``settle(workers)`` (default: 0.3 s, the time
    for the previous task to return and be acked) lets the worker reach its idle state."""
    workers = []
    try:
        start = time.monotonic()
        for i in range(workers_n):
            workers.append(Worker(f"bench-runs-{os.getpid()}-{label}{i}", env, tmp / f"worker-{label}{i}.log"))
        for worker in workers:
            worker.wait_ready(timeout=max(5.0, min(90.0, deadline - time.monotonic())))
        ready = time.monotonic() - start
        load_before = load()
        window0 = time.monotonic()
        cpu0 = cpu_jiffies()
        wcpu0 = sum(process_cpu_s(w.process.pid) for w in workers)
        submission, submit_s = submit(
            challenge, user, f"{recipe.stem}-{label}", recipe=recipe, hyperparameters=hyperparameters
        )
        enqueue_start, enqueue_end = ENQUEUED[submission.pk]
        wait_runs(submission.pk, k, timeout=deadline - time.monotonic(), workers=workers)
        rows = run_rows(submission.pk)
        cpu1 = cpu_jiffies()
        wcpu1 = sum(process_cpu_s(w.process.pid) for w in workers)
        window = time.monotonic() - window0
        result = {
            "ready": ready,
            "load_before": load_before,
            "load_after": load(),
            "submit": submit_s,
            "enqueue": (enqueue_start, enqueue_end),
            "rows": rows,
            "machine_busy": (cpu1[0] - cpu0[0]) / max(1, cpu1[1] - cpu0[1]) * (os.cpu_count() or 1),
            "worker_cpu": wcpu1 - wcpu0,
            "window": window,
            "worker_rss": [rss_mb(w.process.pid) for w in workers],
        }
        pool_children = []
        for w in workers:
            try:
                with open(f"/proc/{w.process.pid}/task/{w.process.pid}/children") as fh:
                    pool_children += [int(p) for p in fh.read().split()]
            except OSError:
                pass
        result["pool_rss"] = [rss_mb(p) for p in pool_children]
        result["pool_torch"] = any(maps_mention(p, "libtorch") for p in pool_children)
        if latency_runs:
            latencies = []
            for i in range(latency_runs):
                (settle or (lambda _: time.sleep(0.3)))(workers)  # the worker is idle
                one, _ = submit(
                    single, user, f"{recipe.stem}-latency-{label}-{i}", recipe=recipe, hyperparameters=hyperparameters
                )
                wait_runs(one.pk, 1, timeout=min(60.0, deadline - time.monotonic()), workers=workers, poll=0.02)
                row = run_rows(one.pk)[0]
                t0 = ENQUEUED[one.pk][0]
                latencies.append(
                    (row["started"] - t0, row["finished"] - row["started"], row["finished"] - t0, row["duration_s"])
                )
            result["latency"] = latencies
        result["task_seconds"] = [w.task_seconds() for w in workers]
        return result
    finally:
        for worker in workers:
            worker.stop()


def summarise(result: dict, k: int) -> dict:
    rows = result["rows"]
    started = np.array([r["started"] for r in rows])
    finished = np.array([r["finished"] for r in rows])
    in_task = finished - started
    sandbox = np.array([r["duration_s"] for r in rows])
    order = np.argsort(started)
    t_enqueue = result["enqueue"][0]
    return {
        "per_run": np.diff(finished),
        "in_task": in_task,
        "sandbox": sandbox,
        "outside": in_task - sandbox,
        "between": started[order][1:] - finished[order][:-1],
        "first_pickup": started.min() - t_enqueue,
        "first_in_task": in_task[order][0],
        "makespan": finished.max() - t_enqueue,
        "throughput": k / (finished.max() - t_enqueue),
        "steady": (k - 1) / (finished.max() - finished.min()),
        "cpu_per_run": result["worker_cpu"] / k,
        "workers_busy": result["worker_cpu"] / result["window"],  # CPUs used by the workers and their sandboxes
        "rest_busy": result["machine_busy"] - result["worker_cpu"] / result["window"],
    }


# ----------------------------------------------------------------------------- torch: warm against cold starts
def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc/*/stat."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    line = fh.read()
                children[int(line[line.rfind(")") + 2 :].split()[1])].append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return children


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().rstrip(b"\0")
    except OSError:
        return b""


def waiting_sandbox(root_pid: int) -> list[int]:
    """Pids of a waiting sandbox below `root_pid` whose harness blocks reading its stdin (its imports
    done): the harness and bwrap's two processes above it; [] when there is none (yet)."""
    children, stack, parent = _children(), [root_pid], {}
    while stack:
        pid = stack.pop()
        for child in children.get(pid, []):
            parent[child] = pid
            stack.append(child)
    for pid in parent:
        try:
            with open(f"/proc/{pid}/syscall") as fh:
                syscall = fh.read().split()
        except OSError:
            continue
        if _cmdline(pid).endswith(b"harness.py") and syscall[:2] == [READ_SYSCALL, "0x0"]:
            tree, above = [pid], parent.get(pid)
            while above is not None and _cmdline(above).split(b"\0")[0].endswith(b"bwrap"):
                tree.append(above)
                above = parent.get(above)
            return tree
    return []


def settle_until_warm(sizes: list, timeout: float = 60.0):
    """A `phase` settle: wait until each worker's waiting sandbox has its imports done; record its
    RSS (MB, the bwrap processes and the harness) in `sizes`."""

    def settle(workers) -> None:
        time.sleep(0.3)
        deadline = time.monotonic() + timeout
        for worker in workers:
            while time.monotonic() < deadline:
                pids = waiting_sandbox(worker.process.pid)
                if pids:
                    sizes.append(sum(rss_mb(p) for p in pids))
                    break
                time.sleep(0.1)

    return settle


def torch_reference(challenge, user, repeat: int) -> dict:
    """execute_recipe_run in this process on the torch recipe, cold and warm (sandbox ready) interleaved."""
    from execution.run import execute_recipe_run
    from execution.runners import LocalRunner
    from execution.warm import WARM_ENV
    from leaderboard.models import Run

    submission, _ = submit(
        challenge, user, "torch-reference", enqueue=False, recipe=TORCH_RECIPE, hyperparameters=TORCH_HP
    )
    run = Run.objects.filter(submission=submission).order_by("index").first()
    data, split, metric, kwargs = run_inputs(challenge, run, TORCH_RECIPE, TORCH_HP)
    runner, walls, sandbox, scores = LocalRunner(), defaultdict(list), defaultdict(list), defaultdict(set)
    previous = os.environ.get(WARM_ENV)
    try:
        for _ in range(repeat):
            for mode in ("cold", "warm"):
                os.environ[WARM_ENV] = "1" if mode == "warm" else "0"
                if mode == "warm" and not runner.prewarm(kwargs["limits"], recipe=TORCH_RECIPE.read_bytes()):
                    raise RuntimeError("no warm sandbox could be prepared in this process")
                start = time.perf_counter()
                outcome = execute_recipe_run(**kwargs, runner=runner)
                walls[mode].append(time.perf_counter() - start)
                if outcome.status != "succeeded" or outcome.fingerprint["warm_start"] != (mode == "warm"):
                    raise RuntimeError(f"the torch recipe's {mode} run failed: {outcome.error}\n{outcome.log}")
                sandbox[mode].append(outcome.duration_s)
                scores[mode].add(outcome.test_score)
    finally:
        os.environ.pop(WARM_ENV, None) if previous is None else os.environ.__setitem__(WARM_ENV, previous)
    compute = recipe_compute_s(
        data,
        split,
        metric.prediction_kind,
        20,
        recipe=TORCH_RECIPE,
        hyperparameters=TORCH_HP,
        seeds=run.seeds,
        test_rows=kwargs["test_rows"],
    )
    return {"wall": walls, "sandbox": sandbox, "compute": compute, "same_scores": scores["cold"] == scores["warm"]}


def torch_benchmark(args, user, worker_env: dict, var_dir: Path, deadline: float) -> None:
    """A small torch recipe: per-run overhead with warm starts, next to cold starts measured here and now."""
    from execution.warm import WARM_ENV
    from tests.platform.factories import digits_challenge

    k = args.torch_runs
    main_c, _ = digits_challenge(user, title="Torch runs", k_runs=k, daily_quota=0, total_quota=0, allow_recipes=True)
    single, _ = digits_challenge(
        user, title="Torch latency", k_runs=1, daily_quota=0, total_quota=0, allow_recipes=True
    )
    ref = torch_reference(main_c, user, max(3, args.reference_runs // 4))
    compute = ref["compute"]
    print(
        f"\ntorch recipe {TORCH_RECIPE.relative_to(ROOT)} with {TORCH_HP}: its fit_predict takes "
        f"{compute * 1e3:.0f} ms in this process (one thread, after a first call); load {load()}"
    )
    print(f"  {'seconds per run':<52} {'median':>8} {'p90':>8}")
    for mode in ("cold", "warm"):
        print(
            row(
                f"in-process execute_recipe_run, {mode} ({len(ref['wall'][mode])} runs)",
                ref["wall"][mode],
                f"overhead {med(ref['wall'][mode]) - compute:.3f} s; sandboxed process "
                f"{med(ref['sandbox'][mode]):.3f} s",
            )
        )
    print(f"  the same seeds gave the same scores warm and cold: {ref['same_scores']}")
    phases, sizes = {}, []
    for mode in ("cold", "warm"):
        env = {**worker_env, WARM_ENV: "1" if mode == "warm" else "0"}
        phases[mode] = phase(
            f"T{mode}",
            1,
            env,
            var_dir,
            main_c,
            user,
            k,
            deadline,
            latency_runs=args.latency_runs,
            single=single,
            recipe=TORCH_RECIPE,
            hyperparameters=TORCH_HP,
            settle=settle_until_warm(sizes) if mode == "warm" else None,
        )
    overhead = {}
    for mode, raw in phases.items():
        s = summarise(raw, k)
        lat = np.array(raw["latency"])
        overhead[mode] = med(lat[:, 2]) - compute
        print(
            row(
                f"1 worker, {k} runs back to back, {mode}: wall per run",
                s["per_run"],
                f"overhead {med(s['per_run']) - compute:.3f} s; in the task {med(s['in_task']):.3f} s, "
                f"sandboxed process {med(s['sandbox']):.3f} s",
            )
        )
        print(
            row(
                f"idle worker, {len(lat)} single runs, {mode}: enqueue -> stored",
                lat[:, 2],
                f"overhead {overhead[mode]:.3f} s; sandboxed process {med(lat[:, 3]):.3f} s",
            )
        )
    if sizes:
        print(
            f"  a waiting sandbox (numpy, torch, torch._dynamo imported; bwrap processes and harness) holds "
            f"{med(sizes):.0f} MB resident (max {max(sizes):.0f} MB) besides the worker"
        )
    verdict = "PASS" if overhead["warm"] <= OVERHEAD_TARGET_S else "FAIL"
    print(
        f"{verdict}: torch recipe, warm start: platform overhead per run (enqueue -> stored on an idle worker minus "
        f"the recipe's compute), median of {args.latency_runs}: {overhead['warm']:.3f} s (target <= "
        f"{OVERHEAD_TARGET_S} s); cold start measured in the same run: {overhead['cold']:.3f} s"
    )
    b2b = {mode: np.diff([r["finished"] for r in phases[mode]["rows"]]) - compute for mode in phases}
    print(
        f"  back to back ({k} runs, the first in a fresh pool process, so cold): overhead per run median "
        f"{med(b2b['warm']):.3f} s, p90 {p90(b2b['warm']):.3f} s warm; {med(b2b['cold']):.3f} s cold. The next "
        f"run's sandbox imports torch while the current run executes: a run that comes before that import is done "
        f"waits for the rest of it. GPU figures: unmeasured (no GPU on this machine)."
    )


# ----------------------------------------------------------------------------- forked runs: the acceptance through the API
#: Start modes of --fork-acceptance: (VARBOARD_WARM_SANDBOXES, VARBOARD_FORK_RUNS) of the worker.
START_MODES = {"cold": ("0", "0"), "warm": ("1", "0"), "forked": ("0", "1")}


def start_web(env: dict, port: int, log_path: Path) -> subprocess.Popen:
    """gunicorn (one process, the production settings otherwise) serving the benchmark's database."""
    command = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn_web.conf.py")]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--log-level", "warning"]
    command += ["--access-logfile", "-", "leaderboard.wsgi:application"]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [*command],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.2)
    stop_web(server)
    raise RuntimeError("gunicorn did not listen within 60 s")


def stop_web(server: subprocess.Popen | None) -> None:
    if server is None:
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)  # its worker too, if it lingers
    except OSError:
        pass
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        pass


def api_submit(url: str, token: str, slug: str, name: str, recipe: bytes) -> tuple[int, float]:
    """POST a recipe to /api/challenges/{slug}/submissions/; (submission id, time.time() at the POST)."""
    import requests

    sent = time.time()
    response = requests.post(
        f"{url}/api/challenges/{slug}/submissions/",
        headers={"Authorization": f"Token {token}"},
        data={"kind": "recipe", "method_name": name},
        files=[("recipe", (f"{name}.py", recipe, "text/x-python"))],
        timeout=60,
    )
    if response.status_code != 202:
        raise RuntimeError(f"POST {name}: HTTP {response.status_code}: {response.text[:2000]}")
    return int(response.json()["id"]), sent


def started_as(submission_id: int) -> list[str]:
    """How each run of the submission started, in order of finishing: forked, warm or cold."""
    from leaderboard.models import Run

    found = []
    for isolation, fingerprint in (
        Run.objects.filter(submission_id=submission_id).order_by("finished_at").values_list("isolation", "fingerprint")
    ):
        if "forked from a template" in (isolation or []):
            found.append("forked")
        else:
            found.append("warm" if (fingerprint or {}).get("warm_start") else "cold")
    return found


def acceptance_recipes(mode: str) -> dict[str, bytes]:
    """The trivial recipe and the same plus ``import torch``, a comment naming the mode (another
    file each time: a team's identical resubmission is refused)."""
    trivial = RECIPE.read_bytes()
    header = f"# bench_runs --fork-acceptance, {mode} worker\n".encode()
    return {"trivial": header + trivial, "+torch": header + b"import torch  # noqa: F401\n" + trivial}


def acceptance_mode(mode: str, env: dict, var_dir: Path, api: dict, k: int, deadline: float) -> dict:
    """One worker started in `mode`; k runs of the trivial recipe, then k of it plus torch, via the API."""
    from execution.forked import FORK_ENV
    from execution.warm import WARM_ENV

    warm, fork = START_MODES[mode]
    worker = Worker(
        f"bench-runs-{os.getpid()}-F{mode}", {**env, WARM_ENV: warm, FORK_ENV: fork}, var_dir / f"F{mode}.log"
    )
    try:
        ready = worker.wait_ready(timeout=max(5.0, min(90.0, deadline - time.monotonic())))
        result: dict = {"ready": ready, "load_before": load()}
        for name, source in acceptance_recipes(mode).items():
            submission_id, sent = api_submit(api["url"], api["token"], api["slug"], f"{name}-{mode}", source)
            wait_runs(submission_id, k, timeout=deadline - time.monotonic(), workers=[worker])
            rows = run_rows(submission_id)
            finished = np.array([r["finished"] for r in rows])
            result[name] = {
                "per_run": np.diff(finished),
                "first": finished[0] - sent,  # POST -> first run stored: worker pick-up, template or sandbox
                "sandbox": np.array([r["duration_s"] for r in rows]),
                "started_as": started_as(submission_id),
            }
        result["load_after"] = load()
        return result
    finally:
        worker.stop()


def print_acceptance(results: dict, k: int) -> None:
    print(f"\n  per run, back to back (diff of consecutive finished_at, {k - 1} intervals of {k} runs), seconds:")
    print(f"  {'mode':7} {'recipe':7} {'mean':>6} {'median':>6} {'max':>6}  {'1st run':>7}  intervals; runs started as")
    for mode, res in results.items():
        for name in ("trivial", "+torch"):
            r = res[name]
            starts = ", ".join(f"{n} {s}" for s in ("forked", "warm", "cold") if (n := r["started_as"].count(s)))
            print(
                f"  {mode:7} {name:7} {np.mean(r['per_run']):6.3f} {med(r['per_run']):6.3f} "
                f"{np.max(r['per_run']):6.3f}  {r['first']:7.3f}  "
                f"{' '.join(f'{v:.2f}' for v in r['per_run'])}; {starts}"
            )
    overhead = {
        mode: (
            np.mean(res["+torch"]["per_run"]) - np.mean(res["trivial"]["per_run"]),
            med(res["+torch"]["per_run"]) - med(res["trivial"]["per_run"]),
        )
        for mode, res in results.items()
    }
    print("  torch overhead per run (+torch minus trivial): mean (the cost of the k runs / k), median")
    for mode, res in results.items():
        print(
            f"  {mode:7} {overhead[mode][0]:+7.3f} {overhead[mode][1]:+7.3f}   "
            f"load {res['load_before']} -> {res['load_after']}"
        )
    forked = results["forked"]
    all_forked = all(s == "forked" for name in ("trivial", "+torch") for s in forked[name]["started_as"])
    ok = max(overhead["forked"]) <= OVERHEAD_TARGET_S and all_forked
    print(
        f"{'PASS' if ok else 'FAIL'}: forked runs, through the REST API and one worker (-c 1), {k} back-to-back "
        f"runs each: `import torch` costs {overhead['forked'][0]:+.3f} s per run (mean; median "
        f"{overhead['forked'][1]:+.3f} s) more than the trivial recipe (target <= {OVERHEAD_TARGET_S} s; every "
        f"run forked: {all_forked}); in the same benchmark run, mean: warm {overhead['warm'][0]:+.3f} s, "
        f"cold {overhead['cold'][0]:+.3f} s"
    )


def fork_acceptance(args, user, worker_env: dict, var_dir: Path, deadline: float) -> None:
    """Issue 28's acceptance: through the REST API (gunicorn on 127.0.0.1) and one worker (-c 1), k
    back-to-back runs of the trivial recipe and of it plus ``import torch``, per start mode."""
    from dev import free_port
    from leaderboard.services.accounts import token_create
    from tests.platform.factories import digits_challenge

    k = args.fork_runs
    challenge, _ = digits_challenge(
        user, title="Forked runs", k_runs=k, daily_quota=0, total_quota=0, allow_recipes=True
    )
    port = free_port()
    api = {"url": f"http://127.0.0.1:{port}", "token": token_create(user=user)[1], "slug": challenge.slug}
    web = start_web({**worker_env, "WEB_CONCURRENCY": "1", "GUNICORN_THREADS": "2"}, port, var_dir / "web.log")
    print(
        f"\nforked runs (issue 28's acceptance): POST /api/challenges/{challenge.slug}/submissions/ to gunicorn on "
        f"127.0.0.1:{port}; per start mode a fresh `celery worker -Q cpu -c 1` (cold: VARBOARD_WARM_SANDBOXES=0; "
        f"warm: VARBOARD_WARM_SANDBOXES=1; forked: VARBOARD_FORK_RUNS=1), then {k} runs of {RECIPE.relative_to(ROOT)} and "
        f"{k} of it plus `import torch`, back to back; load {load()}"
    )
    try:
        results = {mode: acceptance_mode(mode, worker_env, var_dir, api, k, deadline) for mode in START_MODES}
    finally:
        stop_web(web)
    print_acceptance(results, k)


# ----------------------------------------------------------------------------- output
def row(label: str, values, note: str = "") -> str:
    return f"  {label:<52} {med(values):8.3f} {p90(values):8.3f}  {note}"


def print_sandbox_parts(ref: dict) -> None:
    p = ref["parts"]
    print(f"  sandbox parts, median of each (sandboxed interpreter: {ref['prefix']}; {ref['isolation']}):")
    for name, value in p.items():
        print(f"    {name:<50} {value * 1e3:8.1f} ms")
    setup = p["run_sandboxed(python -c pass)"] - p["python start"]
    print(
        f"    -> sandbox set-up and tear-down (run_sandboxed minus a plain start): {setup * 1e3:.0f} ms; "
        f"imports in the sandbox: {(p['python + numpy & harness imports'] - p['python start']) * 1e3:.0f} ms"
    )


def trivial_benchmark(args, challenge, user, single, worker_env: dict, var_dir: Path, k: int, deadline: float) -> None:
    """The trivial recipe: in-process references, phase A (1 worker) and B (2 workers), verdicts."""
    # ---- references in this process
    ref_submission, _ = submit(challenge, user, "reference-direct", enqueue=False)
    direct = reference_direct(challenge, ref_submission, args.reference_runs)
    compute = direct["compute"]
    print(
        f"\nreference R1: execute_recipe_run in-process (no Celery, no DB), {args.reference_runs} runs, "
        f"load {load()}: median {med(direct['wall']):.3f} s, p90 {p90(direct['wall']):.3f} s; sandboxed "
        f"process (duration_s) median {med(direct['sandbox']):.3f} s; the recipe's fit_predict "
        f"{compute * 1e6:.0f} us (split {direct['split'][0]}/{direct['split'][1]}/{direct['split'][2]} "
        f"train/valid/test rows); this process's RSS {rss_mb():.0f} MB"
    )
    parts = reference_sandbox_parts(max(5, args.reference_runs // 2))
    print_sandbox_parts(parts)
    r2 = reference_run_execute(challenge, user, args.reference_runs)
    print(
        f"reference R2: run_execute in-process (DB, no Celery), {len(r2['wall'])} runs, load {load()}: "
        f"median {med(r2['wall']):.3f} s, p90 {p90(r2['wall']):.3f} s; {med(r2['queries']):.0f} SQL "
        f"queries per run taking {med(r2['db']) * 1e3:.1f} ms in all; parts (median):"
    )
    for name, values in r2["parts"].items():
        print(f"    {name:<50} {med(values) * 1e3:8.1f} ms")

    # ---- phase A
    a_raw = phase(
        "A", 1, worker_env, var_dir, challenge, user, k, deadline, latency_runs=args.latency_runs, single=single
    )
    a = summarise(a_raw, k)
    print(
        f"\nphase A: 1 worker process (prefork pool of 1), {k} runs back to back; worker ready (ping) in "
        f"{a_raw['ready']:.1f} s, not counted; load {a_raw['load_before']} -> {a_raw['load_after']}; "
        f"submission_create_recipe took {a_raw['submit']:.3f} s (plan + store + publish {k} tasks in "
        f"{a_raw['enqueue'][1] - a_raw['enqueue'][0]:.3f} s)"
    )
    print(f"  {'seconds per run':<52} {'median':>8} {'p90':>8}")
    print(row("wall, back to back (diff of consecutive finished_at)", a["per_run"], "= the sum of the next two"))
    print(row("  in the task: claimed -> stored (started..finished)", a["in_task"]))
    print(row("    sandboxed process (Run.duration_s)", a["sandbox"], "interpreter + imports + harness + fit_predict"))
    print(row("    in the task outside the sandbox", a["outside"], "dataset load, inputs, scoring, queries"))
    print(
        row(
            "  between tasks: stored(i-1) -> claimed(i)",
            a["between"],
            "status refresh, report request, ack, next message, claim",
        )
    )
    print(row("recipe compute (fit_predict, in-process)", [compute]))
    print(row("platform overhead = wall back to back - compute", a["per_run"] - compute))
    print(
        f"  first run (fresh pool child): enqueue -> claimed {a['first_pickup']:.3f} s, claimed -> stored "
        f"{a['first_in_task']:.3f} s; Celery's own task time median {med(a_raw['task_seconds'][0]):.3f} s"
    )
    print(
        f"  throughput: {a['throughput']:.2f} runs/s ({k} runs, enqueue -> last stored {a['makespan']:.1f} s); "
        f"steady state {a['steady']:.2f} runs/s; worker CPU {a['cpu_per_run']:.3f} s per run; machine busy "
        f"{a_raw['machine_busy']:.2f} of {os.cpu_count()} CPUs during the phase; RSS worker main "
        f"{a_raw['worker_rss'][0]:.0f} MB, pool child {', '.join(f'{v:.0f}' for v in a_raw['pool_rss'])} MB "
        f"(torch {'loaded' if a_raw['pool_torch'] else 'not loaded'} in it)"
    )
    if a_raw.get("latency"):
        lat = np.array(a_raw["latency"])
        print(
            f"  single runs sent to the idle worker ({len(lat)}; k = 1 submissions): enqueue -> claimed "
            f"median {med(lat[:, 0]):.3f} s, claimed -> stored {med(lat[:, 1]):.3f} s (sandbox "
            f"{med(lat[:, 3]):.3f} s), enqueue -> stored {med(lat[:, 2]):.3f} s (max {lat[:, 2].max():.3f} s)"
        )

    # ---- phase B
    b_raw = phase("B", 2, worker_env, var_dir, challenge, user, k, deadline)
    b = summarise(b_raw, k)
    scaling = b["throughput"] / a["throughput"]
    print(
        f"\nphase B: 2 worker processes (two separate `celery worker -c 1`), {k} runs of a fresh "
        f"submission; ready in {b_raw['ready']:.1f} s, not counted; load {b_raw['load_before']} -> "
        f"{b_raw['load_after']}"
    )
    print(row("  in the task: claimed -> stored", b["in_task"], f"(phase A: {med(a['in_task']):.3f})"))
    print(row("    sandboxed process (Run.duration_s)", b["sandbox"], f"(phase A: {med(a['sandbox']):.3f})"))
    per_worker = [len(t) for t in b_raw["task_seconds"]]
    print(
        f"  throughput: {b['throughput']:.2f} runs/s ({k} runs in {b['makespan']:.1f} s; steady state "
        f"{b['steady']:.2f}); scaling vs phase A {scaling:.2f}x (ideal 2.0; steady state "
        f"{b['steady'] / a['steady']:.2f}x); tasks per worker {per_worker}; worker CPU "
        f"{b['cpu_per_run']:.3f} s per run; machine busy {b_raw['machine_busy']:.2f} of {os.cpu_count()} "
        f"CPUs (phase A: {a_raw['machine_busy']:.2f})"
    )
    ncpu = os.cpu_count() or 1
    ceiling = min(2.0, max(0.0, ncpu - b["rest_busy"]) / a["workers_busy"])
    print(
        f"  CPU: one worker used {a['workers_busy']:.2f} CPUs in phase A (its runs are CPU-bound: "
        f"{a['cpu_per_run']:.3f} CPU-s per {med(a['per_run']):.3f} s run), two used {b['workers_busy']:.2f} in "
        f"phase B ({b['cpu_per_run']:.3f} CPU-s per run, {b['cpu_per_run'] / a['cpu_per_run'] - 1:+.0%}); "
        f"the rest of the machine (other jobs, PostgreSQL, Redis, this script) used {a['rest_busy']:.2f} "
        f"/ {b['rest_busy']:.2f} CPUs -> with {ncpu} CPUs and the other load of phase B, 2 workers could "
        f"reach at most {ceiling:.2f}x"
    )
    queue_db = med(a["per_run"]) - med(direct["wall"])
    print(
        f"\nwhere the time goes (medians): back-to-back run {med(a['per_run']):.3f} s = sandboxed run "
        f"in-process R1 {med(direct['wall']):.3f} s (of which the sandboxed process "
        f"{med(direct['sandbox']):.3f} s) "
        f"+ queue and DB {queue_db:.3f} s (R2 - R1, the DB and dataset work of run_execute: "
        f"{med(r2['wall']) - med(direct['wall']):.3f} s; Celery: {med(a['per_run']) - med(r2['wall']):.3f} s)"
    )

    # ---- verdicts
    overhead = med(a["per_run"] - compute)
    verdict = "PASS" if overhead <= OVERHEAD_TARGET_S else "MISS"
    print(
        f"{verdict}: platform overhead per run, 1 worker back to back, median of {k - 1}: {overhead:.3f} s "
        f"(target <= {OVERHEAD_TARGET_S} s; p90 {p90(a['per_run'] - compute):.3f} s)"
    )
    if a_raw.get("latency"):
        idle = med(np.array(a_raw["latency"])[:, 2]) - compute
        verdict = "PASS" if idle <= OVERHEAD_TARGET_S else "MISS"
        print(
            f"{verdict}: enqueue -> sandbox -> stored on an idle worker, median of {len(a_raw['latency'])}: "
            f"{idle:.3f} s (target <= {OVERHEAD_TARGET_S} s)"
        )
    verdict = "PASS" if scaling >= SCALING_TARGET else "MISS"
    print(
        f"{verdict}: throughput 1 -> 2 workers {a['throughput']:.2f} -> {b['throughput']:.2f} runs/s, "
        f"{scaling:.2f}x (target >= {SCALING_TARGET}x, ideal 2.0; {os.cpu_count()} CPUs, load average "
        f"{b_raw['load_before']} before phase B, machine busy {b_raw['machine_busy']:.2f} CPUs during it; "
        f"ceiling from CPU left free by other load {ceiling:.2f}x)"
    )
    if scaling < SCALING_TARGET and ceiling < SCALING_TARGET:
        print(
            f"  note: the CPU the other load left free allowed at most {ceiling:.2f}x, and the per-run CPU cost "
            f"did not grow with 2 workers ({a['cpu_per_run']:.3f} -> {b['cpu_per_run']:.3f} CPU-s): "
            f"re-run on an idle machine to judge the scaling target"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60, help="k: runs per phase (default 60; >= 50 for the target)")
    parser.add_argument("--reference-runs", type=int, default=20, help="in-process reference runs (default 20)")
    parser.add_argument("--latency-runs", type=int, default=5, help="single runs sent to an idle worker")
    parser.add_argument("--timeout", type=int, default=480, help="overall time limit in seconds (default 480)")
    parser.add_argument("--torch-runs", type=int, default=10, help="torch recipe: runs back to back per start mode")
    parser.add_argument("--torch-only", action="store_true", help="only the torch recipe's warm/cold comparison")
    parser.add_argument("--quick", action="store_true", help="k = 12, 5 reference runs, 3 single runs, 4 torch runs")
    parser.add_argument(
        "--fork-acceptance",
        action="store_true",
        help="only issue 28's acceptance: cold, warm and forked workers, trivial vs + import torch, via the API",
    )
    parser.add_argument("--fork-runs", type=int, default=6, help="--fork-acceptance: runs per recipe (default 6)")
    parser.add_argument(
        "--starts-direct",
        action="store_true",
        help="the light mode only: cold, warm and forked runs back to back through execution, no API (bench_starts.py)",
    )
    args = parser.parse_args()
    if args.starts_direct:
        import subprocess

        sys.exit(subprocess.call([sys.executable, str(Path(__file__).with_name("bench_starts.py"))]))
    if args.quick:
        args.runs, args.reference_runs, args.latency_runs = min(args.runs, 12), 5, 3
        args.torch_runs = min(args.torch_runs, 4)
    if args.runs < 2 or args.fork_runs < 2:
        parser.error("--runs and --fork-runs must be at least 2")

    def on_alarm(signum, frame):
        raise BenchTimeout(f"the overall limit of {args.timeout} s was reached")

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.alarm(args.timeout)
    deadline = time.monotonic() + args.timeout - 20  # leave time to clean up

    for name, address in (("PostgreSQL", POSTGRES), ("Redis", REDIS)):
        try:
            socket.create_connection(address, timeout=1).close()
        except OSError:
            sys.exit(f"bench_runs needs {name} on {address[0]}:{address[1]} (real workers, as in production)")
    import redis

    slot, slot_lock = claim_redis_slot()
    broker_url = f"redis://{REDIS[0]}:{REDIS[1]}/{slot}"
    broker = redis.Redis.from_url(broker_url)
    broker.flushdb()
    os.environ["CELERY_BROKER_URL"] = broker_url  # read by the settings at django.setup()
    var_dir = Path(tempfile.mkdtemp(prefix="varboard-bench-runs-"))
    database_made = False
    k = args.runs
    try:
        database_url = postgres_database(create=True)
        database_made = True
        env = django_setup(var_dir, database_url)
        import celery
        import django

        from leaderboard.celery import app

        assert app.conf.broker_url == broker_url, app.conf.broker_url
        worker_env = {
            **os.environ,
            **env,
            "CELERY_BROKER_URL": broker_url,
            "OPENBLAS_NUM_THREADS": "1",
            "DJANGO_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
        print(
            f"machine: {os.cpu_count()} CPUs, load average {load()} at start (1-min; shared machine), "
            f"Python {sys.version.split()[0]}, Django {django.__version__}, Celery {celery.__version__}; "
            f"PostgreSQL temporary database, Redis db {slot} as broker"
        )
        install_enqueue_clock()
        user, challenge, single, n_rows = make_challenges(k)
        print(
            f"setup: digits challenge, {n_rows} rows, k = {k} runs per submission, recipe "
            f"{RECIPE.relative_to(ROOT)} (majority class); workers: celery -A leaderboard worker -Q cpu "
            f"-c 1 --prefetch-multiplier=1 -P prefork --without-gossip --without-mingle --without-heartbeat"
        )

        if args.fork_acceptance:
            fork_acceptance(args, user, worker_env, var_dir, deadline)
            return
        if not args.torch_only:
            trivial_benchmark(args, challenge, user, single, worker_env, var_dir, k, deadline)
        torch_benchmark(args, user, worker_env, var_dir, deadline)
    finally:
        signal.alarm(0)
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            pass
        if database_made:
            postgres_database(create=False)
        try:
            broker.flushdb()
        except Exception:
            pass
        shutil.rmtree(var_dir, ignore_errors=True)
        slot_lock.close()


if __name__ == "__main__":
    try:
        main()
    except BenchTimeout as exc:
        sys.exit(f"bench_runs: TIMEOUT: {exc}")
