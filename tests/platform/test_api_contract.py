"""The OpenAPI schema as a contract (issue 25): what it declares, and the checker every API test runs.

``tests/platform/conftest.py`` checks every response the platform tests get from ``/api/`` against
the schema (tests/api_contract.py); these tests pin the schema's conventions and show that the
checker catches what it should.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tests.api_contract import ERROR_SCHEMA, api_schema, operation_for, response_problems

from .factories import PASSWORD, digits_challenge, make_user

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")


def operations():
    for path, item in api_schema()["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = api_schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def test_every_request_body_has_one_content_type_multipart_only_where_files_travel():
    for method, path, operation in operations():
        content = operation.get("requestBody", {}).get("content", {})
        if not content:
            continue
        assert len(content) == 1, (method, path, list(content))
        ((media_type, body),) = content.items()
        properties = resolve(body["schema"]).get("properties", {})
        files = [
            name
            for name, field in properties.items()
            if field.get("format") == "binary" or field.get("items", {}).get("format") == "binary"
        ]
        assert media_type == ("multipart/form-data" if files else "application/json"), (method, path, media_type)


def test_every_operation_declares_its_errors_in_the_one_error_shape():
    error = api_schema()["components"]["schemas"]["Error"]
    assert error["required"] == ["detail"] and set(error["properties"]) == {"detail", "field", "errors"}
    for method, path, operation in operations():
        codes = {code for code in operation["responses"] if code.startswith("4")}
        assert {"403", "404"} <= codes, (method, path, sorted(codes))
        if "requestBody" in operation:
            assert {"400", "415"} <= codes, (method, path, sorted(codes))
        for code in codes:
            schema = operation["responses"][code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": ERROR_SCHEMA}, (method, path, code)


def test_every_list_is_paginated_in_one_shape():
    paginated, bare = set(), []
    for method, path, operation in operations():
        if method != "GET":
            continue
        schema = operation["responses"]["200"].get("content", {}).get("application/json", {}).get("schema", {})
        shape = resolve(schema)
        if shape.get("type") == "array":
            bare.append(path)
        if "results" in shape.get("properties", {}):
            assert set(shape["properties"]) == {"count", "next", "previous", "results"}, path
            assert {"limit", "offset"} <= {p["name"] for p in operation.get("parameters", [])}, path
            paginated.add(path)
    assert {
        "/api/challenges/",
        "/api/submissions/",
        "/api/challenges/{slug}/runs/",
        "/api/suites/",
        "/api/challenges/{slug}/variance-studies/",
        "/api/challenges/{slug}/imports/",
    } <= paginated
    assert bare == []  # no list is a bare array: teams, invitations, tokens, phases, registrations,
    # webhooks and deliveries too (issue 25)
    assert {
        "/api/teams/",
        "/api/invitations/",
        "/api/auth/tokens/",
        "/api/challenges/{slug}/phases/",
        "/api/challenges/{slug}/registrations/",
        "/api/challenges/{slug}/webhooks/",
        "/api/challenges/{slug}/webhooks/{id}/",
    } <= paginated


def test_no_field_of_a_response_is_left_untyped():
    untyped = []

    def walk(node, where):
        if isinstance(node, dict):
            for key in ("properties", "items"):
                children = node.get(key)
                fields = children.items() if key == "properties" and children else [("[]", children)]
                for name, child in fields if children else []:
                    if not any(k in child for k in ("type", "$ref", "allOf", "oneOf", "anyOf", "enum")):
                        untyped.append(f"{where}.{name}")
                    elif child.get("type") == "object" and not ({"properties", "additionalProperties"} & set(child)):
                        untyped.append(f"{where}.{name} (free-form object)")
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(api_schema()["components"]["schemas"], "components")
    assert untyped == []
    leaderboard = api_schema()["components"]["schemas"]["Leaderboard"]["properties"]
    assert leaderboard["settings"] == {"$ref": "#/components/schemas/ReportSettings"}
    assert {"board", "feedback"} <= set(leaderboard)
    assert {"version", "versions", "provenance"} <= set(api_schema()["components"]["schemas"]["Entry"]["properties"])


def test_csv_and_downloads_are_declared_as_text_and_board_is_a_parameter():
    downloads = operation_for("GET", "/api/challenges/x/data/train/")[1]["responses"]["200"]["content"]
    assert downloads == {"text/csv": {"schema": {"type": "string"}}}
    for path in ("/api/challenges/x/leaderboard/", "/api/challenges/x/runs/"):
        content = operation_for("GET", path)[1]["responses"]["200"]["content"]
        assert content["text/csv"] == {"schema": {"type": "string"}}, path
        assert "$ref" in content["application/json"]["schema"], path
    for path in ("leaderboard", "runs", "sota", "compare"):
        parameters = {p["name"]: p for p in operation_for("GET", f"/api/challenges/x/{path}/")[1]["parameters"]}
        assert sorted(parameters["board"]["schema"]["enum"]) == ["private", "public"], path


def test_the_checker_catches_an_undeclared_field_a_wrong_type_and_an_undeclared_status(challenge):
    body = APIClient().get(f"/api/challenges/{challenge[0].slug}/").json()
    path = f"/api/challenges/{challenge[0].slug}/"
    assert response_problems("GET", path, 200, "application/json", json.dumps(body).encode()) == []
    extra = json.dumps({**body, "surprise": 1}).encode()
    assert "'surprise' was unexpected" in response_problems("GET", path, 200, "application/json", extra)[0]
    wrong = json.dumps({**body, "k_runs": "five"}).encode()
    assert (
        "k_runs: 'five' is not of type 'integer'" in response_problems("GET", path, 200, "application/json", wrong)[0]
    )
    assert "status not declared" in response_problems("GET", path, 418, "application/json", b"{}")[0]
    assert "not the error shape" not in " ".join(
        response_problems("GET", path, 404, "application/json", b'{"detail": "Not found."}')
    )
    assert response_problems("GET", path, 404, "application/json", b'{"message": "x"}')


def test_a_validation_error_is_the_error_shape_with_errors_by_field(host):
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": host.username, "password": PASSWORD}, format="json")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    challenge, _ = digits_challenge(host)
    refused = client.post(f"/api/challenges/{challenge.slug}/submissions/", {"method_name": "x"})
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "files: Upload at least one predictions file.",
        "field": "files",  # as a refused file names it (a file not parsed: ServiceError(field="files"))
        "errors": {"files": ["Upload at least one predictions file."]},
    }
    hyper = client.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "x", "kind": "recipe", "hyperparameters": "[1, 2]"},
    )
    assert hyper.status_code == 400 and hyper.json()["errors"]["hyperparameters"] == [
        'Give a JSON object such as {"C": 0.5}, not list [1, 2].'
    ], hyper.json()


def test_the_api_tests_responses_are_checked(api_contract, challenge, monkeypatch):
    """The autouse fixture records each /api/ response's problems, and fails the test on any."""
    from leaderboard.api.serializers import ChallengeSerializer

    APIClient().get(f"/api/challenges/{challenge[0].slug}/leaderboard/")
    APIClient().get("/api/challenges/no-such-challenge/")
    assert api_contract == []
    plain = ChallengeSerializer.to_representation
    monkeypatch.setattr(ChallengeSerializer, "to_representation", lambda self, c: {**plain(self, c), "leak": 1})
    APIClient().get(f"/api/challenges/{challenge[0].slug}/")
    assert len(api_contract) == 1 and "'leak' was unexpected" in api_contract[0], api_contract
    api_contract.clear()  # recorded as it should be; the fixture would fail this test on it


@pytest.fixture
def challenge(host):
    return digits_challenge(host)


@pytest.fixture
def host():
    return make_user("contract-host")


def test_a_second_generator_s_models_parse_the_responses_and_catch_a_wrong_type(challenge):
    """datamodel-code-generator makes a pydantic model of every component; each response is parsed by its model."""
    from tests.api_contract import api_schema, generated_models, model_problems

    models = generated_models()
    missing = [name for name in api_schema()["components"]["schemas"] if not hasattr(models, name)]
    assert missing == []
    body = APIClient().get(f"/api/challenges/{challenge[0].slug}/").json()
    ref = {"$ref": "#/components/schemas/Challenge"}
    assert model_problems(ref, body) == []
    assert "k_runs" in model_problems(ref, {**body, "k_runs": "five"})[0]
    assert "in_force" in model_problems(ref, {**body, "in_force": {"open": "maybe"}})[0]
    listed = APIClient().get("/api/challenges/").json()
    assert model_problems({"$ref": "#/components/schemas/PaginatedChallengeList"}, listed) == []
