"""A micro-cache for anonymous page reads: the rendered challenge page kept a second per process.

The page is the most read URL of a public challenge and costs a dozen queries and a template
render; under load (50 readers) rendering it on every request is what makes the web tier slow.
With ``VARBOARD["LEADERBOARD_MICROCACHE_S"]`` set (seconds; 0: off, the default outside
production), a GET from a visitor who is not signed in (no session cookie, no ``Authorization``
header, no pending messages) is answered from a process-local cache keyed by the path and the
query string, with no database query at all. A new report, or a challenge made private, reaches
anonymous readers at most that long (plus one render) after it happened, exactly as for the
leaderboard JSON (``leaderboard.api.caching``); the report's version is part of the key of the
rendered board in Django's cache one layer down. Signed-in users are never served from it (the
page shows their own submissions and forms), and a response that sets a cookie, needs a CSRF
token or is not a 200 is never stored.
"""

from __future__ import annotations

import functools
import threading
import time

from django.conf import settings
from django.http import HttpResponse

#: Cookies that make a visitor someone the page is rendered for (Django's messages cookie included).
PERSONAL_COOKIES = ("messages",)
#: Seconds a page older than its TTL may still be served while one thread renders the new one.
STALE_GRACE_S = 10.0


def microcache_seconds() -> float:
    return float(settings.VARBOARD.get("LEADERBOARD_MICROCACHE_S", 0) or 0)


class PageCache:
    """Rendered pages kept ``ttl`` seconds per process, refreshed by one thread at a time (thread-safe).

    When an entry is older than ``ttl``, the first reader is told to render it again (``get`` returns
    None) while the readers that come meanwhile keep getting the previous copy, for at most
    :data:`STALE_GRACE_S` more seconds: without this, every thread that arrives in the render's
    ~100 ms renders the page too, and the p99 under load is several renders queued on the cores.
    """

    def __init__(self, size: int = 256):
        self.size = size
        self.lock = threading.Lock()
        self.entries: dict = {}  # key -> (value, fresh until, refreshing)

    def get(self, key):
        now = time.monotonic()
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            value, fresh_until, refreshing = entry
            if now < fresh_until:
                return value
            if refreshing and now < fresh_until + STALE_GRACE_S:
                return value  # another thread is rendering it
            self.entries[key] = (value, fresh_until, True)
            return None  # this caller renders it (or gives up: see ``release``)

    def put(self, key, value, ttl: float) -> None:
        with self.lock:
            if len(self.entries) >= self.size and key not in self.entries:
                del self.entries[min(self.entries, key=lambda k: self.entries[k][1])]  # the stalest
            self.entries[key] = (value, time.monotonic() + ttl, False)

    def release(self, key) -> None:
        """The render was not stored (an error, a 404): the next reader tries again."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None and entry[2]:
                del self.entries[key]

    def clear(self) -> None:
        with self.lock:
            self.entries = {}


PAGE_CACHE = PageCache()


def is_anonymous_read(request) -> bool:
    """A GET by a visitor with no session, no token and no pending messages (decided without a query)."""
    cookies = request.COOKIES
    return (
        request.method == "GET"
        and "HTTP_AUTHORIZATION" not in request.META
        and settings.SESSION_COOKIE_NAME not in cookies
        and not any(name in cookies for name in PERSONAL_COOKIES)
    )


def _storable(request, response) -> bool:
    return (
        response.status_code == 200
        and not getattr(response, "streaming", False)
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not response.has_header("Set-Cookie")
    )


def anonymous_page_microcache(view):
    """Serve ``view``'s anonymous GETs from :data:`PAGE_CACHE` for ``LEADERBOARD_MICROCACHE_S`` seconds."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        ttl = microcache_seconds()
        if ttl <= 0 or not is_anonymous_read(request):
            return view(request, *args, **kwargs)
        key = (request.path, request.META.get("QUERY_STRING", ""))
        hit = PAGE_CACHE.get(key)
        if hit is not None:
            body, content_type = hit
            response = HttpResponse(body, content_type=content_type)
            response["X-Varboard-Page-Cache"] = "hit"
            response["Vary"] = "Cookie"  # as the rendered page says: a shared cache must not mix visitors
            return response
        stored = False
        try:
            response = view(request, *args, **kwargs)
            if _storable(request, response):
                PAGE_CACHE.put(key, (response.content, response["Content-Type"]), ttl)
                stored = True
        finally:
            if not stored:
                PAGE_CACHE.release(key)
        return response

    return wrapped
