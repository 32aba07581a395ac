"""The OpenAPI schema's conventions, applied to every operation (``DEFAULT_SCHEMA_CLASS``).

* One content type per request body: JSON, unless the operation declares multipart (files travel).
  The views still parse form and multipart bodies (the browsable API, curl ``-F``); the schema
  names the one a generated client should send.
* One error shape for every 4xx (:class:`ErrorSerializer`, the exception handler's body), declared
  where it can happen: 400 (a body or query parameters to validate, or a write the object's state refuses,
  such as cancelling an ended submission: every POST, PUT, PATCH and DELETE), 401 (a token that does not
  authenticate), 403, 404 (also an unknown ``?format=``), 406 (an ``Accept`` no renderer meets), 413 (a
  body over its size), 415 (a body in another content type), 429 (a throttled view), and the platform's faults in the same
  shape: 500 (a bug, logged; ``leaderboard.ops.unavailable.server_error``), 503 (database or storage down), 507 (an upload the disk cannot
  take). A view declares the others it raises (409 challenge closed, 429 quota) with :func:`error_responses`.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers
from rest_framework.parsers import JSONParser


class ErrorSerializer(serializers.Serializer):
    """An error: one sentence naming the problem; the field it concerns; DRF's per-field messages."""

    detail = serializers.CharField(help_text="What went wrong, in words (naming the field and the problem).")
    field = serializers.CharField(required=False, help_text="The input field the error concerns, when one does.")
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Validation errors only: each field's messages (`non_field_errors`: the input as a whole).",
    )


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    """A JSON object (in a multipart form: its JSON text, as a generated client sends it)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError(
                f'Give a JSON object such as {{"C": 0.5}}, not {type(value).__name__} {value!r}.'
            )
        return value


@extend_schema_field({"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]})
class LabelField(serializers.JSONField):
    """A class label as the dataset spells it: text, a number or a boolean."""


ERROR = OpenApiResponse(ErrorSerializer, description="An error (`detail`, and `field` when one field is wrong).")
ERROR_DESCRIPTIONS = {
    "400": "Invalid input: `detail` names the field and the problem.",
    "401": "Not signed in, or the token does not authenticate.",
    "403": "Signed in, but not allowed (or a session request without its CSRF token).",
    "404": "No such object visible to you (or an unknown `format`).",
    "406": "No representation matches the `Accept` header.",
    "409": "The challenge does not take this now (closed, revealed, or busy rescoring).",
    "413": "The request body is larger than the API takes (5 MB as JSON or a form; files by their own limits).",
    "415": "The request body is not in the declared content type.",
    "429": "Throttled or over a quota: retry after `Retry-After` seconds.",
    "500": "An error the server did not expect (logged for its operators): try again, report it if it persists.",
    "503": "The database or the file storage is unavailable: retry after `Retry-After` seconds.",
    "507": "The server's disk cannot store the upload now (full or read-only).",
}


def error_responses(*codes: int) -> dict:
    """``{code: ERROR}`` for an ``extend_schema(responses=…)`` that adds codes beyond the conventions."""
    return {code: OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[str(code)]) for code in codes}


class VarboardAutoSchema(AutoSchema):
    def _map_basic_serializer(self, serializer, direction):
        """A serializer's ``Meta.optional_fields``: returned, but left out for some readers (not required)."""
        schema = super()._map_basic_serializer(serializer, direction)
        optional = set(getattr(getattr(serializer, "Meta", None), "optional_fields", ()))
        if optional and "required" in schema:
            schema["required"] = [name for name in schema["required"] if name not in optional]
            if not schema["required"]:
                del schema["required"]
        return schema

    def map_parsers(self) -> list:
        """One request content type: JSON where the view parses it, else its first parser's."""
        parsers = self.view.get_parsers()
        if any(isinstance(parser, JSONParser) for parser in parsers):
            return ["application/json"]
        return [parsers[0].media_type] if parsers else []

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        error = {"application/json": {"schema": self.resolve_serializer(ErrorSerializer, "response").ref}}
        responses = operation.setdefault("responses", {})
        for code in self._error_codes(operation):
            if code not in responses:
                responses[code] = {"description": ERROR_DESCRIPTIONS[code], "content": error}
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _error_codes(self, operation: dict) -> list[str]:
        has_body = "requestBody" in operation
        has_query = any(parameter.get("in") == "query" for parameter in operation.get("parameters", []))
        codes = ["403", "404", "406", "500", "503"]
        # A write refuses a state it cannot change (an ended submission, an invitation already decided) with a
        # 400 naming it (services.errors.ServiceError), with or without a body to validate.
        if has_body or has_query or self.method in {"POST", "PUT", "PATCH", "DELETE"}:
            codes.append("400")
        if self.view.get_authenticators():
            codes.append("401")
        if has_body:
            codes += ["413", "415", "507"]
        if getattr(self.view, "throttle_scope", None) or self.view.get_throttles():
            codes.append("429")
        return codes
