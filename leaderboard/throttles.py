"""Throttles for the account endpoints (DRF's rate throttles, used by the API and the web pages alike).

Every throttle keys on :func:`client_address`: the socket peer, unless the deployment names its
trusted proxies (``VARBOARD_TRUSTED_PROXIES``), so a client cannot pick its own key with a
made-up ``X-Forwarded-For`` (DRF's default identity takes that header as it comes).

* :class:`FailedLoginThrottle` counts *failed* log-ins (web form and ``POST /api/auth/token/``)
  per client address and per (username, address) pair: past ``VARBOARD_LOGIN_RATE`` the next
  attempt is refused with 429 and ``Retry-After``, right password or not, so passwords cannot be
  guessed at speed while users who type theirs right are never slowed. Nothing is counted per
  username alone: failures from one address never lock the user out from another.
* :class:`SignupThrottle` counts accounts created per client address (``VARBOARD_SIGNUP_RATE``).
* :class:`PasswordResetThrottle` counts password-reset requests per client address and per e-mail
  address (``VARBOARD_PASSWORD_RESET_RATE``), so nobody can flood a mailbox through the site.

Their histories live in the ``throttles`` cache (settings), apart from cached pages and reports, which
culled them from a per-process cache of 300 entries.
"""

from __future__ import annotations

import ipaddress
import math

from django.conf import settings
from django.core.cache import caches
from django.http import HttpResponse
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle


def _address(text: str):
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address, proxies) -> bool:
    return address is not None and any(address in network for network in proxies)


def client_address(request) -> str:
    """The address of the client a request comes from, for throttles and logs.

    The socket peer (``REMOTE_ADDR``), unless that peer is one of ``VARBOARD_TRUSTED_PROXIES``:
    then ``X-Forwarded-For`` is read from the right, skipping the trusted proxies, and its first
    address that is not one of them is the client's. Entries a client wrote itself sit left of
    that one and are never reached; an unreadable entry stops the walk at the last trusted hop.
    """
    peer = request.META.get("REMOTE_ADDR", "")
    proxies = settings.VARBOARD["TRUSTED_PROXIES"]
    if not proxies or not _trusted(_address(peer), proxies):
        return peer
    client = peer
    for entry in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        address = _address(entry)
        if address is None:
            break
        client = str(address)
        if not _trusted(address, proxies):
            break
    return client


class _OwnCache:
    """A throttle whose history is in the ``throttles`` cache, which cached pages and reports never fill."""

    @property
    def cache(self):
        return caches["throttles" if "throttles" in settings.CACHES else "default"]  # settings of one cache only


class ClientScopedRateThrottle(_OwnCache, ScopedRateThrottle):
    """DRF's scoped throttle, keyed on :func:`client_address` for anonymous clients."""

    def get_ident(self, request) -> str:
        return client_address(request)


class _CountingThrottle(_OwnCache, SimpleRateThrottle):
    """A rate throttle whose history grows only when :meth:`record` is called (not on every request).

    Keys: the client's address, and with ``username`` the (username, address) pair.
    """

    def get_rate(self) -> str:
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]  # read now: settings may change (tests)

    def get_ident(self, request) -> str:
        return client_address(request)

    def cache_keys(self, request, username: str | None = None) -> list[str]:
        address = self.get_ident(request)
        keys = [self.cache_format % {"scope": self.scope, "ident": address}]
        if username:
            keys.append(self.cache_format % {"scope": self.scope, "ident": f"user:{username.lower()}@{address}"})
        return keys

    def blocked(self, request, username: str | None = None) -> float | None:
        """Seconds to wait when the client (or the username) is over the rate, else None."""
        waits = []
        for key in self.cache_keys(request, username):
            history = [t for t in self.cache.get(key, []) if t > self.timer() - self.duration]
            if len(history) >= self.num_requests:
                waits.append(self.duration - (self.timer() - history[-1]))
        return max(waits) if waits else None

    def record(self, request, username: str | None = None) -> None:
        for key in self.cache_keys(request, username):
            history = [t for t in self.cache.get(key, []) if t > self.timer() - self.duration]
            self.cache.set(key, [self.timer(), *history], self.duration)

    def get_cache_key(self, request, view):  # SimpleRateThrottle's hook: unused, counting is explicit
        return None


class FailedLoginThrottle(_CountingThrottle):
    scope = "login"


class SignupThrottle(_CountingThrottle):
    scope = "signup"


class PasswordResetThrottle(_CountingThrottle):
    """Password-reset mails asked for, per client address and per e-mail address asked about.

    Here the second key is the e-mail address alone, whatever the client's address: it protects
    the mailbox from a flood, and a reset refused for an hour locks nobody out of their account.
    """

    scope = "password_reset"

    def cache_keys(self, request, username: str | None = None) -> list[str]:
        keys = [self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}]
        if username:
            keys.append(self.cache_format % {"scope": self.scope, "ident": f"user:{username.lower()}"})
        return keys


def too_many(wait: float, what: str) -> HttpResponse:
    """A plain 429 page for the web forms, with ``Retry-After``."""
    seconds = max(1, math.ceil(wait))
    response = HttpResponse(
        f"Too many {what} from this address or for this account; try again in {seconds} s.",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(seconds)
    return response
