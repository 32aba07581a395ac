"""Operations: health endpoints, 503 while the database is down, Prometheus metrics, structured logs."""

from __future__ import annotations

import io
import json
import logging
import socket
import threading
import time

import pytest
from django.db import OperationalError
from django.db.backends.utils import CursorWrapper
from django.test import RequestFactory

from leaderboard.logs import ContextFilter, log_context, logging_config
from leaderboard.ops.unavailable import server_error
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from tests.conftest import celery_pointed_at

from .factories import label_predictions

pytestmark = pytest.mark.django_db


@pytest.fixture
def database_down(monkeypatch):
    """Every query fails the way a restarting PostgreSQL makes it fail."""

    def fail(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(CursorWrapper, "execute", fail)
    monkeypatch.setattr(CursorWrapper, "executemany", fail)


# ---------------------------------------------------------------- health
def test_liveness_consults_nothing(client, database_down):
    response = client.get("/health/live")
    assert response.status_code == 200 and response.json() == {"status": "alive"}


def test_readiness_checks_database_broker_and_both_storages(client):
    response = client.get("/health/ready")
    assert response.status_code == 200, response.content
    assert set(response.json()["checks"]) == {"database", "broker", "storage", "hidden_storage"}
    assert all(check["ok"] for check in response.json()["checks"].values())


def test_readiness_is_503_naming_an_unreachable_broker(client):
    from dev import free_port

    with celery_pointed_at(f"redis://127.0.0.1:{free_port()}/0", {}):
        response = client.get("/health/ready")
    body = response.json()
    assert response.status_code == 503 and body["status"] == "unavailable"
    assert not body["checks"]["broker"]["ok"] and "Error" in body["checks"]["broker"]["error"]
    assert body["checks"]["database"]["ok"]


def test_readiness_is_503_naming_an_unreachable_database(client, database_down):
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == {
        "ok": False,
        "error": "OperationalError: server closed the connection unexpectedly",
    }


@pytest.fixture
def stuck():
    """A check that hangs until the test ends (a store or a database that never answers)."""
    release = threading.Event()
    yield lambda: release.wait(60)
    release.set()


def test_readiness_runs_the_checks_at_once_so_two_hung_ones_cost_the_largest_timeout(client, monkeypatch, stuck):
    from leaderboard.ops import health

    monkeypatch.setitem(health.CHECKS, "database", stuck)
    monkeypatch.setitem(health.CHECKS, "storage", stuck)
    monkeypatch.setattr(health, "CHECK_TIMEOUT_S", {**health.CHECK_TIMEOUT_S, "database": 2.0, "storage": 1.8})
    started = time.monotonic()
    response = client.get("/health/ready")
    elapsed = time.monotonic() - started
    checks = response.json()["checks"]
    assert response.status_code == 503
    assert checks["database"] == {"ok": False, "error": "TimeoutError: no answer within 2 s"}
    assert checks["storage"] == {"ok": False, "error": "TimeoutError: no answer within 1.8 s"}
    assert checks["broker"]["ok"] and checks["hidden_storage"]["ok"]
    assert 1.9 < elapsed < 3.6, elapsed  # max(2, 1.8), not their sum 3.8 (1.6 s for the rest on a loaded machine)


def test_readiness_gives_up_on_a_hung_database_with_its_own_connect_timeout(client, settings, monkeypatch):
    """A database that accepts connections and never answers: the check's connection times out by itself."""
    from leaderboard.ops import health

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        monkeypatch.setitem(settings.DATABASES["default"], "HOST", "127.0.0.1")
        monkeypatch.setitem(settings.DATABASES["default"], "PORT", listener.getsockname()[1])
        monkeypatch.setattr(health, "CHECK_TIMEOUT_S", {**health.CHECK_TIMEOUT_S, "database": 30.0})
        started = time.monotonic()
        response = client.get("/health/ready")
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    database = response.json()["checks"]["database"]
    assert response.status_code == 503 and database["error"].startswith("OperationalError"), database
    assert elapsed < health.DATABASE_CHECK_TIMEOUT_S + 2, elapsed


def test_readiness_reports_the_media_disks_free_space_against_the_threshold(client, settings):
    settings.VARBOARD = {**settings.VARBOARD, "MIN_FREE_DISK_MB": 1}
    storage = client.get("/health/ready").json()["checks"]["storage"]
    assert storage["ok"] and storage["min_free_mb"] == 1 and storage["free_mb"] >= 1, storage
    settings.VARBOARD = {**settings.VARBOARD, "MIN_FREE_DISK_MB": 2**40}
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert "under VARBOARD_MIN_FREE_DISK_MB=1099511627776" in response.json()["checks"]["storage"]["error"]


# ---------------------------------------------------------------- 503 while the database is down
def test_the_api_answers_503_with_retry_after_while_the_database_is_down(client, database_down, settings):
    response = client.get("/api/challenges/")
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.VARBOARD["RETRY_AFTER_S"])
    assert "database is unreachable" in response.json()["detail"]


