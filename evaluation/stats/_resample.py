"""Resampling kernels shared by the bootstrap functions.

Resamples are drawn as index arrays ``rng.integers(0, k, size=(batch, k))`` and, where
the statistic is linear in the multiplicities, turned into count matrices ``c[b, r]``
(how often run ``r`` appears in resample ``b``) so that a whole batch of resamples
becomes one matrix product. The only Python loops are over memory batches. Batch
sizes depend on the input shapes only, and numpy's integer stream does not depend on
how it is split into calls, so a seed gives the same numbers on every machine.
"""

from __future__ import annotations

import hashlib

import numpy as np

# Elements per temporary array; bounds the memory of every batch (~32 MB of float64).
BATCH_ELEMENTS = 1 << 22

#: Two statistics within this fraction of the larger of their magnitudes are equal (the board's one tie rule:
#: ``competition_rank``, ``evaluation.report.ranking.same_value``, the torch ranks, P(A>B)'s ties): rounding
#: (0.7999999999999999 for 0.8) never decides a rank. Relative only, with no absolute floor, so that the rule
#: reads a board the same in every unit: with a floor of 1e-12, losses of 1e-12 (an MSE in small units) were
#: all "equal", ranked by name against a p-value of 6e-82.
TIE_RELATIVE = 1e-12
_LARGEST = np.finfo(np.float64).max
# Bins per np.bincount call: small enough to stay in cache.
_BINCOUNT_BINS = 1 << 19


