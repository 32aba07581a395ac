from django.contrib.auth import views as auth_views
from django.urls import path

from . import account_views, beyond, host_views, integrity_views, review, views

urlpatterns = [
    path("", views.home, name="home"),
    path("signup/", views.signup, name="signup"),
    path("login/", integrity_views.ThrottledLoginView.as_view(), name="login"),
    path("verify/<str:signed>/", integrity_views.verify_email, name="verify-email"),
    path("account/", account_views.account, name="account"),
    path("account/tokens/", account_views.account, name="tokens"),
    path("password-reset/", integrity_views.ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"
    ),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("invitations/<int:pk>/", account_views.invitation_view, name="invitation"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("challenges/new/", views.challenge_new, name="challenge-create"),
    path("challenges/new/results-only/", beyond.challenge_new_results_only, name="challenge-create-results-only"),
    path("challenges/new/bundle/", host_views.challenge_bundle_import, name="challenge-bundle-import"),
    path("c/<slug:slug>/bundle/", host_views.challenge_bundle_export, name="challenge-bundle-export"),
    path("c/<slug:slug>/history/", beyond.board_history, name="challenge-history"),
    path("challenges/plan/", host_views.challenge_planner, name="challenge-planner"),
    path("c/<slug:slug>/", views.challenge_detail, name="challenge-detail"),
    path("c/<slug:slug>/preview/", host_views.challenge_preview, name="challenge-preview"),
    path("c/<slug:slug>/compare/", views.challenge_compare, name="challenge-compare"),
    path("c/<slug:slug>/edit/", views.challenge_edit, name="challenge-edit"),
    path("c/<slug:slug>/phases/", host_views.challenge_phases, name="challenge-phases"),
    path("c/<slug:slug>/download/<str:part>/", views.challenge_download, name="challenge-download"),
    path("c/<slug:slug>/reveal/", integrity_views.challenge_reveal_view, name="challenge-reveal"),
    path("c/<slug:slug>/register/", integrity_views.challenge_register_view, name="challenge-register"),
    path("c/<slug:slug>/audit/", integrity_views.challenge_audit, name="challenge-audit"),
    path("c/<slug:slug>/finals/", integrity_views.challenge_finals_view, name="challenge-finals"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    path("submissions/<int:pk>/cancel/", views.submission_cancel_view, name="submission-cancel"),
    path("submissions/<int:pk>/select/", integrity_views.submission_select_view, name="submission-select"),
    path("submissions/<int:pk>/download/", review.submission_download_view, name="submission-download"),
    path("submissions/<int:pk>/moderate/", review.submission_moderate_view, name="submission-moderate"),
    path("teams/", account_views.teams, name="teams"),
    path("c/<slug:slug>/webhooks/", account_views.challenge_webhooks, name="challenge-webhooks"),
    path("c/<slug:slug>/variance-studies/", beyond.variance_studies, name="variance-studies"),
    path("c/<slug:slug>/variance-studies/<int:pk>/", beyond.variance_study, name="variance-study"),
    path("c/<slug:slug>/import/", beyond.results_import, name="results-import"),
    path("suites/new/", beyond.suite_new, name="suite-create"),
    path("suites/<slug:slug>/", beyond.suite_detail, name="suite-detail"),
]
