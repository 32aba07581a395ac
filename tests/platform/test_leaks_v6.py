"""What others did, read off the public board's stamps (a sixth attack: timing and change oracles).

A reader polls ``GET /api/challenges/{slug}/leaderboard/`` and compares ``recompute_pending``, ``computed_at`` and the
ETag before and after a rival's action that nobody else may see. Each action here moved one of them while no number
of the public board moved:

* **A team's final choice** asked for a recomputation through the public board's own flag, which the board publishes
  as ``recompute_pending`` ("New runs have arrived") for the debounce window: a poller read when a team chose, where
  the choice itself is kept to the team until the reveal. Only the private board reads it: the request is now the
  private board's (``services.reports.report_request(board=...)``), and the janitor still sends it again if lost.
* **A host's moderation of a rival's submission no board reads** (queued, or failed before any score) flipped the
  same flag.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import PrivateReport, Report, ReportLease, Run, Submission
from leaderboard.services.moderation import submission_moderate, team_moderate
from leaderboard.services.reports import report_recompute, reports_lost

from .factories import digits_challenge, stored_recipe
from .test_janitor import Killed

pytestmark = pytest.mark.django_db


def _board(challenge):
    return APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/")


def _private_challenge(host, bob):
    challenge, _ = digits_challenge(host, title="Finals quiet", public_fraction=0.5)
    v1, v2 = (stored_recipe(challenge, bob, "resnet", runs_expected=1, scores=[s]) for s in (0.71, 0.72))
    for run in Run.objects.filter(submission__challenge=challenge):
        Run.objects.filter(pk=run.pk).update(public_score=run.test_score, private_score=run.test_score)
    report_recompute(challenge_id=challenge.pk, force=True)
    return challenge, v1, v2


def test_a_team_s_final_choice_flips_nothing_on_the_public_board(host, alice, bob):
    challenge, v1, _ = _private_challenge(host, bob)
    before = _board(challenge)
    assert before.json()["recompute_pending"] is False
    bobs = APIClient()
    bobs.force_authenticate(bob)
    assert bobs.post(f"/api/submissions/{v1.pk}/select/", {"selected": True}, format="json").status_code == 200
    during = _board(challenge)
    assert during.json()["recompute_pending"] is False  # was True for the debounce window: "bob's team chose now"
    assert during["ETag"] == before["ETag"]
    # The private board is asked for, on its own flag, which its readers (the hosts) see
    hosts = APIClient()
    hosts.force_authenticate(host)
    url = f"/api/challenges/{challenge.slug}/leaderboard/?board=private"
    assert hosts.get(url).json()["recompute_pending"] is True
    report_recompute(challenge_id=challenge.pk)  # the worker
    private = hosts.get(url).json()
    assert private["recompute_pending"] is False
    assert [row["submission_id"] for row in private["entries"]] == [v1.pk]
    assert _board(challenge)["ETag"] == before["ETag"]


def test_a_private_board_s_request_the_broker_lost_is_sent_again(host, alice, bob):
    challenge, v1, _ = _private_challenge(host, bob)
    bobs = APIClient()
    bobs.force_authenticate(bob)
    assert bobs.post(f"/api/submissions/{v1.pk}/select/", {"selected": True}, format="json").status_code == 200
    later = timezone.now() + timedelta(hours=1)
    assert challenge.pk in reports_lost(now=later)  # the message never came: the janitor sends it again
    report_recompute(challenge_id=challenge.pk)
    assert challenge.pk not in reports_lost(now=later)
    assert not PrivateReport.objects.get(challenge=challenge).recompute_pending
    assert not Report.objects.get(challenge=challenge).recompute_pending


def test_moderating_a_submission_no_board_reads_flips_nothing_on_the_public_board(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Quiet moderation")
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    report_recompute(challenge_id=challenge.pk, force=True)
    before = _board(challenge)
    queued = stored_recipe(challenge, bob, "copied", runs_expected=1)
    Submission.objects.filter(pk=queued.pk).update(status="queued")
    assert APIClient().get(f"/api/submissions/{queued.pk}/").status_code == 404
    submission_moderate(submission=queued, user=host, state="hidden", reason="copied code")
    assert _board(challenge).json()["recompute_pending"] is False  # was True: "a host just hid something"
    team_moderate(challenge=challenge, team=queued.team, user=host, state="disqualified", reason="copied code")
    assert _board(challenge).json()["recompute_pending"] is False
    report_recompute(challenge_id=challenge.pk)
    after = _board(challenge)
    assert after["ETag"] == before["ETag"]

    # once the submission is scored, its moderation is read: it stays off the board
    Run.objects.create(submission=queued, index=0, status="succeeded", test_score=0.9, seeds={"split": 0})
    Submission.objects.filter(pk=queued.pk).update(status="scored")
    from leaderboard.services.lifecycle import runs_changed

    runs_changed(submission_id=queued.pk)
    assert _board(challenge).json()["recompute_pending"] is True
    report_recompute(challenge_id=challenge.pk)
    assert queued.pk not in [row["submission_id"] for row in _board(challenge).json()["entries"]]


def test_moderating_a_scored_rival_still_asks_for_the_board(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Moderation moves the board")
    scored = stored_recipe(challenge, bob, "copied", runs_expected=1, scores=[0.9])
    report_recompute(challenge_id=challenge.pk, force=True)
    submission_moderate(submission=scored, user=host, state="hidden", reason="copied code")
    assert _board(challenge).json()["recompute_pending"] is True
    report_recompute(challenge_id=challenge.pk)
    assert _board(challenge).json()["entries"] == []


def _leftover(challenge, bob):
    """bob's recipe of 2 runs, one scored (on the board, in progress) and one running; bob cancels it."""
    from leaderboard.services.submissions import submission_cancel

    try_ = stored_recipe(challenge, bob, "try", runs_expected=2, scores=[0.8])
    Submission.objects.filter(pk=try_.pk).update(status="running")
    left = Run.objects.create(submission=try_, index=1, status="running", attempts=1, seeds={"split": 1})
    report_recompute(challenge_id=challenge.pk, force=True)
    assert try_.pk in [row["submission_id"] for row in _board(challenge).json()["entries"]]
    submission_cancel(submission=try_, user=bob)
    report_recompute(challenge_id=challenge.pk)
    assert try_.pk not in [row["submission_id"] for row in _board(challenge).json()["entries"]]
    assert APIClient().get(f"/api/submissions/{try_.pk}/").status_code == 404
    return try_, left


