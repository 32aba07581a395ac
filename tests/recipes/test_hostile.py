"""Hostile recipes (examples/hostile/), as root and as the workers' uid (1000).

Each fails its own run with a message naming the problem, or finds nothing of the host;
nothing of it outlives the run; the next run in the same process succeeds. The worker
holds secrets throughout (DJANGO_SECRET_KEY, DATABASE_URL, CELERY_BROKER_URL in its
environment; a database file, a media upload and hidden labels on its disk at mode 0644
in 0755 folders), and none of them may appear in anything a run returns.

As root every run has a fresh uid; as uid 1000 (the Docker image's workers, see
tests/recipes/unprivileged.py) the recipe runs as the worker's own uid, so only the
namespaces and the mount view protect the worker: both are run.

Each case runs three times: with cold starts; with warm starts (execution.warm), every step
in a sandbox started ahead of its run, the second step of a write-then-read case in one
started while the first step executed; and forked (execution.forked), every step a fork of
the same template, so a write-then-read case is also a cross-run planting test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

import pytest

from execution.sandbox.limits import MAX_OPEN_FILES

from .conftest import leftovers, needs_linux
from .hostile_cases import (
    DAEMON_MARKER,
    DB_CONTENT,
    MEDIA_CONTENT,
    SECRETS,
    SHM_TOKEN,
    cases,
    make_host_files,
    run_case,
)
from .unprivileged import needs_worker_uid, run_as_worker

pytestmark = [needs_linux]

NAMES = list(cases({"db": "", "media": "", "labels_npy": ""}))
#: warm: each run in a sandbox started ahead of it (execution.warm); forked: a fork of a template (execution.forked)
STARTS = ("cold", "warm", "forked")
SYSV_KEY = 0x5EC2E7


@pytest.fixture(scope="module")
def host_files():
    base = tempfile.mkdtemp(prefix="varboard-host-")
    yield make_host_files(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("name", NAMES)
def test_hostile_recipe_as_root(name, start, digits, host_files, monkeypatch, no_leftovers):
    for variable, value in SECRETS.items():
        monkeypatch.setenv(variable, value)
    outcome = run_case(cases(host_files)[name], digits, start)
    assert leftovers(no_leftovers) == []
    check(name, outcome, host_files, start)


@pytest.fixture(scope="module", params=STARTS)
def as_worker(request, host_files):
    """Every case, run once by a driver as uid 1000, with the secrets in its environment;
    once with cold starts, once with warm starts, once forked."""
    start = request.param
    results = run_as_worker(
        f"""
    from execution.sandbox.bubblewrap import Bubblewrap
    from execution.sandbox.procs import pids_in_namespace
    from tests.recipes.helpers import load_digits_data
    from execution.warm import warm_pool
    from execution.forked import template_pool
    from execution.sandbox.zygote import Template
    from tests.recipes.hostile_cases import cases, run_case
    namespaces, start, fork = [], Bubblewrap.start, Template.fork
    def recording(self, spec):
        run = start(self, spec)
        namespaces.append(run.namespace)
        return run
    def recording_fork(self, workdir):
        run = fork(self, workdir)
        namespaces.append(run.namespace)
        return run
    Bubblewrap.start, Template.fork = recording, recording_fork
    data, results = load_digits_data(), {{}}
    for name, steps in cases({host_files!r}).items():
        namespaces.clear()
        results[name] = run_case(steps, data, {start!r})
        pool = warm_pool()
        waiting = {{pool.warm.waiting.started.namespace}} if pool and pool.warm else set()
        templates = template_pool()
        if templates and templates.held:
            waiting.add(templates.held.template.started.namespace)
        results[name]["leftovers"] = [pid for ns in namespaces if ns not in waiting for pid in pids_in_namespace(ns)]
    print(json.dumps(results))
    """,
        env=SECRETS,
        timeout=600,
    )
    return start, results


@needs_worker_uid
@pytest.mark.parametrize("name", NAMES)
def test_hostile_recipe_as_the_workers_uid(name, as_worker, host_files):
    start, results = as_worker
    outcome = results[name]
    assert outcome["leftovers"] == []
    assert all("uid 1000 (the worker's)" in run["isolation"] for run in outcome["runs"])
    check(name, outcome, host_files, start)


# -- what each case must show -----------------------------------------------------------------------


def check(name: str, outcome: dict, host_files: dict, start: str) -> None:
    assert outcome["next_ok"], outcome["next_error"]
    assert [run["warm_start"] for run in outcome["runs"]] == [start != "cold"] * len(outcome["runs"])
    forked = ["forked from a template" in run["isolation"] for run in outcome["runs"]]
    assert forked == [start == "forked"] * len(outcome["runs"]), [run["warnings"] for run in outcome["runs"]]
    everything = json.dumps(outcome)
    for secret in [*SECRETS.values(), DB_CONTENT, MEDIA_CONTENT, "PONG"]:
        assert secret not in everything
    runs = outcome["runs"]
    expected = EXPECTED[name]
    if callable(expected):
        expected(runs, host_files, start)
        return
    run = runs[0]
    assert run["status"] == "failed", run["log"]
    assert expected.fullmatch(run["error"]) if isinstance(expected, re.Pattern) else run["error"] == expected, run[
        "error"
    ]


def _report(run: dict, tag: str) -> dict:
    line = next(line for line in run["log"].splitlines() if line.startswith(tag + " "))
    return json.loads(line[len(tag) + 1 :])


def _fork_bomb(runs, _, start):
    assert runs[0]["error"] == "the run reached the limit of 32 processes" and runs[0]["duration_s"] < 10


def _garbage(runs, _, start):
    run = runs[0]
    assert run["error"] == "the run printed more than the 1,000,000-byte output limit"
    assert run["sandbox_status"] == "output_limit" and len(run["log"]) < 1_100_000
    assert "bytes omitted …]" in run["log"]


def _network(runs, _, start):
    error = runs[0]["error"]
    assert error.startswith("the recipe raised ConnectionError: 127.0.0.1:5432 [Errno 111] Connection refused; ")
    assert "1.1.1.1:53 [Errno 101] Network is unreachable" in error and "CONNECTED" not in runs[0]["log"]


def _services(runs, _, start):
    assert runs[0]["error"].startswith(
        "the recipe raised ConnectionError: 127.0.0.1:6379 Connection refused; 127.0.0.1:5432 Connection refused; "
        "/var/run/postgresql/.s.PGSQL.5432 No such file or directory; /run/postgresql/.s.PGSQL.5432 No such file "
        "or directory"
    ), runs[0]["error"]
    assert "REACHED" not in runs[0]["log"]


def _read_secrets(runs, files, start):
    error = runs[0]["error"]
    assert error.startswith("the recipe raised PermissionError: could not read anything: "), error
    for path in (files["db"], files["media"]):
        assert f"FileNotFoundError reading {path}" in error
        assert f"FileNotFoundError listing {os.path.dirname(path)}" in error
    if start == "forked":  # the run's init: a fork of the template, its environment the clean one of a run
        assert "PermissionError reading /proc/1/environ" in error  # non-dumpable: not readable
    else:
        assert "nothing in /proc/1/environ" in error  # bwrap's init: started with an empty environment
    assert all(f"KeyError {name}" in error for name in SECRETS)


def _daemon(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == f"sleep {DAEMON_MARKER}"]


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _proc_snoop(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    seen = _report(runs[0], "PROC-SNOOP")
    assert seen["ppid"] == 1 and set(seen["processes"]) == {"1", str(seen["pid"])}
    init, harness = seen["processes"]["1"], seen["processes"][str(seen["pid"])]
    if start == "forked":  # the run's init is the fork of the template that forked the harness
        assert init["cmdline"].endswith("harness.py") and "DJANGO" not in init["environ"]
    else:
        assert init["cmdline"].split()[0].endswith("bwrap") and init["environ"] == ""
    assert harness["cmdline"].endswith("harness.py") and "DJANGO" not in harness["environ"]


def _signals(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    assert _report(runs[0], "SIGNALS")["-1"] == "No such process"  # nobody else in reach


def _list_host(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    seen = _report(runs[0], "HOST-VIEW")
    for folder in ("/home", "/root", "/var", "/run", "/media", "/mnt", "/srv", "/data"):
        assert seen[folder] == "FileNotFoundError: No such file or directory", folder
    # Python at its neutral paths (execution.sandbox.interpreter), nothing of the host's path to it
    assert seen["/opt"] == ["python", "venv"]
    assert set(seen["/"]) <= {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "proc",
        "dev",
        "tmp",
        "sandbox",
        "opt",
    }
    assert set(seen["/etc"]) <= {
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "alternatives",
        "passwd",
        "group",
        "hosts",
    }
    assert seen["/sandbox"] == ["work"] and seen["hostname"] == "sandbox"
    assert [line.split(":")[0] for line in seen["/etc/passwd"].splitlines()] == ["sandbox"]


def _sysv_shm(runs, _, start):
    assert [run["error"].split(" (line")[0] for run in runs] == [
        f"the recipe raised PermissionError: System V shared memory: shmget({SYSV_KEY:#x}) for {mode} failed: "
        "Operation not permitted"
        for mode in ("write", "read")
    ]
    with open("/proc/sysvipc/shm") as fh:  # nothing of the runs stays allocated on the host
        assert str(SYSV_KEY) not in [line.split()[0] for line in fh.readlines()[1:]]


def _previous_run(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    assert runs[1]["error"].startswith(
        "the recipe raised FileNotFoundError: nothing of another run in view; saw 7 files, all this run's own"
    ), runs[1]["error"]
    assert SHM_TOKEN not in json.dumps(runs[1])


def _posix_shm(runs, _, start):
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    assert runs[1]["error"].startswith("the recipe raised FileNotFoundError: /dev/shm is empty")
    assert SHM_TOKEN not in json.dumps(runs[1])
    assert not [name for name in os.listdir("/dev/shm") if SHM_TOKEN in name]


def _orphan_cpu(runs, _, start):
    """Orphans reaped by the run's init (a forked run's init is not one of its polled members) hid
    their CPU time: 5 s and more of CPU under a limit of 2 s, forked (a reviewer, 2026-11-30)."""
    run = runs[0]
    assert run["sandbox_status"] == "cpu_time", run
    assert run["error"] == "the run exceeded the CPU-time limit of 2 s (all its processes together)", run["error"]
    assert "BURNED" not in run["log"]


def _fd_flood(runs, _, start):
    """Open files are kernel memory and slots of the host-wide file table (fs.file-max): each process of a
    run held as many as the worker's hard RLIMIT_NOFILE allowed (20,000 here, 1,048,576 in many containers;
    20,000 eventfds, 25 MB of slab), times its 32 processes (a reviewer, 2026-11-30)."""
    assert runs[0]["status"] == "succeeded", runs[0]["error"]
    opened = [line.split() for line in runs[0]["log"].splitlines() if line.startswith("OPENED ")]
    assert len(opened) == 4, runs[0]["log"]
    assert all(int(hard) <= MAX_OPEN_FILES and int(n) < MAX_OPEN_FILES for _, n, hard in opened), opened


EXPECTED = {
    "raises": "the recipe raised ValueError: boom after 3 steps (line 6 of recipe.py)",
    "infinite_loop": "the run exceeded the wall-time limit of 3 s",
    "memory_hog": re.compile(r"the run ran out of memory \(limit 1024 MB\) \(MemoryError: .*line 9 of recipe.py\)"),
    "memory_children": "the run ran out of memory (limit 1024 MB)",
    "huge_file": re.compile(
        r"the recipe tried to write a file larger than the 10 MB limit \(OSError: "
        r"\[Errno 27\] File too large, line 8 of recipe.py\)"
    ),
    "nan_predictions": "the recipe returned NaN in 3 predictions",
    "garbage_output": _garbage,
    "wrong_length": re.compile(r"the recipe returned 10 predictions for \d+ rows of test_inputs"),
    "fork_bomb": _fork_bomb,
    "network": _network,
    "services": _services,
    "read_secrets": _read_secrets,
    "symlink_swap": (
        "outputs/predictions_0.npy is a symbolic link; the recipe must not replace the harness's output files"
    ),
    "daemon_escape": _daemon,
    "proc_snoop": _proc_snoop,
    "signal_worker": _signals,
    "list_host": _list_host,
    "sysv_shm": _sysv_shm,
    "posix_shm": _posix_shm,
    "previous_run": _previous_run,
    "orphan_cpu": _orphan_cpu,
    "fd_flood": _fd_flood,
    "shm_filler": re.compile(
        r"the run ran out of memory \(limit 512 MB\) \(OSError: \[Errno 28\] No space left on "
        r"device, line \d+ of recipe.py\)"
    ),
}
