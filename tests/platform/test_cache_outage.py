"""The cache is optional at read time: a Redis outage costs speed, never a 500 (issue 22).

A real Redis of the test's own (dev.ThrowawayRedis) serves as the cache, then is killed: the
leaderboard JSON, the page, /metrics and a log-in still answer, the failures are counted in
/metrics, and the cache is used again once Redis is back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from dev import ThrowawayRedis, free_port
from leaderboard.cache import ResilientRedisCache

from .factories import digits_challenge, make_user
from .test_report_api import RECIPE_SCORES, add_entry

pytestmark = pytest.mark.django_db


def redis_cache(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "leaderboard.cache.ResilientRedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }


@pytest.fixture
def own_redis():
    if not shutil.which("redis-server"):
        pytest.skip("needs redis-server to start a Redis of the test's own")
    server = ThrowawayRedis().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def board():
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for name, scores in RECIPE_SCORES.items():
        add_entry(challenge, host, name, "recipe", scores)
    return challenge


def cache_errors(text: str, operation: str) -> float:
    match = re.search(rf'^varboard_cache_errors_total{{operation="{operation}"}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def test_settings_swap_a_redis_cache_url_for_the_resilient_backend():
    code = (
        "from django.conf import settings; c = settings.CACHES['default']; "
        "print(c['BACKEND'], c['OPTIONS']['socket_timeout'])"
    )
    env = {
        **os.environ,
        "CACHE_URL": "redis://127.0.0.1:6379/1",
        "CACHE_TIMEOUT_S": "0.25",
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
    }
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out == ["leaderboard.cache.ResilientRedisCache", "0.25"]


def test_reads_and_writes_degrade_to_misses_while_redis_is_down(settings):
    settings.CACHES = redis_cache(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    backend = caches["default"]
    assert isinstance(backend, ResilientRedisCache)
    started = time.monotonic()
    assert backend.get("k", "fallback") == "fallback"
    backend.set("k", 1)
    assert backend.add("k", 1) is False and backend.get_many(["k"]) == {} and not backend.has_key("k")
    backend.delete("k")
    assert time.monotonic() - started < 5  # connection refused answers at once, never a hang


def test_the_board_and_metrics_answer_through_an_outage(settings, client, board, own_redis):
    settings.CACHES = redis_cache(own_redis.url)
    settings.VARBOARD = {**settings.VARBOARD, "METRICS_TOKEN": "s3cret"}  # closed without one (test_leaks_v3)
    client.defaults["HTTP_AUTHORIZATION"] = "Bearer s3cret"
    url = f"/api/challenges/{board.slug}/leaderboard/"
    first = APIClient().get(url)
    assert first.status_code == 200
    before = cache_errors(client.get("/metrics").content.decode(), "get")

    own_redis.stop()
    during = APIClient().get(url)
    assert during.status_code == 200 and during.json()["entries"] == first.json()["entries"]
    assert client.get(f"/c/{board.slug}/").status_code == 200
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert cache_errors(metrics.content.decode(), "get") > before
    login = APIClient().post("/api/auth/token/", {"username": "host", "password": "wrong"}, format="json")
    assert login.status_code in (400, 401, 403, 429)  # refused as usual, not a 500

    own_redis.start()  # same port: the pool reconnects
    caches["default"].set("probe", "back", 60)
    assert caches["default"].get("probe") == "back"
