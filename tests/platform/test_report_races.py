"""Two recomputations of one board that overlap (two processes of the scoring worker, or a reader's request
after a settings change while the worker recomputes) leave a board that is whole and catches up."""

from __future__ import annotations

import pytest

from leaderboard.models import Report, ReportRow, Submission
from leaderboard.services import reports
from leaderboard.services.reports import report_recompute

from .test_report_api import add_entry
from .test_report_pieces import _board

pytestmark = pytest.mark.django_db


def test_a_recomputation_that_ends_after_a_newer_one_leaves_the_board_whole_and_current(monkeypatch):
    challenge, host = _board()
    report_recompute(challenge_id=challenge.pk, force=True)
    withdrawn = Submission.objects.get(challenge=challenge, method_name="m2")
    add_entry(challenge, host, "newcomer", "recipe", [0.785, 0.786, 0.787, 0.788, 0.789, 0.79])
    build = reports.build_report_data
    overtaken = []

    def build_then_overtaken(**kwargs):
        # The slower recomputation (its snapshot read, the newcomer in it and m2 still shown) is overtaken while
        # it builds: m2 is withdrawn and another process recomputes the board and stores it first.
        if not overtaken:
            overtaken.append(True)
            Submission.objects.filter(pk=withdrawn.pk).update(status="cancelled")
            report_recompute(challenge_id=challenge.pk)
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", build_then_overtaken)
    report_recompute(challenge_id=challenge.pk)
    monkeypatch.setattr(reports, "build_report_data", build)

    stored = Report.objects.get(challenge=challenge)  # read whole: every row the skeleton lists is stored
    shown = [row["submission_id"] for row in stored.data["entries"]]
    rows = set(ReportRow.objects.filter(challenge=challenge, board="public").values_list("submission_id", flat=True))
    assert set(shown) <= rows
    assert stored.recompute_pending  # the board it stored may be the older one: another recomputation is queued
    report_recompute(challenge_id=challenge.pk)  # the board catches up with the withdrawal
    assert withdrawn.pk not in [row["submission_id"] for row in Report.objects.get(challenge=challenge).data["entries"]]
