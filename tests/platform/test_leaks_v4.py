"""Counts that told a contestant about other teams' submissions no one else may open (a fourth attack).

* **An entry's version count on the board.** Each row of the board says which version of its entry (a team's method
  name) it shows, "v1 of 3" (``version``, ``versions`` in the JSON and the CSV, the badge on the page). The count was
  every submission of the entry not cancelled: the team's next version still queued or running, one that failed,
  one a host hid. Those are answered 404 to anyone else (``selectors.submissions_readable``), yet the row of the
  version the board shows counted them, one recomputation after they landed: a contestant read when a rival tried
  again and how often it failed. A row now counts the versions anyone may open (scored, not moderated) and itself.
  And a version a host hid took its entry off the board when it was the latest (the board picked it, then left it
  out as moderated): the entry vanished, telling that a host had hidden its newest version. The board now shows the
  latest version no host moderated.
* **The home page's entry count.** It counted every team's method with a succeeded run, entries a host hid or
  disqualified too, which are on neither board: the home page said 2 where the board listed 1, and told that a host
  had hidden an entry. It counts as the board does.
"""

from __future__ import annotations

import io
from csv import DictReader

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Run, Submission
from leaderboard.services.challenges import challenge_reveal
from leaderboard.services.lifecycle import runs_changed
from leaderboard.services.moderation import submission_moderate
from leaderboard.services.reports import report_recompute
from leaderboard.services.submissions import submission_cancel

from .factories import digits_challenge, stored_recipe

pytestmark = pytest.mark.django_db


def _board_row(challenge, submission_id: int) -> dict:
    rows = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"]
    return next(row for row in rows if row["submission_id"] == submission_id)


def test_a_row_counts_no_version_its_readers_may_not_open(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Versions counted")
    first = stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[0.81])
    report_recompute(challenge_id=challenge.pk, force=True)
    before = _board_row(challenge, first.pk)
    assert (before["version"], before["versions"]) == (1, 1)

    # bob's next tries under the same name: one failed (every run), one still queued
    failed = stored_recipe(challenge, bob, "resnet", runs_expected=1)
    Submission.objects.filter(pk=failed.pk).update(status="failed")
    Run.objects.create(submission=failed, index=0, status="failed", seeds={"split": 0}, error_message="oom")
    queued = stored_recipe(challenge, bob, "resnet", runs_expected=1)
    Submission.objects.filter(pk=queued.pk).update(status="queued")
    report_recompute(challenge_id=challenge.pk, force=True)
    tried = _board_row(challenge, first.pk)
    assert (tried["version"], tried["versions"]) == (1, 1), (tried["version"], tried["versions"])  # was 1 of 3

    # and a scored one that a host hid: the board shows the version before it (the entry vanished)
    hidden = stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[0.95])
    submission_moderate(submission=hidden, user=host, state="hidden", reason="leaked labels")
    report_recompute(challenge_id=challenge.pk, force=True)
    for pk in (failed.pk, hidden.pk, queued.pk):  # none of them alice's to open ...
        assert APIClient().get(f"/api/submissions/{pk}/").status_code == 404
    after = _board_row(challenge, first.pk)
    # ... nor to count: the row reads as it did
    assert (after["version"], after["versions"]) == (1, 1), (after["version"], after["versions"])
    csv = b"".join(APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/?format=csv").streaming_content)
    [exported] = list(DictReader(io.StringIO(csv.decode())))
    assert (exported["version"], exported["versions"]) == ("1", "1"), exported
    page = Client().get(f"/c/{challenge.slug}/").content.decode()
    assert "data-version" not in page  # no "v1 of 4" badge

    # a scored version anyone may open is counted, and the board shows it, the latest
    second = stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[0.83])
    report_recompute(challenge_id=challenge.pk, force=True)
    shown = _board_row(challenge, second.pk)
    assert (shown["version"], shown["versions"]) == (2, 2)
    assert "v2 of 2" in Client().get(f"/c/{challenge.slug}/").content.decode()


