"""The site's 400, 403 and 404 pages: the reason the view gave, in the site's layout.

Without templates of its own, Django answers with ``DEBUG`` off (in production) a bare "Bad Request (400)",
"403 Forbidden" or "Not Found", and the reason a view raised (``?board=foo``: "Unknown board 'foo'; choose public
or private."; a host-only page: "Only the challenge's hosts can ...") was lost, where the API says it (a new user's
review). Under ``/api/`` the answer is the API's error shape, ``{"detail": ...}``.

Only reasons the project wrote are shown: a :class:`~django.core.exceptions.BadRequest`,
:class:`~django.core.exceptions.PermissionDenied` or :class:`~django.http.Http404` raised with a message. Django's
own (a ``SuspiciousOperation``, the URL resolver's list of patterns tried, ``get_object_or_404``'s "No Challenge
matches the given query.") get the status's plain sentence.
"""

from __future__ import annotations

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render

from ..ops.unavailable import api_not_found

#: (heading, sentence when the view gave no reason) by status.
PAGES = {
    400: ("Bad request", "The request could not be understood: check the address and its parameters."),
    403: ("Not allowed", "You may not see this page."),
    404: ("Not found", "There is no page at this address."),
}


def _reason(exception, kind: type[Exception]) -> str:
    """The message ``exception`` was raised with, when it is one of ``kind`` and the message is a sentence."""
    if not isinstance(exception, kind) or not exception.args or not isinstance(exception.args[0], str):
        return ""
    message = exception.args[0].strip()
    return "" if message.endswith("matches the given query.") else message  # get_object_or_404's, a model's name


def refused_page(request, status: int, reason: str = "") -> HttpResponse:
    """The page (or, under ``/api/``, the JSON) for ``status``, saying ``reason`` or the status's sentence."""
    heading, fallback = PAGES[status]
    message = reason or fallback
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return render(request, "errors/refused.html", {"heading": heading, "message": message}, status=status)


def bad_request(request, exception=None) -> HttpResponse:
    """``handler400``."""
    return refused_page(request, 400, _reason(exception, BadRequest))


def permission_denied(request, exception=None) -> HttpResponse:
    """``handler403``."""
    return refused_page(request, 403, _reason(exception, PermissionDenied))


def not_found(request, exception=None) -> HttpResponse:
    """``handler404``: under ``/api/``, the API's error shape with the nearest endpoint
    (:func:`~leaderboard.ops.unavailable.api_not_found`); an API view's own 404 is DRF's, already JSON."""
    if request.path.startswith("/api/"):
        return api_not_found(request)
    return refused_page(request, 404, _reason(exception, Http404))
