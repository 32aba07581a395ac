"""An exact cache of a paired joint rank bootstrap, kept between updates of one board (docs/scale.md).

:func:`rank_intervals_with_state` is :func:`~evaluation.stats.bootstrap.rank_intervals` (paired, ranked by the
mean, numpy) that also returns a :class:`RankState`: the resampled means θ* (entries x B), every entry's competition
rank in every resample (a small integer dtype), the count matrix and the canonical order of the runs.
:func:`rank_intervals_from_state` is :func:`~evaluation.stats.bootstrap.rank_intervals_update` from that state in
O(new entries x overlapping entries x B), with no sort of the board: an old entry's θ*_ib is the same in every
resample (the count matrix depends only on the seed and the paired runs, in canonical order), so its rank in
resample b gains #{new j above it in b}. Where a new entry comes within twice the tie rule of an old one in a
resample (:data:`~evaluation.stats._resample.TIE_RELATIVE`, chains of :func:`~evaluation.stats._resample.tie_block_starts`),
that resample's column is ranked again, whole. The results equal the full computation (``==``,
``tests/evaluation/test_rank_state.py``). Pure: no global state; the caller keeps the state (it is consumed: updated
in place and returned).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

from . import _resample as rs
from ._types import RankIntervals
from ._validation import check_open_unit

#: Spare rows allocated with a state, so that a few new entries are written in place (no copy of θ*).
SPARE_ROWS = 64


@dataclass
class RankState:
    """The joint bootstrap of one board's paired entries, rows in storage order (``rows[i]``: entry i's row).

    ``boot`` (capacity x B, float64) and ``ranks`` (capacity x B, int16 below 32,767 entries, else int32) hold
    ``size`` rows in use; ``lo``/``hi`` each row's range over the B resamples; ``largest`` max |θ*|; ``counts``
    (B x k) the count matrix and ``order`` the canonical run order; ``key`` a digest of everything they derive
    from (:func:`state_key`). 20,000 entries x B = 2,000: 320 MB of θ* and 80 MB of ranks.
    """

    key: bytes
    counts: np.ndarray
    order: np.ndarray
    boot: np.ndarray
    ranks: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    rows: np.ndarray
    size: int
    largest: float

    @property
    def nbytes(self) -> int:
        return int(self.boot.nbytes + self.ranks.nbytes + self.counts.nbytes)


def state_key(table: np.ndarray, seed: int, n_resamples: int) -> bytes:
    """Digest of the paired table (entries in board order, runs as given), the seed and B: θ* and the ranks are
    functions of these alone (statistic: the mean)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(("mean", int(seed), int(n_resamples), table.shape)).encode())
    h.update(np.ascontiguousarray(table, dtype=np.float64).tobytes())
    return h.digest()


