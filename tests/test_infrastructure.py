"""Checks of the infrastructure itself: conftest wiring, dev.py, .ci/run, docker-compose.yml, .env.example."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
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

    # a ping waits 1 s for the reply: retried, so a worker slowed by a loaded machine is not taken for a dead one
    wait_for(celery_worker_process.ping, timeout=30, interval=0.5, message=celery_worker_process.tail)
    # so is the inspection: one broadcast that a busy worker answers after its 5 s is None, not "no queues"
    replies = wait_for(
        lambda: app.control.inspect([celery_worker_process.name], timeout=5).active_queues(),
        timeout=60,
        interval=0.5,
        message=celery_worker_process.tail,
    )
    assert {queue["name"] for queue in replies[celery_worker_process.name]} == {"scoring", "cpu", "gpu"}
    assert app.conf.broker_url == celery_worker_process.broker_url


# ---------------------------------------------------------------- dev.py and CI
def test_dev_py_help_works_with_the_plain_interpreter():
    python = shutil.which("python3") or sys.executable
    result = subprocess.run([python, "dev.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for command in ("demo", "test", "setup", "worker", "serve", "bench"):
        assert command in result.stdout


def test_dev_py_worker_schedules_the_janitor_unless_told_not_to():
    """`dev.py serve` beside `dev.py worker` had no beat: a task a killed worker held was never sent again."""
    dev = load_dev()
    command = dev.worker_command(dev.parser().parse_args(["worker"]))
    assert "-B" in command and command[command.index("-s") + 1].endswith("celerybeat-schedule")
    assert "-B" not in dev.worker_command(dev.parser().parse_args(["worker", "--no-beat"]))


def test_dev_py_worker_keeps_its_beat_schedule_in_the_var_dir(monkeypatch, tmp_path):
    """A host's review: with VARBOARD_VAR_DIR set (the README's runtime folder) and no var/ in the
    clone, `dev.py worker` pointed beat at var/celerybeat-schedule; beat died at start and the janitor never ran."""
    dev = load_dev()
    monkeypatch.setenv("VARBOARD_VAR_DIR", str(tmp_path))
    command = dev.worker_command(dev.parser().parse_args(["worker"]))
    assert command[command.index("-s") + 1] == str(tmp_path / "celerybeat-schedule")


def test_dev_py_imports_only_the_standard_library():
    tree = ast.parse((ROOT / "dev.py").read_text())
    names = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    names |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    assert names - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_dev_py_treats_pytest_no_tests_as_failure():
    dev = load_dev()
    assert dev.pytest_status(5) == 1
    assert dev.pytest_status(0) == 0
    assert dev.pytest_status(1) == 1
    assert dev.pytest_status(5, filtered=True) == 0  # `dev.py test -k x`: a lane x leaves empty
    assert dev.pytest_status(1, filtered=True) == 1


LANE_PROBE = """
import json, sys
import pytest
from _pytest.mark.expression import Expression
import dev

class Record:
    def pytest_collection_finish(self, session):
        lanes = {item.nodeid: [name for name, expression in dev.TEST_LANES if Expression.compile(expression).evaluate(
                     lambda mark, item=item: item.get_closest_marker(mark) is not None)] for item in session.items}
        print("LANES " + json.dumps(lanes))

