"""The API's responses against its own OpenAPI schema (``/api/schema/``): the schema is the contract.

:func:`response_problems` checks one response: its status is declared on the operation, its
content type is one the operation declares for that status, and a JSON body validates against
the declared schema made strict: an object may carry no field its schema does not declare
(``additionalProperties: false`` unless the schema says otherwise), and OpenAPI 3.0's
``nullable`` becomes JSON Schema's ``null`` type. ``tests/platform/conftest.py`` runs it on every
response the platform tests get from ``/api/``.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import re
from typing import Any

from jsonschema import Draft202012Validator

ERROR_SCHEMA = "#/components/schemas/Error"


@functools.cache
def api_schema() -> dict:
    """The schema ``/api/schema/`` serves (drf-spectacular's generator, as the view runs it)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


@functools.cache
def _routes() -> list[tuple[re.Pattern, str]]:
    routes = []
    for template in api_schema()["paths"]:
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template))
        routes.append((re.compile(f"^{pattern}$"), template))
    # Literal segments first: /api/suites/{slug}/ must not take a path a more specific template has.
    routes.sort(key=lambda route: route[1].count("{"))
    return routes


def operation_for(method: str, path: str) -> tuple[str, dict] | None:
    """(path template, operation) of ``method path``, or None when the schema has no such operation."""
    for pattern, template in _routes():
        if pattern.match(path):
            operation = api_schema()["paths"][template].get(method.lower())
            return (template, operation) if operation is not None else None
    return None


def strict(schema: Any) -> Any:
    """``schema`` as JSON Schema 2020-12, objects closed: a field the schema does not declare is an error."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items() if key != "nullable"}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def _components() -> dict:
    return strict(copy.deepcopy(api_schema()["components"]))


def schema_problems(schema: dict, body: Any) -> list[str]:
    """Where ``body`` breaks ``schema`` (an OpenAPI schema of this API's document), one line each."""
    validator = Draft202012Validator({**strict(schema), "components": _components()})
    return [
        f"{'/'.join('*' if isinstance(p, int) else str(p) for p in error.absolute_path) or '(body)'}: {error.message[:300]}"
        for error in sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
    ]


def response_problems(method: str, path: str, status: int, content_type: str, body: bytes) -> list[str]:
    """Where one response breaks the schema; empty when it keeps to it (or the path is not an operation)."""
    found = operation_for(method, path)
    if found is None:
        return []
    template, operation = found
    where = f"{method} {template} → {status}"
    declared = operation["responses"].get(str(status))
    if declared is None:
        return [f"{where}: status not declared (declared: {', '.join(operation['responses'])})"]
    content = declared.get("content", {})
    media_type = content_type.split(";")[0].strip()
    if not content:
        return [f"{where}: a {media_type} body where none is declared"] if body else []
    if media_type not in content:
        return [f"{where}: {media_type} is not declared (declared: {', '.join(content)})"]
    schema = content[media_type].get("schema", {})
    if 400 <= status < 500 and schema.get("$ref") != ERROR_SCHEMA:
        return [f"{where}: declared with {schema}, not the error shape"]
    if media_type != "application/json":
        wanted = ("string", None)
        return [] if schema.get("type") in wanted else [f"{where}: {media_type} declared with {schema}"]
    try:
        data = json.loads(body)
    except ValueError as exc:
        return [f"{where}: not JSON ({exc})"]
    return [f"{where}: {problem}" for problem in schema_problems(schema, data)]


def check_test_response(response) -> list[str]:
    """:func:`response_problems` of a Django test client's response (its body read without consuming it)."""
    request = response.request
    if response.streaming:
        body = b"".join(response.streaming_content)
        response.streaming_content = [body]
    else:
        body = response.content
    if response.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return response_problems(
        request["REQUEST_METHOD"], request["PATH_INFO"], response.status_code, response.get("Content-Type", ""), body
    )
