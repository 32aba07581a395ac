"""Health endpoints for an orchestrator (docker compose, Kubernetes, a load balancer).

* ``/health/live``: the process answers; no dependency is consulted (restart it when this fails).
* ``/health/ready``: the dependencies a request needs answer: the database, the broker and both
  file storages (send it traffic only when this is 200). 503 otherwise, naming what failed.
  An object store is asked with a client of its own whose timeouts are short
  (``STORE_CHECK_TIMEOUT_S``, one try), so a hung store answers 503 in seconds; a local media
  disk with less free space than ``VARBOARD_MIN_FREE_DISK_MB`` is not ready either.
  The checks run at once, each in a thread of its own with its own deadline (`CHECK_TIMEOUT_S`):
  a hung store and a hung database answer 503 in the largest timeout, not their sum.

Recipe workers check their sandbox with ``python -m execution.probe`` (docker-compose.yml);
the web process runs no recipe, so its readiness leaves the sandbox out.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import threading
import time

from celery import current_app
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from django.db.utils import load_backend
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ..storage import hidden_storage

logger = logging.getLogger(__name__)


#: Seconds the readiness check waits on the database (connect, then the query).
DATABASE_CHECK_TIMEOUT_S = 3


def check_database() -> None:
    """``SELECT 1`` on a connection of its own, with short connect and statement timeouts (PostgreSQL)."""
    params = copy.deepcopy(connection.settings_dict)
    if connection.vendor == "postgresql":
        options = params.setdefault("OPTIONS", {})
        options["connect_timeout"] = DATABASE_CHECK_TIMEOUT_S
        options["options"] = f"{options.get('options', '')} -c statement_timeout={DATABASE_CHECK_TIMEOUT_S * 1000}"
    probe = load_backend(params["ENGINE"]).DatabaseWrapper(params, alias="health")
    try:
        with probe.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        probe.close()


def check_broker() -> None:
    with current_app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=1, timeout=3)


#: Seconds the readiness check waits on an object store (connect and read, one try each).
STORE_CHECK_TIMEOUT_S = 2.0


def _quick_client(storage):
    """A client for ``storage``'s bucket with short timeouts and one try (made once per storage)."""
    client = getattr(storage, "_varboard_health_client", None)
    if client is None:
        import boto3
        from botocore.config import Config

        config = storage.connection.meta.client.meta.config.merge(
            Config(
                connect_timeout=STORE_CHECK_TIMEOUT_S,
                read_timeout=STORE_CHECK_TIMEOUT_S,
                retries={"total_max_attempts": 1, "mode": "standard"},
            )
        )
        client = boto3.session.Session().client(
            "s3",
            region_name=storage.region_name,
            endpoint_url=storage.endpoint_url,
            aws_access_key_id=storage.access_key,
            aws_secret_access_key=storage.secret_key,
            aws_session_token=storage.security_token,
            config=config,
        )
        storage._varboard_health_client = client
    return client


def check_storage(storage) -> dict | None:
    """An S3 bucket answers a HEAD (quickly); a local folder exists, is writable and has free space."""
    bucket_name = getattr(storage, "bucket_name", None)
    if bucket_name is not None:
        _quick_client(storage).head_bucket(Bucket=bucket_name)
        return None
    location = storage.location
    os.makedirs(location, exist_ok=True)
    if not os.access(location, os.W_OK | os.X_OK):
        raise PermissionError(f"{location} is not writable")
    return check_free_space(location)


def check_free_space(location: str) -> dict:
    free_mb = shutil.disk_usage(location).free // 2**20
    minimum = settings.VARBOARD["MIN_FREE_DISK_MB"]
    if free_mb < minimum:
        raise OSError(f"{location} has {free_mb} MB free, under VARBOARD_MIN_FREE_DISK_MB={minimum}")
    return {"free_mb": free_mb, "min_free_mb": minimum}


CHECKS = {
    "database": check_database,
    "broker": check_broker,
    "storage": lambda: check_storage(default_storage),
    "hidden_storage": lambda: check_storage(hidden_storage),
}
#: Seconds each check may take before it counts as failed: its own client timeouts, plus a margin.
CHECK_TIMEOUT_S = {
    "database": DATABASE_CHECK_TIMEOUT_S + 1.0,
    "broker": 4.0,
    "storage": 2 * STORE_CHECK_TIMEOUT_S + 1.0,
    "hidden_storage": 2 * STORE_CHECK_TIMEOUT_S + 1.0,
}


def run_checks(checks: dict, timeouts: dict[str, float]) -> dict[str, dict]:
    """Run every check at once, each in a daemon thread; one that has not answered by its timeout failed.

    Returns ``{name: {"ok": True, "ms": ..., **details}}`` or ``{name: {"ok": False, "error": ...}}``;
    the call takes at most ``max(timeouts)`` seconds. A hung check's thread ends with its own client
    timeout (database, broker and stores each have one), after the answer.
    """
    answers: dict[str, dict] = {}

    def run(name, check):
        started = time.perf_counter()
        try:
            details = check() or {}
            answers[name] = {"ok": True, "ms": round((time.perf_counter() - started) * 1e3, 1), **details}
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; the message names it
            answers[name] = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}

    started = time.monotonic()
    threads = {
        name: threading.Thread(target=run, args=(name, check), name=f"health-{name}", daemon=True)
        for name, check in checks.items()
    }
    for thread in threads.values():
        thread.start()
    results = {}
    for name, thread in threads.items():
        thread.join(max(0.0, started + timeouts[name] - time.monotonic()))
        results[name] = (
            dict(answers[name])
            if not thread.is_alive()
            else {"ok": False, "error": f"TimeoutError: no answer within {timeouts[name]:g} s"}
        )
    return results


@never_cache
@require_GET
def live(request):
    return JsonResponse({"status": "alive"})


@never_cache
@require_GET
def ready(request):
    results = run_checks(CHECKS, CHECK_TIMEOUT_S)
    for name, result in results.items():
        if not result["ok"]:
            logger.warning("readiness: %s failed: %s", name, result["error"])
    ok = all(result["ok"] for result in results.values())
    return JsonResponse({"status": "ready" if ok else "unavailable", "checks": results}, status=200 if ok else 503)
