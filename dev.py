#!/usr/bin/env python3
"""varboard's single entry point for developers, CI and operators (standard library only).

Quick start, on a machine with nothing but Python 3.11::

    python3 dev.py demo     # set up, score the demo challenge end to end, serve http://127.0.0.1:8000
    python3 dev.py test     # set up, start PostgreSQL/Redis if stopped, lint, run the whole test suite

Every subcommand first runs ``setup`` (create ``.venv``, install the pinned requirements when they
changed) and then re-executes itself with the virtual environment's Python.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".requirements.sha256"
REQUIREMENT_FILES = (ROOT / "requirements.txt", ROOT / "requirements-dev.txt")
POSTGRES, REDIS = ("127.0.0.1", 5432), ("127.0.0.1", 6379)
DEMO_QUEUES = "scoring,cpu"


# ---------------------------------------------------------------- small helpers
def say(message: str) -> None:
    print(f"[dev.py] {message}", flush=True)


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"[dev.py] error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code or 1)


def run(*command: object, env: dict[str, str] | None = None) -> None:
    """Run ``command`` from the repository root; exit with its status if it fails."""
    result = subprocess.run([str(part) for part in command], cwd=ROOT, env=env)
    if result.returncode != 0:
        fail(f"`{' '.join(map(str, command))}` exited with status {result.returncode}", result.returncode)


def manage(*args: str, env: dict[str, str] | None = None) -> None:
    run(sys.executable, "manage.py", *args, env=env)


def celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "leaderboard", *args]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def reachable(address: tuple[str, int], timeout: float = 1.0) -> bool:
    """True when something accepts a TCP connection on ``address``."""
    try:
        with socket.create_connection(address, timeout=timeout):
            return True
    except OSError:
        return False


def claim_slot(slots) -> tuple[int, object] | None:
    """The first of ``slots`` whose lock file no other process holds, with that lock (held until exit).

    Test runs and benchmarks use the slot as their Redis database number and test-database
    suffix, so concurrent runs on one machine never share a queue or a database.
    """
    import fcntl  # POSIX only, like the rest of the test tooling

    for slot in slots:
        handle = open(Path(tempfile.gettempdir()) / f"varboard-test-slot-{slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return slot, handle
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_reachable(address: tuple[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not reachable(address, timeout=0.5):
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing answers on {address[0]}:{address[1]} after {timeout:g} s")
        time.sleep(0.1)


class ThrowawayRedis:
    """A Redis server of one's own on a free port, without persistence (fault tests, benchmarks).

    ``restart()`` loses every queued message, as a Redis without persistence does.
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="varboard-redis-"))
        self.process: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ThrowawayRedis:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,  # a test run killed midway leaves no Redis of its own behind
        )
        wait_until_reachable(("127.0.0.1", self.port), 30)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # no SHUTDOWN SAVE: nothing survives
            self.process.wait(30)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class ThrowawayPostgres:
    """A PostgreSQL cluster of one's own (initdb in a temporary folder, a free port, trust auth).

    Run as the ``postgres`` OS user when this process is root (initdb refuses root). ``stop()``
    with ``mode="immediate"`` is a crash; ``start()`` brings it back with its data. The postmaster
    is this process's child (not daemonized by ``pg_ctl``): it gets SIGQUIT, an immediate shutdown,
    when the thread that started it ends (PR_SET_PDEATHSIG: start it from the main thread), however
    the process ends.
    """

    #: ``stop()``'s modes, as ``pg_ctl -m`` names them, and the signal each sends the postmaster.
    STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}

    @staticmethod
    def bin_dir() -> Path | None:
        """``VARBOARD_PG_BIN``, else the newest Debian ``/usr/lib/postgresql/*/bin``, else where ``initdb`` is."""
        if os.environ.get("VARBOARD_PG_BIN"):
            return Path(os.environ["VARBOARD_PG_BIN"])
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
        if found:
            return found[-1].parent
        initdb = shutil.which("initdb")
        return Path(initdb).parent if initdb else None

    def __init__(self) -> None:
        self.BIN = self.bin_dir() or Path("/nonexistent")
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="varboard-pg-"))
        self.data = self.folder / "data"
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        self.process: subprocess.Popen | None = None

    def _run(self, *command: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*as_postgres, *command],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def init(self) -> ThrowawayPostgres:
        if not (self.BIN / "initdb").exists():
            raise RuntimeError(
                "no PostgreSQL server binaries (initdb, postgres, pg_isready) found: install postgresql or set VARBOARD_PG_BIN"
            )
        self.folder.chmod(0o777)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        self._run(str(self.BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        return self.start()

    def start(self) -> ThrowawayPostgres:
        import pwd  # Unix only, like PostgreSQL's own tools here

        if self.process is not None and self.process.poll() is None:
            return self  # running: a second postmaster would only fail on the first one's lock

        owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        with open(self.folder / "log", "ab") as log:
            self.process = subprocess.Popen(
                [str(self.BIN / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.folder)]
                + ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=owner.pw_uid if owner else None,
                group=owner.pw_gid if owner else None,
                extra_groups=[] if owner else None,
                preexec_fn=parent_death_signal(signal.SIGQUIT),  # runs after the user change, which clears it
            )
        try:
            self._wait_ready(60)
        except BaseException:
            self.stop("immediate")  # never left running by a start that failed
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        """Until the cluster accepts queries (``pg_isready``; a recovering one accepts TCP first), bounded."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                log = (self.folder / "log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the PostgreSQL cluster on port {self.port} exited on start:\n{log}")
            probe = [str(self.BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"]
            if subprocess.run(probe, stdin=subprocess.DEVNULL, timeout=30).returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the PostgreSQL cluster on port {self.port} was not ready after {timeout:g} s")
            time.sleep(0.1)

    def stop(self, mode: str = "fast") -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(self.STOP_SIGNALS[mode])
            try:
                self.process.wait(120)
            except subprocess.TimeoutExpired:
                self.process.kill()  # its backends notice the postmaster's death and exit
                self.process.wait(30)

    def close(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def var_dir() -> Path:
    """The runtime folder settings.py uses (``VARBOARD_VAR_DIR``, default ``var/``)."""
    return Path(os.environ.get("VARBOARD_VAR_DIR") or ROOT / "var")


# ---------------------------------------------------------------- setup
def requirements_hash() -> str:
    digest = hashlib.sha256()
    for path in REQUIREMENT_FILES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def torch_requirement() -> str:
    """The ``torch==X`` pin from requirements.txt, installed on its own before everything else."""
    for line in REQUIREMENT_FILES[0].read_text().splitlines():
        if line.strip().startswith("torch=="):
            return line.split("#")[0].strip()
    fail("requirements.txt must pin torch (torch==X.Y.Z)")


def setup() -> None:
    """Create ``.venv``, install the requirements when they changed, and re-exec inside the venv."""
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py is started by whatever python3 a machine has)
        fail(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    if not VENV_PYTHON.exists():
        if sys.version_info[:2] != (3, 11):
            say("warning: the pinned torch CPU build is for Python 3.11; pip may fetch another build")
        say("creating .venv")
        run(sys.executable, "-m", "venv", VENV)
    wanted = requirements_hash()
    if not STAMP.exists() or STAMP.read_text().strip() != wanted:
        pip = [VENV_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        # torch first and alone, so that no other requirement can pull in a (CUDA) build of its own.
        say(f"installing {torch_requirement()}, then requirements-dev.txt (first time: a few minutes)")
        run(*pip, torch_requirement())
        run(*pip, "-r", REQUIREMENT_FILES[1])
        STAMP.write_text(wanted + "\n")
    if Path(sys.prefix).resolve() != VENV.resolve():
        os.execv(VENV_PYTHON, [str(VENV_PYTHON), str(ROOT / "dev.py"), *sys.argv[1:]])


# ---------------------------------------------------------------- services (tests)
def start_command(name: str) -> list[str] | None:
    """How to start a stopped local PostgreSQL or Redis, or None where it is not installed."""
    if name == "PostgreSQL" and shutil.which("pg_ctlcluster") and Path("/etc/postgresql").is_dir():
        versions = sorted(os.listdir("/etc/postgresql"))
        return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"] if versions else None
    if name == "Redis" and shutil.which("redis-server"):
        return [
            "redis-server",
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
    return None


def ensure_services() -> None:
    """Start PostgreSQL and Redis where they are installed but stopped; warn where they stay down."""
    for name, address in (("PostgreSQL", POSTGRES), ("Redis", REDIS)):
        command = None if reachable(address) else start_command(name)
        if command:
            say(f"{name} does not answer on {address[0]}:{address[1]}: starting it")
            subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while not reachable(address) and time.monotonic() < deadline:
                time.sleep(0.5)
        if not reachable(address):
            consequence = "integration tests will FAIL (CI)" if in_ci() else "integration tests will be skipped"
            say(f"warning: {name} is not reachable on {address[0]}:{address[1]}: {consequence}")


def apt_install(*packages: str, why: str) -> bool:
    """Install Debian packages with apt-get (as root, or through password-less sudo); False when impossible."""
    apt_get = shutil.which("apt-get")
    if not apt_get or (os.geteuid() != 0 and not shutil.which("sudo")):
        return False
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    say(f"installing Debian's {', '.join(packages)} {why}")
    for command in ([*sudo, apt_get, "update", "-q"], [*sudo, apt_get, "install", "-y", "-q", *packages]):
        if subprocess.run(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL).returncode != 0:
            say(f"warning: `{' '.join(command)}` failed")
            return False
    return True


def ensure_compose_client() -> None:
    """Under CI, install Debian's docker-compose (a client only) when no Compose is found, so that
    the suite checks docker-compose.yml with ``config``; without it that one test is skipped."""
    has_plugin = (
        shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    )
    if in_ci() and not has_plugin and not shutil.which("docker-compose"):
        apt_install("docker-compose", why="to check docker-compose.yml with `docker-compose config`")


def ensure_chromium() -> None:
    """Under CI, install Debian's chromium and chromium-driver when they are missing."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return
    if not in_ci() or not apt_install("chromium", "chromium-driver", why="for the browser tests"):
        consequence = "FAIL (CI)" if in_ci() else "be skipped"
        say(f"warning: chromium/chromedriver not found: browser tests will {consequence}")
        if in_ci():
            fail("chromium and chromium-driver are needed under CI and could not be installed")


def ensure_bubblewrap() -> bool:
    """Install Debian's bubblewrap (the recipe sandbox) when it is missing; False when it stays missing."""
    if shutil.which("bwrap") or apt_install("bubblewrap", why="for the recipe sandbox"):
        return bool(shutil.which("bwrap"))
    say(
        "warning: bubblewrap (bwrap) is not installed and could not be installed: recipe runs need it "
        "(apt-get install bubblewrap)"
    )
    return False


def sandbox_ready() -> bool:
    """Whether this machine can isolate recipe runs (``python -m execution.probe``); says what is missing."""
    probe = subprocess.run([sys.executable, "-m", "execution.probe"], cwd=ROOT, capture_output=True, text=True)
    if probe.returncode != 0:
        say(f"warning: recipe runs cannot be isolated here: {(probe.stdout + probe.stderr).strip()}")
    return probe.returncode == 0


def check_migrations() -> None:
    """Fail when a model changed without its migration (checked against a throw-away SQLite file)."""
    with tempfile.TemporaryDirectory(prefix="varboard-migrations-") as scratch:
        env = {**os.environ, "VARBOARD_VAR_DIR": scratch}
        say("checking that every model change has its migration")
        manage("makemigrations", "--check", "--dry-run", env=env)


#: The steps of ``python3 dev.py test``, in order: (lane, pytest marker expression). Every test is
#: in exactly one lane (tests/conftest.py marks tests/integration, tests/browser, tests/recipes by
#: folder); the plain ``pytest`` run is the first (pytest.ini).
TEST_LANES = (
    ("unit", "not integration and not browser and not slow"),
    ("integration", "integration and not browser"),
    ("slow", "slow and not integration and not browser"),
    ("browser", "browser"),
)
#: pytest's closing line, e.g. "==== 212 passed, 3 skipped in 95.1s ====".
PYTEST_SUMMARY = re.compile(
    r"^=+ (.*\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed|warnings?)"
    r".* in [\d.]+s.*) =+$"
)


def pytest_status(returncode: int, filtered: bool = False) -> int:
    """pytest's exit status, with 5 ("no tests were collected") a failure, unless the caller
    `filtered` the tests (extra arguments such as ``-k stats``): then a lane may match nothing."""
    if returncode == 5 and not filtered:
        say("error: no tests ran (pytest exit code 5): a run that tests nothing is a failure")
        return 1
    return 0 if returncode == 5 else returncode


def run_lane(name: str, expression: str, extra: list[str]) -> tuple[int, str, float]:
    """Run one lane's pytest, its output passed through; (status, pytest's summary line, wall seconds)."""
    color = ["--color=yes"] if sys.stdout.isatty() else []
    command = [sys.executable, "-m", "pytest", "-m", expression, *color, *extra]
    say(f"lane {name}: {shlex.join(command[1:])}")
    started, summary = time.monotonic(), ""
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
    )  # a killed dev.py ends its pytest too
    for raw in process.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        match = PYTEST_SUMMARY.match(re.sub(r"\x1b\[[0-9;]*m", "", raw.decode(errors="replace")).strip())
        summary = match.group(1) if match else summary
    returncode = process.wait()
    elapsed = time.monotonic() - started
    status = pytest_status(returncode, filtered=bool(extra))
    summary = summary or f"pytest exited with status {returncode}"
    summary += " (no test of this lane matched)" if returncode == 5 else ""
    say(f"lane {name}: {'ok' if status == 0 else 'FAILED'}: {summary}; wall time {elapsed:.0f} s")
    return status, summary, elapsed


#: The lint step, run before the test lanes: ruff (lint and format) and mypy, configured in pyproject.toml.
LINT_COMMANDS = (
    ("ruff", ("-m", "ruff", "check", ".")),
    ("ruff format", ("-m", "ruff", "format", "--check", ".")),
    ("mypy", ("-m", "mypy")),
)


def run_lint() -> tuple[int, str, float]:
    """Run every `LINT_COMMANDS` (all of them, even after a failure), output passed through;
    (status, summary, wall seconds), status 0 only if all passed."""
    started, failed = time.monotonic(), []
    for name, args in LINT_COMMANDS:
        say(f"lane lint: {shlex.join(args[1:])}")
        returncode = subprocess.run([sys.executable, *args], cwd=ROOT, preexec_fn=die_with_parent).returncode
        if returncode != 0:
            failed.append(f"{name} exited with status {returncode}")
    elapsed = time.monotonic() - started
    summary = "; ".join(failed) or f"{' and '.join(name for name, _ in LINT_COMMANDS)} passed"
    say(f"lane lint: {'FAILED' if failed else 'ok'}: {summary}; wall time {elapsed:.0f} s")
    return (1 if failed else 0), summary, elapsed


def run_lanes(extra: list[str]) -> int:
    """The lint step, then every lane of `TEST_LANES` in turn (all of them, even after a failure);
    0 only if all passed.

    A lane that selects no test fails, unless `extra` filters the tests (``-k stats``, a path):
    then only a run where no lane selected any test fails. With ``-m`` among `extra`, that
    expression alone is run, as one step. `extra` does not filter the lint step.
    """
    lanes = TEST_LANES
    if any(arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")) for arg in extra):
        lanes = (("selected", ""),)  # the caller's -m comes later on the command line and wins
    results = [("lint", *run_lint())]
    for name, expression in lanes:
        results.append((name, *run_lane(name, expression, extra)))
        if results[-1][1] == 2:  # interrupted (Ctrl-C): stop here
            break
    say("summary of the test lanes:")
    for name, status, summary, elapsed in results:
        say(f"  {name:<12} {'ok' if status == 0 else 'FAILED':<7} {elapsed:6.0f} s  {summary}")
    failed = [name for name, status, _, _ in results if status != 0]
    if all(summary.endswith("(no test of this lane matched)") for _, _, summary, _ in results[1:]):
        failed.append("all (no test matched the arguments)")
    if failed:
        say(f"error: lane(s) failed: {', '.join(failed)}")
    return 1 if failed or len(results) < 1 + len(lanes) else 0


# ---------------------------------------------------------------- worker and server (demo)
def prepare_var() -> Path:
    """Create ``var/log`` and, on the embedded file-system broker, its queue folders."""
    var = var_dir()
    (var / "log").mkdir(parents=True, exist_ok=True)
    # The SQLite database, broker files and uploads live here: no other user may read them
    # (recipe runs execute as unprivileged users).
    var.chmod(0o700)
    if os.environ.get("CELERY_BROKER_URL", "filesystem://").startswith("filesystem://"):
        for folder in ("queue", "control"):
            (var / "broker" / folder).mkdir(parents=True, exist_ok=True)
    return var


def parent_death_signal(sig: int):
    """A ``preexec_fn`` that asks for ``sig`` when the parent dies (PR_SET_PDEATHSIG), its libc call looked up
    here, in the parent: a child that changed user first may not read Python's own files (under /root) to import
    ctypes. A no-op where prctl is missing."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda: None
    return lambda: prctl(1, sig)


#: In a child, before exec: SIGTERM when dev.py ends, however it ends (Linux; elsewhere a no-op). A demo that is
#: SIGKILLed, or a failing test that kills it, leaves no worker or server behind.
die_with_parent = parent_death_signal(signal.SIGTERM)


def start_worker(var: Path) -> subprocess.Popen:
    """Start a Celery worker (with the embedded beat scheduler) in the background, logging to var/log."""
    log_path = var / "log" / "worker.log"
    command = celery(
        "worker",
        "-Q",
        DEMO_QUEUES,
        "-c",
        "2",
        "--loglevel=INFO",
        "-n",
        "demo@%h",
        "-B",
        "-s",
        str(var / "celerybeat-schedule"),
    )
    say(f"starting a Celery worker for queues {DEMO_QUEUES} (log: {log_path})")
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def stop(process: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM (warm shutdown), then SIGKILL to the process group after ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def run_demo_command(worker: subprocess.Popen, var: Path, port: int, recipes: bool = True) -> None:
    """Run ``manage.py demo --wait``; stop it with a clear message if the worker dies meanwhile."""
    extra = [] if recipes else ["--no-recipes"]
    demo = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--wait", "--base-url", f"http://127.0.0.1:{port}", *extra], cwd=ROOT
    )
    while True:
        try:
            returncode = demo.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            if worker.poll() is not None:
                stop(demo)
                log = var / "log" / "worker.log"
                fail(f"the Celery worker exited ({worker.returncode}) during the demo; {log}:\n{log_tail(log)}")
    if returncode != 0:
        fail(f"`manage.py demo --wait` failed with status {returncode} (worker log: {var / 'log' / 'worker.log'})")


def migrate_and_collect() -> None:
    """Apply migrations; collect static files only when DEBUG is off (runserver serves them otherwise)."""
    manage("migrate", "--noinput")
    debug_off = os.environ.get("DJANGO_DEBUG", "").lower() in {"0", "false", "no", "off"}
    if debug_off or os.environ.get("DJANGO_ENV") == "production":
        manage("collectstatic", "--noinput", "-v", "0")


def serve(port: int) -> None:
    """Run Django's server in the foreground until Ctrl-C."""
    say(f"serving on http://127.0.0.1:{port}/ (Ctrl-C stops it)")
    try:
        subprocess.run(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            preexec_fn=die_with_parent,
        )
    except KeyboardInterrupt:
        pass


# ---------------------------------------------------------------- subcommands
def link_to_port(port: int) -> None:
    """Links in mails and webhook payloads point at the port served here (VARBOARD_SITE_URL, unless set);
    children started after this (the demo's worker) inherit it."""
    os.environ.setdefault("VARBOARD_SITE_URL", f"http://127.0.0.1:{port}")


def cmd_setup(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    say(f"ready: {VENV_PYTHON}")


def cmd_demo(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    if not any(ROOT.glob("*/management/commands/demo.py")):
        fail("the `demo` management command is missing (leaderboard/management/commands/demo.py)")
    if not args.no_serve and reachable(("127.0.0.1", args.port)):
        fail(f"port {args.port} is already in use: stop what serves it or pass --port")
    link_to_port(args.port)
    recipes = not args.no_recipes and ensure_bubblewrap() and sandbox_ready()
    if not recipes:
        say("the demo skips its recipe entries; prediction entries and the published runs are built as usual")
    var = prepare_var()
    migrate_and_collect()
    worker = start_worker(var)
    try:
        run_demo_command(worker, var, args.port, recipes=recipes)
        if args.no_serve:
            say("demo finished (--no-serve)")
            return
        say(f"demo ready: open http://127.0.0.1:{args.port}/ and log in with the demo accounts printed above")
        serve(args.port)
    finally:
        say("stopping the Celery worker")
        stop(worker)


def cmd_test(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    if in_ci():
        os.environ["VARBOARD_REQUIRE_SERVICES"] = "1"  # under CI a missing service fails, never skips
    ensure_services()
    ensure_chromium()
    ensure_compose_client()
    if not ensure_bubblewrap() and in_ci():
        fail("bubblewrap is needed under CI (the recipe sandbox) and could not be installed")
    check_migrations()
    raise SystemExit(run_lanes(extra))


def worker_command(args: argparse.Namespace) -> list[str]:
    """The Celery worker's command line; with the embedded beat scheduler unless ``--no-beat``: without one
    the janitor never runs, and a task a killed worker held is never sent again (a reviewer's finding). Its
    schedule file lives in ``VARBOARD_VAR_DIR``: under ``var/`` of a clone that had none, beat died at start."""
    name = args.queues.replace(",", "-") + "@%h"
    command = celery("worker", "-Q", args.queues, "-c", str(args.concurrency), "--loglevel=INFO", "-n", name)
    if not args.no_beat:
        command += ["-B", "-s", str(var_dir() / "celerybeat-schedule")]  # beside the database, as the demo's
    return command


def cmd_worker(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    prepare_var()
    os.execv(sys.executable, worker_command(args))


def cmd_serve(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    prepare_var()
    migrate_and_collect()
    link_to_port(args.port)
    say(
        "no worker is started here: run `python3 dev.py worker` beside it to score submissions "
        "(one worker, or `celery -A leaderboard beat`, schedules the janitor; further workers take --no-beat)"
    )
    serve(args.port)


def cmd_bench(args: argparse.Namespace, extra: list[str]) -> None:
    setup()
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    if not scripts:
        fail("no benchmarks/bench_*.py found")
    failed = [s.name for s in scripts if subprocess.run([sys.executable, s, *extra], cwd=ROOT).returncode]
    if failed:
        fail(f"benchmarks failed: {', '.join(failed)}")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python3 dev.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        sub.set_defaults(handler=handler)
        return sub

    add("setup", cmd_setup, "create .venv and install the pinned requirements (skipped when unchanged)")
    demo = add("demo", cmd_demo, "run the demo challenge end to end with a worker, then serve the site")
    demo.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    demo.add_argument("--no-serve", action="store_true", help="stop once the demo is scored")
    demo.add_argument(
        "--no-recipes",
        action="store_true",
        help="skip the recipe entries and the variance study (the prediction entries only)",
    )
    add(
        "test",
        cmd_test,
        "lint (ruff, mypy), then run the whole test suite, lane by lane (unit, integration, "
        "slow, browser), each step timed; extra arguments go to every lane's pytest "
        "(e.g. -k stats), and a lane they leave empty is then no error",
    )
    worker = add("worker", cmd_worker, "run a Celery worker in the foreground")
    worker.add_argument("--queues", default=DEMO_QUEUES, help="comma-separated: scoring,cpu,gpu")
    worker.add_argument("--concurrency", type=int, default=2, help="worker processes (default 2)")
    worker.add_argument(
        "--no-beat",
        action="store_true",
        help="no embedded beat scheduler (it runs the janitor): for every worker but one, or with `celery beat`",
    )
    serve_parser = add("serve", cmd_serve, "migrate and run the development server (no worker)")
    serve_parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    add("bench", cmd_bench, "run every benchmarks/bench_*.py in turn")
    return top


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP unwind like Ctrl-C does, so the ``finally`` that stops the demo worker runs.

    SIGINT too when a shell started us in the background (``&``, nohup), which leaves it ignored.
    """
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: sys.exit(128 + number))
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> None:
    install_signal_handlers()
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra and args.command not in {"test", "bench"}:
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    args.handler(args, extra)


if __name__ == "__main__":
    main()