sys.exit(pytest.main(["--collect-only", "-q", "-m", "", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Record()]))
"""


def test_each_test_is_in_exactly_one_lane_of_dev_py_test():
    """Folders give integration, browser and slow (tests/conftest.py); explicit marks add to them."""
    files = [
        "tests/integration/test_queues.py",
        "tests/recipes/test_seeds.py",
        "tests/browser/test_pages_browser.py",
        "tests/browser/test_leaderboard_browser.py",
        "tests/test_infrastructure.py",
    ]
    out = subprocess.run(
        [sys.executable, "-c", LANE_PROBE, *files], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    lanes = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("LANES "))[6:])
    assert all(len(found) == 1 for found in lanes.values()), {k: v for k, v in lanes.items() if len(v) != 1}
    by_file = {}
    for nodeid, (lane,) in lanes.items():
        by_file.setdefault(nodeid.split("::")[0], set()).add(lane)
    assert by_file["tests/integration/test_queues.py"] == {"integration"}
    assert by_file["tests/recipes/test_seeds.py"] == {"slow"}
    assert (
        by_file["tests/browser/test_pages_browser.py"]
        == by_file["tests/browser/test_leaderboard_browser.py"]
        == {"browser"}
    )  # the latter's tests are marked integration too
    assert by_file["tests/test_infrastructure.py"] == {"unit", "integration", "slow"}
    assert lanes["tests/test_infrastructure.py::test_each_test_is_in_exactly_one_lane_of_dev_py_test"] == ["unit"]
    assert [name for name, _ in load_dev().TEST_LANES] == ["unit", "integration", "slow", "browser"]


def test_plain_pytest_runs_the_unit_lane():
    from configparser import ConfigParser

    ini = ConfigParser()
    ini.read(ROOT / "pytest.ini")
    assert f'-m "{load_dev().TEST_LANES[0][1]}"' in ini["pytest"]["addopts"]


def test_dev_py_stops_on_sigint_even_when_started_in_the_background():
    """A shell's ``&`` leaves SIGINT ignored; dev.py takes it back, so Ctrl-C and the demo test's SIGINT stop it."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time, dev; dev.install_signal_handlers(); print('ready', flush=True); time.sleep(60)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        assert child.wait(20) != 0 and "KeyboardInterrupt" in child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_dev_py_children_end_when_dev_py_is_killed():
    """The demo's worker and server get SIGTERM when dev.py dies, even by SIGKILL (PR_SET_PDEATHSIG)."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time, dev; "
            "p = subprocess.Popen(['sleep', '120'], preexec_fn=dev.die_with_parent); "
            "print(p.pid, flush=True); time.sleep(120)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    grandchild = int(parent.stdout.readline())
    try:
        parent.kill()
        parent.wait(10)

        def gone() -> bool:
            try:
                with open(f"/proc/{grandchild}/stat") as stat:
                    return stat.read().split(")")[-1].split()[0] == "Z"  # ended, waiting for its reaper
            except FileNotFoundError:
                return True

        wait_for(gone, timeout=10, message="the child of a killed dev.py to end")
    finally:
        try:
            os.kill(grandchild, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _sleeps(token: str) -> list[int]:
    """Live (not zombie) ``sleep TOKEN`` processes."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as cmdline, open(f"/proc/{name}/stat") as stat:
                if cmdline.read() == f"sleep\0{token}\0".encode() and stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(name))
        except OSError:
            continue
    return found


def test_the_browser_reaper_ends_everything_below_it_when_the_test_process_is_killed():
    """chromedriver runs under tests/browser/reaper.py with die_with_parent (tests/conftest.py's
    chromium_session): a killed test run leaves neither it nor what it started (here a child, a
    grandchild in its own session, an orphan), as a killed chromedriver would leave Chromium."""
    token = f"4242.{os.getpid()}"  # sleep accepts a fraction; it marks this test's processes
    program = f"sleep {token} & setsid sleep {token} & (sleep {token} &) ; exec sleep {token}"
    test_process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; from tests.conftest import die_with_parent; "
            "subprocess.Popen([sys.executable, 'tests/browser/reaper.py', 'sh', '-c', "
            f"{program!r}], preexec_fn=die_with_parent); print('started', flush=True); "
            "time.sleep(120)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert test_process.stdout.readline().strip() == "started"
        wait_for(lambda: len(_sleeps(token)) == 4, timeout=20, message="the four sleeps to start")
        test_process.kill()
        test_process.wait(10)
        wait_for(
            lambda: _sleeps(token) == [],
            timeout=20,
            message=lambda: f"every process below the reaper to end: {_sleeps(token)} left",
        )
    finally:
        for pid in _sleeps(token):
            os.kill(pid, signal.SIGKILL)
        if test_process.poll() is None:
            test_process.kill()
            test_process.wait()


