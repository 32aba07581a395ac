"""Throttles for the account endpoints (DRF's rate throttles, used by the API and the web pages alike).

* :class:`FailedLoginThrottle` counts *failed* log-ins (web form and ``POST /api/auth/token/``)
  per client address and per username: past ``VARBOARD_LOGIN_RATE`` the next attempt is refused
  with 429 and ``Retry-After``, right password or not, so passwords cannot be guessed at speed
  while users who type theirs right are never slowed.
* :class:`SignupThrottle` counts accounts created per client address (``VARBOARD_SIGNUP_RATE``).
* :class:`PasswordResetThrottle` counts password-reset requests per client address and per e-mail
  address (``VARBOARD_PASSWORD_RESET_RATE``), so nobody can flood a mailbox through the site.
"""

from __future__ import annotations

import math

from django.http import HttpResponse
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class _CountingThrottle(SimpleRateThrottle):
    """A rate throttle whose history grows only when :meth:`record` is called (not on every request)."""

    def get_rate(self) -> str:
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]  # read now: settings may change (tests)

    def cache_keys(self, request, username: str | None = None) -> list[str]:
        keys = [self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}]
        if username:
            keys.append(self.cache_format % {"scope": self.scope, "ident": f"user:{username.lower()}"})
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
    """Password-reset mails asked for, per client address and per address asked about."""

    scope = "password_reset"


def too_many(wait: float, what: str) -> HttpResponse:
    """A plain 429 page for the web forms, with ``Retry-After``."""
    seconds = max(1, math.ceil(wait))
    response = HttpResponse(f"Too many {what} from this address or for this account; try again in {seconds} s.",
                            status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(seconds)
    return response