def test_a_cancelled_rival_s_leftover_run_ending_moves_nothing_on_the_board(host, alice, bob):
    """A cancelled submission with a run scored stays counted (m, the Ladder's step); a run it left running goes on.
    Its end (failed here), which nobody else may open and which no board reads, asked for the board and moved its
    inputs version: ``recompute_pending``, then ``computed_at`` and the ETag, told when it ended."""
    from leaderboard.services.lifecycle import run_store

    challenge, _ = digits_challenge(host, title="Leftover run")
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    _, left = _leftover(challenge, bob)
    before = _board(challenge)
    assert run_store(run_id=left.pk, status="failed", error_message="oom")
    assert _board(challenge).json()["recompute_pending"] is False
    report_recompute(challenge_id=challenge.pk)  # were one asked for by another change
    after = _board(challenge)
    assert after.json()["computed_at"] == before.json()["computed_at"]
    assert after["ETag"] == before["ETag"]


def test_a_cancelled_prediction_s_leftover_file_scored_is_counted(host, alice, bob):
    """The other way: a run a cancelled submission left running that is scored is read (a prediction file counts in
    m): the board is asked for and moves."""
    from leaderboard.services.lifecycle import run_store

    challenge, _ = digits_challenge(host, title="Leftover file")
    stored_recipe(challenge, alice, "open", runs_expected=1, scores=[0.7])
    try_, left = _leftover(challenge, bob)
    Submission.objects.filter(pk=try_.pk).update(kind="predictions")
    report_recompute(challenge_id=challenge.pk)
    m = _board(challenge).json()["settings"]["m_total"]["predictions"]
    assert run_store(run_id=left.pk, status="succeeded", test_score=0.9)
    assert _board(challenge).json()["recompute_pending"] is True
    report_recompute(challenge_id=challenge.pk)
    assert _board(challenge).json()["settings"]["m_total"]["predictions"] == m + 1


