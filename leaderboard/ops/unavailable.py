"""HTTP 503 with ``Retry-After`` while the database is unreachable, instead of a 500.

A database that restarts or fails over drops every connection: the requests that meet it
get ``503 Service Unavailable`` and a ``Retry-After`` header (``VARBOARD_RETRY_AFTER_S``),
as JSON under ``/api/`` and as a short HTML page elsewhere, so that clients and load
balancers retry instead of reporting a server bug. Two hooks catch the error wherever it is
raised: the middleware's ``process_exception`` (views, also with ``DEBUG`` on) and the
``handler500`` view (errors in other middleware, e.g. a session save). Persistent
connections are health-checked before reuse (``CONN_HEALTH_CHECKS``), so the first request
after the database is back reconnects.
"""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error as default_server_error

logger = logging.getLogger(__name__)

DATABASE_DOWN = (OperationalError, InterfaceError)
MESSAGE = "The database is unreachable for the moment (a restart or a failover); try again in {seconds} s."


def unavailable_response(request) -> HttpResponse:
    seconds = settings.VARBOARD["RETRY_AFTER_S"]
    message = MESSAGE.format(seconds=seconds)
    if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse({"detail": message}, status=503)
    else:
        # A template of its own: the site's base template reads the user and session from the database.
        response = HttpResponse(loader.render_to_string("errors/503.html", {"message": message}), status=503)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_DOWN):
            logger.warning("database unreachable during %s %s: %s", request.method, request.path, exception)
            return unavailable_response(request)
        return None


def server_error(request) -> HttpResponse:
    """``handler500``: a 503 when the uncaught error is the database being unreachable, else Django's 500."""
    if isinstance(sys.exc_info()[1], DATABASE_DOWN):
        return unavailable_response(request)
    return default_server_error(request)