def test_pages_answer_503_with_a_page_of_their_own(client, database_down):
    response = client.get("/")
    assert response.status_code == 503 and response["Retry-After"]
    assert b"Temporarily unavailable" in response.content and b"database is unreachable" in response.content


def test_handler500_turns_only_database_errors_into_503():
    request = RequestFactory().get("/c/x/")
    try:
        raise OperationalError("connection refused")
    except OperationalError:
        assert server_error(request).status_code == 503
    try:
        raise ValueError("a bug")
    except ValueError:
        assert server_error(request).status_code == 500


# ---------------------------------------------------------------- metrics
@pytest.fixture
def scrape(client, settings):
    """A Prometheus scrape of /metrics with the token (closed without one: test_leaks_v3)."""
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": "s3cret"}
    return lambda: client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret")


def test_metrics_export_request_latency_and_platform_figures(client, scrape, challenge, alice):
    challenge, frame = challenge
    submission_create_predictions(
        challenge=challenge, user=alice, method_name="p", files=[UploadedFile("p.csv", label_predictions(frame))]
    )
    client.get("/api/challenges/")
    response = scrape()
    assert response.status_code == 200
    text = response.content.decode()
    for line in (
        'varboard_runs{kind="predictions",status="queued"} 1.0',
        "varboard_broker_up 1.0",
        'varboard_queue_length{queue="cpu"}',
        "varboard_report_recomputations_total",
        "varboard_run_attempts_total 0.0",
        "varboard_oldest_queued_run_seconds",
        "django_http_requests_latency_seconds_by_view_method_bucket",
    ):
        assert line in text, line


def test_metrics_count_failures_by_cause_and_durations(scrape, challenge, alice):
    from leaderboard.models import Run

    challenge, frame = challenge
    submission = submission_create_predictions(
        challenge=challenge, user=alice, method_name="p", files=[UploadedFile("p.csv", label_predictions(frame))] * 2
    )
    Run.objects.filter(submission=submission, index=0).update(
        status="failed", duration_s=0.3, error_message="platform error: x"
    )
    Run.objects.filter(submission=submission, index=1).update(status="succeeded", duration_s=7.0)
    text = scrape().content.decode()
    assert 'varboard_run_failures_total{cause="platform"} 1.0' in text
    assert 'varboard_run_duration_seconds_bucket{kind="predictions",le="0.5"} 1.0' in text
    assert 'varboard_run_duration_seconds_bucket{kind="predictions",le="10.0"} 2.0' in text
    assert 'varboard_run_duration_seconds_sum{kind="predictions"} 7.3' in text


def test_metrics_require_the_token_when_one_is_set(client, settings):
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": "s3cret"}
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").status_code == 200


# ---------------------------------------------------------------- structured logs
def test_json_logs_carry_the_submission_and_run_ids():
    from pythonjsonlogger.json import JsonFormatter

    spec = logging_config(fmt="json", level="INFO")["formatters"]["json"]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(spec["format"], rename_fields=spec["rename_fields"]))
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("varboard.test.json")
    logger.addHandler(handler)
    try:
        with log_context(submission_id=12):
            with log_context(run_id=345):
                logger.warning("stored")
            logger.warning("scored")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["message"], first["submission_id"], first["run_id"], first["level"]) == ("stored", 12, 345, "WARNING")
    assert (second["submission_id"], second["run_id"]) == (12, None) and "ids" not in second


def test_plain_logs_name_the_ids_readably():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", (), None)
    with log_context(submission_id=3, run_id=7):
        ContextFilter(readable=True).filter(record)
    formatter = logging.Formatter(logging_config(fmt="plain", level="INFO")["formatters"]["plain"]["format"])
    assert formatter.format(record).endswith("x [submission=3 run=7]: hello")


