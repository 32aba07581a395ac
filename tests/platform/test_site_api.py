"""The API root lists every endpoint and links to the log-in; Swagger UI and ReDoc load nothing from
another host; the favicon; e-mail settings from EMAIL_URL; a closed challenge says it is closed."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.config import StrictEnv
from leaderboard.models import Challenge
from leaderboard.services.phases import phase_default

from .factories import digits_challenge

pytestmark = pytest.mark.django_db


def RECIPE():  # noqa: N802 - reads as a constant
    return SimpleUploadedFile(
        "recipe.py", b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return None\n"
    )


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_the_api_root_lists_every_endpoint_of_the_schema_and_a_log_in():
    root = APIClient().get("/api/", HTTP_ACCEPT="application/json").json()
    listed = {_shape(url.split("://", 1)[1].split("/", 1)[1]) for url in root["endpoints"].values()}
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    missing = sorted(path for path in schema["paths"] if _shape(path.lstrip("/")) not in listed)
    assert missing == [] and len(listed) >= 25
    assert root["log_in"].startswith("http://testserver/api/auth/browser/login/")
    html = APIClient().get("/api/", HTTP_ACCEPT="text/html").content.decode()
    assert "href='/api/auth/browser/login/?next=/api/'>Log in<" in html
    # Concrete endpoints are links; URI templates ({slug}) are text, not links that lead to 404s.
    assert '<a href="http://testserver/api/challenges/" rel="nofollow">http://testserver/api/challenges/</a>' in html
    assert "%7Bslug%7D" not in html and '"&#104;ttp://testserver/api/challenges/{slug}/"' in html
    login = APIClient().get("/api/auth/browser/login/")
    assert login.status_code == 200 and 'name="password"' in login.content.decode()


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_the_documentation_is_served_from_this_site_alone(page):
    response = APIClient().get(page)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "img-src 'self' data:" in csp and "http" not in csp
    html = response.content.decode()
    assert "googleapis" not in html and "cdn." not in html
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls and all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    for url in urls:
        assert APIClient().get(url).status_code == 200, url
    if page == "/api/docs/":
        assert '"validatorUrl": null' in html


def test_the_favicon_is_linked_and_served_at_favicon_ico(client):
    page = client.get("/").content.decode()
    assert re.search(r'<link rel="icon" href="/static/varboard/favicon.svg"', page)
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 302
    icon = client.get(redirect["Location"])
    assert icon.status_code == 200 and b"".join(icon.streaming_content)[:4] == b"\x00\x00\x01\x00"


def test_email_url_configures_the_mail_backend():
    env = StrictEnv()
    env.ENVIRON = {"EMAIL_URL": "smtp+tls://user:secret@mail.example.org:587"}
    config = env.email("EMAIL_URL")
    assert config["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (config["EMAIL_HOST"], config["EMAIL_PORT"], config["EMAIL_USE_TLS"]) == ("mail.example.org", 587, True)
    env.ENVIRON = {"EMAIL_URL": "consolemail://"}
    assert env.email("EMAIL_URL")["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"
    env.ENVIRON = {"EMAIL_URL": "filemail:///var/spool/varboard-mail"}  # absolute, as written (not ./var/…)
    assert env.email("EMAIL_URL")["EMAIL_FILE_PATH"] == "/var/spool/varboard-mail"
    env.ENVIRON = {"EMAIL_URL": "carrier-pigeon://coop"}
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL must be an e-mail URL"):
        env.email("EMAIL_URL")


def test_a_closed_challenge_without_a_dataset_says_it_is_closed(host, alice):
    closed = Challenge.objects.create(
        slug="boon-2018",
        title="Published 2018",
        metric="accuracy",
        higher_is_better=True,
        allow_recipes=True,
        created_by=host,
    )
    phase_default(challenge=closed, closes_at=datetime(2018, 7, 15, tzinfo=UTC))
    client = APIClient()
    client.force_authenticate(alice)
    answer = client.post(
        f"/api/challenges/{closed.slug}/submissions/",
        {"kind": "recipe", "method_name": "late", "recipe": RECIPE()},
        format="multipart",
    )
    assert answer.status_code == 409
    detail = answer.json()["detail"]  # closed first, then what to do: its hosts import results
    assert detail.startswith("The main phase closed at 2018-07-15 00:00 UTC. ") and "/imports/" in detail, detail


def test_an_open_results_only_challenge_names_why_it_takes_no_recipe(host, alice):
    challenge, _ = digits_challenge(host)
    Challenge.objects.filter(pk=challenge.pk).update(allow_predictions=False)
    challenge.dataset.delete()
    client = APIClient()
    client.force_authenticate(alice)
    answer = client.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"kind": "recipe", "method_name": "m", "recipe": RECIPE()},
        format="multipart",
    )
    assert answer.status_code == 400 and "imported results only" in answer.json()["detail"]


def test_each_operation_of_a_path_is_described_on_its_own():
    """ReDoc shows an operation's own description: PATCH notifications must not read as the GET."""
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    shared = {
        path: sorted(methods)
        for path, operations in schema["paths"].items()
        for methods in [[m for m, op in operations.items() if m in {"get", "post", "put", "patch", "delete"}]]
        if len({operations[m].get("description", "") for m in methods}) < len(methods)
    }
    assert shared == {}
    assert "off or on" in schema["paths"]["/api/account/notifications/"]["patch"]["description"]


def test_the_browsable_api_is_laid_out_at_the_device_width(client):
    """Found by a new user: /api/ had no viewport meta, so a phone laid it out at 980 px (its text at 40 %)."""
    page = client.get("/api/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page.content.decode()


def test_a_format_the_endpoint_does_not_answer_is_named(host):
    """A host's review: `?format=xml` on the leaderboard was a bare 404 "Not found."; it names `format` and the
    formats the endpoint answers, and the formats it answers still work."""
    challenge, _ = digits_challenge(host)
    client = APIClient()
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    answer = client.get(url, {"format": "xml"})
    assert answer.status_code == 404 and answer.json()["field"] == "format"
    assert "'xml'" in answer.json()["detail"] and "csv" in answer.json()["detail"]
    assert client.get(url, {"format": "csv"}).status_code == 200
    assert client.get(url, {"format": "json"}).status_code == 200
