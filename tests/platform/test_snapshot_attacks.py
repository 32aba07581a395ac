"""Issue 27, attacked (session attack27): writes and reads that the runs stamps, the kept read, the reused entries and
the packed comparison tables must survive, each checked against a full read (or the unpacked values bit for bit)."""

from __future__ import annotations

import pytest

from leaderboard import selectors
from leaderboard.models import Run, RunsStamp, Submission, Team

from .test_snapshot_stamps import _same_as_full, board  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def _bare(challenge, host, name: str) -> Submission:
    """A submission with no run ever inserted: no ``RunsStamp`` row (read as 0)."""
    team, _ = Team.objects.get_or_create(name=f"team-{name}")
    return Submission.objects.create(
        challenge=challenge, team=team, submitted_by=host, kind="recipe", method_name=name, runs_expected=4
    )


def test_a_run_moved_to_a_submission_without_a_stamp_row_moves_its_stamp(board):  # noqa: F811
    challenge, host, subs = board
    bare = _bare(challenge, host, "bare")
    assert not RunsStamp.objects.filter(submission_id=bare.pk).exists()
    selectors.challenge_runs(challenge=challenge, reuse=True)  # kept: bare with no run, stamp 0
    Run.objects.filter(submission=subs[0], index=3).update(submission=bare)
    _same_as_full(challenge, read={subs[0].pk, bare.pk})


def test_a_submission_moved_away_during_a_full_read_and_back_is_read_again(board, monkeypatch):  # noqa: F811
    """A full read takes the stamps, then the runs of the submissions of the challenge *then*: a submission moved to
    another challenge between the two reads (and back after) had its stamp kept with no runs, and its runs, unchanged,
    never read again."""
    from leaderboard.models import Challenge

    challenge, host, subs = board
    other = Challenge.objects.create(
        slug="other", title="Other", created_by=host, metric="accuracy", higher_is_better=True
    )
    runs_read = selectors._runs_read

    def moved_meanwhile(*args, **kwargs):
        Submission.objects.filter(pk=subs[1].pk).update(challenge=other)
        try:
            return runs_read(*args, **kwargs)
        finally:
            Submission.objects.filter(pk=subs[1].pk).update(challenge=challenge)

    monkeypatch.setattr(selectors, "_runs_read", moved_meanwhile)
    selectors._KEPT_READS.clear()
    selectors.challenge_runs(challenge=challenge, reuse=True)  # a full read (nothing kept)
    assert selectors.snapshot_last_read == ("full", None)
    monkeypatch.setattr(selectors, "_runs_read", runs_read)
    _same_as_full(challenge)