def test_the_private_board_s_history_does_not_date_a_team_s_choice(host, alice, bob):
    from django.test import Client

    from leaderboard.models import BoardHistory
    from leaderboard.services.challenges import challenge_reveal
    from leaderboard.services.submissions import submission_select_final

    challenge, v1, _ = _private_challenge(host, bob)
    submission_select_final(submission=v1, user=bob)
    report_recompute(challenge_id=challenge.pk)
    chosen_at = BoardHistory.objects.filter(challenge=challenge, board="private", submission_id=v1.pk).get().at
    challenge_reveal(challenge=challenge, user=host)
    report_recompute(challenge_id=challenge.pk)
    page = Client().get(f"/c/{challenge.slug}/history/?board=private&entry={v1.pk}")
    assert page.status_code == 200
    rows = page.context["entry_rows"]
    assert rows and all(row["at"] != chosen_at for row in rows), rows  # the board from the reveal on, undated choice
    hosts = Client()
    hosts.force_login(host)
    assert any(
        row["at"] == chosen_at
        for row in hosts.get(page.request["PATH_INFO"] + f"?board=private&entry={v1.pk}").context["entry_rows"]
    )


def test_a_private_board_s_request_lost_with_its_worker_is_sent_again(host, alice, bob, queued, monkeypatch):
    """A team's choice asks for the private board on its own flag, which the recomputation clears as it starts: a
    worker lost in the middle (before the private board was stored) left no trace of the request, and the janitor,
    which looked for the private flag only, never sent it again (the hosts' private board kept the old choice until
    the next change). A private request started and unfinished is now lost work, as a public one is; one answered
    without a rebuild (its inputs unchanged) is not."""
    from leaderboard.services import reports
    from leaderboard.services.janitor import janitor_run
    from leaderboard.services.submissions import submission_select_final

    challenge, v1, _ = _private_challenge(host, bob)
    submission_select_final(submission=v1, user=bob)
    assert PrivateReport.objects.get(challenge=challenge).recompute_pending
    build = reports.build_report_data

    def killed(**kwargs):
        if kwargs.get("board") == "private":
            raise Killed
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", killed)
    with pytest.raises(Killed):
        report_recompute(challenge_id=challenge.pk)
    queued.clear()
    from django.conf import settings

    past = timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)  # as if that long went by
    ReportLease.objects.filter(challenge=challenge).update(expires_at=past)  # the lost worker's lease
    PrivateReport.objects.filter(challenge=challenge).update(computed_at=past - timedelta(seconds=1), requested_at=past)
    assert janitor_run().resent_reports == 1  # was 0: the request was lost with the worker
    assert janitor_run().resent_reports == 0  # sent: not again at the next pass
    monkeypatch.setattr(reports, "build_report_data", build)
    report_recompute(challenge_id=challenge.pk)
    private = PrivateReport.objects.get(challenge=challenge)
    assert v1.pk in [row["submission_id"] for row in private.data["entries"]]
    later = timezone.now() + timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    assert janitor_run(now=later).resent_reports == 0  # answered

    submission_select_final(submission=v1, user=bob, selected=False)
    submission_select_final(submission=v1, user=bob)  # chosen again: the private board's inputs as they were
    report_recompute(challenge_id=challenge.pk)
    later = timezone.now() + timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1)
    assert janitor_run(now=later).resent_reports == 0  # answered without a rebuild