def test_the_home_page_counts_the_entries_the_board_lists(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Counted at home")
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    secret = stored_recipe(challenge, bob, "hidden by the host", runs_expected=1, scores=[0.8])
    submission_moderate(submission=secret, user=host, state="hidden", reason="copied code")
    report_recompute(challenge_id=challenge.pk, force=True)
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert board["paging"]["total"] == 1
    reader = Client()
    reader.force_login(alice)
    counted = {c.slug: c.entries for c in reader.get("/").context["challenges"]}
    assert counted[challenge.slug] == 1, counted  # was 2: the hidden entry counted


def test_a_team_s_final_choice_is_not_read_off_the_public_board(host, alice, bob):
    """Under ``board_version`` ``selected`` (the default) the public board showed the version a team chose for the
    private board: its row (version k of n, its score) told everyone the choice the API keeps to the team. Until the
    reveal the public board shows each entry's latest version, and a choice re-stamps nothing a reader reads; after
    the reveal (the choices are public) it shows the chosen one."""
    challenge, _ = digits_challenge(host, title="Finals kept", public_fraction=0.5)
    v1, v2 = (stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[s]) for s in (0.71, 0.72))
    for run in Run.objects.filter(submission__challenge=challenge):
        Run.objects.filter(pk=run.pk).update(public_score=run.test_score, private_score=run.test_score)
    report_recompute(challenge_id=challenge.pk, force=True)
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    before = APIClient().get(url)
    bobs = APIClient()
    bobs.force_authenticate(bob)
    assert bobs.post(f"/api/submissions/{v1.pk}/select/", {"selected": True}, format="json").status_code == 200
    assert "selected_for_final" not in APIClient().get(f"/api/submissions/{v1.pk}/").json()  # kept to the team
    report_recompute(challenge_id=challenge.pk)  # as the worker does after the request
    after = APIClient().get(url)
    shown = [row["submission_id"] for row in after.json()["entries"]]
    assert shown == [row["submission_id"] for row in before.json()["entries"]] == [v2.pk]  # was [v1]
    assert after.json()["computed_at"] == before.json()["computed_at"]  # nor does the board tell when a team chose
    assert after["ETag"] == before["ETag"]
    host_view = APIClient()
    host_view.force_authenticate(host)
    private = host_view.get(url + "?board=private").json()["entries"]
    assert [row["submission_id"] for row in private] == [v1.pk]  # the choice reaches the private board

    challenge_reveal(challenge=challenge, user=host)
    report_recompute(challenge_id=challenge.pk)
    revealed = APIClient().get(url).json()["entries"]
    assert [row["submission_id"] for row in revealed] == [v1.pk]  # the host's setting, once the choice is public


