"""Health endpoints for an orchestrator (docker compose, Kubernetes, a load balancer).

* ``/health/live``: the process answers; no dependency is consulted (restart it when this fails).
* ``/health/ready``: the dependencies a request needs answer: the database, the broker and both
  file storages (send it traffic only when this is 200). 503 otherwise, naming what failed.

Recipe workers check their sandbox with ``python -m execution.probe`` (docker-compose.yml);
the web process runs no recipe, so its readiness leaves the sandbox out.
"""

from __future__ import annotations

import logging
import os
import time

from celery import current_app
from django.core.files.storage import default_storage
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ..storage import hidden_storage

logger = logging.getLogger(__name__)


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_broker() -> None:
    with current_app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=1, timeout=3)


def check_storage(storage) -> None:
    """An S3 bucket answers a HEAD; a local folder exists and is writable."""
    bucket = getattr(storage, "bucket", None)
    if bucket is not None:
        bucket.meta.client.head_bucket(Bucket=bucket.name)
        return
    location = storage.location
    os.makedirs(location, exist_ok=True)
    if not os.access(location, os.W_OK | os.X_OK):
        raise PermissionError(f"{location} is not writable")


CHECKS = {
    "database": check_database,
    "broker": check_broker,
    "storage": lambda: check_storage(default_storage),
    "hidden_storage": lambda: check_storage(hidden_storage),
}


@never_cache
@require_GET
def live(request):
    return JsonResponse({"status": "alive"})


@never_cache
@require_GET
def ready(request):
    results, ok = {}, True
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            check()
            results[name] = {"ok": True, "ms": round((time.perf_counter() - started) * 1e3, 1)}
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; the message names it
            ok = False
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            logger.warning("readiness: %s failed: %s", name, exc)
    return JsonResponse({"status": "ready" if ok else "unavailable", "checks": results}, status=200 if ok else 503)
