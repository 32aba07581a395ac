"""Django admin: hosts create challenges with a dataset; edits go through challenge_update; the rest is read-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from django import forms
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.seeds import SOURCES
from leaderboard.models import Challenge, Run, Submission
from leaderboard.services.teams import team_personal_for

from .factories import csv_bytes, digits_challenge, digits_frame, make_user

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/leaderboard/challenge/add/"


@pytest.fixture
def admin_user():
    return User.objects.create_superuser("root", "root@example.org", "root-password-1")


@pytest.fixture
def staff_host():
    """A host who is staff with the challenge permissions (what ``manage.py demo`` gives ``host``)."""
    user = make_user("staffhost")
    user.is_staff = True
    user.save()
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="leaderboard",
            codename__in=[
                "add_challenge",
                "change_challenge",
                "view_challenge",
                "view_dataset",
                "view_submission",
                "view_run",
            ],
        )
    )
    return user


def media_files(media: Path) -> list[Path]:
    return sorted(p for p in Path(media).rglob("*") if p.is_file()) if Path(media).exists() else []


def add_form_data(**overrides) -> dict:
    data = {
        "title": "Admin digits",
        "metric": "accuracy",
        "visibility": "public",
        "allow_predictions": "on",
        "daily_quota": 5,
        "total_quota": 50,
        "k_runs": 4,
        "boo_n": 3,
        "gamma": 0.75,
        "alpha": 0.05,
        "bootstrap_resamples": 500,
        "ranking_statistic": "mean",
        "correction": "holm",
        "master_seed": 3,
        "randomize_sources": list(SOURCES),
        "split_scheme": "oob",
        "stratify": "on",
        "test_fraction": 0.5,
        "hpo_mode": "fixed",
        "hpo_method": "random",
        "hpo_budget": 5,
        "device": "cpu",
        "run_time_limit_s": 60,
        "run_memory_limit_mb": 1024,
        "id_column": "id",
        "label_column": "label",
        "test_column": "is_test",
        "dataset": SimpleUploadedFile("digits.csv", csv_bytes(digits_frame(n_rows=100)), content_type="text/csv"),
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def change_form_data(response) -> dict:
    """The POST body the change page would send unchanged: the form and its inline formsets."""
    data = {}

    def put(form):
        for name, field in form.fields.items():
            value = form[name].value()
            key = form.add_prefix(name)
            if isinstance(field, forms.BooleanField):
                data.update({key: "on"} if value else {})
            elif value is not None:
                data[key] = [str(v) for v in value] if isinstance(value, (list, tuple)) else value

    put(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        put(inline.formset.management_form)
        for form in inline.formset.forms:
            put(form)
    return data


def test_admin_pages_render(client, admin_user, host_and_challenge):
    challenge, submission = host_and_challenge
    client.force_login(admin_user)
    for url in [
        "/admin/",
        "/admin/leaderboard/challenge/",
        f"/admin/leaderboard/challenge/{challenge.pk}/change/",
        "/admin/leaderboard/submission/",
        "/admin/leaderboard/submission/?status__exact=scored",
        f"/admin/leaderboard/submission/{submission.pk}/change/",
        "/admin/leaderboard/run/?q=Entry",
        f"/admin/leaderboard/run/{submission.runs.first().pk}/change/",
        "/admin/leaderboard/team/",
        "/admin/leaderboard/report/",
        ADD_URL,
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
    page = client.get(f"/admin/leaderboard/challenge/{challenge.pk}/change/").content.decode()
    assert f"/c/{challenge.slug}/download/hidden_labels/" in page  # the read-only dataset inline links its files
    assert 'name="dataset-0-n_train"' not in page
    run_page = client.get(f"/admin/leaderboard/run/{submission.runs.first().pk}/change/").content.decode()
    assert 'name="test_score"' not in run_page  # read-only


@pytest.fixture
def host_and_challenge():
    host = make_user("hostess")
    challenge, _ = digits_challenge(host)
    team = team_personal_for(user=host)
    submission = Submission.objects.create(
        challenge=challenge,
        team=team,
        submitted_by=host,
        kind="predictions",
        method_name="Entry",
        status="scored",
        runs_expected=1,
    )
    Run.objects.create(
        submission=submission, index=0, status="succeeded", test_score=0.5, outcomes=Run.pack_outcomes([1, 0])
    )
    return challenge, submission


def test_admin_add_creates_challenge_with_dataset(client, staff_host, media):
    client.force_login(staff_host)
    assert 'type="file" name="dataset"' in client.get(ADD_URL).content.decode()
    response = client.post(ADD_URL, add_form_data(slug="admin-digits"))
    challenge = Challenge.objects.get(slug="admin-digits")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/leaderboard/challenge/{challenge.pk}/change/"
    assert list(challenge.hosts.all()) == [staff_host] and challenge.dataset.n_test == 30
    assert LogEntry.objects.filter(object_id=str(challenge.pk)).exists()
    assert len(media_files(media)) == 3
    assert client.get(response["Location"]).status_code == 200


def test_admin_add_rejects_bad_dataset_and_stores_nothing(client, staff_host, media):
    client.force_login(staff_host)
    response = client.post(ADD_URL, add_form_data(label_column="digit"))
    assert response.status_code == 200
    assert "digit" in " ".join(str(e) for e in response.context["form"].errors.values())
    assert "errornote" in response.content.decode()
    assert Challenge.objects.count() == 0 and media_files(media) == []


def test_admin_change_goes_through_challenge_update(client, admin_user, host_and_challenge):
    challenge, _ = host_and_challenge
    url = f"/admin/leaderboard/challenge/{challenge.pk}/change/"
    client.force_login(admin_user)
    page = client.get(url)
    assert page.context["adminform"].form.fields["master_seed"].disabled  # a submission exists
    data = change_form_data(page)
    response = client.post(
        url, {**data, "title": "Renamed", "closes_at": "2020-01-01T00:00", "opens_at": "2021-01-01T00:00"}
    )
    assert response.status_code == 200 and "closing date must come after" in response.content.decode()
    response = client.post(url, {**data, "title": "Renamed", "master_seed": 12345})
    assert response.status_code == 302, response.context["adminform"].form.errors
    challenge.refresh_from_db()
    assert challenge.title == "Renamed" and challenge.master_seed == 7


def test_the_direction_s_help_does_not_invite_an_override_the_service_refuses(client):
    """A host's review: the host form said "Leave at the default unless the metric's usual direction is wrong",
    but every direction that differs from the metric's is refused ("contradicts the metric")."""
    client.force_login(make_user("newhost"))
    page = client.get("/challenges/new/").content.decode()
    assert "usual direction is wrong" not in page
    assert "one that contradicts the metric is refused" in page