def test_a_phase_that_reveals_on_closing_puts_the_choices_on_the_public_board(host, alice, bob):
    """A private board revealed by its last phase closing (no host acted): the janitor's pass that records the
    reveal asks for the boards, and the public board then shows the chosen version, as after a host's reveal."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import Report
    from leaderboard.services.notifications import reveals_record_due
    from leaderboard.services.phases import phase_update
    from leaderboard.services.submissions import submission_select_final

    challenge, _ = digits_challenge(host, title="Revealed by its phase", public_fraction=0.5)
    v1, v2 = (stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[s]) for s in (0.71, 0.72))
    for run in Run.objects.filter(submission__challenge=challenge):
        Run.objects.filter(pk=run.pk).update(public_score=run.test_score, private_score=run.test_score)
    submission_select_final(submission=v1, user=bob)
    report_recompute(challenge_id=challenge.pk, force=True)
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    assert [row["submission_id"] for row in APIClient().get(url).json()["entries"]] == [v2.pk]
    now = timezone.now()
    phase = challenge.phases.get()
    phase_update(phase=phase, user=host, opens_at=now - timedelta(days=2), closes_at=now, auto_reveal=True)
    Report.objects.filter(challenge=challenge).update(recompute_pending=False)
    assert reveals_record_due() == 1
    assert Report.objects.get(challenge=challenge).recompute_pending  # asked, as a host's reveal asks
    report_recompute(challenge_id=challenge.pk)
    assert [row["submission_id"] for row in APIClient().get(url).json()["entries"]] == [v1.pk]


def test_a_rival_s_failed_submission_moves_nothing_a_reader_reads_on_the_board(host, alice, bob):
    """A board was recomputed whenever any submission or run changed (its inputs version hashed them all) and
    published ``computed_at``, ``recompute_pending`` and the ETag of its bytes: a rival's try
    failing or cancelled before any score, which nobody else may open and which moves no number, moved them, so a
    reader watching the board read when others' tries failed. A board's inputs are now what it can read."""
    challenge, _ = digits_challenge(host, title="Quiet board")
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    report_recompute(challenge_id=challenge.pk, force=True)
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    before = APIClient().get(url)

    failed = stored_recipe(challenge, bob, "try", runs_expected=1)
    Submission.objects.filter(pk=failed.pk).update(status="running")
    Run.objects.create(submission=failed, index=0, status="failed", seeds={"split": 0}, error_message="oom")
    runs_changed(submission_id=failed.pk)  # what the worker does after the run's result
    assert Submission.objects.get(pk=failed.pk).status == "failed"
    assert APIClient().get(url).json()["recompute_pending"] is False  # no request: nothing a board reads moved
    report_recompute(challenge_id=challenge.pk)  # and were one made (another change, the janitor) ...
    after = APIClient().get(url)
    assert APIClient().get(f"/api/submissions/{failed.pk}/").status_code == 404
    assert after.json()["entries"] == before.json()["entries"]  # ... no number moved ...
    assert after.json()["computed_at"] == before.json()["computed_at"]  # ... and the board is not re-stamped
    assert after["ETag"] == before["ETag"]

    cancelled = stored_recipe(challenge, bob, "another try", runs_expected=1)
    Submission.objects.filter(pk=cancelled.pk).update(status="queued")
    submission_cancel(submission=cancelled, user=bob)
    assert APIClient().get(url).json()["recompute_pending"] is False

    scored = stored_recipe(challenge, bob, "a third try", runs_expected=1, scores=[0.8])
    runs_changed(submission_id=scored.pk)  # a board reads this one: asked, and the board moves
    assert APIClient().get(url).json()["recompute_pending"] is True
    report_recompute(challenge_id=challenge.pk)
    moved = APIClient().get(url)
    assert moved.json()["computed_at"] != before.json()["computed_at"]
    assert scored.pk in [row["submission_id"] for row in moved.json()["entries"]]


def test_a_row_s_version_numbers_take_linear_time_in_its_entry_s_versions():
    """``published_version_numbers`` is run at every board publish: for each version it listed the entry's other
    versions again (Θ(k²) for an entry of k versions: 4,000 versions of one method, possible with a daily quota
    of 0, took 3 s per publish, 20,000 about 80 s). The numbers are the same, counted in one pass."""
    import time

    from leaderboard.services.entries import Version, published_version_numbers

    def version(i: int, listed: bool) -> Version:
        return Version(i, 1, "m", i, False, False, ((), ()), listed=listed)

    small = {i: version(i, listed=i not in (2, 4)) for i in range(1, 6)}  # 2 failed, 4 hidden: each counts itself
    assert published_version_numbers(small) == {1: (1, 3), 2: (2, 4), 3: (2, 3), 4: (3, 4), 5: (3, 3)}
    many = {i: version(i, listed=i % 3 != 0) for i in range(1, 20_001)}
    start = time.perf_counter()
    numbers = published_version_numbers(many)
    elapsed = time.perf_counter() - start
    assert numbers[1] == (1, 13_334) and numbers[3] == (3, 13_335) and numbers[20_000] == (13_334, 13_334)
    assert elapsed < 5, f"{elapsed:.1f} s for 20,000 versions of one entry"


def test_the_public_board_s_inputs_are_the_columns_it_reads(host, alice, bob):
    """The public board's inputs version hashed every column of every readable run: a rival's next run starting
    (queued -> running) or a change of a run's private-rows score (a host's correction of private labels) moved it,
    and re-stamped the public board (``computed_at``, the ETag) at its next recomputation, though no public number
    reads them. It hashes what the public board reads: whether a run succeeded, its public score, its validation and
    secondary scores; the private board's hashes every column."""
    from leaderboard.services.reports import report_inputs_version

    challenge, _ = digits_challenge(host, title="Columns read", public_fraction=0.5)
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    rival = stored_recipe(challenge, bob, "two runs", runs_expected=2, scores=[0.8])
    Submission.objects.filter(pk=rival.pk).update(status="running")
    second = Run.objects.create(submission=rival, index=1, status="queued", seeds={"split": 1})
    for run in Run.objects.filter(submission__challenge=challenge, status="succeeded"):
        Run.objects.filter(pk=run.pk).update(public_score=run.test_score, private_score=run.test_score)
    public, private = (report_inputs_version(challenge=challenge, board=board) for board in ("public", "private"))

    Run.objects.filter(pk=second.pk).update(status="running")  # the rival's next run starts
    assert report_inputs_version(challenge=challenge, board="public") == public
    first = Run.objects.get(submission=rival, index=0)
    Run.objects.filter(pk=first.pk).update(private_score=0.1)  # a private-rows correction
    assert report_inputs_version(challenge=challenge, board="public") == public
    assert report_inputs_version(challenge=challenge, board="private") != private

    Run.objects.filter(pk=first.pk).update(public_score=0.2)  # what the public board reads moves it
    assert report_inputs_version(challenge=challenge, board="public") != public
