"""Health endpoints for an orchestrator (docker compose, Kubernetes, a load balancer).

* ``/health/live``: the process answers; no dependency is consulted (restart it when this fails).
* ``/health/ready``: the dependencies a request needs answer: the database, the broker and both
  file storages (send it traffic only when this is 200). 503 otherwise, naming what failed.
  An object store is asked with a client of its own whose timeouts are short
  (``STORE_CHECK_TIMEOUT_S``, one try), so a hung store answers 503 in seconds; a local media
  disk with less free space than ``VARBOARD_MIN_FREE_DISK_MB`` is not ready either.

Recipe workers check their sandbox with ``python -m execution.probe`` (docker-compose.yml);
the web process runs no recipe, so its readiness leaves the sandbox out.
"""

from __future__ import annotations

import logging
import os
import shutil
import time

from celery import current_app
from django.conf import settings
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


#: Seconds the readiness check waits on an object store (connect and read, one try each).
STORE_CHECK_TIMEOUT_S = 2.0


def _quick_client(storage):
    """A client for ``storage``'s bucket with short timeouts and one try (made once per storage)."""
    client = getattr(storage, "_varboard_health_client", None)
    if client is None:
        import boto3
        from botocore.config import Config

        config = storage.connection.meta.client.meta.config.merge(Config(
            connect_timeout=STORE_CHECK_TIMEOUT_S, read_timeout=STORE_CHECK_TIMEOUT_S,
            retries={"total_max_attempts": 1, "mode": "standard"}))
        client = boto3.session.Session().client(
            "s3", region_name=storage.region_name, endpoint_url=storage.endpoint_url,
            aws_access_key_id=storage.access_key, aws_secret_access_key=storage.secret_key,
            aws_session_token=storage.security_token, config=config)
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
            details = check() or {}
            results[name] = {"ok": True, "ms": round((time.perf_counter() - started) * 1e3, 1), **details}
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; the message names it
            ok = False
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            logger.warning("readiness: %s failed: %s", name, exc)
    return JsonResponse({"status": "ready" if ok else "unavailable", "checks": results}, status=200 if ok else 503)
