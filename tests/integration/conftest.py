import shutil

import pytest

from dev import ThrowawayRedis
from tests.conftest import celery_pointed_at, skip_or_fail


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 at production strength costs ~0.3 s per login; tests only need a working hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache():
    """Throttle histories do not leak from one test into the next: the schemathesis pass's failed log-ins
    on the shared live server locked 127.0.0.1 out of /api/auth/token/ for an hour, and every later test
    that logs in through the live server got a 429 (seen in a fresh-clone run with CPU burners). The
    test cache is this process's memory (locmem), so clearing it touches no queue."""
    from django.core.cache import cache

    local = cache.__class__.__name__ == "LocMemCache"
    if local:
        cache.clear()
    yield
    if local:
        cache.clear()


@pytest.fixture
def redis_server():
    """A Redis of the test's own; this process publishes to it meanwhile (then to what it did before)."""
    if not shutil.which("redis-server"):
        skip_or_fail("needs redis-server to start a Redis of the test's own")
    server = ThrowawayRedis().start()
    try:
        with celery_pointed_at(server.url, {"visibility_timeout": 3600}):
            yield server
    finally:
        server.close()
