import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 at production strength costs ~0.3 s per login; tests only need a working hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
