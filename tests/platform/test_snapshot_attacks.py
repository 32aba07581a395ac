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


def _fresh_board(challenge_id: int) -> dict:
    """The public board built from nothing but the database: no kept read, no entry built before (restored after, so
    that the worker's next update still reuses what it kept)."""
    import json

    from leaderboard.models import Challenge
    from leaderboard.services import reports

    from .test_report_incremental import _comparable

    built, prints = dict(reports._BUILT), dict(reports._PRINTS)
    reports._BUILT.clear(), reports._PRINTS.clear()
    try:
        full = reports.build_report_data(challenge=Challenge.objects.get(pk=challenge_id))
    finally:
        reports._BUILT.clear(), reports._PRINTS.clear()
        reports._BUILT.update(built), reports._PRINTS.update(prints)
    return json.loads(json.dumps(_comparable(full)))


def test_two_boards_alternating_in_one_worker_through_every_writer_equal_a_full_build():
    """The worker's update (kept read, entries reused by identity, memos, the board it stored, SNAPSHOT_KEPT_CHALLENGES
    = 1 with two boards alternating) against a build from the database alone, after each kind of write: a team renamed,
    a team moderated, an entry hidden, a final choice, a run rescored, failed, given a validation score, deleted, a new
    entry, a deleted submission, a submission moved to the other board and back, its runs changed meanwhile."""
    import numpy as np
    from django.db.models import F

    from leaderboard.models import Report, TeamModeration
    from leaderboard.services.reports import report_recompute

    from .factories import digits_challenge, make_user
    from .test_report_api import add_entry
    from .test_report_incremental import _comparable, _same

    host = make_user("host")
    rng = np.random.default_rng(5)
    boards = []
    for name in ("a", "b"):
        challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7, slug=name)
        subs = [
            add_entry(challenge, host, f"{name}{i}", "recipe", 0.8 - 0.004 * i + 0.01 * rng.standard_normal(6))
            for i in range(6)
        ]
        boards.append((challenge, subs))
    (a, subs_a), (b, subs_b) = boards
    selectors._KEPT_READS.clear()

    def check(challenge) -> str:
        report = report_recompute(challenge_id=challenge.pk, reuse=True)
        read = selectors.snapshot_last_read[0]
        stored = Report.objects.get(pk=report.pk).data
        assert _same(_comparable(stored), _fresh_board(challenge.pk))
        return read

    check(a), check(b)
    writes = [
        (a, lambda: Team.objects.filter(pk=subs_a[0].team_id).update(name="renamed")),
        (a, lambda: TeamModeration.objects.create(challenge=a, team_id=subs_a[1].team_id, state="hidden", reason="x")),
        (a, lambda: TeamModeration.objects.filter(challenge=a).delete()),
        (b, lambda: add_entry(b, host, "b-new", "recipe", 0.81 + 0.01 * rng.standard_normal(6))),
        (a, lambda: Submission.objects.filter(pk=subs_a[2].pk).update(moderation="hidden")),
        (a, lambda: Submission.objects.filter(pk=subs_a[3].pk).update(selected_for_final=True)),
        (b, lambda: Run.objects.filter(submission=subs_b[0], index=0).update(test_score=F("test_score") + 0.05)),
        (a, lambda: Run.objects.filter(submission=subs_a[4], index=1).update(status="failed")),
        (a, lambda: Run.objects.filter(submission=subs_a[5]).update(valid_score=0.5)),
        (b, lambda: Run.objects.filter(submission=subs_b[1], index=5).delete()),
        (a, lambda: Submission.objects.filter(pk=subs_a[0].pk).delete()),
        (a, lambda: Submission.objects.filter(pk=subs_a[2].pk).update(moderation="")),
        (a, lambda: Submission.objects.filter(pk=subs_b[2].pk).update(challenge=a)),  # moved in, runs unchanged
        (b, lambda: Run.objects.filter(submission=subs_b[2], index=0).update(test_score=0.9)),  # changed away from b
        (a, lambda: Submission.objects.filter(pk=subs_b[2].pk).update(challenge=b)),  # and back
    ]
    for k, (challenge, write) in enumerate(writes):
        check(challenge)  # kept: this board's read (after the other board's update: read in full)
        write()
        assert check(challenge) == "incremental"
        if k % 3 == 2:
            check(b if challenge is a else a)  # the other board, read in full (one kept), unchanged


