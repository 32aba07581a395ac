"""gzip for the text the site sends (HTML, JSON, CSV), not for files that are already compressed.

The challenge page is ~100 KB of HTML (tables and inline SVG charts) and compresses about tenfold.
Django's ``GZipMiddleware`` compresses every response of 200 bytes or more; this subclass leaves out
content types that gain nothing (dataset parts in Parquet or zip, images, archives), so a large
download costs no CPU for nothing.

BREACH (compression as an oracle for a secret in a response that also reflects attacker input):
we rely on Django's mitigations instead of leaving pages with a form uncompressed, because every
page with a form (the challenge page included) would then go uncompressed. (1) The CSRF token in a
page is masked afresh for every response (``django.middleware.csrf``: ``get_token`` returns a new
random mask of the secret), so no fixed secret repeats across responses for an attacker to guess
byte by byte; (2) since Django 4.2 ``GZipMiddleware`` adds up to 100 random bytes to every gzip
stream (``max_random_bytes``, the "Heal The Breach" technique named in Django 4.2's release notes),
so a response's size no longer tells a match; (3) no page reflects an attacker's input beside a
secret: a new API token is shown once, in answer to a CSRF-checked POST, and the webhook page reflects
only what its own host typed. (``SameSite=Lax`` cookies do not stop BREACH alone: a foreign page's
top-level GET still carries the session.)
"""

from __future__ import annotations

from django.middleware.gzip import GZipMiddleware

#: Media types worth compressing (the type before any ``;charset``); everything else goes as it is.
COMPRESSIBLE = (
    "text/",
    "application/json",
    "application/problem+json",
    "application/vnd.oai.openapi",
    "application/javascript",
    "application/xml",
    "image/svg+xml",
)


def compressible(content_type: str) -> bool:
    """Whether a response of ``content_type`` is text that gzip shrinks."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media.startswith(COMPRESSIBLE) or media.endswith("+json")


class TextGZipMiddleware(GZipMiddleware):
    """``GZipMiddleware`` for :func:`compressible` responses only (HTML, JSON, CSV, the OpenAPI schema)."""

    def process_response(self, request, response):
        if not compressible(response.get("Content-Type", "")):
            return response
        return super().process_response(request, response)