def _means_of(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``x @ counts.T / k`` in the batches of :func:`~evaluation.stats.bootstrap.resampled_means`. One row alone is
    padded to two: numpy takes a matrix-vector product for it, whose sums may differ from the matrix product's in
    the last bit; the matrix product's row does not depend on the other rows."""
    m, k = x.shape
    padded = np.vstack([x, x]) if m == 1 else x
    b = counts.shape[0]
    out = np.empty((padded.shape[0], b))
    step = rs.batch_size(max(k, padded.shape[0]), b)
    for start in range(0, b, step):
        out[:, start : start + step] = padded @ counts[start : start + step].T / k
    return out[:m]


def _small_ranks(ranks: np.ndarray, capacity: int) -> np.ndarray:
    dtype = np.int16 if capacity < np.iinfo(np.int16).max else np.int32
    out = np.empty((capacity, ranks.shape[1]), dtype=dtype)
    out[: ranks.shape[0]] = ranks
    return out


def rank_intervals_with_state(table, *, n_resamples, confidence_level, rng) -> tuple[RankIntervals, RankState]:
    """:func:`~evaluation.stats.bootstrap.rank_intervals` of a complete paired ``table`` (entries x runs) ranked by
    the mean (``rng`` an int seed), and its :class:`RankState`."""
    table = np.asarray(table, dtype=np.float64)
    order = np.lexsort(table[::-1])
    counts = rs.draw_counts(np.random.default_rng(int(rng)), table.shape[1], n_resamples, dtype=np.float64)
    capacity = table.shape[0] + SPARE_ROWS
    boot = np.empty((capacity, n_resamples))
    boot[: table.shape[0]] = _means_of(table[:, order], counts)
    used = boot[: table.shape[0]]
    result = _from_distribution(table.mean(axis=1), used, confidence_level)
    lo, hi = used.min(axis=1), used.max(axis=1)
    assert result.bootstrap_distribution is not None  # kept by rank_intervals_from_distribution
    state = RankState(
        key=state_key(table, int(rng), n_resamples),
        counts=counts,
        order=order,
        boot=boot,
        ranks=_small_ranks(result.bootstrap_distribution, capacity),
        lo=_grown(lo, capacity),
        hi=_grown(hi, capacity),
        rows=np.arange(table.shape[0]),
        size=table.shape[0],
        largest=max(abs(float(lo.min())), abs(float(hi.max()))) if used.size else 0.0,  # no (entries, B) temporary
    )
    return RankIntervals(result.rank, result.low, result.high, result.confidence_level, result.standard_error), state


def _from_distribution(estimate, boot, confidence_level) -> RankIntervals:
    from .bootstrap import rank_intervals_from_distribution

    return rank_intervals_from_distribution(estimate, boot, confidence_level)


def _grown(v: np.ndarray, capacity: int) -> np.ndarray:
    out = np.empty(capacity, dtype=v.dtype)
    out[: v.size] = v
    return out


def rank_intervals_from_state(
    table, new, known, low, high, state: RankState, *, n_resamples, confidence_level, rng
) -> tuple[RankIntervals, RankState] | None:
    """:func:`~evaluation.stats.bootstrap.rank_intervals_update` (ranked by the mean) from ``state``, the state of the
    board without the ``new`` entries; None (state untouched) when the state is not that board's (its key, the seed,
    B or the canonical run order differ): the caller then takes the full path.

    Old entry i, new entry j, resample b: ``gap = θ*_jb - θ*_ib``. Where ``|gap| > 2 · TIE_RELATIVE · max|θ*|`` for
    every old i, j joins no tie block and splits none (every pair's tie threshold is at most half that margin), so
    i's rank gains ``gap > margin`` and j's rank is ``1 + #{old i above j} + (its competition rank among the new
    entries - 1)``; an old entry whose range ``[lo, hi]`` lies beyond the margin of j's is compared through the
    ranges alone. Every other column (a new entry within the margin of an old one: a possible tie) is ranked again,
    whole (:func:`~evaluation.stats._resample.competition_rank`). An old known entry whose ranks all moved by the
    same c keeps its interval plus c; the others' come from their ranks (percentiles, as the full computation).
    """
    table = np.asarray(table, dtype=np.float64)
    new, known = np.asarray(new, bool), np.asarray(known, bool) & ~np.asarray(new, bool)
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    usable = (
        isinstance(rng, (int, np.integer))
        and state.counts.shape == (n_resamples, table.shape[1])
        and np.array_equal(np.lexsort(table[::-1]), state.order)
        and state.size == int((~new).sum())
        and state.key == state_key(table[~new], int(rng), n_resamples)
    )
    if not usable:
        return None
    fresh = _means_of(table[new][:, state.order], state.counts)
    if not (np.isfinite(fresh).all() and np.isfinite(state.largest)):
        return None
    rows = np.empty(table.shape[0], dtype=np.int64)
    rows[~new] = state.rows
    if fresh.shape[0]:
        state = _append(state, fresh)
        rows[new] = state.size - fresh.shape[0] + np.arange(fresh.shape[0])
        above, uneven = _add_new(state, rows[new])
    else:  # nothing new (a board recomputed for another reason): every rank as it was
        above, uneven = np.zeros(state.size, dtype=np.int64), np.zeros(state.size, dtype=bool)
    state.rows, state.key = rows, state_key(table, int(rng), n_resamples)
    out_low = np.asarray(low, np.int64) + above[rows]
    out_high = np.asarray(high, np.int64) + above[rows]
    redo = np.flatnonzero(~known | uneven[rows])
    if redo.size:
        q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
        qlo, qhi = rs.percentiles(state.ranks[rows[redo]].astype(np.float64), q)
        out_low[redo], out_high[redo] = np.floor(qlo + 1e-9), np.ceil(qhi - 1e-9)
    estimate = rs.competition_rank(table.mean(axis=1))
    return RankIntervals(estimate, out_low, out_high, confidence_level), state


def _append(state: RankState, fresh: np.ndarray) -> RankState:
    """``state`` with the rows ``fresh`` (θ* of the new entries) after its rows, reallocated (with
    :data:`SPARE_ROWS` and an eighth more) only when its capacity is reached."""
    size, m = state.size, fresh.shape[0]
    if size + m > state.boot.shape[0]:
        capacity = size + m + SPARE_ROWS + size // 8
        boot = np.empty((capacity, state.boot.shape[1]))
        boot[:size] = state.boot[:size]
        state.boot, state.ranks = boot, _small_ranks(state.ranks[:size], capacity)
        state.lo, state.hi = _grown(state.lo[:size], capacity), _grown(state.hi[:size], capacity)
    state.boot[size : size + m] = fresh
    state.lo[size : size + m], state.hi[size : size + m] = fresh.min(axis=1), fresh.max(axis=1)
    state.largest = max(state.largest, float(np.max(np.abs(fresh))))
    state.size = size + m
    return state


def _add_new(state: RankState, fresh_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Update ``state.ranks`` for the new rows ``fresh_rows`` (the old rows are those before them): returns, per
    storage row, how many new entries are above it in every resample and whether its ranks moved unevenly."""
    old = int(fresh_rows.min())
    boot, ranks, b = state.boot, state.ranks, state.boot.shape[1]
    margin = 2.0 * rs.TIE_RELATIVE * min(state.largest, float(np.finfo(np.float64).max))
    lo, hi = state.lo[:old], state.hi[:old]
    above = np.zeros(state.size, dtype=np.int64)
    uneven = np.zeros(state.size, dtype=bool)
    dirty = np.zeros(b, dtype=bool)
    plans = []
    for j in fresh_rows:
        below = np.flatnonzero(state.lo[j] - hi > margin)  # j above in every resample
        near = np.flatnonzero(~(state.lo[j] - hi > margin) & ~(lo - state.hi[j] > margin))
        gap = boot[j][None, :] - boot[near]
        up, down = gap > margin, gap < -margin
        dirty |= (~(up | down)).any(axis=0)
        plans.append((j, below, near, up, down))
    before = ranks[:old][:, dirty].astype(np.int64) if dirty.any() else None
    newcomers = rs.competition_rank(boot[fresh_rows])
    for (j, below, near, up, down), own in zip(plans, newcomers):
        ranks[below] += 1
        ranks[near] += up
        above[below] += 1
        everywhere = up.all(axis=1)
        above[near[everywhere]] += 1
        uneven[near[~everywhere & ~(~up).all(axis=1)]] = True
        n_above = (lo - state.hi[j] > margin).sum() + down.sum(axis=0)
        ranks[j] = n_above + own
    uneven[fresh_rows] = True
    if before is not None:
        cols = np.flatnonzero(dirty)
        ranks[: state.size, cols] = rs.competition_rank(boot[: state.size, cols])
        moved = ranks[:old][:, cols] != before + above[:old, None]
        uneven[:old] |= moved.any(axis=1)
    return above, uneven


class RankStateSlot:
    """Where a caller keeps one board's :class:`RankState` between updates. :meth:`take` empties it (the state is
    consumed: updated in place), the computation puts the new state back in ``state``; a failure leaves it empty."""

    def __init__(self, state: RankState | None = None):
        self.state = state
        self._lock = threading.Lock()

    def take(self) -> RankState | None:
        """The state, the slot emptied at once: two threads updating one board never share a state."""
        with self._lock:
            state, self.state = self.state, None
        return state
