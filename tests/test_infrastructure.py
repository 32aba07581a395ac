"""Checks of the infrastructure itself: conftest wiring, dev.py, .ci/run, docker-compose.yml, .env.example."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import ROOT, STATE, services_required, skip_or_fail, wait_for

POSTGRESQL = "django.db.backends.postgresql"


def load_dev():
    """dev.py as a module (it runs nothing on import)."""
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- conftest wiring
def test_database_is_postgresql_when_services_are_required_or_reachable():
    expected = services_required() or (STATE["postgres"] and not os.environ.get("DATABASE_URL"))
    if not expected:
        pytest.skip("PostgreSQL is neither required nor reachable: the suite runs on SQLite")
    assert settings.DATABASES["default"]["ENGINE"] == POSTGRESQL


def test_files_go_to_a_temporary_folder_not_var():
    var = (ROOT / "var").resolve()
    for path in (Path(settings.MEDIA_ROOT), Path(settings.VAR_DIR)):
        assert path.is_dir()
        assert not path.resolve().is_relative_to(var), path


def test_wait_for_returns_the_value_or_times_out_with_the_message():
    assert wait_for(lambda: 42, timeout=1) == 42
    with pytest.raises(AssertionError, match="the impossible"):
        wait_for(lambda: False, timeout=0.2, interval=0.05, message=lambda: "the impossible")


@pytest.mark.integration
def test_celery_worker_process_answers_and_consumes_every_queue(celery_worker_process, transactional_db):
    from leaderboard.celery import app

    assert celery_worker_process.ping()
    replies = app.control.inspect([celery_worker_process.name], timeout=5).active_queues()
    assert replies, celery_worker_process.tail()
    assert {queue["name"] for queue in replies[celery_worker_process.name]} == {"scoring", "cpu", "gpu"}
    assert app.conf.broker_url == celery_worker_process.broker_url


# ---------------------------------------------------------------- dev.py and CI
def test_dev_py_help_works_with_the_plain_interpreter():
    python = shutil.which("python3") or sys.executable
    result = subprocess.run([python, "dev.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for command in ("demo", "test", "setup", "worker", "serve", "bench"):
        assert command in result.stdout


def test_dev_py_imports_only_the_standard_library():
    tree = ast.parse((ROOT / "dev.py").read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert names - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_dev_py_treats_pytest_no_tests_as_failure():
    dev = load_dev()
    assert dev.pytest_status(5) == 1
    assert dev.pytest_status(0) == 0
    assert dev.pytest_status(1) == 1


def test_ci_run_is_valid_bash_and_calls_the_readme_test_command():
    script = ROOT / ".ci" / "run"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert "python3 dev.py test" in script.read_text()


def test_readme_quick_start_gives_the_two_commands():
    readme = ROOT / "README.md"
    if not readme.exists():
        skip_or_fail("README.md is not written yet")
    text = readme.read_text()
    assert "python3 dev.py demo" in text and "python3 dev.py test" in text


def test_env_example_documents_every_variable_settings_reads():
    source = (ROOT / "leaderboard" / "settings.py").read_text()
    pattern = r'(?:environ\.get\(|environ\[|env_(?:bool|int|list)\(|env=)\s*"([A-Z][A-Z0-9_]+)"'
    read = set(re.findall(pattern, source))
    assert {"DATABASE_URL", "DJANGO_SECRET_KEY", "CELERY_BROKER_URL"} <= read
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert read - documented == set()


# ---------------------------------------------------------------- docker compose
def compose_command() -> list[str] | None:
    """``docker compose`` (v2 plugin) or a standalone ``docker-compose`` v2, else None."""
    candidates = [[shutil.which("docker"), "compose"], [shutil.which("docker-compose")]]
    for command in candidates:
        if not command[0]:
            continue
        version = subprocess.run([*command, "version"], capture_output=True, text=True)
        match = re.search(r"version v?(\d+)\.", version.stdout)
        if version.returncode == 0 and match and int(match.group(1)) >= 2:
            return command
    return None


def test_docker_compose_config_is_valid_without_a_dot_env():
    command = compose_command()
    if command is None:
        pytest.skip("no docker compose v2 (plugin or standalone) on this machine")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("DJANGO_", "DATABASE_", "CELERY_", "VARBOARD_", "POSTGRES_", "CACHE_"))}
    base = [*command, "-f", "docker-compose.yml", "--env-file", os.devnull]
    checked = subprocess.run([*base, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    services = subprocess.run([*base, "--profile", "gpu", "config", "--services"], cwd=ROOT, env=env,
                              capture_output=True, text=True)
    assert set(services.stdout.split()) == {"postgres", "redis", "web", "worker-scoring", "worker-cpu",
                                           "worker-gpu", "beat"}


# ---------------------------------------------------------------- the README's first command
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return None


@pytest.mark.slow
def test_dev_py_demo_scores_and_serves_on_the_embedded_defaults(tmp_path):
    """``python3 dev.py demo`` on SQLite and the file-system broker: demo scored, site served, clean stop."""
    if not (ROOT / "leaderboard" / "management" / "commands" / "demo.py").exists():
        skip_or_fail("the demo management command is not written yet")
    env = {key: value for key, value in os.environ.items()
           if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "VARBOARD_MEDIA_ROOT", "CACHE_URL"}}
    env["VARBOARD_VAR_DIR"] = str(tmp_path / "var")
    port = free_port()
    log_path = tmp_path / "demo.log"
    with open(log_path, "wb") as log:
        demo = subprocess.Popen([sys.executable, "dev.py", "demo", "--port", str(port)], cwd=ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def output() -> str:
        return log_path.read_text(errors="replace")[-6000:]

    try:
        def served() -> bool:
            if demo.poll() is not None:
                raise AssertionError(f"dev.py demo exited with {demo.returncode}:\n{output()}")
            return http_status(f"http://127.0.0.1:{port}/") == 200

        wait_for(served, timeout=1200, interval=2, message=lambda: f"the demo site to answer:\n{output()}")
        demo.send_signal(signal.SIGINT)
        assert demo.wait(60) in (0, -signal.SIGINT, 130), output()
        assert "Traceback" not in output()
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