def test_ruff_and_mypy_pass_with_the_configuration_in_pyproject_toml():
    """The lint step of `python3 dev.py test`, here too so that a plain `pytest` (the unit lane) catches a
    lint, format or type error: about 30 s with a cold `.mypy_cache`, a few seconds with a warm one."""
    venv_bin = Path(sys.prefix) / "bin"  # the binaries pinned in requirements-dev.txt
    failures = []
    for command in (["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]):
        result = subprocess.run(
            [str(venv_bin / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        if result.returncode != 0:
            failures.append(f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    assert not failures, "\n".join(failures)


def test_dev_py_test_lints_first_and_fails_when_lint_fails(monkeypatch, capsys):
    dev = load_dev()
    lanes_run = []
    monkeypatch.setattr(dev, "run_lane", lambda name, expression, extra: lanes_run.append(name) or (0, "1 passed", 0.0))
    monkeypatch.setattr(dev, "LINT_COMMANDS", (("ok", ("-c", "pass")), ("broken", ("-c", "raise SystemExit(3)"))))
    assert dev.run_lanes([]) == 1
    assert lanes_run == ["unit", "integration", "slow", "browser"]  # the lanes still run after a lint failure
    out = capsys.readouterr().out
    assert "lane lint: FAILED: broken exited with status 3; wall time" in out
    assert "error: lane(s) failed: lint" in out
    monkeypatch.setattr(dev, "LINT_COMMANDS", (("ok", ("-c", "pass")),))
    assert dev.run_lanes([]) == 0
    assert "lane lint: ok: ok passed; wall time" in capsys.readouterr().out


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
    pattern = r'env\.(?:str|bool|int|float|list|database|cache)\(\s*"([A-Z][A-Z0-9_]+)"'
    read = set(re.findall(pattern, source))
    assert {"DATABASE_URL", "DJANGO_SECRET_KEY", "CELERY_BROKER_URL"} <= read
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert read - documented == set()


# ---------------------------------------------------------------- docker compose
COMPOSE_SERVICES = {
    "postgres",
    "redis",
    "minio",
    "minio-init",
    "web",
    "worker-scoring",
    "worker-cpu",
    "worker-gpu",
    "runner-cpu",
    "runner-gpu",
    "runner-programs",
    "beat",
}
#: The services that run the app (Django settings): the runners run the execution engine only.
APP_SERVICES = {"web", "worker-scoring", "worker-cpu", "worker-gpu", "beat"}


def compose_services() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def healthcheck_command(service: dict) -> str:
    test = service["healthcheck"]["test"]
    return " ".join(test[1:]) if isinstance(test, list) else test


def test_docker_compose_yaml_has_the_services_and_a_health_check_on_each():
    services = compose_services()
    assert set(services) == COMPOSE_SERVICES
    one_shot = {name for name, service in services.items() if service.get("restart") == "no"}
    assert one_shot == {"minio-init"}
    assert [name for name in COMPOSE_SERVICES - one_shot if "test" not in services[name].get("healthcheck", {})] == []
    assert "/health/ready" in healthcheck_command(services["web"])
    for name, queue in (("worker-scoring", "scoring"), ("worker-cpu", "cpu"), ("worker-gpu", "gpu")):
        assert f"inspect ping -d {queue}@$$HOSTNAME" in healthcheck_command(services[name]), name
        assert f"-n {queue}@%h" in " ".join(services[name]["command"]), name
    for name in ("worker-cpu", "worker-gpu"):
        assert "python -m execution.probe" in healthcheck_command(services[name])
    assert "janitor_check" in healthcheck_command(services["beat"])


def test_docker_compose_redis_persists_and_workers_scale_without_a_shared_disk():
    services = compose_services()
    redis = services["redis"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") for volume in redis["volumes"])
    for name in ("worker-scoring", "worker-cpu", "worker-gpu", "beat", "web"):
        service = services[name]
        assert "container_name" not in service and not service.get("volumes"), name  # files live in MinIO
        assert service["depends_on"]["minio-init"]["condition"] == "service_completed_successfully", name
        assert service["environment"]["VARBOARD_STORAGE"] == "${VARBOARD_STORAGE:-s3}", name
    for name in ("worker-scoring", "worker-cpu", "worker-gpu", "beat"):
        assert "ports" not in services[name], name  # `--scale worker-cpu=N` needs no fixed host port


def compose_command() -> list[str] | None:
    """``docker compose`` (v2 plugin) or a standalone ``docker-compose`` (v2, or 1.28+ with profiles), else None."""
    candidates = [[shutil.which("docker"), "compose"], [shutil.which("docker-compose")]]
    for command in candidates:
        if not command[0]:
            continue
        version = subprocess.run([*command, "version"], capture_output=True, text=True)
        match = re.search(r"version v?(\d+)\.(\d+)", version.stdout)
        if version.returncode == 0 and match and (int(match.group(1)), int(match.group(2))) >= (1, 28):
            return command
    return None


def test_docker_compose_config_is_valid_without_a_dot_env(tmp_path):
    command = compose_command()
    if command is None:
        pytest.skip("no docker compose (v2 plugin, or docker-compose 1.28+) on this machine")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "DATABASE_", "CELERY_", "VARBOARD_", "POSTGRES_", "CACHE_"))
    }
    empty = tmp_path / "empty.env"  # an empty file, not os.devnull: Compose 1.x wants a regular file
    empty.write_text("")
    base = [*command, "-f", "docker-compose.yml", "--env-file", str(empty)]
    checked = subprocess.run([*base, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    services = subprocess.run(
        [*base, "--profile", "gpu", "config", "--services"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert set(services.stdout.split()) == COMPOSE_SERVICES


#: Variables of .env.example that not every app container reads: Compose's own interpolation (the
#: database, MinIO, the published port), the runner services' settings (docs/sandbox.md), what the
#: file sets on the services that need it (the recipe workers' runner), and the developer's override
#: VARBOARD_ALLOW_UNSANDBOXED, which the deployment never passes (recipes run isolated or not at all).
COMPOSE_ONLY_VARIABLES = {
    "POSTGRES_PASSWORD",
    "MINIO_ROOT_USER",
    "MINIO_ROOT_PASSWORD",
    "VARBOARD_HTTP_PORT",
    "VARBOARD_RUNNER_MAX_REQUEST_MB",
    "VARBOARD_RUNNER_WORKDIR",
    "PROMETHEUS_MULTIPROC_DIR",
    "VARBOARD_RUNNER_URL",
    "VARBOARD_PROGRAM_RUNNER_URL",
    "VARBOARD_PROGRAM_RUNNER_TOKEN",
    "VARBOARD_RUNNER_TOKEN",
    "VARBOARD_ALLOW_UNSANDBOXED",
    "VARBOARD_RUNNER_MEMORY",  # the runner containers' cgroup, Compose's own interpolation
    "VARBOARD_RUNNER_CPUS",
    "VARBOARD_RUNNER_PIDS",
}


def test_docker_compose_passes_every_setting_of_env_example_without_an_env_file():
    """No ``env_file`` (an optional one needs Compose 2.24, a required one fails without a .env): each app
    service names every setting of .env.example, with a value or passed through from the shell or .env."""
    documented = set(re.findall(r"^#? *([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M))
    assert len(documented) > 40
    for name, service in compose_services().items():
        assert "env_file" not in service, name
        if name in APP_SERVICES:
            missing = documented - COMPOSE_ONLY_VARIABLES - set(service["environment"])
            assert not missing, (name, sorted(missing))
            assert "VARBOARD_ALLOW_UNSANDBOXED" not in service["environment"], name


#: The Compose Specification's JSON schema, vendored unchanged from
#: https://github.com/compose-spec/compose-spec/blob/170098b/schema/compose-spec.json (commit 170098b,
#: June 2026; Apache-2.0): what ``docker compose config`` validates a file against.
COMPOSE_SCHEMA = Path(__file__).with_name("compose-spec.json")
#: What Compose 1.29 and every Compose v2 expand alike: ``$$``, ``$NAME``, ``${NAME}`` and
#: ``${NAME<op>word}`` (op ``:-``, ``-``, ``:?``, ``?``, ``:+`` or ``+``) with a word free of ``$`` and ``}``.
#: Anything else is refused: a variable inside another's default (``${A:-${B}}``) is, by Compose v2
#: before 2.18 ("invalid interpolation format"), and 1.29 passes the inner text on unexpanded.
_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<named>[A-Za-z_]\w*)"
    r"|\{(?P<braced>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<word>[^$}]*))?\}|(?P<invalid>))"
)
#: A Go duration, as Compose reads healthcheck intervals and timeouts.
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def interpolate(value: str, environ: dict[str, str], where: str) -> str:
    def substitute(match: re.Match) -> str:
        if match["escaped"]:
            return "$"
        if match["invalid"] is not None:
            raise ValueError(f"invalid interpolation format for {where}: {value!r}")
        name, op, word = match["named"] or match["braced"], match["op"] or "", match["word"] or ""
        current = environ.get(name)
        present = current is not None and (current != "" or not op.startswith(":"))
        if op.endswith("-"):
            return current if present else word
        if op.endswith("?"):
            if not present:
                raise ValueError(f"required variable {name} is missing a value: {word} ({where})")
            return current
        if op.endswith("+"):
            return word if present else ""
        return current or ""

    return _INTERPOLATION.sub(substitute, value)


def _expand(node, environ: dict[str, str], where: str):
    if isinstance(node, str):
        return interpolate(node, environ, where)
    if isinstance(node, dict):
        return {key: _expand(value, environ, f"{where}.{key}".lstrip(".")) for key, value in node.items()}
    if isinstance(node, list):
        return [_expand(item, environ, f"{where}[{index}]") for index, item in enumerate(node)]
    return node


def compose_document(text: str, environ: dict[str, str] | None = None) -> dict:
    """A compose file as Compose validates it: YAML anchors and ``<<`` merges resolved, then every string
    value expanded with ``environ`` (default: an empty shell and no ``.env``, so the defaults)."""
    import yaml

    return _expand(yaml.safe_load(text), environ or {}, "")


def compose_schema_errors(document: dict) -> list[str]:
    """Errors of a compose document against the Compose Specification.

    Runs where ``docker compose`` is absent (this machine has the Docker client only), so the
    file is always checked against the schema Compose v2 validates it with.
    """
    import jsonschema

    validator = jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text()))
    return [f"{'.'.join(map(str, error.path))}: {error.message}" for error in validator.iter_errors(document)]


def _dependency_errors(name: str, service: dict, services: dict) -> list[str]:
    """compose-go's ``depends_on`` checks: the service exists and is enabled whenever ``name`` is."""
    depends_on = service.get("depends_on") or {}
    dependencies = {key: {} for key in depends_on} if isinstance(depends_on, list) else depends_on
    errors = []
    for target, condition in dependencies.items():
        if target not in services:
            errors.append(f"service {name!r} depends on undefined service {target!r}")
            continue
        required = (condition or {}).get("required", True)
        needed, offered = set(service.get("profiles") or []), set(services[target].get("profiles") or [])
        if required and offered and (not needed or needed - offered):
            errors.append(f"service {name!r} depends on {target!r}, disabled without profile {sorted(offered)}")
        if (condition or {}).get("condition") == "service_healthy" and "test" not in (
            services[target].get("healthcheck") or {}
        ):
            errors.append(f"service {name!r} waits for {target!r} to be healthy, which has no health check")
    return errors


def compose_consistency_errors(document: dict) -> list[str]:
    """What Compose checks beyond the schema (compose-go's loader/validate.go), as far as this file uses it."""
    services, networks = document["services"], set(document.get("networks") or {}) | {"default"}
    volumes = set(document.get("volumes") or {})
    errors = []
    for name, service in services.items():
        if "image" not in service and "build" not in service:
            errors.append(f"service {name!r} has neither an image nor a build context specified")
        if "network_mode" in service and "networks" in service:
            errors.append(f"service {name} declares mutually exclusive `network_mode` and `networks`")
        errors += [
            f"service {name!r} refers to undefined network {network}"
            for network in service.get("networks") or []
            if network not in networks
        ]
        for volume in service.get("volumes") or []:
            source = volume.get("source", "") if isinstance(volume, dict) else volume.split(":")[0]
            if source and not source.startswith((".", "/", "~", "$")) and source not in volumes:
                errors.append(f"service {name!r} refers to undefined volume {source}")
        healthcheck = service.get("healthcheck") or {}
        test = healthcheck.get("test")
        if isinstance(test, list) and test[0] not in ("CMD", "CMD-SHELL", "NONE"):
            errors.append(f'services.{name}.healthcheck.test must start either by "CMD", "CMD-SHELL" or "NONE"')
        for key in ("interval", "timeout", "start_period", "start_interval"):
            if key in healthcheck and not _DURATION.match(str(healthcheck[key])):
                errors.append(f"services.{name}.healthcheck.{key}: not a duration: {healthcheck[key]!r}")
        errors += _dependency_errors(name, service, services)
    return errors


def test_docker_compose_yml_follows_the_compose_specification():
    """Expanded as Compose expands it, the file passes the schema and Compose's own further checks;
    each check catches what it is there for."""
    text = (ROOT / "docker-compose.yml").read_text()
    document = compose_document(text)
    assert compose_schema_errors(document) == []
    assert compose_consistency_errors(document) == []
    document["services"]["web"]["healthcheck_typo"] = {}  # what the schema catches: an unknown key
    document["services"]["worker-cpu"]["env_file"] = [{"required": False}]  # an env_file without its path
    errors = compose_schema_errors(document)
    assert any("healthcheck_typo" in error for error in errors) and any("env_file" in error for error in errors)
    document = compose_document(text)
    document["services"]["beat"]["depends_on"]["runner-gpu"] = {"condition": "service_healthy"}  # gpu profile
    document["services"]["web"]["networks"] = ["runner"]
    document["services"]["beat"]["healthcheck"]["interval"] = "60"
    errors = compose_consistency_errors(document)
    assert any("'beat' depends on 'runner-gpu'" in error for error in errors), errors
    assert any("undefined network runner" in error for error in errors), errors
    assert any("healthcheck.interval" in error for error in errors), errors
    with pytest.raises(ValueError, match="invalid interpolation format for x-app.environment.DATABASE_URL"):
        compose_document("x-app:\n  environment:\n    DATABASE_URL: ${DATABASE_URL:-pg://u:${PW:-pw}@db/d}\n")


def test_docker_compose_gives_the_app_the_credentials_of_the_stacks_own_services():
    """Without a .env, with the stack's passwords set, and on a machine joining with its own DATABASE_URL."""
    joining = "postgres://varboard:machine-1@10.0.0.1:5432/varboard"
    for environ in (
        {},
        {"POSTGRES_PASSWORD": "pg-secret", "MINIO_ROOT_USER": "minio-user", "MINIO_ROOT_PASSWORD": "minio-secret"},
        {"DATABASE_URL": joining, "POSTGRES_PASSWORD": "pg-secret"},
    ):
        services = compose_document((ROOT / "docker-compose.yml").read_text(), environ)["services"]
        postgres, minio = services["postgres"]["environment"], services["minio"]["environment"]
        for name in APP_SERVICES:
            env = services[name]["environment"]
            if "DATABASE_URL" in environ:
                assert env["DATABASE_URL"] == joining, name  # its own password wins over PGPASSWORD
            else:
                assert env["DATABASE_URL"] == "postgres://varboard@postgres:5432/varboard", name
                assert env["PGPASSWORD"] == postgres["POSTGRES_PASSWORD"], name  # libpq's password then
            assert env["AWS_ACCESS_KEY_ID"] == minio["MINIO_ROOT_USER"], (name, environ)
            assert env["AWS_SECRET_ACCESS_KEY"] == minio["MINIO_ROOT_PASSWORD"], (name, environ)
        assert postgres["POSTGRES_PASSWORD"] == environ.get("POSTGRES_PASSWORD", "varboard")


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


#: How long ``dev.py demo --no-recipes`` may take to serve its scored site (setup, migrate, a worker,
#: the prediction entries scored); it took 27 s on the 2 shared cores at load 0.5.
DEMO_BOUND_S = 180


@pytest.mark.slow
def test_dev_py_demo_scores_and_serves_on_the_embedded_defaults(tmp_path):
    """``python3 dev.py demo`` on SQLite and the file-system broker: demo scored, site served, clean stop.

    With ``--no-recipes``, so that it is bounded by minutes: the demo's recipe entries are its
    examples/recipes files, each run in the sandbox by tests/recipes/test_runner.py, through a
    real worker by tests/integration/test_recipes_e2e.py, and dispatched by the demo command as
    tests/platform/test_demo.py checks.
    """
    if not (ROOT / "leaderboard" / "management" / "commands" / "demo.py").exists():
        skip_or_fail("the demo management command is not written yet")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "VARBOARD_MEDIA_ROOT", "CACHE_URL"}
    }
    env["VARBOARD_VAR_DIR"] = str(tmp_path / "var")
    port = free_port()
    log_path = tmp_path / "demo.log"
    with open(log_path, "wb") as log:
        demo = subprocess.Popen(
            [sys.executable, "dev.py", "demo", "--no-recipes", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output() -> str:
        return log_path.read_text(errors="replace")[-6000:]

    try:

        def served() -> bool:
            if demo.poll() is not None:
                raise AssertionError(f"dev.py demo exited with {demo.returncode}:\n{output()}")
            return http_status(f"http://127.0.0.1:{port}/") == 200

        wait_for(served, timeout=DEMO_BOUND_S, interval=1, message=lambda: f"the demo site to answer:\n{output()}")
        demo.send_signal(signal.SIGINT)
        assert demo.wait(60) in (0, -signal.SIGINT, 130), output()
        assert "Traceback" not in output()
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)  # its worker and server end with it (dev.die_with_parent)
            demo.wait()


def test_dev_py_serve_links_mails_to_the_port_it_serves(monkeypatch):
    """Found by a new user: `dev.py demo --port 8011` mailed links to port 8000."""
    dev = load_dev()
    for name in ("setup", "prepare_var", "migrate_and_collect", "say"):
        monkeypatch.setattr(dev, name, lambda *args, **kwargs: None)
    served = []
    monkeypatch.setattr(dev, "serve", lambda port: served.append((port, os.environ["VARBOARD_SITE_URL"])))
    monkeypatch.delenv("VARBOARD_SITE_URL", raising=False)
    dev.cmd_serve(argparse.Namespace(port=8011), [])
    assert served == [(8011, "http://127.0.0.1:8011")]
    monkeypatch.setenv("VARBOARD_SITE_URL", "https://board.example.org")  # a setting of the operator's wins
    dev.cmd_serve(argparse.Namespace(port=8012), [])
    assert served[-1] == (8012, "https://board.example.org")


def test_a_redis_of_a_test_ends_when_the_test_run_is_killed():
    """A fault test's own Redis outlived a test run killed midway (48 minutes, seen on this machine)."""
    if not shutil.which("redis-server"):
        skip_or_fail("needs redis-server")
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time, dev; r = dev.ThrowawayRedis().start(); print(r.port, r.process.pid, flush=True); "
            "time.sleep(120)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    port, pid = map(int, parent.stdout.readline().split())
    try:
        parent.kill()
        parent.wait(10)

        def stopped() -> bool:
            with socket.socket() as probe:
                probe.settimeout(0.5)
                return probe.connect_ex(("127.0.0.1", port)) != 0

        wait_for(stopped, timeout=10, message="the Redis of a killed test run to stop")
    finally:
        try:
            os.kill(pid, signal.SIGKILL)  # this test leaves none behind either, pass or fail
        except ProcessLookupError:
            pass


def test_a_postgresql_cluster_of_a_test_ends_when_the_test_run_is_killed():
    """A fault test's own PostgreSQL cluster was daemonized by pg_ctl: a test run killed midway left it running.
    The postmaster is now the test process's child and gets SIGQUIT (an immediate shutdown) when it dies."""
    from dev import ThrowawayPostgres

    if ThrowawayPostgres.bin_dir() is None:
        skip_or_fail("needs the PostgreSQL server binaries (initdb, postgres)")
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time, dev; c = dev.ThrowawayPostgres().init(); print(c.port, c.process.pid, c.folder, flush=True); "
            "time.sleep(300)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    port, pid, folder = parent.stdout.readline().split()
    try:
        assert psycopg_connects(int(port))  # it served
        parent.kill()
        parent.wait(10)

        def stopped() -> bool:  # gone, or a zombie its new parent has not reaped yet
            try:
                return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            except (FileNotFoundError, ProcessLookupError):
                return True

        wait_for(stopped, timeout=30, message="the PostgreSQL cluster of a killed test run to stop")
        assert not psycopg_connects(int(port))
    finally:
        try:
            os.kill(int(pid), signal.SIGKILL)  # this test leaves none behind either, pass or fail
        except ProcessLookupError:
            pass
        shutil.rmtree(folder, ignore_errors=True)


def psycopg_connects(port: int) -> bool:
    import psycopg

    try:
        with psycopg.connect(f"postgres://postgres@127.0.0.1:{port}/postgres", connect_timeout=3) as conn:
            return conn.execute("select 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False
