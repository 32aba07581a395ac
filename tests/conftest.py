"""Shared test infrastructure: database, files, local services, a real Celery worker, polling.

App fixtures live in the test modules that use them; this file only wires the suite to the machine.

* **Database.** PostgreSQL on 127.0.0.1:5432 when it answers and ``DATABASE_URL`` is unset, SQLite
  otherwise. pytest-django loads the settings before any conftest is imported, so the switch is
  made on the loaded settings, before the first connection. It creates ``test_varboard``
  (``_gwN`` per xdist worker); a concurrent run on the same machine gets ``test_varboard_s<N>``
  and Redis db N instead of db 15 (see :func:`run_slot`).
* **Files.** Each session gets a temporary ``VAR_DIR`` and ``MEDIA_ROOT`` (settings and, for
  subprocesses, the environment): tests never write into ``var/``. The test process publishes to an
  in-memory broker unless ``celery_worker_process`` points it at Redis.
* **Skips.** Tests marked ``integration`` need PostgreSQL and Redis, ``browser`` tests need Debian's
  chromium and chromedriver. Without them the test is skipped with the reason, or fails when
  ``VARBOARD_REQUIRE_SERVICES=1`` (``python3 dev.py test`` sets it under CI).

Integration test example (the worker only sees committed rows, hence ``transactional_db``)::

    @pytest.mark.integration
    def test_prediction_is_scored(celery_worker_process, transactional_db, wait_for):
        submission = make_submission()            # committed; on_commit enqueues its task
        wait_for(lambda: Submission.objects.get(pk=submission.pk).status == "scored",
                 timeout=120, message=celery_worker_process.tail)
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from dev import claim_slot, reachable  # dev.py is standard library only; its main() runs only as a script

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/varboard"
BROWSER_EXECUTABLES = ("chromium", "chromedriver")
STATE: dict[str, Any] = {"postgres": False, "redis": False, "tmp": None, "slot": None}


def services_required() -> bool:
    """``VARBOARD_REQUIRE_SERVICES=1``: a missing service fails the tests that need it."""
    return os.environ.get("VARBOARD_REQUIRE_SERVICES", "").lower() in {"1", "true", "yes"}


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 30.0,
    interval: float = 0.2,
    message: str | Callable[[], str] = "condition",
) -> Any:
    """Call ``predicate`` every ``interval`` seconds until it returns something truthy; return that.

    Raises ``AssertionError`` after ``timeout`` seconds, with ``message`` (a string, or a callable
    evaluated then, such as ``celery_worker_process.tail``). Exceptions from ``predicate`` propagate.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {text}")
        time.sleep(interval)


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Any]:
    """The :func:`wait_for` helper, as a fixture."""
    return wait_for


