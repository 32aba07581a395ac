"""Fixtures shared by the platform tests: private media, recorded enqueues, fast logins."""

import pytest

from .factories import digits_challenge, make_user


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 at production strength costs ~0.3 s per login; tests only need a working hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache():
    """Throttle histories and cached reports do not leak from one test into the next."""
    from django.conf import settings
    from django.core.cache import caches

    for alias in settings.CACHES:
        caches[alias].clear()
    yield
    for alias in settings.CACHES:
        caches[alias].clear()


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Uploads go to a per-test folder, never into var/."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


class Sent(list):
    """Tasks published through ``leaderboard.services.dispatch.send``: (task name, args, queue)."""

    def ids(self, task_name: str) -> list[int]:
        """The first argument (an id) of every ``task_name`` sent, in order."""
        return [args[0] for name, args, _ in self if name == task_name]

    def queues(self, task_name: str) -> list[str | None]:
        return [queue for name, _, queue in self if name == task_name]


@pytest.fixture(autouse=True)
def queued(monkeypatch):
    """Record what would be enqueued; the real worker path is tested in tests/integration."""
    sent = Sent()
    monkeypatch.setattr(
        "leaderboard.services.dispatch.send",
        lambda name, args, queue=None, countdown=None: sent.append((name, tuple(args), queue)),
    )
    return sent


@pytest.fixture(autouse=True)
def consumers(monkeypatch):
    """The workers consuming each queue, as ``dispatch.queue_consumers`` reports them (a test sets them).

    ``None`` (the default) is "the workers could not be asked": nothing is said about them, and no
    page or API call waits on an inspection of the embedded broker.
    """
    from leaderboard.services import dispatch

    state = {"now": None, "real": dispatch.queue_consumers}  # "real": for the test of the function itself
    monkeypatch.setattr(dispatch, "queue_consumers", lambda wait=False: state["now"])
    return state


@pytest.fixture(autouse=True)
def api_contract(monkeypatch):
    """Every response from ``/api/`` keeps to the OpenAPI schema (tests/api_contract.py), or the test fails."""
    from django.test import Client

    from tests.api_contract import check_test_response

    problems: list[str] = []
    request = Client.request

    def checked(self, **kwargs):
        response = request(self, **kwargs)
        problems.extend(check_test_response(response))
        return response

    monkeypatch.setattr(Client, "request", checked)
    yield problems
    if problems:
        pytest.fail("responses that break the OpenAPI schema:\n" + "\n".join(dict.fromkeys(problems)))


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


@pytest.fixture
def spooled(monkeypatch):
    """Bytes the upload handlers after ours stored (memory or temporary file), per file name."""
    from django.core.files import uploadhandler

    stored: dict[str, int] = {}
    for cls in (uploadhandler.MemoryFileUploadHandler, uploadhandler.TemporaryFileUploadHandler):
        original = cls.receive_data_chunk

        def counting(self, raw_data, start, original=original):
            result = original(self, raw_data, start)
            if result is None:  # this handler kept the chunk
                stored[self.file_name] = stored.get(self.file_name, 0) + len(raw_data)
            return result

        monkeypatch.setattr(cls, "receive_data_chunk", counting)
    return stored
