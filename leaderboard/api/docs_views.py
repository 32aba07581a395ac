"""The API's root, its log-in for the browsable API, and its documentation (Swagger UI and ReDoc).

Both documentation pages are served from this site alone: their scripts come from the pinned
``drf-spectacular-sidecar`` package (static files), ReDoc's template asks for no web fonts, Swagger
UI's validator badge is off, and a Content-Security-Policy keeps the browser from fetching
anything from another host. ReDoc's bundle draws its "API docs by Redocly" logo from
``cdn.redoc.ly``: the bundle is served by :func:`redoc_bundle` with that address replaced by
the site's own icon, so the browser never asks another host for it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import drf_spectacular_sidecar
from django.http import HttpResponse
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.cache import cache_control
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

#: Nothing from another host: scripts, styles, images, fonts and the schema all come from 'self'.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)
_REGEX_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_ROUTE_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")
#: A quoted absolute URL holding a URI template's ``{name}`` (JSON text of the browsable API root).
_TEMPLATED_URL = re.compile(r'"h(ttps?://[^"\s{]*\{[^"\s]*)"')


class _SameSiteOnly:
    """Adds the documentation pages' Content-Security-Policy."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CSP
        return response


class SwaggerView(_SameSiteOnly, SpectacularSwaggerView):
    """``/api/docs/``: Swagger UI (try the endpoints with your session or a token)."""


class RedocView(_SameSiteOnly, SpectacularRedocView):
    """``/api/redoc/``: the reference, rendered by ReDoc (its bundle from :func:`redoc_bundle`)."""

    template_name = "api/redoc.html"

    @staticmethod
    def _redoc_standalone():
        return reverse("api-redoc-bundle")


REDOC_BUNDLE = (
    Path(drf_spectacular_sidecar.__file__).parent
    / "static"
    / "drf_spectacular_sidecar"
    / "redoc"
    / "bundles"
    / "redoc.standalone.js"
)
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@functools.cache
def _redoc_bundle_bytes(logo: str) -> bytes:
    bundle = REDOC_BUNDLE.read_bytes()
    if REDOCLY_LOGO.encode() not in bundle:  # a new sidecar release: check the bundle for other hosts again
        raise RuntimeError(f"{REDOC_BUNDLE} no longer holds {REDOCLY_LOGO}")
    return bundle.replace(REDOCLY_LOGO.encode(), logo.encode())


@cache_control(public=True, max_age=86400)
def redoc_bundle(request):
    """``/api/redoc/redoc.standalone.js``: the pinned ReDoc bundle, its one outside address made the site's icon."""
    return HttpResponse(_redoc_bundle_bytes(static("varboard/favicon.svg")), content_type="text/javascript")


def _readable(pattern) -> str:
    """A URL pattern as a path template: ``challenges/<slug:slug>/`` and ``^challenges/(?P<slug>[^/.]+)/$``
    both read ``challenges/{slug}/``."""
    text = str(pattern)
    text = _ROUTE_PARAMETER.sub(r"{\1}", _REGEX_GROUP.sub(r"{\1}", text))
    return text.lstrip("^").rstrip("$").replace("\\.", ".")


def api_endpoints(patterns, prefix: str = "") -> list[tuple[str, str]]:
    """(name, path template) of every named endpoint under ``patterns``, format-suffix variants left out."""
    found: list[tuple[str, str]] = []
    for entry in patterns:
        if isinstance(entry, URLResolver):
            found += api_endpoints(entry.url_patterns, prefix + _readable(entry.pattern))
        elif isinstance(entry, URLPattern) and entry.name and "{format}" not in _readable(entry.pattern):
            found.append((entry.name, prefix + _readable(entry.pattern)))
    return found


def unlinked_uri_templates(content: str) -> SafeString:
    """The browsable API's JSON text with its URI templates kept out of the page's ``urlize``.

    DRF's page turns every ``http://…`` word into a link, and ``…/challenges/{slug}/`` leads to a
    404. The text is escaped here and a template's leading ``h`` written as ``&#104;``: the page
    shows and copies the same characters, and ``urlize`` (which links words that begin with
    ``http``) leaves it as text; concrete URLs stay links.
    """
    text = content.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return mark_safe(_TEMPLATED_URL.sub(r'"&#104;\1"', text))


class ApiRootRenderer(BrowsableAPIRenderer):
    """The browsable API root, its URI templates shown as text (:func:`unlinked_uri_templates`)."""

    def get_context(self, data, accepted_media_type, renderer_context):
        context = super().get_context(data, accepted_media_type, renderer_context)
        context["content"] = unlinked_uri_templates(context["content"])
        return context


class ApiRootView(APIView):
    """Every endpoint of the API ({slug} and {pk}: fill them in), the documentation and the log-in."""

    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer, ApiRootRenderer]
    name = "varboard API"

    @extend_schema(exclude=True)
    def get(self, request):
        root = reverse("api-root")
        base = request.build_absolute_uri(root)
        seen, endpoints = set(), {}
        for name, path in api_endpoints(get_resolver().url_patterns, "/"):
            if name == "api-root" or path in seen or not path.startswith(root):
                continue
            seen.add(path)
            endpoints[name.removeprefix("api-")] = base + path.removeprefix(root)
        return Response(
            {
                "log_in": request.build_absolute_uri(reverse("rest_framework:login")) + "?next=" + reverse("api-root"),
                "token": "POST username and password to auth/token/, then send `Authorization: Token <token>`",
                "documentation": {"swagger": base + "docs/", "redoc": base + "redoc/", "schema": base + "schema/"},
                "endpoints": endpoints,
            }
        )
