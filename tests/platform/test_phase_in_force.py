"""Issue 24: one rule decides whether a challenge is open, which phase is in force and which quota
applies (``selectors.phase_in_force``); the page, the API and the upload service all follow it, and
a challenge's dates and quotas live on its phases only."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import Challenge, Phase
from leaderboard.selectors import phase_in_force
from leaderboard.services.challenges import challenge_update
from leaderboard.services.errors import ServiceError
from leaderboard.services.phases import phase_create, phase_update

from .factories import PASSWORD, digits_challenge, label_predictions

pytestmark = pytest.mark.django_db


def _between_two_phases(host):
    """Development (10 a day) closed an hour ago; final (2 a day) opens in a day."""
    now = timezone.now().replace(second=0, microsecond=0)
    challenge, frame = digits_challenge(
        host, daily_quota=10, total_quota=50, opens_at=now - timedelta(days=3), closes_at=now - timedelta(hours=1)
    )
    phase_update(phase=challenge.phases.get(), user=host, name="development")
    final = phase_create(
        challenge=challenge,
        user=host,
        name="final",
        order=1,
        opens_at=now + timedelta(days=1),
        closes_at=now + timedelta(days=8),
        daily_quota=2,
        total_quota=6,
    )
    return challenge, frame, final


def _logged_in(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _dd(page: str, attribute: str) -> str:
    """The text of the element carrying ``attribute`` (e.g. ``data-quota``), tags stripped."""
    match = re.search(rf"<[^>]*\b{attribute}\b[^>]*>(.*?)</", page, re.DOTALL)
    assert match, attribute
    return " ".join(re.sub(r"<[^>]+>", "", match.group(1)).split())


def test_between_two_phases_page_api_and_upload_say_closed_with_the_next_phase(client, host, alice):
    challenge, frame, final = _between_two_phases(host)
    reason = f"The final phase opens at {final.opens_at:%Y-%m-%d %H:%M} UTC."

    page = _logged_in(client, alice).get(challenge.get_absolute_url()).content.decode()
    assert "data-closed" in page and "data-open" not in page
    assert _dd(page, "data-closed-reason") == f"This challenge does not accept submissions now: {reason}"
    assert _dd(page, "data-in-force") == f"final: {reason}"
    assert _dd(page, "data-quota") == "2 a day, 6 in total"

    api = APIClient()
    api.force_authenticate(alice)
    in_force = api.get(f"/api/challenges/{challenge.slug}/").json()["in_force"]
    assert (in_force["open"], in_force["upcoming"], in_force["phase"], in_force["reason"]) == (
        False,
        True,
        "final",
        reason,
    )
    assert (in_force["daily_quota"], in_force["total_quota"]) == (2, 6)
    assert in_force["opens_at"].startswith(final.opens_at.strftime("%Y-%m-%dT%H:%M"))

    upload = api.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "early", "files": [SimpleUploadedFile("p.csv", label_predictions(frame))]},
        format="multipart",
    )
    assert upload.status_code == 409 and upload.json()["detail"] == reason


def test_during_a_phase_the_page_and_api_show_that_phase_s_quota(client, host, alice):
    challenge, _, final = _between_two_phases(host)
    now = timezone.now()
    phase_update(phase=final, user=host, opens_at=now - timedelta(minutes=5))

    page = _logged_in(client, alice).get(challenge.get_absolute_url()).content.decode()
    assert "data-open" in page and "data-closed" not in page
    assert _dd(page, "data-quota") == "2 a day, 6 in total"
    assert _dd(page, "data-in-force") == "final"
    in_force = phase_in_force(challenge=challenge)
    assert in_force.open and in_force.phase == final and not in_force.upcoming and in_force.reason is None


def test_after_the_last_phase_the_rule_names_the_phase_that_closed_last(host):
    challenge, _, final = _between_two_phases(host)
    later = final.closes_at + timedelta(hours=1)
    in_force = phase_in_force(challenge=challenge, now=later)
    assert (in_force.open, in_force.upcoming, in_force.phase) == (False, False, final)
    assert in_force.reason == f"The final phase closed at {final.closes_at:%Y-%m-%d %H:%M} UTC."


def test_the_challenge_holds_no_dates_or_quotas_of_its_own(host):
    names = {field.name for field in Challenge._meta.get_fields()}
    assert not names & {"opens_at", "closes_at", "daily_quota", "total_quota"}
    challenge, _ = digits_challenge(host, daily_quota=4, total_quota=7)
    phase = challenge.phases.get()
    assert (phase.daily_quota, phase.total_quota) == (4, 7)


def test_the_challenge_s_dates_and_quotas_change_its_only_phase_and_are_refused_with_several(host):
    challenge, _ = digits_challenge(host, daily_quota=4)
    challenge_update(challenge=challenge, user=host, daily_quota=9, total_quota=0)
    assert challenge.phases.values_list("daily_quota", "total_quota").get() == (9, 0)
    later = timezone.now() + timedelta(days=1)
    challenge_update(challenge=challenge, user=host, closes_at=later)
    phase_create(challenge=challenge, user=host, name="final", order=1, opens_at=later)
    with pytest.raises(ServiceError, match="has 2 phases: set daily_quota on each phase") as refused:
        challenge_update(challenge=challenge, user=host, daily_quota=3)
    assert refused.value.field == "daily_quota"
    assert sorted(challenge.phases.values_list("daily_quota", flat=True)) == [5, 9]


def test_the_migration_moves_the_challenge_s_dates_and_quotas_into_phases(transactional_db):
    from django.db.migrations.executor import MigrationExecutor

    before = [("leaderboard", "0013_challenge_default_boo_n_3")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    user = apps.get_model("auth", "User").objects.create(username="old-host")
    OldChallenge, OldPhase = apps.get_model("leaderboard", "Challenge"), apps.get_model("leaderboard", "Phase")
    t0 = timezone.now().replace(microsecond=0)
    fields = {"created_by": user, "metric": "accuracy", "higher_is_better": True}
    OldChallenge.objects.create(
        slug="bare",
        title="No phase",
        daily_quota=3,
        total_quota=9,
        opens_at=t0,
        closes_at=t0 + timedelta(days=1),
        allow_recipes=True,
        **fields,
    )
    framed = OldChallenge.objects.create(
        slug="framed", title="Window", opens_at=t0, closes_at=t0 + timedelta(days=2), **fields
    )
    OldPhase.objects.create(challenge=framed, name="dev", order=0, closes_at=t0 + timedelta(days=1))
    OldPhase.objects.create(challenge=framed, name="final", order=1, opens_at=t0 + timedelta(days=1))
    OldPhase.objects.create(challenge=framed, name="late", order=2, opens_at=t0 + timedelta(days=5))

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    bare = Phase.objects.get(challenge__slug="bare")
    assert (bare.name, bare.daily_quota, bare.total_quota, bare.opens_at, bare.closes_at, bare.allow_recipes) == (
        "main",
        3,
        9,
        t0,
        t0 + timedelta(days=1),
        True,
    )
    windows = {p.name: (p.opens_at, p.closes_at) for p in Phase.objects.filter(challenge__slug="framed")}
    assert windows["dev"] == (t0, t0 + timedelta(days=1))
    assert windows["final"] == (t0 + timedelta(days=1), t0 + timedelta(days=2))
    assert windows["late"] == (t0 + timedelta(days=5), t0 + timedelta(days=5, microseconds=1))
    assert not phase_in_force(challenge=Challenge.objects.get(slug="framed"), now=t0 + timedelta(days=6)).open
