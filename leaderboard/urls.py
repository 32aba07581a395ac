from django.contrib import admin
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path

from .ops import health, metrics


def favicon(request):
    """``/favicon.ico``, which browsers and feed readers ask for whatever the page links: the static icon."""
    return redirect(static("varboard/favicon.ico"))


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api.urls")),
    path("health/live", health.live, name="health-live"),
    path("health/ready", health.ready, name="health-ready"),
    path("metrics", metrics.metrics, name="metrics"),
    path("", include("leaderboard.web.urls")),
]

# The database being unreachable is a 503 with Retry-After, not a 500 (leaderboard/ops/unavailable.py).
handler500 = "leaderboard.ops.unavailable.server_error"
# 400, 403 and 404 say the reason the view gave, in the site's layout; under /api/ as JSON in the API's error shape
# (an unknown path there with the nearest endpoint), not an HTML page (leaderboard/web/error_pages.py).
handler400 = "leaderboard.web.error_pages.bad_request"
handler403 = "leaderboard.web.error_pages.permission_denied"
handler404 = "leaderboard.web.error_pages.not_found"
