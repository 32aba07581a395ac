"""A recomputation that fails keeps the stored board and says so, instead of a board that silently stops
updating (found by a new host: a statistics error froze a board, then a settings change took it down with
a 400 for every reader). The failure is injected into ``build_report``; the report it leaves is the real one."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

import leaderboard.services.reports as reports
from leaderboard.models import Challenge, Report
from leaderboard.services.errors import ServiceError
from leaderboard.services.reports import report_recompute

from .factories import make_user
from .test_leaderboard_pages import known_board, write_entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def users():
    return [make_user("alice"), make_user("bob")]


def board(challenge) -> dict:
    response = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_failed_update_keeps_the_board_and_says_why(host, users, monkeypatch):
    challenge, _ = known_board(host, users)
    before = board(challenge)
    assert before["recompute_failure"] is None

    def fail(*args, **kwargs):
        raise ValueError("The function value at x=0.999999999999 is NaN; solver cannot continue.")

    monkeypatch.setattr(reports, "build_report", fail)
    late = write_entry(challenge, users[1], "Late", [0.9] * 10)
    with pytest.raises(ServiceError, match="cannot be computed: The function value"):
        report_recompute(challenge_id=challenge.pk)  # what the worker runs: it fails, and says so in its log
    stored = Report.objects.get(challenge=challenge)
    assert "cannot be computed" in stored.recompute_failure and stored.failed_at is not None
    after = board(challenge)
    assert [row["submission_id"] for row in after["entries"]] == [row["submission_id"] for row in before["entries"]]
    assert late.pk not in {row["submission_id"] for row in after["entries"]}
    assert "cannot be computed" in after["recompute_failure"]["message"] and after["recompute_failure"]["at"]
    page = APIClient().get(challenge.get_absolute_url()).content.decode()
    assert "data-recompute-failure" in page and "could not be brought up to date" in page


def test_the_next_successful_update_clears_the_failure(host, users, monkeypatch):
    challenge, _ = known_board(host, users)
    board(challenge)
    original = reports.build_report

    def fail(*args, **kwargs):
        raise ValueError("numerical trouble")

    monkeypatch.setattr(reports, "build_report", fail)
    late = write_entry(challenge, users[1], "Late", [0.9] * 10)
    with pytest.raises(ServiceError):
        report_recompute(challenge_id=challenge.pk)
    assert board(challenge)["recompute_failure"] is not None
    monkeypatch.setattr(reports, "build_report", original)
    report_recompute(challenge_id=challenge.pk)
    repaired = board(challenge)
    assert repaired["recompute_failure"] is None and late.pk in {row["submission_id"] for row in repaired["entries"]}
    assert "data-recompute-failure" not in APIClient().get(challenge.get_absolute_url()).content.decode()


def test_a_settings_change_that_cannot_be_computed_serves_the_last_board_marked(host, users):
    challenge, _ = known_board(host, users)
    before = board(challenge)
    Challenge.objects.filter(pk=challenge.pk).update(gamma=1.0)  # the decision rule needs gamma < 1
    after = board(challenge)  # was a 400 for every reader
    assert after["entries"] == before["entries"]
    assert "gamma" in after["recompute_failure"]["message"]
    assert "data-recompute-failure" in APIClient().get(challenge.get_absolute_url()).content.decode()


def test_a_board_never_computed_still_answers_the_error(host, users):
    challenge, _ = known_board(host, users)
    Challenge.objects.filter(pk=challenge.pk).update(gamma=1.0)
    response = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/")
    assert response.status_code == 400 and "cannot be computed" in response.json()["detail"]


def test_an_internal_error_is_named_by_its_type_only(host, users, monkeypatch):
    challenge, _ = known_board(host, users)
    board(challenge)

    def fail(*args, **kwargs):
        raise KeyError("a private label: 7")

    monkeypatch.setattr(reports, "build_report", fail)
    write_entry(challenge, users[1], "Late", [0.9] * 10)
    with pytest.raises(KeyError):
        report_recompute(challenge_id=challenge.pk)
    failure = board(challenge)["recompute_failure"]["message"]
    assert failure == "an internal error (KeyError)" and "private" not in failure


def test_an_internal_error_after_a_settings_change_serves_the_last_board_and_is_not_retried_per_read(
    host, users, monkeypatch
):
    """Review: a KeyError (not a service error) on a settings change answered 500 to every reader, and every page
    view rebuilt the report synchronously, failing again."""
    challenge, _ = known_board(host, users)
    before = board(challenge)
    builds = []

    def fail(*args, **kwargs):
        builds.append(1)
        raise KeyError("boom")

    monkeypatch.setattr(reports, "build_report", fail)
    Challenge.objects.filter(pk=challenge.pk).update(gamma=0.6)
    after = board(challenge)  # the first read tries once, fails, and serves the last board
    assert after["entries"] == before["entries"] and after["recompute_failure"]["message"].endswith("(KeyError)")
    assert len(builds) == 1
    for _ in range(3):
        assert APIClient().get(challenge.get_absolute_url()).status_code == 200
        assert APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/?format=csv").status_code == 200
    assert len(builds) == 1  # not retried per read under the settings it failed with
    Challenge.objects.filter(pk=challenge.pk).update(gamma=0.7)  # other settings: tried again, once
    board(challenge)
    assert len(builds) == 2


def test_a_failed_public_recomputation_marks_the_private_board_too(host, users, monkeypatch):
    """Review: the private report was left stale and unmarked when the public one failed before it."""
    from .factories import digits_challenge

    challenge, _ = digits_challenge(host, title="Two boards", public_fraction=0.5, k_runs=10, bootstrap_resamples=200)
    for user, base in zip(users, (0.9, 0.8)):
        entry = write_entry(challenge, user, f"m{base}", [base] * 10)
        entry.runs.update(public_score=base, private_score=base)
    report_recompute(challenge_id=challenge.pk)
    host_client = APIClient()
    host_client.force_login(host)
    private = f"/api/challenges/{challenge.slug}/leaderboard/?board=private"
    assert host_client.get(private).json()["recompute_failure"] is None

    def fail(*args, **kwargs):
        raise ValueError("numerical trouble")

    monkeypatch.setattr(reports, "build_report", fail)
    write_entry(challenge, users[1], "Late", [0.7] * 10).runs.update(public_score=0.7, private_score=0.7)
    with pytest.raises(ServiceError):
        report_recompute(challenge_id=challenge.pk)
    assert "numerical trouble" in host_client.get(private).json()["recompute_failure"]["message"]
    assert "numerical trouble" in board(challenge)["recompute_failure"]["message"]
