"""Turn service exceptions into clear HTTP errors: ``{"detail": ..., "field": ...}``."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..services.errors import ServiceError


def exception_handler(exc, context):
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
        # Keep DRF's per-field errors, and add one sentence that names the field and the problem.
        response.data = {"detail": "; ".join(_sentences(response.data)), "errors": response.data}
    return response


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
