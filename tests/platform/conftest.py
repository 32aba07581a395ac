"""Fixtures shared by the platform tests: private media, recorded enqueues, fast logins."""

import pytest

from .factories import digits_challenge, make_user


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 at production strength costs ~0.3 s per login; tests only need a working hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Uploads go to a per-test folder, never into var/."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def queued(monkeypatch):
    """Record what would be enqueued; the real worker path is tested in tests/integration."""
    calls = []
    monkeypatch.setattr("tasks.scoring.score_submission.delay", lambda sid: calls.append(("score", sid)))
    monkeypatch.setattr("leaderboard.services.recipes.enqueue_runs",
                        lambda *, submission_id: calls.append(("runs", submission_id)))
    monkeypatch.setattr("leaderboard.services.reports._enqueue", lambda cid: None)
    return calls


@pytest.fixture
def host():
    return make_user("hostess")


@pytest.fixture
def alice():
    return make_user("alice")


@pytest.fixture
def bob():
    return make_user("bob")


@pytest.fixture
def challenge(host):
    return digits_challenge(host)