# ---------------------------------------------------------------- session configuration
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("help") or config.getoption("version"):
        return
    if not config.pluginmanager.hasplugin("django"):
        return  # `-p no:django`: the pure packages (evaluation/, tasks/ sandbox) test without Django
    from django.conf import settings

    STATE["postgres"], STATE["redis"] = reachable(POSTGRES), reachable(REDIS)
    if not os.environ.get("DATABASE_URL") and STATE["postgres"]:
        use_database(POSTGRES_URL)
    STATE["tmp"] = Path(tempfile.mkdtemp(prefix="varboard-test-"))
    var, media = STATE["tmp"] / "var", STATE["tmp"] / "media"
    for folder in (media, var / "broker" / "queue", var / "broker" / "control", var / "log"):
        folder.mkdir(parents=True)
    settings.VAR_DIR, settings.MEDIA_ROOT = var, media
    os.environ.update(VARBOARD_VAR_DIR=str(var), VARBOARD_MEDIA_ROOT=str(media))
    os.environ.pop("CELERY_BROKER_URL", None)  # subprocesses: the embedded broker under the temp var/
    point_celery_at("memory://", {})


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE["tmp"] is not None:
        shutil.rmtree(STATE["tmp"], ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not config.pluginmanager.hasplugin("django"):
        return []
    from django.conf import settings

    db = settings.DATABASES["default"]
    up = {True: "up", False: "down"}
    return [
        f"varboard: database {db['ENGINE'].rsplit('.', 1)[-1]} ({db['NAME']}), postgresql "
        f"{up[STATE['postgres']]}, redis {up[STATE['redis']]}, services required: "
        f"{services_required()}, files under {STATE['tmp']}"
    ]


def use_database(url: str) -> None:
    """Point the already loaded settings, and every connection made from now on, at ``url``."""
    from django.conf import settings
    from django.db import connections

    from leaderboard.config import StrictEnv

    default = settings.DATABASES["default"]
    default.clear()
    default.update(StrictEnv.db_url_config(url), CONN_MAX_AGE=0)
    connections.__dict__.pop("settings", None)  # the handler caches the configured dict
    try:
        del connections["default"]
    except AttributeError:
        pass


@contextlib.contextmanager
def celery_pointed_at(url: str, transport_options: dict[str, Any]) -> Iterator[None]:
    """Publish to ``url`` inside the block, then to whatever this process published to before.

    Restoring matters: the session's worker (:func:`celery_worker_process`) may outlive the
    block, and a test that then publishes to ``memory://`` loses every task it queues.
    """
    from leaderboard.celery import app

    previous = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    point_celery_at(url, transport_options)
    try:
        yield
    finally:
        point_celery_at(*previous)


def point_celery_at(url: str, transport_options: dict[str, Any]) -> None:
    """Make this process's Celery app publish to ``url`` (dropping pooled connections)."""
    from django.conf import settings

    from leaderboard.celery import app

    settings.CELERY_BROKER_URL = url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = transport_options
    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    if "amqp" in app.__dict__:
        app.amqp._producer_pool = None
    # kombu keeps producer pools per broker URL, process-wide; one made before would still hold the
    # connection pool closed above when this URL is used again ("Acquire on closed pool").
    from kombu import pools

    pools.reset()


# ---------------------------------------------------------------- test lanes
#: Folders whose every test is of one kind, and the marker it gets (see pytest.ini's markers).
LANE_FOLDERS = {"integration": "integration", "browser": "browser", "recipes": "slow"}


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by ``-m``
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test under ``tests/<folder>/`` of `LANE_FOLDERS` with that folder's marker.

    The plain ``pytest`` run deselects them (pytest.ini's ``-m``); ``python3 dev.py test`` runs
    each lane as its own step.
    """
    tests = ROOT / "tests"
    for item in items:
        parts = Path(str(item.path)).relative_to(tests).parts if Path(str(item.path)).is_relative_to(tests) else ()
        marker = LANE_FOLDERS.get(parts[0]) if len(parts) > 1 else None
        if marker:
            item.add_marker(marker)


# ---------------------------------------------------------------- skip rules
def missing_for(item: pytest.Item) -> list[str]:
    """What the machine lacks for ``item``'s markers (empty when it can run)."""
    from django.conf import settings

    missing = []
    if item.get_closest_marker("integration"):
        if not STATE["postgres"]:
            missing.append("PostgreSQL on 127.0.0.1:5432")
        elif settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
            missing.append("a PostgreSQL test database (DATABASE_URL points elsewhere)")
        if not STATE["redis"]:
            missing.append("Redis on 127.0.0.1:6379")
    if item.get_closest_marker("browser"):
        missing += [name for name in BROWSER_EXECUTABLES if not shutil.which(name)]
    return missing


def skip_or_fail(reason: str) -> None:
    if services_required():
        pytest.fail(f"{reason} (VARBOARD_REQUIRE_SERVICES=1: required, not skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = missing_for(item)
    if missing:
        skip_or_fail("needs " + ", ".join(missing))


# ---------------------------------------------------------------- the Celery worker process
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Before a test's fixtures are torn down, let the session's worker finish what the test queued.

    A test may end as soon as the API accepted a submission; the worker then still scores it.
    Flushing the database under it (TRUNCATE of every table) can deadlock with the worker's row
    locks, and PostgreSQL may pick the flush as the victim: the rows stay and the next test fails
    on them. A task that ends after the flush would write into the next test's database too.
    """
    worker = getattr(item, "funcargs", {}).get("celery_worker_process")
    if isinstance(worker, WorkerProcess) and not worker.wait_until_idle():
        sys.__stderr__.write(f"\n[tests] worker {worker.name} still busy after {item.nodeid}\n")
    yield


@dataclass
class WorkerProcess:
    """A Celery worker subprocess started by ``celery_worker_process``."""

    process: subprocess.Popen
    name: str
    broker_url: str
    log_path: Path

    def tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the worker's log."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def assert_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"the Celery worker exited with {self.process.returncode}:\n{self.tail()}")

    def ping(self) -> bool:
        """True when the worker answers a remote-control ping."""
        from leaderboard.celery import app

        self.assert_alive()
        return bool(app.control.ping(destination=[self.name], timeout=1.0))

    def busy(self) -> bool:
        """True while a task waits in one of its queues or is reserved or running in the worker."""
        from leaderboard.celery import app

        with app.connection(self.broker_url) as connection:
            channel = connection.default_channel
            if any(channel._size(queue) for queue in ("scoring", "cpu", "gpu")):
                return True
            inspect = app.control.inspect(destination=[self.name], timeout=1.0, connection=connection)
            for tasks in (inspect.active(), inspect.reserved(), inspect.scheduled()):
                if tasks is None or any(tasks.values()):  # None: no answer within the timeout
                    return True
        return False

    def wait_until_idle(self, timeout: float = 120.0) -> bool:
        """Wait until the worker is idle twice in a row (a task may queue the next); False on timeout."""
        deadline, idle_checks = time.monotonic() + timeout, 0
        while time.monotonic() < deadline and self.process.poll() is None:
            idle_checks = 0 if self.busy() else idle_checks + 1
            if idle_checks == 2:
                return True
            time.sleep(0.2)
        return False

    def stop(self, grace: float = 20.0) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL to its process group after ``grace`` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def die_with_parent() -> None:
    """``preexec_fn``: the child gets SIGTERM when the test process dies, however it dies.

    A worker outliving a killed test run would keep consuming its Redis database, which the
    next run on this machine may claim (the slot lock dies with the process): tasks vanish.
    """
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def database_url(db: dict[str, Any]) -> str:
    """A ``postgres://`` URL for a Django DATABASES entry."""
    user, password = quote(db.get("USER") or "", safe=""), quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{db.get('HOST') or ''}{port}/{quote(db['NAME'], safe='')}"


def run_slot() -> int:
    """A number from 15 down to 1 that no other test process on this machine holds.

    It is this process's Redis database and test-database suffix, so that concurrent test runs
    (several developers, xdist workers) never share a queue or a database. The lock is released
    when the process exits, however it exits.
    """
    if STATE.get("slot") is None:
        claimed = claim_slot(range(15, 0, -1))
        if claimed is None:
            raise RuntimeError("15 varboard test processes already hold every slot on this machine")
        STATE["slot"], STATE["slot_lock"] = claimed
    return STATE["slot"]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Name the test database after this run's slot: ``test_varboard``, else ``test_varboard_s<N>``."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3" and run_slot() != 15:
        name = db.get("TEST", {}).get("NAME") or f"test_{db['NAME']}"
        db.setdefault("TEST", {})["NAME"] = f"{name}_s{run_slot()}"


def redis_broker_url() -> str:
    """This run's own Redis database (see :func:`run_slot`)."""
    return f"redis://127.0.0.1:6379/{run_slot()}"


def start_worker(
    *,
    broker_url: str,
    database: str,
    node: str,
    queues: str = "scoring,cpu,gpu",
    concurrency: int = 2,
    beat: bool = False,
    env: dict[str, str] | None = None,
) -> WorkerProcess:
    """Start a real Celery worker subprocess on ``database`` (a URL) and ``broker_url``; wait for its ping.

    ``beat`` runs the beat scheduler (and so the janitor) inside it; ``env`` adds variables (e.g.
    shorter leases). Its log is under the session's temporary folder. The caller stops it.
    """
    from django.conf import settings

    environment = {
        **os.environ,
        "DATABASE_URL": database,
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": broker_url,
        "VARBOARD_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "VARBOARD_VAR_DIR": str(settings.VAR_DIR),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "leaderboard",
        "worker",
        "-Q",
        queues,
        "-c",
        str(concurrency),
        "-P",
        "prefork",
        "--loglevel=INFO",
        "-n",
        f"{node}@%h",
        "--without-gossip",
        "--without-mingle",
    ]
    log_path = STATE["tmp"] / f"worker-{node}.log"
    if beat:
        command += ["-B", "-s", str(STATE["tmp"] / f"beat-{node}")]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    worker = WorkerProcess(process, f"{node}@{socket.gethostname()}", broker_url, log_path)
    try:
        wait_for(
            worker.ping,
            timeout=60,
            interval=0.5,
            message=lambda: f"worker {worker.name} to answer ping; its log:\n{worker.tail()}",
        )
    except BaseException:
        worker.stop()
        raise
    return worker


@pytest.fixture(scope="session")
def celery_worker_process(request: pytest.FixtureRequest, django_db_setup: None) -> Any:
    """A real Celery worker subprocess (queues scoring, cpu and gpu) on the test database and Redis.

    Tests that use it are marked ``integration`` and use ``transactional_db`` (or
    ``django_db(transaction=True)``), so the rows they write are committed where the worker sees
    them. This process's Celery app publishes to the same Redis database while it runs.
    """
    import redis
    from django.conf import settings

    if not (STATE["postgres"] and STATE["redis"]):
        skip_or_fail("the Celery worker needs PostgreSQL and Redis on 127.0.0.1")
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        skip_or_fail("the Celery worker needs the PostgreSQL test database")
    broker_url = redis_broker_url()
    redis.Redis.from_url(broker_url).flushdb()
    point_celery_at(broker_url, {"visibility_timeout": 3600})
    worker = None
    try:
        worker = start_worker(broker_url=broker_url, database=database_url(db), node=f"test-{os.getpid()}")
        yield worker
    finally:
        if worker is not None:
            worker.stop()
        point_celery_at("memory://", {})
        if worker is not None and request.session.testsfailed:
            sys.__stderr__.write(f"\n--- Celery worker log ({worker.log_path}), last lines ---\n{worker.tail()}\n")


# ---------------------------------------------------------------- an S3-compatible object store
@dataclass
class S3Server:
    """moto's S3 server on 127.0.0.1, with a public and a private bucket made for one test."""

    endpoint: str
    bucket: str
    private_bucket: str

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def keys(self, bucket: str) -> list[str]:
        return sorted(item["Key"] for item in self.client().list_objects_v2(Bucket=bucket).get("Contents", []))

    def env(self) -> dict[str, str]:
        """The environment that selects this server as storage (for worker subprocesses)."""
        return {
            "VARBOARD_STORAGE": "s3",
            "VARBOARD_S3_BUCKET": self.bucket,
            "VARBOARD_S3_PRIVATE_BUCKET": self.private_bucket,
            "VARBOARD_S3_ENDPOINT_URL": self.endpoint,
            "VARBOARD_S3_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }


@pytest.fixture(scope="session")
def moto_endpoint() -> Any:
    """moto's server mode (a real HTTP S3 API) on a free 127.0.0.1 port, for the session."""
    from moto.server import ThreadedMotoServer

    from dev import free_port

    port = free_port()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per S3 request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        wait_for(lambda: reachable(("127.0.0.1", port)), timeout=30, message="moto's S3 server to listen")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_storage(moto_endpoint: str, settings: Any) -> S3Server:
    """Switch this test's storages to S3 (django-storages) on fresh buckets of the moto server."""
    server = S3Server(moto_endpoint, f"public-{os.urandom(4).hex()}", f"private-{os.urandom(4).hex()}")
    for bucket in (server.bucket, server.private_bucket):
        server.client().create_bucket(Bucket=bucket)
    from leaderboard.config import s3_storages

    settings.STORAGES = {
        **settings.STORAGES,
        **s3_storages(
            bucket=server.bucket,
            private_bucket=server.private_bucket,
            endpoint_url=moto_endpoint,
            region="us-east-1",
            access_key="testing",
            secret_key="testing",
        ),
    }
    return server


# ---------------------------------------------------------------- headless Chromium
@pytest.fixture(scope="session")
def chromium_session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One headless Chromium for the session, driven through Debian's chromedriver.

    chromedriver runs under ``tests/browser/reaper.py`` with :func:`die_with_parent`: when this
    test process dies, however it dies, the reaper gets SIGTERM and kills chromedriver and every
    Chromium process below it (a killed chromedriver alone would leave Chromium running).
    """
    missing = [name for name in BROWSER_EXECUTABLES if not shutil.which(name)]
    if missing:
        skip_or_fail("needs " + ", ".join(missing))
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    launcher = tmp_path_factory.mktemp("chromedriver") / "chromedriver"
    launcher.write_text(
        f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
        f"{shlex.quote(str(ROOT / 'tests' / 'browser' / 'reaper.py'))} "
        f'{shlex.quote(shutil.which("chromedriver"))} "$@"\n'
    )
    launcher.chmod(0o755)
    service = Service(str(launcher), popen_kw={"preexec_fn": die_with_parent})
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def selenium_driver(chromium_session: Any) -> Any:
    """The session's Chromium, with its cookies cleared after each test (use with ``live_server``)."""
    yield chromium_session
    chromium_session.delete_all_cookies()
