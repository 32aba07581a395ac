"""Keeping the leaderboard cheap to serve: rendered bytes in Django's cache, plus a micro-cache.

* The rendered leaderboard is cached (Django's cache) under the report's inputs version
  and the challenge's report settings, so a hit costs one narrow query
  (:data:`HOT_FIELDS`, derived from ``Challenge.REPORT_SETTINGS``).
* With ``VARBOARD["LEADERBOARD_MICROCACHE_S"]`` set (seconds; 0: off), anonymous GETs are
  answered from a process-local micro-cache (a ``cachetools.TTLCache``) with no query at
  all. A new report, or a challenge turned private, then reaches anonymous readers at most
  that long after it happened (reports are debounced by 1 s anyway). It is off by default
  because tests reuse slugs with new data within a second.
"""

from __future__ import annotations

import hashlib
import threading

from cachetools import TTLCache
from django.conf import settings

from ..models import Challenge
from ..services.reports import report_settings_key

#: Seconds a rendered leaderboard stays in Django's cache (its key changes with every new report).
CACHE_SECONDS = 300
#: What the cached leaderboard needs of a challenge and its report: one narrow query.
HOT_FIELDS = (
    "slug",
    "visibility",
    *Challenge.REPORT_SETTINGS,
    "report__inputs_version",
    "report__computed_at",
    "report__recompute_pending",
    "report__failed_at",
)


def microcache_seconds() -> float:
    return float(settings.VARBOARD.get("LEADERBOARD_MICROCACHE_S", 0) or 0)


class MicroCache:
    """Rendered responses kept ``ttl`` seconds per process (a thread-safe ``TTLCache``)."""

    def __init__(self, size: int = 256):
        self.size = size
        self.lock = threading.Lock()
        self.cache: TTLCache | None = None

    def get(self, key):
        with self.lock:
            return None if self.cache is None else self.cache.get(key)

    def put(self, key, value, ttl: float) -> None:
        with self.lock:
            if self.cache is None or self.cache.ttl != ttl:
                self.cache = TTLCache(maxsize=self.size, ttl=ttl)
            self.cache[key] = value

    def clear(self) -> None:
        with self.lock:
            self.cache = None


MICRO_CACHE = MicroCache()


def leaderboard_cache_key(
    challenge: Challenge,
    renderer_format: str,
    version: str,
    computed_at,
    pending: bool,
    page: str = "",
    *,
    failed_at=None,
) -> str:
    """Key of a rendered leaderboard page: the report's version and time, the challenge's settings, the page, and
    when its latest recomputation failed (the page then says so)."""
    failed = failed_at.isoformat() if failed_at else ""
    raw = (
        f"{challenge.pk}:{version}:{computed_at.isoformat()}:{pending}:{failed}:{report_settings_key(challenge)}:{page}"
    )
    return f"varboard:leaderboard:{renderer_format}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"
