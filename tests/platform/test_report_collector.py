"""What a report update leaves to Python's cyclic garbage collector (issue 27).

An update runs with the collector paused (``evaluation.report.collector_paused``); when it is enabled again, the
objects the update allocated are walked once, and those in reference cycles are freed only then. On the 20,000-entry
board the snapshot of the runs (``selectors.ChallengeRuns``: 320,000 run tuples and their groups) referred to itself
(``read_by_reports`` kept the snapshot as its own "read" copy), so each update left 360,000 objects that only the
collector freed: 0.2 s of every update (docs/scale.md).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from leaderboard.selectors import challenge_runs
from leaderboard.services.reports import report_recompute

from .test_report_api import add_entry
from .test_report_pieces import _board

pytestmark = pytest.mark.django_db


def _cyclic_garbage_of_one_update(n: int) -> int:
    """Objects the cyclic collector finds unreachable after one update (one new entry) of a board of ``n``."""
    challenge, host = _board(n=n, spread=0.002, name=f"gc{n}")
    report_recompute(challenge_id=challenge.pk, force=True)
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    gc.collect()
    gc.disable()
    try:
        report_recompute(challenge_id=challenge.pk)
        return gc.collect()
    finally:
        gc.enable()


def test_an_update_leaves_no_cyclic_garbage_that_grows_with_the_board():
    small, large = _cyclic_garbage_of_one_update(20), _cyclic_garbage_of_one_update(60)
    # Before: 8 objects more per entry (its 6 runs' tuples and their groups; 17 per entry on 20,000 entries of 16
    # runs); what is left is a few model instances, a thread's connection, closures: not one object per entry.
    assert large - small < 40, (small, large)


def test_a_snapshot_of_every_run_is_freed_by_its_last_reference():
    challenge, _ = _board(n=3, name="gcsnap")
    snapshot = challenge_runs(challenge=challenge)
    assert snapshot.read_by_reports() is snapshot  # every run is read: no copy
    freed = weakref.ref(snapshot)
    gc.disable()
    try:
        del snapshot
        assert freed() is None  # by its reference count, not left in a cycle for the collector
    finally:
        gc.enable()


def _held() -> int:
    """Objects the collector tracks, frozen or not."""
    return len(gc.get_objects()) + gc.get_freeze_count()


def test_the_board_an_update_keeps_is_frozen_and_not_walked_by_the_collector():
    """Enabled again after an update, the collector walked every object the update allocated and the worker keeps (the
    board of 20,000 entries: 0.04 s of each update); they are frozen instead (``reports._collector_frozen_after``)."""
    from leaderboard.services import reports

    challenge, _ = _board(n=6, name="frozen")
    report_recompute(challenge_id=challenge.pk, force=True, reuse=True)  # as the report worker does
    kept = reports._STORED["Report"][1]
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # frozen: in no generation the collector walks
    gc.unfreeze()


def test_a_web_process_recomputing_in_a_request_freezes_nothing():
    """A reader's request recomputes a small board (``report_current``): the web process's heap is neither frozen nor
    collected whole at each such request; only the worker (``reuse``) freezes what it keeps."""
    challenge, _ = _board(n=6, name="web")
    gc.unfreeze()
    report_recompute(challenge_id=challenge.pk, force=True)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_repeated_updates_leave_no_more_objects_frozen_than_a_few_updates_make(monkeypatch):
    """What the updates leave frozen in cycles (a model instance and its field file, a thread's connection) is freed by
    the full collection every ``FROZEN_COLLECT_EVERY`` updates: the objects held do not grow with the updates."""
    from leaderboard.services import reports

    monkeypatch.setattr(reports, "FROZEN_COLLECT_EVERY", 3)
    challenge, _ = _board(n=6, name="bounded")
    held = []
    for _ in range(10):
        report_recompute(challenge_id=challenge.pk, force=True, reuse=True)  # the same board stored again
        held.append(_held())
    gc.unfreeze()
    left = gc.collect()  # what the last updates left in cycles: at most 3 updates' worth
    monkeypatch.setattr(reports, "FROZEN_COLLECT_EVERY", 10**6)
    for _ in range(6):
        report_recompute(challenge_id=challenge.pk, force=True, reuse=True)
    gc.unfreeze()
    unbounded = gc.collect()  # 6 updates without the collection: twice as many
    assert left < unbounded and max(held[3:]) - min(held[3:]) < unbounded, (held, left, unbounded)
