"""Turn service exceptions into clear HTTP errors: ``{"detail": ..., "field": ...}``."""

import re

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework.exceptions import NotAuthenticated, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..services.errors import ServiceError
from .renderers import CSVRenderer


def exception_handler(exc, context):
    """The API's error for ``exc``; always JSON, in the schema's error shape, even where a table was asked for
    (``?format=csv``): an error is not a table, and a client reading CSV would take it for data."""
    response = _error_response(exc, context)
    request = context.get("request")
    if (
        response is not None
        and request is not None
        and isinstance(getattr(request, "accepted_renderer", None), CSVRenderer)
    ):
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
    return response


def _error_response(exc, context):
    if isinstance(exc, RequestDataTooBig):  # Django's bound on a JSON body or form fields (else an HTML 400)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {
                "detail": f"The request's JSON body or form fields take more than {limit / 2**20:g} MB, the API's "
                "limit (files are counted apart, each under its own limit)."
            },
            status=413,
        )
    if isinstance(exc, TooManyFieldsSent):  # Django's bound on a form's fields (else its error page: "could not be
        # understood", naming neither the fields nor the limit)
        return Response(
            {
                "detail": f"The request sends more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields, the "
                "API's limit (DATA_UPLOAD_MAX_NUMBER_FIELDS); send the fields the endpoint takes."
            },
            status=400,
        )
    if isinstance(exc, ServiceError):
        body = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        retry_after = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(max(1, int(retry_after)))} if retry_after is not None else None
        return Response(body, status=exc.status_code, headers=headers)
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": "; ".join(exc.messages)}, status=400)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, NotAuthenticated):
        response.data = {"detail": _not_authenticated(context.get("request"))}
    if response is not None and isinstance(exc, Http404):
        named = _not_found(exc, context.get("kwargs") or {})
        if named:
            response.data = {"detail": named}
    if isinstance(exc, ValidationError) and response is not None and isinstance(response.data, (dict, list)):
        # Keep DRF's per-field errors (nested fields flattened to dotted names: the schema's Error shape),
        # and add one sentence that names the field and the problem.
        errors = _by_field(response.data)
        body = {"detail": "; ".join(_sentences(response.data))}
        # ``field``: the input the error concerns (the schema's Error), as for every other refusal: UnknownFields
        # (inputs.py) names the first field the endpoint does not take; any other validation error its first
        # field at fault (``?limit=abc`` named ``limit`` only in words and in ``errors``), never the input as a whole
        field = getattr(exc, "field", None) or next((name for name in errors if name != "non_field_errors"), None)
        if field:
            body["field"] = field
        response.data = {**body, "errors": errors}
    return response


#: How the API takes a token, said wherever a request came without one it could read.
TOKEN_HOW = "send `Authorization: Token <token>` (a token from POST /api/auth/token/), or log in for a session"


def _not_authenticated(request) -> str:
    """DRF's "Authentication credentials were not provided." told a new user who sent ``Authorization: Bearer
    <token>`` (or the bare token) that they had sent nothing (a new user's review): say which scheme was sent, and
    the one the API takes."""
    header = (request.META.get("HTTP_AUTHORIZATION", "") if request is not None else "").strip()
    if not header:
        return f"Authentication credentials were not provided: {TOKEN_HOW}."
    parts = header.split()
    if len(parts) == 1:
        return f"The Authorization header holds no scheme before the token: {TOKEN_HOW}."
    scheme = parts[0][:20]
    return f"The Authorization header uses the scheme {scheme!r}, which this API does not take: {TOKEN_HOW}."


def _not_found(exc, kwargs) -> str:
    """``get_object_or_404``'s "No Challenge matches the given query." with the slug or id that matched nothing
    (a new user's review: an unknown challenge slug was not named); "" for any other 404, which keeps its own words."""
    message = str(exc.args[0]) if exc.args else ""
    if not (message.startswith("No ") and message.endswith(" matches the given query.")):
        return ""
    model = message.removeprefix("No ").removesuffix(" matches the given query.")
    if model == "Challenge" and "slug" in kwargs:
        return f"There is no challenge {kwargs['slug']!r} that you may see (GET /api/challenges/ lists them)."
    ident = kwargs.get("pk", kwargs.get("team_id"))
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", model).lower()
    if model == "Run" and "index" in kwargs:  # /submissions/{pk}/runs/{index}/: pk is the submission's, not the run's
        return f"There is no run {kwargs['index']} of submission {ident} that you may see."
    if ident is None:
        return f"There is no such {words}, or you may not see it."
    return f"There is no {words} {ident} that you may see."


def _by_field(errors, prefix: str = "") -> dict[str, list[str]]:
    """``{field: [messages]}``: nested fields as ``parent.child`` (``files.0``), the input as a whole as
    ``non_field_errors``."""
    if isinstance(errors, dict):
        out: dict[str, list[str]] = {}
        for key, value in errors.items():
            name = prefix or str(key) if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            for field, messages in _by_field(value, name).items():
                out.setdefault(field, []).extend(messages)
        return out
    if isinstance(errors, list) and any(isinstance(item, (dict, list)) for item in errors):
        out = {}
        for index, item in enumerate(errors):
            for field, messages in _by_field(item, f"{prefix}.{index}" if prefix else str(index)).items():
                out.setdefault(field, []).extend(messages)
        return out
    messages = [str(item) for item in errors] if isinstance(errors, list) else [str(errors)]
    return {prefix or "non_field_errors": messages} if messages else {}


def _sentences(errors, prefix: str = "") -> list[str]:
    if isinstance(errors, dict):
        out = []
        for key, value in errors.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            out.extend(_sentences(value, name))
        return out
    if isinstance(errors, list):
        out = []
        for item in errors:
            out.extend(_sentences(item, prefix))
        return out
    return [f"{prefix}: {errors}" if prefix else str(errors)]
