from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("signup/", views.signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("challenges/new/", views.challenge_new, name="challenge-create"),
    path("c/<slug:slug>/", views.challenge_detail, name="challenge-detail"),
    path("c/<slug:slug>/compare/", views.challenge_compare, name="challenge-compare"),
    path("c/<slug:slug>/edit/", views.challenge_edit, name="challenge-edit"),
    path("c/<slug:slug>/download/<str:part>/", views.challenge_download, name="challenge-download"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    path("submissions/<int:pk>/cancel/", views.submission_cancel_view, name="submission-cancel"),
    path("teams/", views.teams, name="teams"),
]
