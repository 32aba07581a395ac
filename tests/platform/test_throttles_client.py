"""Throttles keyed on the real client (issue 21): the socket peer, unless a trusted proxy speaks for it.

Through the REST API and the web forms with Django's test client, which sets ``REMOTE_ADDR``:
a client rotating ``X-Forwarded-For`` is throttled all the same; behind a trusted proxy the
header's client is used and a spoofed left-most entry does not escape; failures against one user
from one address never lock that user out from another.
"""

from __future__ import annotations

import ipaddress

import pytest
from django.test import RequestFactory
from rest_framework.test import APIClient

from leaderboard.throttles import client_address

from .factories import make_user

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def rates(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "login": "10/hour",
            "signup": "3/hour",
        },
    }


def trusting(settings, *networks: str) -> None:
    settings.VARBOARD = {
        **settings.VARBOARD,
        "TRUSTED_PROXIES": [ipaddress.ip_network(n, strict=False) for n in networks],
    }


def log_in(password: str, *, peer: str, forwarded: str | None = None, username: str = "victim") -> int:
    headers = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return (
        APIClient()
        .post("/api/auth/token/", {"username": username, "password": password}, format="json", **headers)
        .status_code
    )


@pytest.fixture
def victim():
    user = make_user("victim")
    user.set_password(PASSWORD)
    user.save()
    return user


def test_rotating_x_forwarded_for_from_one_peer_is_throttled(victim):
    # A guesser spraying one password over many accounts, a fresh X-Forwarded-For each time.
    codes = [log_in("wrong", peer="198.51.100.7", forwarded=f"203.0.113.{i}", username=f"user{i}") for i in range(40)]
    assert codes[:10] == [403] * 10 and set(codes[10:]) == {429}  # before: 40 x 403, never throttled


def test_rotating_x_forwarded_for_on_sign_ups_is_throttled():
    codes = [
        APIClient()
        .post(
            "/signup/",
            {"username": f"sock{i}", "email": f"s{i}@example.org", "password1": PASSWORD, "password2": PASSWORD},
            REMOTE_ADDR="198.51.100.8",
            HTTP_X_FORWARDED_FOR=f"203.0.113.{i}",
        )
        .status_code
        for i in range(6)
    ]
    assert codes[:3] == [302] * 3 and set(codes[3:]) == {429}


def test_failures_from_one_address_do_not_lock_the_user_out_from_another(victim):
    assert {log_in("wrong", peer="198.51.100.9") for _ in range(15)} == {403, 429}
    assert log_in(PASSWORD, peer="198.51.100.9") == 429  # the attacker's address is refused, right password or not
    assert log_in(PASSWORD, peer="192.0.2.20") == 200  # the user, from elsewhere, logs in
    assert log_in("wrong", peer="192.0.2.20") == 403  # and that address's own count starts at zero


def test_the_web_log_in_keys_on_the_peer_and_the_pair(client, victim):
    for i in range(12):
        client.post(
            "/login/",
            {"username": "victim", "password": "wrong"},
            REMOTE_ADDR="198.51.100.10",
            HTTP_X_FORWARDED_FOR=f"203.0.113.{i}",
        )
    assert (
        client.post("/login/", {"username": "victim", "password": PASSWORD}, REMOTE_ADDR="198.51.100.10").status_code
        == 429
    )
    assert (
        client.post("/login/", {"username": "victim", "password": PASSWORD}, REMOTE_ADDR="192.0.2.21").status_code
        == 302
    )


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_count(settings, victim):
    trusting(settings, "10.0.0.0/24")
    first = [log_in("wrong", peer="10.0.0.2", forwarded="203.0.113.50") for _ in range(11)]
    assert first[-1] == 429
    assert log_in("wrong", peer="10.0.0.2", forwarded="203.0.113.51") == 403  # another client, its own count
    # a client that prepends a made-up address is still itself: the proxy appends the real one last
    assert log_in("wrong", peer="10.0.0.2", forwarded="192.0.2.99, 203.0.113.50") == 429


@pytest.mark.parametrize(
    "peer, forwarded, trusted, expected",
    [
        ("198.51.100.1", "203.0.113.5", (), "198.51.100.1"),  # no trusted proxy: the header is ignored
        ("10.0.0.2", "203.0.113.5", (), "10.0.0.2"),
        ("10.0.0.2", "203.0.113.5", ("10.0.0.0/24",), "203.0.113.5"),
        ("10.0.0.2", "1.2.3.4, 203.0.113.5", ("10.0.0.0/24",), "203.0.113.5"),  # spoofed left-most entry
        ("10.0.0.2", "203.0.113.5, 10.0.0.7", ("10.0.0.0/24",), "203.0.113.5"),  # two proxies in a row
        ("10.0.0.2", "garbage, 10.0.0.7", ("10.0.0.0/24",), "10.0.0.7"),  # unreadable: the last trusted hop
        ("10.0.0.2", "", ("10.0.0.0/24",), "10.0.0.2"),
        ("198.51.100.1", "203.0.113.5", ("10.0.0.0/24",), "198.51.100.1"),  # an untrusted peer's header
        ("2001:db8::2", "[2001:db8:1::9]", ("2001:db8::/64",), "2001:db8:1::9"),
    ],
)
def test_client_address(settings, peer, forwarded, trusted, expected):
    trusting(settings, *trusted)
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


def test_a_bad_trusted_proxy_setting_stops_startup():
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {
        **os.environ,
        "VARBOARD_TRUSTED_PROXIES": "10.0.0.0/24,not-an-address",
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "VARBOARD_TRUSTED_PROXIES must list addresses or networks" in result.stderr


def test_a_full_cache_of_reports_forgets_no_failed_log_in(victim):
    """A reviewer's finding: the throttles kept their histories in the default cache, which without CACHE_URL is
    per-process memory of 300 entries, culled as cached pages and reports fill it; a client that made the site
    cache a few hundred reports (overridden parameters, search pages) had its failed log-ins forgotten and guessed
    on. The histories live in a cache of their own (``throttles``), which the reports never fill."""
    from django.core.cache import cache

    for _ in range(10):
        assert log_in("wrong", peer="203.0.113.9") == 403
    assert log_in("wrong", peer="203.0.113.9") == 429
    for i in range(1000):  # what cached reports and pages do to the default cache
        cache.set(f"report-{i}", i)
    assert log_in("wrong", peer="203.0.113.9") == 429
