"""A Redis cache that is optional at read time: an outage costs speed, never an answer.

The cache only ever holds copies (rendered boards, throttle histories, the janitor's last
pass), so while Redis is unreachable every operation degrades to "not cached": a read
misses, a write is dropped, and the caller falls back to the database. Each swallowed error
is logged and counted in ``varboard_cache_errors_total{operation}`` (``/metrics``), so an
operator sees the outage without a single 500. Short socket timeouts (``CACHE_TIMEOUT_S``)
keep a hung Redis from holding a web worker.

``settings.CACHES`` swaps Django's ``RedisCache`` for :class:`ResilientRedisCache` (``incr`` is
left to raise: nothing counts in the cache, and a counter that silently stopped would be wrong); a
non-Redis ``CACHE_URL`` (per-process memory, files) is left as it is.
"""

from __future__ import annotations

import functools
import logging
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from prometheus_client import Counter
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

CACHE_ERRORS = Counter("varboard_cache_errors", "Cache operations that failed and fell back to no cache", ["operation"])
LOG_EVERY_S = 10.0  # one warning per this many seconds while the outage lasts, not one per request
_last_logged = [0.0]


def _degraded(operation: str, fallback):
    """Wrap a cache method so that a Redis error returns ``fallback(*args, **kwargs)`` and is counted."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except (RedisError, OSError) as error:
                CACHE_ERRORS.labels(operation=operation).inc()
                now = time.monotonic()
                if now - _last_logged[0] >= LOG_EVERY_S:
                    _last_logged[0] = now
                    log.warning("cache %s failed, answering without the cache: %s", operation, type(error).__name__)
                return fallback(*args, **kwargs)

        return wrapper

    return decorate


def _default_of_get(key, default=None, version=None):
    return default


class ResilientRedisCache(RedisCache):
    """Django's Redis cache whose errors degrade to cache misses (module docstring)."""

    @_degraded("get", _default_of_get)
    def get(self, key, default=None, version=None):
        return super().get(key, default, version)

    @_degraded("get_many", lambda keys, version=None: {})
    def get_many(self, keys, version=None):
        return super().get_many(keys, version)

    @_degraded("has_key", lambda key, version=None: False)
    def has_key(self, key, version=None):
        return super().has_key(key, version)

    @_degraded("set", lambda *args, **kwargs: None)
    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set(key, value, timeout, version)

    @_degraded("add", lambda *args, **kwargs: False)
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().add(key, value, timeout, version)

    @_degraded("set_many", lambda data, *args, **kwargs: list(data))
    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set_many(data, timeout, version)

    @_degraded("touch", lambda *args, **kwargs: False)
    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return super().touch(key, timeout, version)

    @_degraded("delete", lambda *args, **kwargs: False)
    def delete(self, key, version=None):
        return super().delete(key, version)

    @_degraded("delete_many", lambda *args, **kwargs: None)
    def delete_many(self, keys, version=None):
        return super().delete_many(keys, version)

    @_degraded("clear", lambda: False)
    def clear(self):
        return super().clear()