def test_two_boards_alternating_with_failed_updates_hold_a_bounded_number_of_objects(monkeypatch):
    """gc.freeze after each update (``reports._collector_frozen_after``) with two boards alternating in one worker (each
    update's kept read replaces the other's) and an update that fails now and then (its traceback's cycles, frozen by
    no later update): the objects held, frozen or not, do not grow with the updates past what
    ``FROZEN_COLLECT_EVERY`` updates leave (without that collection they grow by ~80 an update: 24 updates, ~2,000)."""
    import gc

    from django.db.models import F

    from leaderboard.services import reports
    from leaderboard.services.errors import ServiceError
    from leaderboard.services.reports import report_recompute

    from .test_report_pieces import _board

    monkeypatch.setattr(reports, "FROZEN_COLLECT_EVERY", 3)
    boards = [_board(n=8, name="ga")[0], _board(n=8, name="gb")[0]]
    build = reports.build_report

    def boom(*_args, **_kwargs):
        raise ValueError("boom")

    held = []
    try:
        for k in range(24):
            challenge = boards[k % 2]
            first = Submission.objects.filter(challenge=challenge).order_by("pk").first()
            step = 1e-3 if k % 4 < 2 else -1e-3  # the board moves and comes back: its size stays
            Run.objects.filter(submission=first, index=0).update(test_score=F("test_score") + step)
            if k % 5 == 4:
                monkeypatch.setattr(reports, "build_report", boom)
                with pytest.raises(ServiceError):
                    report_recompute(challenge_id=challenge.pk, reuse=True)
                monkeypatch.setattr(reports, "build_report", build)
            report_recompute(challenge_id=challenge.pk, reuse=True)
            held.append(len(gc.get_objects()) + gc.get_freeze_count())
    finally:
        gc.unfreeze()
    assert max(held[4:]) - min(held[4:]) < 1_000, held


@pytest.mark.parametrize("seed", range(1, 7))
def test_random_writes_through_every_path_keep_the_kept_read_equal_to_a_full_one(board, seed):  # noqa: F811
    """Random writes (runs inserted, rescored, failed, deleted, moved between submissions; submissions created without
    runs, renamed, moderated, cancelled, moved to another challenge and back, deleted), a few between two reads: each
    read with the kept one equals a full read, memos included."""
    import random

    from django.db.models import F

    from leaderboard.models import Challenge, TeamModeration

    challenge, host, _ = board
    other = Challenge.objects.create(
        slug="away", title="Away", created_by=host, metric="accuracy", higher_is_better=True
    )
    rng = random.Random(seed)

    def subs(where=challenge) -> list[int]:
        return list(Submission.objects.filter(challenge=where).values_list("pk", flat=True))

    def runs() -> list[int]:
        return list(Run.objects.filter(submission__challenge=challenge).values_list("pk", flat=True))

    def insert():
        sid = rng.choice(subs())
        index = (
            Run.objects.filter(submission_id=sid).order_by("-index").values_list("index", flat=True).first() or 0
        ) + 1
        Run.objects.create(submission_id=sid, index=index, status="succeeded", test_score=rng.random())

    def moved_run():
        ids = runs()
        if ids:
            run = Run.objects.get(pk=rng.choice(ids))
            Run.objects.filter(pk=run.pk).update(submission_id=rng.choice(subs()), index=1000 + run.pk)

    writes = [
        insert,
        moved_run,
        lambda: runs() and Run.objects.filter(pk=rng.choice(runs())).update(test_score=F("test_score") + 0.01),
        lambda: runs() and Run.objects.filter(pk=rng.choice(runs())).update(status="failed"),
        lambda: runs() and Run.objects.filter(pk=rng.choice(runs())).update(public_score=rng.random()),
        lambda: runs() and Run.objects.filter(pk=rng.choice(runs())).delete(),
        lambda: _bare(challenge, host, f"bare{rng.randrange(10**6)}"),
        lambda: Team.objects.filter(submissions__id=rng.choice(subs())).update(name=f"t{rng.randrange(10**6)}"),
        lambda: Submission.objects.filter(pk=rng.choice(subs())).update(moderation=rng.choice(["", "hidden"])),
        lambda: TeamModeration.objects.get_or_create(
            challenge=challenge,
            team_id=Submission.objects.get(pk=rng.choice(subs())).team_id,
            defaults={"state": "hidden", "reason": "r"},
        ),
        lambda: TeamModeration.objects.filter(challenge=challenge).delete(),
        lambda: Submission.objects.filter(pk=rng.choice(subs())).update(status="cancelled"),
        lambda: Submission.objects.filter(pk=rng.choice(subs())).update(selected_for_final=True),
        lambda: Submission.objects.filter(pk=rng.choice(subs())).update(challenge=other),
        lambda: subs(other) and Submission.objects.filter(pk=rng.choice(subs(other))).update(challenge=challenge),
        lambda: len(subs()) > 3 and Submission.objects.filter(pk=rng.choice(subs())).delete(),
    ]
    selectors.challenge_runs(challenge=challenge, reuse=True)
    for _ in range(25):
        for _ in range(rng.randrange(1, 4)):
            rng.choice(writes)()
        _same_as_full(challenge)


class _Held:
    """An object in a reference cycle: freed by the cyclic collector only."""


def test_garbage_left_before_an_update_is_not_frozen_by_it():
    """gc.freeze after an update froze every object then tracked, the cyclic garbage other work had left (a failed
    scoring task's traceback and its arrays, in an older generation) too: held, past any full collection, until the
    collection every FROZEN_COLLECT_EVERY updates (64). It is collected before the update now."""
    import gc
    import weakref

    from leaderboard.services.reports import report_recompute

    from .test_report_pieces import _board

    challenge, _ = _board(n=4, name="gp")
    report_recompute(challenge_id=challenge.pk, force=True)
    held = _Held()
    held.payload, held.me = bytearray(8 * 2**20), held
    gone = weakref.ref(held)
    gc.collect(0)  # alive at a collection of the youngest generation: in an older one, as such garbage is
    del held
    try:
        report_recompute(challenge_id=challenge.pk, force=True, reuse=True)  # as the worker does: it freezes
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
