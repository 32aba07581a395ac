"""Turn service exceptions into clear HTTP errors: ``{"detail": ..., "field": ...}``."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
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
    if isinstance(exc, ValidationError) and response is not None and isinstance(response.data, (dict, list)):
        # Keep DRF's per-field errors (nested fields flattened to dotted names: the schema's Error shape),
        # and add one sentence that names the field and the problem.
        body = {"detail": "; ".join(_sentences(response.data))}
        if getattr(exc, "field", None):  # UnknownFields (inputs.py): the first field the endpoint does not take
            body["field"] = exc.field
        response.data = {**body, "errors": _by_field(response.data)}
    return response


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
