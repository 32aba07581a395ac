"""HTTP 503 with ``Retry-After`` while the database is unreachable, instead of a 500.

A database that restarts or fails over drops every connection, and may then be read-only for a while (a
standby not yet promoted): the requests that meet it (``leaderboard.database_faults.database_away``, the rule
the tasks retry by too) get ``503 Service Unavailable`` and a ``Retry-After`` header (``VARBOARD_RETRY_AFTER_S``),
as JSON under ``/api/`` and as a short HTML page elsewhere, so that clients and load
balancers retry instead of reporting a server bug. Two hooks catch the error wherever it is
raised: the middleware's ``process_exception`` (views, also with ``DEBUG`` on) and the
``handler500`` view (errors in other middleware, e.g. a session save). Persistent
connections are health-checked before reuse (``CONN_HEALTH_CHECKS``), so the first request
after the database is back reconnects.

The file storage gets the same treatment: an object store that refuses connections or times
out answers 503 with ``Retry-After`` ("file storage is unavailable, try again in N s"); a
local media disk that is full or read-only answers 507 with a message (the storage deletes
what it half wrote, see ``leaderboard.storage.MediaStorage``).
"""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.http import HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.template import loader
from django.urls import is_valid_path
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import server_error as default_server_error

from ..database_faults import database_away, database_read_only
from ..storage import STORAGE_DOWN, is_disk_full

logger = logging.getLogger(__name__)

MESSAGE = "The database is unreachable for the moment (a restart or a failover); try again in {seconds} s."
READ_ONLY_MESSAGE = (
    "The database is read-only for the moment (a failover onto a standby, or maintenance); nothing was stored, "
    "try again in {seconds} s."
)
STORAGE_MESSAGE = "file storage is unavailable, try again in {seconds} s."
DISK_FULL_MESSAGE = (
    "file storage cannot take the file: its disk is full or read-only ({error}); nothing was "
    "stored, try again in {seconds} s."
)


def unavailable_response(request, message: str = MESSAGE, *, status: int = 503, **details) -> HttpResponse:
    seconds = settings.VARBOARD["RETRY_AFTER_S"]
    message = message.format(seconds=seconds, **details)
    if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse({"detail": message}, status=status)
    else:
        # A template of its own: the site's base template reads the user and session from the database.
        response = HttpResponse(loader.render_to_string("errors/503.html", {"message": message}), status=status)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


def fault_response(request, exception: BaseException | None) -> HttpResponse | None:
    """The 503/507 answer for a database, object store or disk that cannot serve; None for other errors."""
    if database_away(exception):  # the one rule the tasks and the runs' lifecycle retry by too
        read_only = database_read_only(exception)
        logger.warning(
            "database %s during %s %s: %s",
            "read-only" if read_only else "unreachable",
            request.method,
            request.path,
            exception,
        )
        return unavailable_response(request, READ_ONLY_MESSAGE if read_only else MESSAGE)
    if isinstance(exception, STORAGE_DOWN):
        logger.warning("file storage unreachable during %s %s: %s", request.method, request.path, exception)
        return unavailable_response(request, STORAGE_MESSAGE)
    if exception is not None and is_disk_full(exception):
        logger.error("media disk cannot take a write during %s %s: %s", request.method, request.path, exception)
        return unavailable_response(request, DISK_FULL_MESSAGE, status=507, error=exception.strerror or exception)
    return None


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return fault_response(request, exception)


#: The body of an API 500: what happened and what to do, without the error's text (it could quote data).
SERVER_ERROR_MESSAGE = (
    "The server met an error it did not expect (logged for its operators); try again, and report it if it persists."
)


def server_error(request) -> HttpResponse:
    """``handler500``: a 503/507 when the uncaught error is a platform fault (database, storage, disk), else a 500:
    under ``/api/`` the API's error shape (``{"detail": ...}``), as every other API error; Django's HTML page
    elsewhere. An API client got an HTML page it could not parse (a host's review)."""
    fault = fault_response(request, sys.exc_info()[1])
    if fault is not None:
        return fault
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": SERVER_ERROR_MESSAGE}, status=500)
    return default_server_error(request)


@csrf_exempt  # it reads and changes nothing: a POST to an unknown path is a 404, not a CSRF failure
def api_not_found(request, rest: str = "") -> HttpResponse:
    """The last route under ``/api/``: a JSON 404 (``{"detail": ...}``) naming the path and where the endpoints
    are listed, with ``DEBUG`` on too (where Django answers its HTML page instead of calling ``handler404``).

    As it matches every path, Django's ``APPEND_SLASH`` no longer sees a miss: a path without its trailing
    slash whose slashed form is an endpoint is redirected here, as CommonMiddleware would: 301 for a read, 308
    for a write (a 301 turns a POST into a GET or stops it, and the body was lost without a word; a 308 is
    repeated with its method and body), with a JSON body naming the path."""
    path = request.path_info
    if settings.APPEND_SLASH and not path.endswith("/"):
        match = is_valid_path(f"{path}/", getattr(request, "urlconf", None))
        if match and match.func is not api_not_found:
            target = request.get_full_path(force_append_slash=True)
            if request.method in ("GET", "HEAD"):
                return HttpResponsePermanentRedirect(target)
            detail = f"The endpoint is {request.path}/ (with its trailing slash): send the request there."
            return JsonResponse({"detail": detail}, status=308, headers={"Location": target})
    detail = f"No API endpoint at {request.path} (method {request.method}); the endpoints are listed at /api/."
    return JsonResponse({"detail": detail}, status=404)
