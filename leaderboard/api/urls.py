from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from .report_views import CompareView, LeaderboardView, SotaView
from .views import ChallengeDownloadView, ChallengeViewSet, SubmissionViewSet

router = DefaultRouter()
router.register("challenges", ChallengeViewSet, basename="api-challenge")
router.register("submissions", SubmissionViewSet, basename="api-submission")

urlpatterns = [
    path("auth/token/", obtain_auth_token, name="api-token"),
    path("challenges/<slug:slug>/data/<str:part>/", ChallengeDownloadView.as_view(), name="api-challenge-download"),
    path("challenges/<slug:slug>/leaderboard/", LeaderboardView.as_view(), name="api-challenge-leaderboard"),
    path("challenges/<slug:slug>/compare/", CompareView.as_view(), name="api-challenge-compare"),
    path("challenges/<slug:slug>/sota/", SotaView.as_view(), name="api-challenge-sota"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include(router.urls)),
]
