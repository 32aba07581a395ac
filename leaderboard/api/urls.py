from django.contrib.auth.views import LogoutView
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from ..ops.unavailable import api_not_found
from ..web.integrity_views import ThrottledLoginView
from .account_views import (
    InvitationActionView,
    InvitationListView,
    NotificationSettingsView,
    TeamInviteView,
    TeamLeaveView,
    TeamListView,
    WebhookDetailView,
    WebhookListView,
)
from .auth_views import TokenListView, TokenLoginView, TokenRevokeView
from .beyond_views import (
    ResultsImportView,
    SuiteDetailView,
    SuiteListView,
    VarianceStudyDetailView,
    VarianceStudyListView,
)
from .docs_views import ApiRootView, RedocView, SwaggerView, redoc_bundle
from .report_views import CompareView, LeaderboardView, SotaView
from .review_views import SubmissionDownloadView, SubmissionModerationView, TeamModerationView
from .views import ChallengeDownloadView, ChallengeViewSet, SubmissionViewSet

router = SimpleRouter()
router.register("challenges", ChallengeViewSet, basename="api-challenge")
router.register("submissions", SubmissionViewSet, basename="api-submission")

# The browsable API's "Log in" link (DRF looks it up as rest_framework:login): the site's throttled log-in.
browser_auth = (
    [
        path("login/", ThrottledLoginView.as_view(template_name="rest_framework/login.html"), name="login"),
        path("logout/", LogoutView.as_view(), name="logout"),
    ],
    "rest_framework",
)

urlpatterns = [
    path("", ApiRootView.as_view(), name="api-root"),
    path("auth/token/", TokenLoginView.as_view(), name="api-token"),
    path("auth/tokens/", TokenListView.as_view(), name="api-tokens"),
    path("auth/tokens/<str:token_key>/", TokenRevokeView.as_view(), name="api-token-revoke"),
    path("auth/browser/", include(browser_auth)),
    path("account/notifications/", NotificationSettingsView.as_view(), name="api-notifications"),
    path("teams/", TeamListView.as_view(), name="api-teams"),
    path("teams/<int:pk>/invitations/", TeamInviteView.as_view(), name="api-team-invite"),
    path("teams/<int:pk>/leave/", TeamLeaveView.as_view(), name="api-team-leave"),
    path("invitations/", InvitationListView.as_view(), name="api-invitations"),
    path("invitations/<int:pk>/accept/", InvitationActionView.as_view(action="accept"), name="api-invitation-accept"),
    path(
        "invitations/<int:pk>/decline/", InvitationActionView.as_view(action="decline"), name="api-invitation-decline"
    ),
    path("invitations/<int:pk>/cancel/", InvitationActionView.as_view(action="cancel"), name="api-invitation-cancel"),
    path("challenges/<slug:slug>/data/<str:part>/", ChallengeDownloadView.as_view(), name="api-challenge-download"),
    path("challenges/<slug:slug>/leaderboard/", LeaderboardView.as_view(), name="api-challenge-leaderboard"),
    path("challenges/<slug:slug>/compare/", CompareView.as_view(), name="api-challenge-compare"),
    path("challenges/<slug:slug>/sota/", SotaView.as_view(), name="api-challenge-sota"),
    path("challenges/<slug:slug>/webhooks/", WebhookListView.as_view(), name="api-webhooks"),
    path("challenges/<slug:slug>/webhooks/<int:pk>/", WebhookDetailView.as_view(), name="api-webhook"),
    path("challenges/<slug:slug>/variance-studies/", VarianceStudyListView.as_view(), name="api-variance-studies"),
    path("variance-studies/<int:pk>/", VarianceStudyDetailView.as_view(), name="api-variance-study"),
    path("challenges/<slug:slug>/imports/", ResultsImportView.as_view(), name="api-results-imports"),
    path("submissions/<int:pk>/download/", SubmissionDownloadView.as_view(), name="api-submission-download"),
    path("submissions/<int:pk>/moderation/", SubmissionModerationView.as_view(), name="api-submission-moderation"),
    path(
        "challenges/<slug:slug>/teams/<int:team_id>/moderation/",
        TeamModerationView.as_view(),
        name="api-team-moderation",
    ),
    path("suites/", SuiteListView.as_view(), name="api-suites"),
    path("suites/<slug:slug>/", SuiteDetailView.as_view(), name="api-suite"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", RedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("redoc/redoc.standalone.js", redoc_bundle, name="api-redoc-bundle"),
    path("", include(router.urls)),
    # Last: any other path under /api/ is the API's JSON 404, with DEBUG on too (handler404 serves DEBUG off).
    re_path(r"^(?P<rest>.*)$", api_not_found),
]
