"""The runner service: a small WSGI application that executes workspaces in its sandbox.

Deployed on its own (``gunicorn execution.service:app``, one run per gunicorn worker
process), it receives a run's workspace and returns the sandbox's result and the run's
outputs (see :mod:`execution.protocol`). It holds no database credentials, no hidden
labels, no media folder and no other team's files: a recipe that escaped the sandbox would
find only the workspace it was given (docs/DESIGN.md §5, as Codabench's compute worker).

Endpoints
---------
``GET /health``
    200 with the isolation in force, or 503 naming what is missing (the sandbox probe):
    the readiness check of the service and of the workers that use it. ``cuda`` says
    whether runs here get a GPU (the workers of the gpu queue pass ``device="cuda"`` then).
``POST /v1/runs``
    A request archive in, a response archive out (``application/zip``). With
    ``VARBOARD_RUNNER_TOKEN`` set, requests must carry ``Authorization: Bearer <token>``.

Settings (environment): ``VARBOARD_RUNNER_TOKEN``, ``VARBOARD_RUNNER_MAX_REQUEST_MB``
(default 1024), ``VARBOARD_RUNNER_WORKDIR`` (where workspaces are made; default the
system's temporary folder).
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import os

from .devices import cuda_available
from .protocol import ProtocolError, decode_request, encode_response
from .runners import LocalRunner
from .sandbox import SandboxUnavailable, probe

logger = logging.getLogger(__name__)

MB = 1024 * 1024


def _respond(start_response, status: str, body: bytes, content_type: str = "application/json"):
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]


def _error(start_response, status: str, message: str):
    return _respond(start_response, status, json.dumps({"error": message}).encode())


def _authorized(environ) -> bool:
    token = os.environ.get("VARBOARD_RUNNER_TOKEN", "")
    if not token:
        return True
    sent = environ.get("HTTP_AUTHORIZATION", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


def _read_body(environ, limit: int) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ProtocolError("Content-Length is not a number") from None
    if length <= 0:
        raise ProtocolError("the request has no body")
    if length > limit:
        raise ProtocolError(f"the request is {length:,} bytes, more than the {limit:,}-byte limit")
    return environ["wsgi.input"].read(length)


def _health(start_response):
    found = probe()
    status = "200 OK" if found.ok else "503 Service Unavailable"
    body = {**dataclasses.asdict(found), "cuda": cuda_available()}
    return _respond(start_response, status, json.dumps(body).encode())


def _run(environ, start_response):
    limit = int(os.environ.get("VARBOARD_RUNNER_MAX_REQUEST_MB", "1024")) * MB
    try:
        files, expected, limits, device = decode_request(_read_body(environ, limit), limit)
        ran = LocalRunner(workdir_root=os.environ.get("VARBOARD_RUNNER_WORKDIR") or None).run(
            files, expected, limits, device
        )
    except ProtocolError as exc:
        return _error(start_response, "400 Bad Request", str(exc))
    except SandboxUnavailable as exc:
        logger.error("runner: %s", exc)
        return _error(start_response, "503 Service Unavailable", str(exc))
    body = encode_response(ran.sandbox, ran.outputs, ran.faults)
    return _respond(start_response, "200 OK", body, "application/zip")


def app(environ, start_response):
    """The WSGI entry point."""
    method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
    if path == "/health" and method == "GET":
        return _health(start_response)
    if path == "/v1/runs":
        if method != "POST":
            return _error(start_response, "405 Method Not Allowed", "POST a run archive to /v1/runs")
        if not _authorized(environ):
            return _error(start_response, "401 Unauthorized", "a valid 'Authorization: Bearer <token>' is required")
        return _run(environ, start_response)
    return _error(start_response, "404 Not Found", f"no endpoint {method} {path}")
