"""The API refuses what it cannot honour, in its own error shape, and names the problem (the contestant's
trial of the API): an unknown path is a JSON 404, a list filter or page parameter that does not parse is
a 400 naming it (never the default page without a word), an error asked for as CSV is JSON, and a
contestant who may not moderate is told so before the input is checked."""

from __future__ import annotations

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from leaderboard.models import Submission

from .factories import PASSWORD, digits_challenge, make_user, stored_recipe

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    host, alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(host, bootstrap_resamples=200)
    entry = stored_recipe(challenge, alice, "alice's", 5, scores=[0.8, 0.81, 0.79, 0.8, 0.82])
    client = APIClient()
    assert client.login(username="alice", password=PASSWORD)
    return challenge, entry, client


def test_an_unknown_api_path_is_a_json_404_naming_it_and_pages_keep_theirs(client):
    response = client.get("/api/no-such-endpoint/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "/api/no-such-endpoint/" in response.json()["detail"] and "/api/" in response.json()["detail"]
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


@override_settings(DEBUG=True)  # how `python3 dev.py demo` serves: Django's HTML 404 page, not handler404
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/nothing/"),
        ("get", "/api/challenges/{slug}/nothing/"),
        ("get", "/api/challenges/{slug}/leaderboard/nothing"),
        ("post", "/api/nothing/"),
        ("delete", "/api/challenges/{slug}/webhooks/x/"),
    ],
)
def test_an_unknown_api_path_is_a_json_404_with_debug_on(board, method, path):
    challenge, _, client = board
    path = path.format(slug=challenge.slug)
    response = getattr(client, method)(path)
    assert response.status_code == 404 and response["Content-Type"] == "application/json", response.content[:200]
    assert response.json()["detail"].startswith(f"No API endpoint at {path} (method {method.upper()})")


@override_settings(DEBUG=True)
def test_a_known_api_path_without_its_slash_is_still_redirected_to_it(board):
    challenge, _, client = board
    response = client.get(f"/api/challenges/{challenge.slug}?limit=1")
    assert response.status_code == 301 and response["Location"] == f"/api/challenges/{challenge.slug}/?limit=1"
    assert client.get(f"/api/challenges/{challenge.slug}/").status_code == 200


@override_settings(DEBUG=True)
def test_a_write_to_a_known_api_path_without_its_slash_is_redirected_with_its_method_and_a_reason(board):
    """A host's review: a POST without the trailing slash was answered 301 with no body; a client then turned it
    into a GET or stopped, and the submission was lost without a word. 308 keeps the method and the body."""
    challenge, _, client = board
    response = client.post(f"/api/challenges/{challenge.slug}/submissions", {"method_name": "x"})
    assert response.status_code == 308 and response["Location"] == f"/api/challenges/{challenge.slug}/submissions/"
    assert response.json()["detail"].startswith(f"The endpoint is /api/challenges/{challenge.slug}/submissions/")
    assert client.post("/api/nothing", {}).status_code == 404


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/api/challenges/{slug}/runs/?submission=abc", "submission"),
        ("/api/challenges/{slug}/runs/?index=first", "index"),
        ("/api/challenges/{slug}/submissions/?status=bogus", "status"),
        ("/api/submissions/?status=bogus", "status"),
        ("/api/submissions/?limit=abc", "limit"),
        ("/api/challenges/?limit=0", "limit"),
        ("/api/challenges/?limit=501", "limit"),
        ("/api/challenges/{slug}/runs/?offset=-1", "offset"),
        ("/api/auth/tokens/?limit=x", "limit"),
        ("/api/submissions/?offset=%C2%B2", "offset"),  # "²": str.isdigit took it, int refused it (a 500; a reviewer)
        ("/api/submissions/?offset=" + "9" * 5000, "offset"),  # past int's 4,300 digits
        ("/api/challenges/{slug}/leaderboard/?offset=%C2%B2", "offset"),
        ("/api/challenges/{slug}/leaderboard/?around=" + "1" * 5000, "around"),
        ("/api/invitations/?status=weird", "status"),  # filtered by the raw string: 200 and nothing (a reviewer)
        ("/api/challenges/?ordering=-nonexistent", "ordering"),  # DRF dropped it: the default order (a reviewer)
        ("/api/challenges/?ordering=title,bogus", "ordering"),
        ("/api/challenges/?ordering=--title", "ordering"),
    ],
)
def test_a_list_parameter_that_does_not_parse_is_a_400_naming_it(board, path, parameter):
    challenge, _, client = board
    response = client.get(path.format(slug=challenge.slug))
    assert response.status_code == 400, response.content
    body = response.json()
    assert parameter in body["errors"] and body["detail"].startswith(f"{parameter}:")