def paired_wins(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Run by run, 2 where ``a`` beats ``b``, 1 where they tie, 0 where ``b`` beats ``a`` or either is NaN (a seed one
    entry lacks): the numerator of the seed-paired P(A>B), ties counting one half. Values within
    :data:`TIE_RELATIVE` of the larger of their magnitudes tie, as the ranks and the board's order tie them: two
    scorers of the same runs, one dividing by n and one multiplying by 1/n, left every run 1 ulp apart, and the
    board declared one "significantly better" than the other (p = 5e-4) beside equal means."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN: neither; inf - inf: equal infinities tie by ==
        tie = (a == b) | (np.abs(a - b) <= TIE_RELATIVE * np.minimum(np.maximum(np.abs(a), np.abs(b)), _LARGEST))
    return 2 * ((a > b) & ~tie) + tie


def tie_bounds(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: the values that tie ``t`` under :func:`paired_wins`'s rule (``|a - t| <= TIE_RELATIVE
    max(|a|, |t|)``) are those in ``[low, high]``; ``searchsorted(sorted_a, low, "left")`` counts the values below
    ``t`` and ``searchsorted(sorted_a, high, "right")`` those at or below it, ties included (Mann–Whitney's U with
    the board's ties, equal to :func:`paired_wins` on every cross pair but at a threshold's last ulp)."""
    t = np.asarray(t, dtype=np.float64)
    shrink, grow = t * (1.0 - TIE_RELATIVE), t / (1.0 - TIE_RELATIVE)
    return np.where(t >= 0, shrink, grow), np.where(t >= 0, grow, shrink)


def has_near_ties(values: np.ndarray) -> bool:
    """Whether two different values of ``values`` lie within twice the tie rule of each other: there exact
    equality and :func:`paired_wins`'s ties may differ (an engine that compares with ``==`` is exact elsewhere)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    ordered = ordered[np.isfinite(ordered)]
    gap = np.diff(ordered)
    larger = np.maximum(np.abs(ordered[1:]), np.abs(ordered[:-1]))
    return bool(np.any((gap > 0) & (gap <= 2 * TIE_RELATIVE * larger)))


def batch_size(per_resample: int, total: int) -> int:
    """Resamples per batch so that a batch holds about ``BATCH_ELEMENTS`` values."""
    return int(max(1, min(total, BATCH_ELEMENTS // max(1, per_resample))))


def draw_indices(rng: np.random.Generator, k: int, rows: int) -> np.ndarray:
    """``rows`` resamples of ``k`` indices drawn with replacement from ``range(k)``."""
    return rng.integers(0, k, size=(rows, k), dtype=np.uint32)


def counts_from_indices(idx: np.ndarray, k: int, out: np.ndarray | None = None) -> np.ndarray:
    """Multiplicity of each of ``k`` items in each row of ``idx`` (shape ``(rows, k)``).

    Rows are counted in groups of about ``2**19`` bins (one ``np.bincount`` per group
    after offsetting row r by ``r * k``), which keeps the counting in cache; the
    offset indices go to one reused buffer.
    """
    rows = idx.shape[0]
    if out is None:
        out = np.empty((rows, k), dtype=np.int64)
    step = max(1, min(rows, _BINCOUNT_BINS // k))
    offsets = (np.arange(step, dtype=np.intp) * k)[:, None]
    buf = np.empty((step, idx.shape[1]), dtype=np.intp)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        n = stop - start
        np.add(idx[start:stop], offsets[:n], out=buf[:n], casting="unsafe")
        out[start:stop] = np.bincount(buf[:n].ravel(), minlength=n * k).reshape(n, k)
    return out


def fill_counts(rng: np.random.Generator, k: int, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (shape ``(rows, k)``) with the counts of ``rows`` resamples of k items.

    Draws and counts a few rows at a time (about ``2**19`` bins), reusing one index
    buffer, so that temporaries stay small and in cache.
    """
    rows = out.shape[0]
    step = max(1, min(rows, _BINCOUNT_BINS // k))
    offsets = (np.arange(step, dtype=np.intp) * k)[:, None]
    buf = np.empty((step, k), dtype=np.intp)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        n = stop - start
        np.add(draw_indices(rng, k, n), offsets[:n], out=buf[:n], casting="unsafe")
        out[start:stop] = np.bincount(buf[:n].ravel(), minlength=n * k).reshape(n, k)
    return out


def draw_counts(rng: np.random.Generator, k: int, rows: int, dtype=np.int64) -> np.ndarray:
    """Count matrix ``(rows, k)`` of ``rows`` bootstrap resamples of ``k`` items."""
    return fill_counts(rng, k, np.empty((rows, k), dtype=dtype))


def draw_counts_ragged(rng: np.random.Generator, lengths: np.ndarray, rows: int, dtype=np.int64) -> np.ndarray:
    """Independent resamples of several samples laid side by side.

    Sample ``e`` has ``lengths[e]`` items and occupies columns
    ``starts[e]:starts[e] + lengths[e]``; each row resamples every sample on its own.
    Returns counts of shape ``(rows, lengths.sum())``.
    """
    lengths = np.asarray(lengths, dtype=np.intp)
    total = int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    equal = bool(np.all(lengths == lengths[0]))
    highs = lengths[0] if equal else np.repeat(lengths, lengths)
    col_start = np.repeat(starts, lengths)
    out = np.empty((rows, total), dtype=dtype)
    step = batch_size(total, rows)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        draws = rng.integers(0, highs, size=(stop - start, total), dtype=np.uint32)
        idx = draws.astype(np.intp)
        idx += col_start
        counts_from_indices(idx, total, out=out[start:stop])
    return out


def standard_error(boot: np.ndarray, axis: int = -1) -> np.ndarray:
    """Bootstrap standard error: std of the resampled statistic along `axis` (ddof=1).

    As ``scipy.stats.bootstrap``'s ``standard_error``, in float64; 0 (not NaN) with a
    single resample.
    """
    if boot.shape[axis] < 2:
        return np.zeros(np.delete(boot.shape, axis))
    return boot.std(axis=axis, ddof=1, dtype=np.float64)


def _linear_positions(b: int, q):
    """Order-statistic positions and weights of numpy's default ("linear") method."""
    q = np.atleast_1d(np.asarray(q, dtype=np.float64)) / 100.0
    virtual = b * q + (1 + q * (1 - 1 - 1)) - 1  # as numpy computes it
    lo = np.floor(virtual)
    frac = virtual - lo
    lo = np.clip(lo.astype(np.int64), 0, b - 1)
    hi = np.clip(lo + 1, 0, b - 1)
    return lo, hi, frac


def _lerp(a, c, t):
    """numpy's interpolation formula (``numpy.lib._function_base_impl._lerp``)."""
    diff = c - a
    return (c - diff * (1 - t)) if t >= 0.5 else (a + diff * t)


def percentiles(values: np.ndarray, q) -> np.ndarray:
    """``np.percentile(values, q, axis=-1)`` with numpy's linear interpolation.

    Partitions at the needed order statistics only (``np.percentile`` also
    partitions at the minimum and maximum to look for NaN, which cannot occur here)
    and interpolates in float64, so float32 input gives the float64 result.
    Returns shape ``(len(q),) + values.shape[:-1]``.
    """
    b = values.shape[-1]
    lo, hi, frac = _linear_positions(b, q)
    part = np.partition(values, np.unique(np.concatenate([lo, hi])), axis=-1)
    out = np.empty((lo.size,) + values.shape[:-1])
    for j in range(lo.size):
        a = part[..., lo[j]].astype(np.float64)
        c = part[..., hi[j]].astype(np.float64)
        out[j] = _lerp(a, c, frac[j])
    return out


def integer_percentiles(values: np.ndarray, vmax: int, q, std: np.ndarray | None = None) -> np.ndarray:
    """Percentiles along the last axis of integer-valued data in ``[0, vmax]``.

    Gives what ``np.percentile(values, q, axis=-1)`` gives (numpy's default linear
    interpolation, to rounding) but by counting instead of partitioning, which is
    several times faster when the values take few distinct integers (as P(A>B) does
    on k runs). ``values`` has shape ``(rows, B)``; returns shape ``(len(q), rows)``.
    ``std`` (optional, shape ``(rows,)``) receives each row's standard deviation
    (ddof=1; 0 for B = 1), read from the same counts.
    """
    values = np.asarray(values)
    rows, b = values.shape
    lo_idx, hi_idx, frac = _linear_positions(b, q)
    width = int(vmax) + 1
    levels = np.arange(width, dtype=np.float64)
    out = np.empty((lo_idx.size, rows), dtype=np.float64)
    step = max(1, min(rows, _BINCOUNT_BINS // width, BATCH_ELEMENTS // b))
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        block = values[start:stop].astype(np.intp)
        block += (np.arange(stop - start, dtype=np.intp) * width)[:, None]
        hist = np.bincount(block.ravel(), minlength=(stop - start) * width)
        hist = hist.reshape(stop - start, width)
        cum = np.cumsum(hist, axis=1)
        if std is not None:
            mean = (hist @ levels) / b
            spread = hist @ levels**2 - b * mean * mean  # sum of squared deviations
            std[start:stop] = np.sqrt(np.maximum(spread, 0.0) / max(b - 1, 1))
        for j in range(lo_idx.size):
            # The value of order statistic t is the number of bins whose count <= t.
            a = (cum <= lo_idx[j]).sum(axis=1).astype(np.float64)
            c = (cum <= hi_idx[j]).sum(axis=1).astype(np.float64)
            out[j, start:stop] = _lerp(a, c, frac[j])
    return out


def canonical_runs(*tables: np.ndarray) -> tuple[np.ndarray, ...]:
    """Put the runs (last axis) of aligned tables in a canonical order.

    Runs are sorted lexicographically by their values in ``tables[0]`` (row 0 first,
    then row 1, ...), then in the other tables. Resamples are drawn over run
    positions, so sorting first makes every bootstrap result depend on the set of
    runs only: permuting runs (jointly, for paired data) changes nothing.
    """
    keys = [np.atleast_2d(t) for t in tables]
    stacked = np.concatenate(keys, axis=0)
    order = np.lexsort(stacked[::-1])
    return tuple(t[..., order] for t in tables)


def tie_block_starts(ordered: np.ndarray) -> np.ndarray:
    """Where a block of tied values begins in ``ordered`` (sorted ascending along its last axis): True at the first
    value and wherever a value exceeds the one before by more than :data:`TIE_RELATIVE` of the larger of their
    magnitudes (two infinities are equal only to themselves). The one tie rule of ranks and of Boo_n's keys."""
    new = np.empty(ordered.shape, dtype=bool)
    new[..., 0] = True
    with np.errstate(invalid="ignore"):  # inf - inf: two infinities are equal
        gap = ordered[..., 1:] - ordered[..., :-1]
        # A gap beyond the rule at the largest magnitude of its row is beyond it at its own pair's (most gaps of a
        # resampled board): one comparison with a scalar per row; only the others take the rule itself, below.
        # The same result; 2.3 -> 0.3 s on 2,000 resamples of 6,200 entries (a 20,000-entry board's update).
        bound = np.minimum(np.max(np.abs(ordered), axis=-1, keepdims=True), _LARGEST)  # NaN: every gap checked
        np.greater(gap, TIE_RELATIVE * bound, out=new[..., 1:])
    check = np.nonzero(~new[..., 1:])
    if check[0].size:
        upper, lower = ordered[..., 1:][check], ordered[..., :-1][check]
        with np.errstate(invalid="ignore"):
            larger = np.minimum(np.maximum(np.abs(upper), np.abs(lower)), _LARGEST)  # inf: finite
            new[..., 1:][check] = (upper - lower > TIE_RELATIVE * larger) | (np.isinf(upper) & (upper != lower))
    return new


def all_tie(values) -> bool:
    """Whether every value of ``values`` (finite) ties with the others under the tie rule: one block of
    :func:`tie_block_starts`. In O(n) unless the spread is within what a chain of n ties can span (each gap at most
    :data:`TIE_RELATIVE` of the largest magnitude), then by the sort."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    low, high = float(flat.min()), float(flat.max())
    if low == high:
        return True
    if high - low > TIE_RELATIVE * min(max(abs(low), abs(high)), _LARGEST) * flat.size:
        return False
    return not bool(tie_block_starts(np.sort(flat))[1:].any())


def tie_canonical(values) -> np.ndarray:
    """``values`` (any shape, float64) with each block of finite values tied by the tie rule (:func:`tie_block_starts`
    over the whole array, sorted) set to the block's smallest; other values unchanged. Values equal under the
    rule become equal as numbers: Boo_n's validation keys of one entry (``evaluation.report.entries``) then read
    rounding (0.1 + 0.7 for 0.8) as the board's ranks do. Blocks chain (each value within the rule of the one
    before), as ranks tie; pairs of entries tie pair by pair (:func:`paired_wins`), never by this."""
    out = np.array(values, dtype=np.float64)
    flat = out.reshape(-1)
    finite = np.flatnonzero(np.isfinite(flat))
    order = finite[np.argsort(flat[finite], kind="stable")]
    ordered = flat[order]
    if ordered.size:
        first = np.maximum.accumulate(np.where(tie_block_starts(ordered), np.arange(ordered.size), 0))
        flat[order] = ordered[first]
    return out


def competition_rank(means: np.ndarray) -> np.ndarray:
    """Rank along axis 0, 1 = highest; ties share the better rank ("1224").

    ``scipy.stats.rankdata(-means, method="min", axis=0)``, by one sort per column
    (resample) and the first position of each block of equal values: several times
    faster on (5,000 entries x 2,000 resamples). Values within :data:`TIE_RELATIVE` of the
    larger of theirs and the one above are equal (the board's ties,
    ``evaluation.report.ranking.same_value``): rounding (0.7999999999999999 for 0.8) never
    decides a rank. Columns in batches of about
    ``BATCH_ELEMENTS``.
    """
    means = np.asarray(means, dtype=np.float64)
    if means.ndim == 1:
        return competition_rank(means[:, None])[:, 0]
    entries, columns = means.shape
    ranks = np.empty((entries, columns), dtype=np.int64)
    positions = np.arange(1, entries + 1, dtype=np.int32)
    step = max(1, BATCH_ELEMENTS // max(entries, 1))
    for start in range(0, columns, step):
        values = np.ascontiguousarray(-means[:, start : start + step].T)  # (batch, entries), best first sorted
        order = np.argsort(values, axis=1)
        ordered = np.take_along_axis(values, order, axis=1)
        first = tie_block_starts(ordered) * positions  # 1-based start of each tie block
        np.maximum.accumulate(first, axis=1, out=first)
        block = np.empty(first.shape, dtype=np.int32)
        block[np.arange(values.shape[0])[:, None], order] = first
        ranks[:, start : start + step] = block.T
    return ranks


def file_stream_keys(entries: list[np.ndarray], sign: float) -> list[tuple[int, np.ndarray | None]]:
    """Per entry ``(key, order)``: its files' resampling stream key and the files in sorted order (None for one file).

    The key is a hash of the ranks of the entry's oriented outcomes with its files sorted by content: the same for
    copies of an entry, for a board and its mirror of losses (1 - x with the direction flipped), and in every unit,
    so that both backends seed each entry's file resamples by its content, never by its place among the others.
    """
    out: list[tuple[int, np.ndarray | None]] = []
    for e in entries:
        if e.shape[0] < 2:
            out.append((0, None))
            continue
        block = sign * np.asarray(e, dtype=np.float64)  # (files, examples), oriented
        order = np.lexsort(block.T[::-1])  # the files by content
        pattern = np.unique(block[order], return_inverse=True)[1].astype(np.int64).reshape(block.shape)
        out.append((int.from_bytes(hashlib.blake2b(pattern.tobytes(), digest_size=16).digest(), "little"), order))
    return out
