"""The worker process's rank bootstrap states: the last boards' :class:`~evaluation.stats.rank_state.RankState`,
kept between updates so that an update re-ranks only around its new entries (docs/scale.md, "Incremental updates").

A state is a board's θ* (entries x B float64) and resampled ranks (int16): 400 MB for 20,000 entries at B = 2,000.
:data:`RANK_STATE_BYTES` bounds what the process keeps (the least recently used boards go first; the board just
computed is always kept, alone if it is larger). A miss (another process built the stored report, a restart, a
changed setting: the state's key no longer matches) takes the full joint bootstrap, which refills the slot, so the
report is the same either way; only its time differs. Held per (challenge, board); a report with overrides uses none.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from evaluation.stats.rank_state import RankStateSlot

#: At most this many bytes of states are kept between updates (one 20,000-entry board at B = 2,000).
RANK_STATE_BYTES = 512 * 2**20

_slots: OrderedDict[tuple[int, str], RankStateSlot] = OrderedDict()
_lock = threading.Lock()


def rank_slot(challenge_id: int, board: str) -> RankStateSlot:
    """The slot of ``challenge_id``'s ``board``, most recently used now; the others are trimmed to the budget."""
    with _lock:
        slot = _slots.pop((challenge_id, board), None) or RankStateSlot()
        _slots[(challenge_id, board)] = slot
        _trim(keep=slot)
        return slot


def _trim(keep: RankStateSlot) -> None:
    """Empty the least recently used slots until the states fit :data:`RANK_STATE_BYTES` (``keep`` stays)."""
    total = sum(s.state.nbytes for s in _slots.values() if s.state is not None)
    for key in list(_slots):
        if total <= RANK_STATE_BYTES:
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
