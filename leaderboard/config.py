"""Reading settings from the environment: django-environ, made strict.

django-environ parses URLs and lists; on its own it reads ``DJANGO_DEBUG=maybe`` as False,
``1.5x`` as 1.5 and an unknown database URL as an empty configuration. :class:`StrictEnv`
keeps its parsing and refuses such values at start-up with a message that names the
variable, the value and what is expected.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


class StrictEnv(environ.Env):
    """``environ.Env`` whose typed getters reject malformed values (``ImproperlyConfigured``)."""

    def _raw(self, var: str) -> str | None:
        value = self.ENVIRON.get(var)
        return None if value is None or value == "" else value

    def bool(self, var, default=False):  # noqa: A003 - environ's name
        value = self._raw(var)
        if value is None:
            return default
        if value.lower() in TRUE | FALSE:
            return value.lower() in TRUE
        raise ImproperlyConfigured(f"{var} must be true or false (1/0, yes/no, on/off), not {value!r}")

    def _number(self, var, kind, default, minimum):
        value = self._raw(var)
        if value is None:
            return default
        try:
            number = kind(value)
        except ValueError:
            noun = "an integer" if kind is int else "a number"
            raise ImproperlyConfigured(f"{var} must be {noun}, not {value!r}") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{var} must be at least {minimum}, not {value!r}")
        return number

    def int(self, var, default=None, minimum=None):  # noqa: A003 - environ's name
        return self._number(var, int, default, minimum)

    def float(self, var, default=None, minimum=None):  # noqa: A003 - environ's name
        return self._number(var, float, default, minimum)

    def database(self, var: str, default: str) -> dict:
        """A database URL (``postgres://…``, ``sqlite:///path``) as Django's DATABASES entry."""
        url = self._raw(var) or default
        config = self.db_url_config(url)
        if not config.get("ENGINE"):
            raise ImproperlyConfigured(
                f"{var} must be a database URL such as postgres://user:password@host:5432/name "
                f"or sqlite:///path/db.sqlite3, not {url!r}"
            )
        if config["ENGINE"] == "django.db.backends.sqlite3":
            # Concurrent web + worker processes on the embedded default: wait instead of failing.
            # IMMEDIATE transactions take the write lock when they begin, so SQLite waits for it
            # (up to the timeout) instead of failing a read lock's upgrade with "database is locked".
            config.setdefault("OPTIONS", {}).update(timeout=30, transaction_mode="IMMEDIATE")
        return config

    def cache(self, var: str, default: str) -> dict:  # noqa: A003 - environ's name
        """A cache URL (``redis://host:6379/1``, ``locmemcache://``) as Django's CACHES entry."""
        url = self._raw(var) or default
        try:
            return self.cache_url_config(url)
        except (ImproperlyConfigured, KeyError, ValueError):
            raise ImproperlyConfigured(f"{var} must be a cache URL such as redis://host:6379/1, not {url!r}") from None

    def email(self, var: str) -> dict:
        """An e-mail URL (``smtp://user:password@host:587``, ``consolemail://``) as Django's EMAIL_* settings."""
        url = self._raw(var)
        try:
            config = self.email_url_config(url)
        except (ImproperlyConfigured, KeyError, ValueError):
            config = {}
        if not config.get("EMAIL_BACKEND"):
            raise ImproperlyConfigured(
                f"{var} must be an e-mail URL such as smtp://user:password@host:587, "
                f"smtp+tls://…, consolemail:// or filemail:///path, not {url!r}"
            )
        if config.get("EMAIL_FILE_PATH"):
            # django-environ drops the path's leading slash: filemail:///var/mail would write to ./var/mail.
            config["EMAIL_FILE_PATH"] = urlsplit(url).path or config["EMAIL_FILE_PATH"]
        return config


def s3_storages(
    *,
    bucket: str,
    private_bucket: str = "",
    endpoint_url: str | None = None,
    region: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
    addressing_style: str = "path",
) -> dict:
    """``STORAGES`` entries ``default`` and ``hidden`` on an S3-compatible store (django-storages).

    Public data and submissions go under ``public/`` in ``bucket``; hidden labels under
    ``private/`` in ``private_bucket`` (default: the same bucket). Objects are private (no ACL,
    signed URLs) and never overwritten. Empty credentials leave boto3's own chain in charge.
    """
    common = {
        "endpoint_url": endpoint_url or None,
        "region_name": region or None,
        "access_key": access_key or None,
        "secret_key": secret_key or None,
        "default_acl": None,
        "querystring_auth": True,
        "file_overwrite": False,
        "addressing_style": addressing_style,
        "client_config": s3_client_config(addressing_style=addressing_style),
    }
    backend = "storages.backends.s3.S3Storage"
    return {
        "default": {"BACKEND": backend, "OPTIONS": {**common, "bucket_name": bucket, "location": "public"}},
        "hidden": {
            "BACKEND": backend,
            "OPTIONS": {**common, "bucket_name": private_bucket or bucket, "location": "private"},
        },
    }


def s3_client_config(*, addressing_style: str = "path"):
    """boto3's client settings: timeouts short enough that a hung store cannot hold a web worker.

    ``VARBOARD_S3_CONNECT_TIMEOUT_S`` (3), ``VARBOARD_S3_READ_TIMEOUT_S`` (10) and
    ``VARBOARD_S3_MAX_ATTEMPTS`` (2: boto3's tries per call, the first included); a store that stays down past
    them is a transient fault: uploads answer 503, tasks retry with backoff (tasks/__init__.py).
    """
    from botocore.config import Config

    def number(name: str, default: float) -> float:
        raw = os.environ.get(name, "") or str(default)
        try:
            value = float(raw)
        except ValueError:
            raise ImproperlyConfigured(f"{name} must be a number of seconds or tries, not {raw!r}") from None
        if value <= 0:
            raise ImproperlyConfigured(f"{name} must be positive, not {raw!r}")
        return value

    return Config(
        s3={"addressing_style": addressing_style},
        connect_timeout=number("VARBOARD_S3_CONNECT_TIMEOUT_S", 3),
        read_timeout=number("VARBOARD_S3_READ_TIMEOUT_S", 10),
        retries={"total_max_attempts": int(number("VARBOARD_S3_MAX_ATTEMPTS", 2)), "mode": "standard"},
    )
