"""Issue 26: the demo's challenges round-trip through bundles.

``manage.py demo`` builds the challenges a new host is shown first: digits (two phases, the
final one scoring both boards, half of the hidden rows private, revealed) and wine (recipes
only). Each is exported as a bundle and created again from it; the copy has the same
settings, phases, pages, data and public rows, and the final phase's entries, submitted to
the copy (its final phase opened again: the demo's ended at the reveal) with the same files, give the copy the original's public and private boards.
(Results-only challenges have no dataset to bundle: their refusal is tested in test_bundles.)
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation.boards import round_floats
from leaderboard.management.commands._demo_beyond import WINE_SLUG
from leaderboard.management.commands.demo import DIGITS_SLUG
from leaderboard.models import Challenge, PredictionFile, Submission
from leaderboard.services.bundles import bundle_export, bundle_import
from leaderboard.services.challenges import challenge_reveal
from leaderboard.services.phases import phase_update
from leaderboard.services.registrations import registration_register
from leaderboard.services.reports import report_current, report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .test_bundles import assert_same_challenge

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # the demo builds its boards: about a minute


@pytest.fixture
def demo(queued, django_capture_on_commit_callbacks):
    """The demo without recipes, every prediction entry scored and each board computed."""
    with django_capture_on_commit_callbacks(execute=True):
        call_command("demo", "--no-recipes", stdout=StringIO())
    for submission in Submission.objects.filter(kind="predictions"):
        submission_score(submission_id=submission.pk)
    for challenge in Challenge.objects.filter(slug__in=(DIGITS_SLUG, WINE_SLUG)):
        report_recompute(challenge_id=challenge.pk)
    return User.objects.get(username="host")


def _board(challenge: Challenge, board: str) -> list[list]:
    # The copy stores its test rows in another order: sums may differ in the last bit, so 12 digits.
    return [
        round_floats(
            [
                e["team"],
                e["method_name"],
                e["runs_succeeded"],
                e["mean"]["estimate"],
                e["mean"]["low"],
                e["mean"]["high"],
                e["rank_display"],
                e["groups"],
                e["secondary"],
            ],
            12,
        )
        for e in report_current(challenge=challenge, board=board).data["entries"]
    ]


def _resubmit_final_entries(original: Challenge, copy: Challenge) -> int:
    """The original's final-phase prediction entries submitted to the copy with the same files and names."""
    count = 0
    for submission in original.submissions.filter(kind="predictions", phase__name="final").order_by("pk"):
        user = submission.submitted_by
        registration_register(challenge=copy, user=user, accept_rules=True)
        files = []
        for record in PredictionFile.objects.filter(submission=submission).order_by("index"):
            with record.file.open("rb") as handle:
                files.append(UploadedFile(record.original_name, handle.read()))
        made = submission_create_predictions(
            challenge=copy,
            user=user,
            method_name=submission.method_name,
            description=submission.description,
            files=files,
        )
        submission_score(submission_id=made.pk)
        count += 1
    return count


def test_the_demo_challenges_round_trip_through_their_bundles(demo):
    host = demo
    digits = Challenge.objects.get(slug=DIGITS_SLUG)
    wine = Challenge.objects.get(slug=WINE_SLUG)
    assert list(digits.phases.values_list("name", flat=True)) == ["development", "final"]

    for original in (digits, wine):
        copy = bundle_import(data=bundle_export(challenge=original, user=host), user=host, slug=f"{original.slug}-copy")
        assert_same_challenge(original, copy)
        assert (copy.description, copy.rules) == (original.description, original.rules)

    copy = Challenge.objects.get(slug=f"{DIGITS_SLUG}-copy")
    # The demo's final phase ended when its private board was revealed; the clone runs it again.
    assert copy.phases.get(name="final").closes_at is not None
    phase_update(phase=copy.phases.get(name="final"), user=host, closes_at=None)
    assert _resubmit_final_entries(digits, copy) == 4
    report_recompute(challenge_id=copy.pk)
    challenge_reveal(challenge=copy, user=host)
    report_recompute(challenge_id=copy.pk)
    final_only = {
        (s.team.name, s.method_name) for s in digits.submissions.filter(phase__name="final").select_related("team")
    }
    for board in ("public", "private"):
        original_rows = [row for row in _board(digits, board) if (row[0], row[1]) in final_only]
        assert original_rows and _board(copy, board) == original_rows, board
