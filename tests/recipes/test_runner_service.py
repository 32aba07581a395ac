"""The runner service (execution.service) under gunicorn, and the worker's RemoteRunner, for recipes and
for hosts' scoring programs.

A real gunicorn process on 127.0.0.1 runs workspaces in its sandbox; the worker side sends
a run's workspace over HTTP and scores what comes back. Same seeds, same scores as running
the sandbox locally. The service checks its token and its inputs, and its /health is the
readiness a worker reads before it consumes the recipe queues.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import requests

from evaluation.scoring_programs import ScoringProgramError
from execution.readiness import readiness, remote_probe, runs_get_cuda
from execution.runners import LocalRunner, RemoteRunner, configured_program_runner, configured_runner
from execution.sandbox import Limits, SandboxUnavailable
from execution.scoring_program import read_program_metrics, run_scoring_program
from tests.serving import wait_until_served

from .helpers import HOSTILE, RECIPES, ROOT, run_file
from .scoring_cases import RAISES

TOKEN = "runner-test-token-5d2a"
PROGRAM = (ROOT / "examples" / "scoring" / "macro_f1_and_cost.py").read_bytes()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """``gunicorn execution.service:app`` with two worker processes and a token; its URL."""
    port = _free_port()
    env = {"PATH": "/usr/bin:/bin", "VARBOARD_RUNNER_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    log_path = tmp_path_factory.mktemp("runner-service") / "gunicorn.log"
    with open(log_path, "wb") as log:  # a file, not a pipe nobody reads: a full pipe would block gunicorn
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "execution.service:app",
                "-w",
                "2",
                "-t",
                "300",
                "-b",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        # A worker's first /health runs the isolation probe: seconds on a busy machine. Short requests,
        # retried (a timed-out one still finishes its probe), inside one bounded wait.
        wait_until_served(
            f"{url}/health",
            deadline_s=120,
            request_timeout_s=5,
            process=process,
            output=lambda: log_path.read_text(errors="replace")[-3000:],
        )
        yield url
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_health_reports_the_service_isolation(service):
    body = requests.get(f"{service}/health", timeout=30).json()
    assert body["ok"] is True and body["backend"] == "bubblewrap" and "seccomp" in body["isolation"]
    assert body["cuda"] is False  # no GPU on this machine: gpu-queue runs would get the CPU
    found = remote_probe(service, TOKEN)
    assert found.ok and found.isolation[0] == f"runner service at {service}"


def test_a_remote_run_scores_exactly_like_a_local_one(service, digits):
    remote = run_file(RECIPES / "logistic_regression.py", digits, runner=RemoteRunner(service, token=TOKEN))
    local = run_file(RECIPES / "logistic_regression.py", digits, runner=LocalRunner())
    assert remote.status == local.status == "succeeded", remote.error
    assert remote.test_score == local.test_score and remote.valid_score == local.valid_score
    assert "bubblewrap" in " ".join(remote.isolation)


def test_a_hostile_run_fails_on_the_service_as_it_would_locally(service, digits):
    remote = run_file(HOSTILE / "raises.py", digits, runner=RemoteRunner(service, token=TOKEN))
    assert remote.status == "failed"
    assert remote.error == "the recipe raised ValueError: boom after 3 steps (line 6 of recipe.py)"


def test_the_service_refuses_requests_without_its_token_or_in_another_format(service, digits):
    with pytest.raises(SandboxUnavailable, match="answered 401"):
        run_file(RECIPES / "trivial.py", digits, runner=RemoteRunner(service, token="wrong"))
    bad = requests.post(
        f"{service}/v1/runs", data=b"not a zip", timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert bad.status_code == 400 and "not a zip archive" in bad.json()["error"]
    assert requests.get(f"{service}/v1/runs", timeout=30).status_code == 405
    assert requests.get(f"{service}/nowhere", timeout=30).status_code == 404


def test_an_unreachable_service_is_a_platform_fault_and_fails_readiness():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(SandboxUnavailable, match="is unreachable"):
        RemoteRunner(url).run({}, {}, Limits(wall_time_s=5), "cpu")
    found = remote_probe(url)
    assert not found.ok and found.missing.startswith(f"the runner service at {url} does not answer")


def test_the_worker_uses_the_service_named_by_the_environment(monkeypatch, service):
    monkeypatch.setenv("VARBOARD_RUNNER_URL", service)
    monkeypatch.setenv("VARBOARD_RUNNER_TOKEN", TOKEN)
    runner = configured_runner()
    assert isinstance(runner, RemoteRunner) and runner.url == service
    assert readiness().ok and runs_get_cuda() is False
    monkeypatch.delenv("VARBOARD_RUNNER_URL")
    assert isinstance(configured_runner(), LocalRunner)
    assert os.environ.get("VARBOARD_RUNNER_URL") is None


# -- hosts' scoring programs on a runner service of their own (docker-compose.yml's runner-programs) --


def test_a_scoring_program_runs_on_the_service_as_it_would_locally(service):
    """A program's workspace crosses to the service like a recipe's: the same scores, and a program that
    raises fails with the same message for its host. The worker that scores holds the database
    credentials and every challenge's labels; the service holds one call's rows."""
    ids = pd.Index([f"r{i}" for i in range(40)], name="review_id")
    truth = np.array(["negative", "neutral", "positive"])[np.arange(40) % 3]
    predicted = np.where(np.arange(40) % 4 == 0, "neutral", truth)
    y_true, y_pred = pd.DataFrame({"label": truth}, index=ids), pd.DataFrame({"prediction": predicted}, index=ids)
    remote_runner = RemoteRunner(service, token=TOKEN)
    limits = Limits(wall_time_s=60)
    remote = run_scoring_program(PROGRAM, y_true, y_pred, limits=limits, runner=remote_runner)
    local = run_scoring_program(PROGRAM, y_true, y_pred, limits=limits, runner=LocalRunner())
    assert remote.scores == local.scores and set(remote.scores) == {"macro_f1", "cost"}
    assert np.array_equal(remote.outcomes["cost"], local.outcomes["cost"])
    assert [m.name for m in read_program_metrics(PROGRAM, runner=remote_runner)] == ["macro_f1", "cost"]
    with pytest.raises(ScoringProgramError) as raised:
        run_scoring_program(RAISES, y_true, y_pred, limits=limits, runner=remote_runner)
    assert str(raised.value).startswith("score(y_true, y_pred) raised ValueError: boom after 3 steps (line 7")


def test_the_scoring_worker_sends_programs_to_the_service_named_by_the_environment(monkeypatch, service):
    monkeypatch.setenv("VARBOARD_PROGRAM_RUNNER_URL", service)
    monkeypatch.setenv("VARBOARD_PROGRAM_RUNNER_TOKEN", TOKEN)
    runner = configured_program_runner()
    assert isinstance(runner, RemoteRunner) and runner.url == service and runner.token == TOKEN
    monkeypatch.setenv("VARBOARD_PROGRAM_RUNNER_TOKEN", "wrong")
    with pytest.raises(SandboxUnavailable, match="answered 401"):  # a platform fault: retried, never the host's
        read_program_metrics(PROGRAM)
    monkeypatch.delenv("VARBOARD_PROGRAM_RUNNER_URL")
    assert isinstance(configured_program_runner(), LocalRunner)