def test_admin_change_shows_service_errors_and_writes_nothing(client, admin_user):
    host = make_user("hostess")
    challenge, _ = digits_challenge(host)  # no submissions: every setting can change
    url = f"/admin/leaderboard/challenge/{challenge.pk}/change/"
    client.force_login(admin_user)
    data = change_form_data(client.get(url))
    response = client.post(url, {**data, "title": "Changed", "direction": "lower"})
    assert response.status_code == 200
    assert "contradicts the metric" in response.content.decode()
    challenge.refresh_from_db()
    assert challenge.title == "Digits test" and challenge.higher_is_better


def test_staff_host_sees_only_hosted_challenges(client, staff_host, host_and_challenge):
    challenge, submission = host_and_challenge
    client.force_login(staff_host)
    assert challenge.title not in client.get("/admin/leaderboard/challenge/").content.decode()
    assert client.get(f"/admin/leaderboard/challenge/{challenge.pk}/change/").status_code == 302  # not found → index
    assert "Entry" not in client.get("/admin/leaderboard/submission/").content.decode()
    challenge.hosts.add(staff_host)
    assert challenge.title in client.get("/admin/leaderboard/challenge/").content.decode()
    assert client.get(f"/admin/leaderboard/challenge/{challenge.pk}/change/").status_code == 200


def test_the_demo_host_edits_phases_in_the_admin(client):
    """The README: phases are added "on the host's phases page ... or the Phase rows of the challenge in the
    admin". The demo's ``host`` (staff with ``HOST_PERMISSIONS``) saw no Phase rows: it had no Phase permission."""
    from leaderboard.management.commands.demo import HOST_PERMISSIONS

    host = make_user("demohost")
    host.is_staff = True
    host.save()
    host.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="leaderboard", codename__in=HOST_PERMISSIONS)
    )
    challenge, _ = digits_challenge(host)
    client.force_login(host)
    page = client.get(f"/admin/leaderboard/challenge/{challenge.pk}/change/").content.decode()
    assert 'id="phases-group"' in page
    assert 'name="phases-0-name"' in page  # editable, not read-only
    assert 'name="phases-TOTAL_FORMS"' in page
