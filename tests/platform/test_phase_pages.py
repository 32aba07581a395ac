"""Issue 26: phases on the web and in the admin. A host adds and changes phases on the challenge's
phases page and in the admin's Phase inline; both go through ``phase_create``/``phase_update`` (ordered
after the last, audit-logged), and a refusal (an overlapping window) is shown on the form with nothing
stored."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from leaderboard.models import AuditEntry, Phase

from .factories import days_ahead, digits_challenge, make_user
from .test_admin import change_form_data

pytestmark = pytest.mark.django_db


def _local(value) -> str:
    return f"{value:%Y-%m-%dT%H:%M}"


def _phase_post(prefix: str, target: str, **values) -> dict:
    data = {
        "phase": target,
        f"{prefix}-name": values.pop("name"),
        f"{prefix}-daily_quota": 5,
        f"{prefix}-total_quota": 50,
        f"{prefix}-daily_file_quota": 0,
        f"{prefix}-total_file_quota": 0,
        f"{prefix}-allow_predictions": "on",
        f"{prefix}-allow_recipes": "on",
        f"{prefix}-test_rows": "all",
    }
    data.update({f"{prefix}-{key}": value for key, value in values.items()})
    return data


def test_a_host_adds_and_changes_phases_on_the_web(client, host):
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    url = f"/c/{challenge.slug}/phases/"
    client.force_login(host)
    assert f'href="{url}"' in client.get(f"/c/{challenge.slug}/edit/").content.decode()
    page = client.get(url).content.decode()
    assert 'data-phase="main"' in page and "Add a phase" in page
    added = client.post(
        url,
        _phase_post(
            "new", "new", name="final", opens_at=_local(days_ahead(3)), closes_at=_local(days_ahead(10)), total_quota=2
        ),
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    final = challenge.phases.get(name="final")
    assert (final.order, final.total_quota, final.closes_at) == (1, 2, days_ahead(10))
    assert AuditEntry.objects.filter(challenge=challenge, action="phase_created").count() == 1
    changed = client.post(
        url,
        _phase_post(
            f"p{final.pk}",
            str(final.pk),
            name="final",
            order=1,
            opens_at=_local(days_ahead(3)),
            closes_at=_local(days_ahead(12)),
            total_quota=3,
        ),
    )
    assert changed.status_code == 302
    final.refresh_from_db()
    assert (final.total_quota, final.closes_at) == (3, days_ahead(12))
    entry = AuditEntry.objects.filter(challenge=challenge, action="phase_changed").latest("id")
    assert "total_quota" in str(entry.details) and "2" in str(entry.details)  # the old value is kept


def test_an_overlapping_phase_is_refused_on_the_form_and_nothing_is_stored(client, host):
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    client.force_login(host)
    response = client.post(
        f"/c/{challenge.slug}/phases/",
        _phase_post("new", "new", name="final", opens_at=_local(days_ahead(2)), closes_at=_local(days_ahead(9))),
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "overlaps the main phase" in page
    assert list(challenge.phases.values_list("name", flat=True)) == ["main"]


def test_only_hosts_see_the_phases_page(client, host):
    challenge, _ = digits_challenge(host)
    client.force_login(make_user("stranger"))
    assert client.get(f"/c/{challenge.slug}/phases/").status_code == 403
    assert client.post(f"/c/{challenge.slug}/phases/", _phase_post("new", "new", name="x")).status_code == 403
    assert challenge.phases.count() == 1


def test_the_admin_adds_a_phase_through_the_service_and_shows_its_refusal(client, host):
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    admin = User.objects.create_superuser("root", "root@example.org", "root-password-1")
    client.force_login(admin)
    url = f"/admin/leaderboard/challenge/{challenge.pk}/change/"
    page = client.get(url)
    assert 'name="phases-0-name"' in page.content.decode()
    data = change_form_data(page)
    data["phases-TOTAL_FORMS"] = "2"
    overlap = {
        "phases-1-name": "final",
        "phases-1-opens_at": _local(days_ahead(1)),
        "phases-1-closes_at": _local(days_ahead(9)),
        "phases-1-daily_quota": 5,
        "phases-1-total_quota": 50,
        "phases-1-daily_file_quota": 0,
        "phases-1-total_file_quota": 0,
        "phases-1-allow_predictions": "on",
        "phases-1-allow_recipes": "on",
        "phases-1-test_rows": "all",
        "phases-1-challenge": challenge.pk,
    }
    refused = client.post(url, {**data, **overlap})
    assert refused.status_code == 200 and "overlaps the main phase" in refused.content.decode()
    assert Phase.objects.filter(challenge=challenge).count() == 1
    saved = client.post(url, {**data, **overlap, "phases-1-opens_at": _local(days_ahead(3))})
    assert saved.status_code == 302, saved.context and saved.context["errors"]
    final = Phase.objects.get(challenge=challenge, name="final")
    assert final.order == 1 and final.opens_at == days_ahead(3)
    assert AuditEntry.objects.filter(challenge=challenge, action="phase_created", actor=admin).exists()


def test_a_new_phase_takes_the_challenge_s_kinds(client, host):
    """Found by a new host: on a predictions-only challenge a phase added through the API without allow_recipes
    said it took recipes, and the web form's box was ticked."""
    from .test_api import client_for

    challenge, _ = digits_challenge(host, closes_at=days_ahead(3), allow_recipes=False)
    assert (challenge.allow_predictions, challenge.allow_recipes) == (True, False)
    client.force_login(host)
    page = client.get(f"/c/{challenge.slug}/phases/").content.decode()
    box = page[page.index('name="new-allow_recipes"') :].split(">")[0]  # the new phase's box
    assert "checked" not in box and "checked" in page[page.index('name="new-allow_predictions"') :].split(">")[0]
    answer = client_for(host).post(
        f"/api/challenges/{challenge.slug}/phases/",
        {"name": "final", "opens_at": days_ahead(3).isoformat(), "closes_at": days_ahead(9).isoformat()},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert (answer.json()["allow_predictions"], answer.json()["allow_recipes"]) == (True, False)


def test_the_status_says_the_closing_time(client, host):
    """Found by a new host: 'open until 2026-11-29' for a phase closing minutes later; the rules say the time."""
    challenge, _ = digits_challenge(host, closes_at=days_ahead(3))
    page = client.get(challenge.get_absolute_url()).content.decode()
    closes = challenge.phases.get().closes_at
    assert f"open</span> until {closes:%Y-%m-%d %H:%M} UTC" in page
