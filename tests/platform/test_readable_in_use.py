"""The readability rule (``selectors.submissions_readable``) in ordinary use (a reviewer's findings): no page or API
answer names or links a submission its reader then gets 404 for, and no legitimate reader is refused: the revealed
private board's entries, the versions chosen for it, a suite's entries, the board's links."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Run, Submission

from .factories import PASSWORD, digits_challenge, stored_recipe

pytestmark = pytest.mark.django_db


def logged_in(user) -> APIClient:
    client = APIClient()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _entry(challenge, user, name, scores, *, status="scored", selected=False, queued_runs=0):
    """A recipe entry with succeeded runs scored on both parts (plus ``queued_runs`` still waiting)."""
    sub = stored_recipe(challenge, user, name, runs_expected=len(scores) + queued_runs, scores=scores)
    for run in sub.runs.all():
        run.public_score = run.test_score
        run.private_score = run.test_score
        run.save(update_fields=["public_score", "private_score"])
    for i in range(len(scores), len(scores) + queued_runs):
        Run.objects.create(submission=sub, index=i, status="queued", seeds={"split": i}, split_id=f"s{i}")
    Submission.objects.filter(pk=sub.pk).update(status=status, selected_for_final=selected)
    sub.refresh_from_db()
    return sub


def _revealed_board_with_a_private_only_running_entry(host, alice, bob):
    """Bob chose two versions of his method for the private board (final_entries = 2, the default): the public
    board shows the later one (board_version ``selected``), the private board both. The earlier one still has a
    run queued at the reveal (a recipe's k runs take hours; the reveal closes the phase): status ``running``."""
    from leaderboard.services.challenges import challenge_reveal
    from leaderboard.services.reports import report_current, report_recompute

    challenge, _ = digits_challenge(host, title="Reveal use", public_fraction=0.5)
    early = _entry(challenge, bob, "bob method", [0.91, 0.92, 0.93], status="running", selected=True, queued_runs=1)
    late = _entry(challenge, bob, "bob method", [0.81, 0.82, 0.83, 0.84], selected=True)
    mine = _entry(challenge, alice, "alice method", [0.7, 0.71, 0.72, 0.73])
    report_recompute(challenge_id=challenge.pk, force=True)
    challenge_reveal(challenge=challenge, user=host)
    challenge.refresh_from_db()
    public = {row["submission_id"] for row in report_current(challenge=challenge).data["entries"]}
    private = {row["submission_id"] for row in report_current(challenge=challenge, board="private").data["entries"]}
    assert early.pk in private and early.pk not in public and late.pk in public, (public, private)
    return challenge, early, late, mine


def test_after_the_reveal_every_entry_of_the_private_board_opens_for_its_readers(host, alice, bob):
    """The private board, revealed, lists bob's earlier chosen version with its runs and scores (API and page):
    its submission page, the compare API and page, its history and the private board's runs export refuse it."""
    challenge, early, late, mine = _revealed_board_with_a_private_only_running_entry(host, alice, bob)
    refused = {}
    for who, reader in (("alice", logged_in(alice)), ("anonymous", APIClient())):
        board = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/", {"board": "private", "format": "json"})
        assert board.status_code == 200 and str(early.pk) in board.content.decode()  # the board names it
        answers = {
            "submission api": reader.get(f"/api/submissions/{early.pk}/").status_code,
            "submission page": reader.get(f"/submissions/{early.pk}/").status_code,
            "compare api": reader.get(
                f"/api/challenges/{challenge.slug}/compare/", {"a": early.pk, "b": mine.pk, "board": "private"}
            ).status_code,
            "compare page": reader.get(
                f"/c/{challenge.slug}/compare/", {"a": early.pk, "b": mine.pk, "board": "private"}
            ).status_code,
            "history": reader.get(f"/c/{challenge.slug}/history/", {"entry": early.pk, "board": "private"}).status_code,
        }
        runs = reader.get(f"/api/challenges/{challenge.slug}/runs/", {"board": "private"}).json()["results"]
        answers["runs export has it"] = early.pk in {run["submission"] for run in runs}
        refused[who] = {k: v for k, v in answers.items() if v not in (200, True)}
    assert refused == {"alice": {}, "anonymous": {}}, repr(refused)


def test_after_the_reveal_the_versions_chosen_for_the_private_board_are_shown(host, alice, bob):
    """``selected_for_final`` is 'the team's own until the private board shows them' (serializers.py): after the
    reveal the private board shows them, yet the API and the versions list still hide which were chosen."""
    from leaderboard.services.challenges import challenge_reveal
    from leaderboard.services.reports import report_recompute

    challenge, _ = digits_challenge(host, title="Chosen shown", public_fraction=0.5)
    first = _entry(challenge, bob, "bob method", [0.91, 0.92, 0.93], selected=True)
    _entry(challenge, bob, "bob method", [0.81, 0.82, 0.83])
    report_recompute(challenge_id=challenge.pk, force=True)
    challenge_reveal(challenge=challenge, user=host)
    reader = logged_in(alice)
    data = reader.get(f"/api/submissions/{first.pk}/").json()
    page = reader.get(f"/submissions/{first.pk}/").content.decode()
    assert "selected_for_final" in data and "chosen for the private board" in page, sorted(data)


def test_a_suite_reads_and_names_only_submissions_its_readers_may_open(host, alice, bob):
    """A suite's entry reads the team's *latest* submission on each task (any with a succeeded run); on a task whose
    public board shows the selected version, bob's newer version still running is on no board and 404 to alice,
    yet the suite names it (and aggregates its partial runs)."""
    from leaderboard.services.suites import suite_create

    first, _ = digits_challenge(host, title="Suite task one")
    second, _ = digits_challenge(host, title="Suite task two")
    from leaderboard.services.reports import report_recompute

    for task in (first, second):
        _entry(task, alice, "shared", [0.7, 0.71, 0.72])
    _entry(first, bob, "shared", [0.8, 0.81, 0.82], selected=True)
    newer = _entry(first, bob, "shared", [0.95], status="running", queued_runs=2)
    _entry(second, bob, "shared", [0.8, 0.81, 0.82])
    for task in (first, second):
        report_recompute(challenge_id=task.pk, force=True)
    suite = suite_create(created_by=host, title="Two digits", challenges=[first, second])
    reader = logged_in(alice)
    board = reader.get(f"/api/suites/{suite.slug}/").json()
    named = {sid for entry in board["entries"] for sid in entry["submissions"].values()}
    opened = reader.get(f"/api/submissions/{newer.pk}/").status_code
    assert not (newer.pk in named and opened == 404), (sorted(named), opened)


def test_the_board_does_not_link_a_row_a_host_hid_since_it_was_stored(host, alice, bob):
    """Until the debounced recomputation, the stored board keeps the row of an entry a host just hid: the page
    links it (``presenters._entry_for_page`` links every *scored* row), and the link answers 404."""
    from leaderboard.services.moderation import submission_moderate
    from leaderboard.services.reports import report_recompute

    challenge, _ = digits_challenge(host, title="Board links")
    secret = _entry(challenge, bob, "bob secret", [0.81, 0.82, 0.83])
    _entry(challenge, alice, "alice", [0.7, 0.71, 0.72])
    report_recompute(challenge_id=challenge.pk, force=True)
    submission_moderate(submission=secret, user=host, state="hidden", reason="copied code")
    reader = logged_in(alice)
    page = reader.get(f"/c/{challenge.slug}/").content.decode()
    link = f'href="/submissions/{secret.pk}/"'
    opened = reader.get(f"/submissions/{secret.pk}/").status_code
    assert not (link in page and opened == 404), opened


def test_the_board_links_a_running_entry_its_readers_may_open(host, alice, bob):
    """The rule opens an entry still running that the stored public board shows; the board names it unlinked."""
    from leaderboard.services.reports import report_recompute

    challenge, _ = digits_challenge(host, title="Running links")
    running = _entry(challenge, bob, "bob running", [0.81, 0.82], status="running", queued_runs=1)
    _entry(challenge, alice, "alice", [0.7, 0.71, 0.72])
    report_recompute(challenge_id=challenge.pk, force=True)
    reader = logged_in(alice)
    assert reader.get(f"/submissions/{running.pk}/").status_code == 200
    page = reader.get(f"/c/{challenge.slug}/").content.decode()
    assert f'href="/submissions/{running.pk}/"' in page
