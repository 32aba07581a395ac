from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api.urls")),
    path("", include("leaderboard.web.urls")),
]