def test_a_choice_parameter_s_refusal_names_the_values_it_takes(board):
    """A new user's finding: ``?status=foo`` said "Select a valid choice. foo is not one of the available choices."
    and named none, where the API's other refusals name what they take."""
    _, _, client = board
    detail = client.get("/api/submissions/?status=foo").json()["detail"]
    assert detail.startswith("status: Select a valid choice. foo is not one of the available choices. One of: ")
    assert "queued" in detail and "scored" in detail


def test_valid_list_parameters_still_page_and_filter(board):
    challenge, entry, client = board
    runs = client.get(f"/api/challenges/{challenge.slug}/runs/?submission={entry.pk}&limit=2&offset=1").json()
    assert runs["count"] == 5 and [r["index"] for r in runs["results"]] == [1, 2]
    assert client.get(f"/api/challenges/{challenge.slug}/runs/?limit=500").json()["count"] == 5


def test_known_orderings_and_invitation_statuses_still_work(board):
    _, _, client = board
    titles = [c["title"] for c in client.get("/api/challenges/?ordering=-title").json()["results"]]
    assert titles == sorted(titles, reverse=True) and titles
    assert client.get("/api/invitations/?status=pending").json()["count"] == 0
    assert client.get("/api/challenges/?ordering=title,").status_code == 200  # an empty term is no field
    challenge, entry, _ = board
    assert client.get(f"/api/challenges/{challenge.slug}/?ordering=bogus").status_code == 200  # one object: no order
    assert client.get(f"/api/submissions/{entry.pk}/?ordering=bogus").status_code == 200
    refused = client.get("/api/challenges/?ordering=-nonexistent").json()["detail"]
    assert "cannot order by '-nonexistent'; one of: created, -created, title, -title." in refused


def test_an_error_asked_for_as_csv_is_json(board):
    challenge, _, client = board
    response = client.get(f"/api/challenges/{challenge.slug}/runs/?format=csv&index=x")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["errors"]["index"]
    assert client.get(f"/api/challenges/{challenge.slug}/runs/?format=csv")["Content-Type"].startswith("text/csv")


def test_a_contestant_who_may_not_moderate_hears_so_before_the_input_is_checked(board):
    challenge, entry, client = board
    for url in (
        f"/api/submissions/{entry.pk}/moderation/",
        f"/api/challenges/{challenge.slug}/teams/{entry.team_id}/moderation/",
    ):
        response = client.post(url, {"state": "not-a-state"}, format="json")  # invalid, and not a host
        assert response.status_code == 403, response.content
        assert "hosts" in response.json()["detail"]
    assert not Submission.objects.exclude(moderation="").exists()


def test_the_schema_declares_the_bounds_the_server_enforces():
    """A reviewer's schemathesis run: schema-valid requests (limit=0, offset=-1, gamma=-3.8e16) were refused,
    because the schema typed them as bare integers and numbers; and the bundle export's 400 was undeclared."""
    from tests.api_contract import api_schema

    schema = api_schema()

    def parameter(path: str, name: str) -> dict:
        found = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == name]
        assert found, (path, name)
        return found[0]["schema"]

    assert parameter("/api/submissions/", "limit") == {"type": "integer", "minimum": 1, "maximum": 500}
    assert parameter("/api/submissions/", "offset")["minimum"] == 0
    board = "/api/challenges/{slug}/leaderboard/"
    assert parameter(board, "limit")["maximum"] == 500 and parameter(board, "around")["minimum"] == 0
    assert parameter(board, "n") == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert parameter(board, "alpha") == {"type": "number", "minimum": 1e-6, "maximum": 0.5}
    assert parameter(board, "gamma")["exclusiveMinimum"] is True and parameter(board, "gamma")["maximum"] == 1
    assert parameter("/api/challenges/{slug}/compare/", "a")["minimum"] == 1
    assert "400" in schema["paths"]["/api/challenges/{slug}/bundle/"]["get"]["responses"]


