import shutil

import pytest

from dev import ThrowawayRedis
from tests.conftest import celery_pointed_at, skip_or_fail


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 at production strength costs ~0.3 s per login; tests only need a working hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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