def test_an_unexpected_error_under_the_api_is_a_json_500(client, monkeypatch, settings):
    """Found by a review: an API request that met a bug got Django's HTML error page, which API clients (the CLI,
    curl | jq) cannot read; every other API error is ``{"detail": ...}``. Pages keep the HTML page."""
    from leaderboard.api import views

    def bug(*args, **kwargs):
        raise RuntimeError("a bug with a secret in its text")

    settings.DEBUG = False
    monkeypatch.setattr(views.ChallengeViewSet, "list", bug)
    client.raise_request_exception = False
    response = client.get("/api/challenges/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "did not expect" in response.json()["detail"] and "secret" not in response.content.decode()
    page = server_error(RequestFactory().get("/c/x/"))
    assert page.status_code == 500 and "json" not in page["Content-Type"]


HUNG_BROKER_PUBLISH = """
import time
from leaderboard.services import dispatch
started = time.monotonic()
try:
    dispatch.send(dispatch.SCORE_SUBMISSION, (1,))
    print("sent")
except Exception as exc:
    print(type(exc).__name__, round(time.monotonic() - started, 1))
"""


def test_a_publish_to_a_broker_that_never_answers_gives_up_within_seconds(tmp_path):
    """A fault injector's Redis that accepts connections and never answers (hung, or a route dropping replies): a
    submission's publish, run in the request after its commit, waited on it for more than 150 s, holding the
    request and a web thread (killed at 150 s without an answer). Now the broker's connection and socket
    timeouts (CELERY_BROKER_TIMEOUT_S, default 2 s) and two retries bound it: the publish fails within seconds,
    and the janitor sends the run again. Run in a child, so that the settings are those of its broker URL."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    env = {
        **os.environ,
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{hung.getsockname()[1]}/0",
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "PYTHONPATH": str(ROOT),
    }
    code = "import django; django.setup()\n" + HUNG_BROKER_PUBLISH
    try:
        child = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the publish to a broker that never answers still waited after 60 s")
    finally:
        hung.close()
    name, seconds = child.stdout.split()
    assert name == "OperationalError" and float(seconds) < 10, child.stdout + child.stderr[-2000:]


HUNG_BROKER_SUBMISSION = """
import sys, time
import django
django.setup()
from django.contrib.auth import get_user_model
from leaderboard.models import Challenge
from leaderboard.services.submissions import UploadedFile, submission_create_recipe
challenge, user = Challenge.objects.get(pk=int(sys.argv[1])), get_user_model().objects.get(pk=int(sys.argv[2]))
recipe = UploadedFile("trivial.py", open(sys.argv[3], "rb").read())
started = time.monotonic()
submission = submission_create_recipe(challenge=challenge, user=user, method_name="trivial", recipe=recipe)
print(submission.runs.filter(status="queued").count(), round(time.monotonic() - started, 1))
"""


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_submission_of_several_runs_waits_for_one_refused_publish_not_one_per_run(
    challenge, alice, settings, tmp_path
):
    """The same hung broker (accepts connections, never answers) under a real recipe submission of 5 runs: each
    run's publish after the commit gave up after ~4 s, one after the other, so the request was held 20.3 s, a label
    correction of n submissions ~4n s. The transaction's publishes now stop at the first
    refusal (dispatch.Publisher): the request waits for one (4.2 s; under 10 s), and its 5 runs stay queued in the
    database for the janitor (test_janitor checks that it sends every message not tried). Run in a child on the
    test database, with the hung broker's URL."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from tests.conftest import ROOT, database_url

    challenge, _ = challenge
    challenge.k_runs = 5
    challenge.save(update_fields=["k_runs"])
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    env = {
        **os.environ,
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{hung.getsockname()[1]}/0",
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "PYTHONPATH": str(ROOT),
        "VARBOARD_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "VARBOARD_VAR_DIR": str(settings.VAR_DIR),
    }
    recipe = ROOT / "examples" / "recipes" / "trivial.py"
    command = [sys.executable, "-c", HUNG_BROKER_SUBMISSION, str(challenge.pk), str(alice.pk), str(recipe)]
    try:
        child = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    finally:
        hung.close()
    assert child.returncode == 0, child.stderr[-3000:]
    queued, seconds = child.stdout.split()
    assert queued == "5" and float(seconds) < 10, child.stdout + child.stderr[-2000:]
    assert child.stderr.count("could not queue") == 1, child.stderr[-3000:]


COUNTED_BROKER_PUBLISH = """
import os, socket, threading
accepted = []
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)


def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass


def serve():
    while True:
        client, _ = listener.accept()
        accepted.append(client)
        upstream = socket.create_connection(("127.0.0.1", 6379))
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


threading.Thread(target=serve, daemon=True).start()
os.environ["CELERY_BROKER_URL"] = f"redis://127.0.0.1:{listener.getsockname()[1]}/13"
import django
django.setup()
import redis
from leaderboard.services import dispatch
queue = f"varboard-test-publish-{os.getpid()}"
try:
    for i in range(20):
        dispatch.send(dispatch.SCORE_SUBMISSION, (i,), queue=queue)
    print(len(accepted), redis.Redis(host="127.0.0.1", port=6379, db=13).llen(queue))
finally:
    redis.Redis(host="127.0.0.1", port=6379, db=13).delete(queue)
"""


@pytest.mark.integration
def test_publishes_share_their_bounded_broker_connections(tmp_path):
    """A publish's bounded connection (CELERY_BROKER_TIMEOUT_S) was opened and closed for each message: a
    submission's runs, a label correction's rescores (one per submission) or a janitor's pass connected to Redis once
    per task, 12 ms a publish where the pooled one took 1.4 ms (300 publishes on this machine). 20 publishes now
    share the process's pool of bounded connections: one connection, 20 messages queued. Run in a child, whose
    broker is a counting proxy in front of the Redis at 127.0.0.1:6379."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings", "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", COUNTED_BROKER_PUBLISH],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    connections, queued = map(int, child.stdout.split())
    assert queued == 20 and connections <= 2, child.stdout


@pytest.mark.django_db(transaction=True)
def test_a_submission_while_the_database_is_read_only_is_a_503_and_stores_no_file(challenge, alice, media):
    """A PostgreSQL that takes reads and refuses writes (a failover onto a standby not yet promoted, or
    default_transaction_read_only set by an operator): the submission's INSERT fails with SQLSTATE 25006,
    which Django raises as an InternalError, and the API answered a 500 "The server met an error it did not
    expect" (a fault injector's finding) where a database away answers 503 with Retry-After. Now a read-only
    database is a fault of the platform too: 503 naming it, and no prediction file left behind."""
    from django.db import connection

    from leaderboard.models import Submission

    from .test_api import client_for, stored_submission_files, submit

    challenge, frame = challenge
    api = client_for(alice)
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION default_transaction_read_only = on")
    try:
        response = submit(api, challenge.slug, [("p.csv", label_predictions(frame))])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION default_transaction_read_only = off")
    assert response.status_code == 503, response.content[:300]
    assert "read-only" in response.json()["detail"] and response["Retry-After"]
    assert not Submission.objects.exists() and stored_submission_files(media) == []


class _ReadOnlyCause(Exception):
    sqlstate = "25006"  # psycopg's ReadOnlySqlTransaction


def _read_only_error():
    from django.db import InternalError

    error = InternalError("cannot execute UPDATE in a read-only transaction")
    error.__cause__ = _ReadOnlyCause()
    return error


@pytest.mark.django_db(transaction=True)
def test_a_runs_result_is_kept_and_stored_again_while_the_database_is_read_only(challenge, alice, settings, caplog):
    """A failover's read-only window (the standby takes reads, refuses writes: SQLSTATE 25006, raised by Django as
    an InternalError) met by a run's result. Before, ``run_store_retrying`` retried an unreachable database only
    (OperationalError, InterfaceError): the result was lost at once, the task failed and the run was left to the
    janitor, while the web answered the same error 503 "try again". Now one rule (``leaderboard.database_faults``)
    says "away or read-only": the result is kept, nothing of it is stored while the database refuses writes, and
    it is stored once, whole, when the database takes writes again."""
    from django.db import connection
    from django.db.backends.signals import connection_created

    from leaderboard.models import Run
    from leaderboard.services.lifecycle import run_claim, run_store_retrying

    from .test_janitor import recipe_submission

    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "RESULT_RETRY_S": 60}
    submission = recipe_submission(challenge, alice, k=1)
    claimed = run_claim(run_id=submission.runs.get().pk, delivery="t")
    seen = []  # the run's row as each new connection finds it, and whether that connection is read-only

    def window(sender, connection, **kwargs):  # the two reconnections after this one are read-only still
        read_only = len(seen) < 2
        with connection.cursor() as cursor:
            if read_only:
                cursor.execute("SET SESSION default_transaction_read_only = on")
            cursor.execute("SELECT status, test_score, finished_at FROM leaderboard_run WHERE id = %s", [claimed.pk])
            seen.append((read_only, cursor.fetchone()))

    with connection.cursor() as cursor:
        cursor.execute("SET SESSION default_transaction_read_only = on")
    connection_created.connect(window)
    try:
        with caplog.at_level(logging.WARNING, logger="leaderboard.services.lifecycle"):
            stored = run_store_retrying(run_id=claimed.pk, attempt=claimed.attempts, status="succeeded", test_score=0.5)
    finally:
        connection_created.disconnect(window)
        connection.close()  # the next connection is writable

    assert stored is True
    assert [read_only for read_only, _ in seen] == [True, True, False]
    assert all(row == ("running", None, None) for _, row in seen), seen  # nothing half-stored meanwhile
    waits = [r.getMessage() for r in caplog.records if "read-only" in r.getMessage()]
    assert len(waits) == 3, [r.getMessage() for r in caplog.records]
    run = Run.objects.get(pk=claimed.pk)
    assert (run.status, run.test_score, run.lease_owner, run.lease_expires_at) == ("succeeded", 0.5, "", None)
    assert run.finished_at is not None and run.attempts == 1
    submission.refresh_from_db()
    assert submission.status == "scored" and submission.counts_toward_quota


@pytest.mark.django_db(transaction=True)
def test_a_runs_heartbeat_renews_again_after_a_read_only_window(challenge, alice, settings, monkeypatch):
    """A renewal refused by a read-only database ended the heartbeat's thread (only OperationalError and
    InterfaceError were "the database away"): the lease was never renewed again and the janitor would queue
    the live run again. Now the beat logs it and renews at the next one."""
    from leaderboard.services import lifecycle

    from .test_janitor import recipe_submission

    challenge, _ = challenge
    settings.VARBOARD = {**settings.VARBOARD, "HEARTBEAT_S": 0.05, "LEASE_S": 5.0}
    claimed = lifecycle.run_claim(run_id=recipe_submission(challenge, alice, k=1).runs.get().pk, delivery="t")
    renewals = []

    def read_only_once(**kwargs):
        renewals.append(kwargs)
        if len(renewals) == 1:
            raise _read_only_error()
        return True

    monkeypatch.setattr(lifecycle, "run_renew_lease", read_only_once)
    with lifecycle.run_heartbeat(claimed) as beat:
        deadline = time.monotonic() + 10
        while len(renewals) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(renewals) >= 3 and not beat.lost


@pytest.mark.parametrize(
    "error, retried",
    [
        (_read_only_error, True),
        (lambda: OperationalError("server closed the connection unexpectedly"), True),
        (lambda: __import__("django.db").db.InternalError("current transaction is aborted"), False),
        (lambda: __import__("django.db").db.IntegrityError("duplicate key value"), False),
    ],
)
def test_a_task_retries_a_read_only_database_as_it_retries_an_unreachable_one(monkeypatch, error, retried):
    """The tasks' retry policy and the web's 503 follow the one rule: a read-only database is retried with
    backoff (it failed the task before); another InternalError (a bug, not an outage) still fails it."""
    from celery.exceptions import Retry

    from tasks import reports

    def fail(**kwargs):
        raise error()

    def fake_retry(self, args=None, kwargs=None, exc=None, **options):
        raise Retry(exc=exc)

    monkeypatch.setattr(reports, "report_recompute", fail)
    monkeypatch.setattr("celery.app.task.Task.retry", fake_retry)
    reports.recompute_report.push_request(retries=0)
    try:
        with pytest.raises(Retry if retried else Exception) as raised:
            reports.recompute_report.run(1)
    finally:
        reports.recompute_report.pop_request()
    assert isinstance(raised.value, Retry) is retried, raised.value