def _host_client() -> APIClient:
    host = APIClient()
    assert host.login(username="host", password=PASSWORD)
    return host


def test_a_challenge_update_with_misspelled_fields_is_a_400_naming_them_and_changes_nothing(board):
    challenge, _, _ = board
    before = {"k_runs": challenge.k_runs, "boo_n": challenge.boo_n}
    response = _host_client().patch(
        f"/api/challenges/{challenge.slug}/", {"kruns": 20, "boo-n": 2, "title": "renamed"}, format="json"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == "kruns" and set(body["errors"]) == {"kruns", "boo-n"}
    assert (
        body["detail"].startswith("kruns: not a field this endpoint writes")
        and "did you mean k_runs?" in body["detail"]
    )
    assert "boo-n: not a field" in body["detail"] and "did you mean boo_n?" in body["detail"]
    challenge.refresh_from_db()
    assert {"k_runs": challenge.k_runs, "boo_n": challenge.boo_n} == before and challenge.title != "renamed"


@pytest.mark.parametrize("field", ["slug", "hosts", "phases", "created"])
def test_a_read_only_challenge_field_in_a_write_is_refused_even_at_its_current_value(board, field):
    challenge, _, _ = board
    current = _host_client().get(f"/api/challenges/{challenge.slug}/").json()[field]
    response = _host_client().patch(f"/api/challenges/{challenge.slug}/", {field: current}, format="json")
    assert response.status_code == 400 and response.json()["field"] == field, response.content
    assert "unknown or read-only" in response.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path", "data", "field"),
    [
        ("post", "/api/challenges/", {"title": "new", "datasett": "x"}, "datasett"),  # create, before the upload
        ("patch", "/api/challenges/{slug}/phases/{phase}/", {"nmae": "x"}, "nmae"),
        ("post", "/api/challenges/{slug}/webhooks/", {"url": "https://example.org/h", "secret": "mine"}, "secret"),
        ("patch", "/api/account/notifications/", {"notify_score": False}, "notify_score"),
        ("post", "/api/teams/", {"name": "t", "members": ["alice"]}, "members"),
        ("post", "/api/auth/token/", {"username": "host", "password": PASSWORD, "remember": True}, "remember"),
    ],
)
def test_every_write_refuses_a_field_it_does_not_take(board, method, path, data, field):
    challenge, _, _ = board
    path = path.format(slug=challenge.slug, phase=challenge.phases.first().pk)
    response = getattr(_host_client(), method)(path, data, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field and field in response.json()["errors"]


def test_a_write_with_only_known_fields_still_works_and_the_browsable_apis_csrf_field_is_no_field(board):
    challenge, _, _ = board
    response = _host_client().patch(
        f"/api/challenges/{challenge.slug}/", {"title": "renamed", "csrfmiddlewaretoken": "x"}, format="multipart"
    )
    assert response.status_code == 200 and response.json()["title"] == "renamed", response.content


def test_every_input_serializer_of_the_api_refuses_unknown_fields():
    """One rule for every write: each serializer a view fills from ``request.data`` mixes in StrictInput."""
    import importlib
    import re
    from pathlib import Path

    from leaderboard.api.inputs import StrictInput

    root = Path(__file__).resolve().parents[2] / "leaderboard" / "api"
    found = []
    for source in sorted(root.glob("*.py")):
        module = importlib.import_module(f"leaderboard.api.{source.stem}")
        for name in re.findall(r"(\w+)\((?:\w+, )?data=(?:self\.)?request\.data", source.read_text()):
            found.append(name)
            if name != "serializer_class":  # ChallengeScopedView.validated: its callers pass strict classes
                assert issubclass(getattr(module, name), StrictInput), f"{source.name}: {name}"
    assert len(found) >= 18
    from leaderboard.api import beyond_views

    for name in ("VarianceStudyCreateSerializer", "ResultsImportSerializer", "SuiteCreateSerializer"):
        assert issubclass(getattr(beyond_views, name), StrictInput)


def test_around_an_entry_the_board_does_not_list_is_a_404_naming_around_and_the_id(board):
    challenge, entry, client = board
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    missing = client.get(url, {"around": 999999})
    assert missing.status_code == 404 and missing.json()["field"] == "around", missing.content
    assert missing.json()["detail"].startswith("`around`: submission 999999 is not on this board")
    unmatched = client.get(url, {"around": entry.pk, "q": "zzz"})
    assert (
        unmatched.status_code == 404
        and f"submission {entry.pk} is not among the entries matching q='zzz'" in (unmatched.json()["detail"])
    )
    found = client.get(url, {"around": entry.pk})
    assert found.status_code == 200 and found.json()["paging"]["around"] == entry.pk


def test_the_board_page_says_when_around_names_no_entry_and_answers_404(board):
    challenge, entry, client = board
    page = client.get(f"/c/{challenge.slug}/", {"around": 999999})
    text = page.content.decode()
    assert page.status_code == 404 and "`around`: submission 999999 is not on this board" in text
    assert f'data-submission="{entry.pk}"' in text  # the board is still shown below the message
    found = client.get(f"/c/{challenge.slug}/", {"around": entry.pk})
    assert found.status_code == 200 and "is not on this board" not in found.content.decode()


def test_revoking_a_token_you_do_not_have_is_a_404_naming_it(board):
    _, _, client = board
    response = client.delete("/api/auth/tokens/zzzz/")
    assert response.status_code == 404, response.content
    assert response.json() == {"detail": "You have no token 'zzzz'.", "field": "token_key"}


@pytest.mark.parametrize(
    ("query", "unknown", "hint"),
    [
        ("leaderboard/?statistc=boo_n", "statistc", "did you mean statistic?"),
        ("leaderboard/?alhpa=0.1&limit=5", "alhpa", "did you mean alpha?"),
        ("leaderboard/?page=2", "page", "it takes n, gamma, alpha, statistic, limit, offset, q, around, format, board"),
        ("sota/?bord=private", "bord", "did you mean board?"),
        ("compare/?a={id}&b={id}&gama=0.8", "gama", "did you mean gamma?"),
    ],
)
def test_a_report_endpoint_refuses_a_query_parameter_it_does_not_take(board, query, unknown, hint):
    """A misspelled setting answered the board of the challenge's own settings, as if it were the one asked for:
    ``?statistc=boo_n`` showed the mean's ranks under a request for Boo_n's. The parameters each report endpoint
    takes are its schema's (``report_views.LEADERBOARD_PARAMETERS`` ...), and the others a 400 naming them."""
    challenge, entry, client = board
    response = client.get(f"/api/challenges/{challenge.slug}/{query.format(id=entry.pk)}")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["field"] == unknown and hint in body["detail"], body
    for known in ("leaderboard/?statistic=boo_n&limit=5&format=json", "sota/?board=public", "leaderboard/?format=csv"):
        assert client.get(f"/api/challenges/{challenge.slug}/{known}").status_code == 200, known


@pytest.mark.parametrize(
    ("path", "unknown", "hint"),
    [
        ("/api/challenges/?titel=digits", "titel", "did you mean title?"),
        ("/api/challenges/?page=2", "page", "it takes"),
        ("/api/submissions/?stauts=failed", "stauts", "did you mean status?"),
        ("/api/challenges/{slug}/submissions/?kinds=recipe", "kinds", "did you mean kind?"),
        ("/api/challenges/{slug}/runs/?submision={id}", "submision", "did you mean submission?"),
        ("/api/challenges/{slug}/phases/?limt=5", "limt", "did you mean limit?"),
        ("/api/invitations/?state=pending", "state", "did you mean status?"),
        ("/api/teams/?ofset=1", "ofset", "did you mean offset?"),
        ("/api/auth/tokens/?page_size=5", "page_size", "it takes limit, offset, format"),
        ("/api/challenges/{slug}/variance-studies/?cursor=x", "cursor", "it takes limit, offset, format"),
        ("/api/submissions/{id}/download/?fil=0", "fil", "did you mean file?"),
    ],
)
def test_a_list_endpoint_refuses_a_query_parameter_it_does_not_take(board, path, unknown, hint):
    """``?stauts=failed`` answered every submission, unfiltered, as if it were the list asked for: the API's
    lists refuse a query parameter they do not take, as the report endpoints do (``inputs.StrictQuery``)."""
    challenge, entry, client = board
    response = client.get(path.format(slug=challenge.slug, id=entry.pk))
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["field"] == unknown and hint in body["detail"], body


def test_the_parameters_a_list_takes_are_those_its_schema_shows_and_still_work(board):
    """Each list's accepted query parameters are its schema's: every one the schema names (and ``format``) is
    taken, and the CLI's requests (``?limit=200``, ``?status=pending``) still answer."""
    challenge, entry, client = board
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    values = {"submission": entry.pk, "file": 0, "board": "public", "format": "json", "ordering": "created"}
    lists = ["/api/challenges/", "/api/submissions/", "/api/challenges/{slug}/submissions/"]
    lists += ["/api/challenges/{slug}/runs/", "/api/invitations/", "/api/teams/", "/api/auth/tokens/"]
    for path in lists:
        parameters = [p for p in paths[path]["get"]["parameters"] if p["in"] == "query"]
        assert {"limit", "offset"} <= {p["name"] for p in parameters}, path
        for parameter in parameters:
            value = values.get(parameter["name"], parameter["schema"].get("enum", [1])[0])
            url = f"{path.format(slug=challenge.slug)}?{parameter['name']}={value}"
            assert client.get(url).status_code == 200, url
    for url in ("/api/challenges/?limit=200", "/api/invitations/?status=pending"):
        assert client.get(url).status_code == 200, url
    assert (
        client.get(f"/api/challenges/{challenge.slug}/submissions/?limit=200&offset=0&format=json").status_code == 200
    )


def test_a_refused_choice_names_the_values_the_parameter_takes(board):
    """A new user's finding: ``?statistic=median`` answered '"median" is not a valid choice.', naming no valid
    one (the filters' refusals list theirs). Every choice the API takes now names its values: a query parameter,
    a field a model serializer builds (a challenge's metric) and one a serializer declares (a moderation's state)."""
    challenge, entry, client = board
    response = client.get(f"/api/challenges/{challenge.slug}/leaderboard/?statistic=median")
    assert response.status_code == 400, response.content[:300]
    assert "one of: mean, boo_n" in str(response.json()), response.json()
    created = client.post("/api/challenges/", {"title": "x", "metric": "nonsense"}, format="multipart")
    assert created.status_code == 400 and "one of: " in str(created.json()) and "accuracy" in str(created.json())
    host = APIClient()
    assert host.login(username="host", password=PASSWORD)
    moderated = host.post(f"/api/submissions/{entry.pk}/moderation/", {"state": "banned", "reason": "x"}, format="json")
    assert moderated.status_code == 400 and "one of: disqualified, hidden" in str(moderated.json()), moderated.content


def test_the_api_declares_choices_with_its_own_field():
    """The rule above lives in one place (``api.inputs.ChoiceField``): a DRF choice field declared directly would
    refuse without naming its values again."""
    from pathlib import Path

    api = Path(__file__).resolve().parents[2] / "leaderboard" / "api"
    direct = [
        f"{path.name}:{number}"
        for path in sorted(api.glob("*.py"))
        if path.name != "inputs.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "serializers.ChoiceField(" in line or "serializers.MultipleChoiceField(" in line
    ]
    assert direct == []
