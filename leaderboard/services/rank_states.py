"""The worker process's rank bootstrap states: the last boards' :class:`~evaluation.stats.rank_state.RankState`,
kept between updates so that an update re-ranks only around its new entries (docs/scale.md, "Incremental updates").

A state is a board's θ* (entries x B float64) and resampled ranks (int16): 400 MB for 20,000 entries at B = 2,000.
:func:`budget_bytes` (``VARBOARD_RANK_STATE_MB``, 512 by default) bounds what the process keeps (the least recently
used boards go first; the board just computed is always kept, alone if it is larger); 0 keeps none, and an update takes
the path that needs no state (``evaluation.stats.bootstrap.rank_intervals_update``). A miss (another process built the stored report, a restart, a
changed setting: the state's key no longer matches) takes the full joint bootstrap, which refills the slot, so the
report is the same either way; only its time differs. Held per (challenge, board); a report with overrides uses none.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings

from evaluation.stats.rank_state import RankStateSlot

_slots: OrderedDict[tuple[int, str], RankStateSlot] = OrderedDict()
_lock = threading.Lock()


def budget_bytes() -> int:
    """At most this many bytes of states are kept between updates (``VARBOARD_RANK_STATE_MB``; the default, 512 MB,
    holds one 20,000-entry board at B = 2,000)."""
    return int(settings.VARBOARD["RANK_STATE_MB"]) * 2**20


def rank_slot(challenge_id: int, board: str) -> RankStateSlot | None:
    """The slot of ``challenge_id``'s ``board``, most recently used now; the others are trimmed to the budget. None
    where the process keeps no state (a budget of 0)."""
    if budget_bytes() == 0:
        clear()
        return None
    with _lock:
        slot = _slots.pop((challenge_id, board), None) or RankStateSlot()
        _slots[(challenge_id, board)] = slot
        _trim(keep=slot)
        return slot


def _trim(keep: RankStateSlot) -> None:
    """Empty the least recently used slots until the states fit :func:`budget_bytes` (``keep`` stays)."""
    total, budget = sum(s.state.nbytes for s in _slots.values() if s.state is not None), budget_bytes()
    for key in list(_slots):
        if total <= budget:
            return
        slot = _slots[key]
        if slot is keep or slot.state is None:
            continue
        total -= slot.state.nbytes
        del _slots[key]


def clear() -> None:
    """Forget every state (tests; a process that wants its memory back)."""
    with _lock:
        _slots.clear()
