"""A fused Triton kernel for paired P(A>B): the numerators, their histograms and the summary in one pass.

Paired P(A>B) of a pair (a, b) in resample t is ``n_t / 2k`` with the integer numerator
``n_t = Σ_r w_r c_tr``, ``w_r = 2·[a_r > b_r] + [a_r = b_r]`` (Bouthillier et al. 2021, eq. 9,
ties one half), w compared in the kernel from the scores. The percentiles and standard errors
need only each pair's histogram of ``n_t`` over the resamples, so each program computes
``n_t`` for a block of pairs, tile by tile of resamples, in registers, and counts it at once
(``tl.histogram``: warp ballots and shared memory, no atomic on global memory). Once it has
seen every resample, the same program reads the order statistics off the cumulative counts
and the exact integer moments (:func:`_summarize`, the arithmetic of
``torch_backend._histogram_summary``), and writes only those: the (pairs x B) matrix of
numerators is never formed, the histograms stay in registers, and the call is one launch
and one small transfer back (issue 27: the host's launches were half of the time).

:func:`rank_summaries` does the same for rank intervals: each entry's histogram of its ranks over
the resamples, counted from the positions a sort and a search give, and summarized in the same
program (instead of a scatter into global counters and a dozen small operations after it).

The counts come from the caller (torch's generator, the same draws as the unfused path),
so the histograms are equal to the unfused path's, count for count, and the summaries bitwise
(``tests/evaluation/test_triton_kernel.py``).

Imported only where it runs: on CUDA with Triton installed, or on the CPU under
``TRITON_INTERPRET=1`` (the tests). Importing it without Triton raises ImportError.

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks. MLSys.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = [
    "PAIRS_PER_PROGRAM",
    "RESAMPLES_PER_TILE",
    "histogram_bins",
    "paired_summaries",
    "rank_bins",
    "rank_summaries",
]

#: Pairs one program counts, resamples it reads at a time (a power of two), its warps, and whether it
#: reads the counts four to a 32-bit word and adds their products in its bytes (SIMD within a
#: register: a quarter of the loads and multiply-adds), where a numerator (at most 2k) fits a byte
#: (k <= 127 runs). On an H200, paired 100 x 50, B = 10,000 (``benchmarks/gpu_sweep.py``, docs/scale.md):
#: packed, pair by pair, 1 x 2,048 the fastest (1.9x the floor); a block of pairs counted in one histogram
#: of BP x BINS bins 2.0-2.8x, unpacked 2.4-2.9x.
PAIRS_PER_PROGRAM = 1
RESAMPLES_PER_TILE = 2048
NUM_WARPS = 4
PACKED_COUNTS = True
#: Widest histogram the kernel keeps (numerators up to 2k, so k <= 511 runs).
MAX_BINS = 1024


@triton.jit
def _paired_summaries(
    x_ptr,  # (entries, runs) float64: the scores
    pairs_ptr,  # (2, pairs padded) int32: each pair's two entries (padding pairs: any entry, ignored)
    c_ptr,  # (runs, resamples padded) small integers: the resamples' counts of each run (PACKED: int32 words of 4)
    positions_ptr,  # (NPOS,) int32: the order statistics wanted (0-based, below the resamples)
    summary_ptr,  # (pairs padded, NPOS + 2) float64, written: each order statistic, then Σ v and Σ v²
    hist_ptr,  # (pairs padded, BINS) int32, written when WITH_HIST: the histograms themselves
    n_runs,
    n_pairs_padded,
    n_columns,
    n_resamples,
    BP: tl.constexpr,
    BB: tl.constexpr,
    BINS: tl.constexpr,
    NPOS: tl.constexpr,
    WITH_HIST: tl.constexpr,
    PACKED: tl.constexpr,
):
    first = tl.program_id(0) * BP
    slots = tl.arange(0, BP)
    bins = tl.arange(0, BINS)
    hist = tl.zeros((BP, BINS), dtype=tl.int32)
    for b0 in range(0, n_columns, BB):
        for p in tl.static_range(BP):  # pair by pair: 1-D numerators, a histogram of BINS bins each
            row_a = tl.load(pairs_ptr + first + p) * n_runs
            row_b = tl.load(pairs_ptr + n_pairs_padded + first + p) * n_runs
            counted = tl.zeros((BINS,), dtype=tl.int32)
            if PACKED:  # four resamples' counts in each word: their numerators (<= 2k <= 254) in its bytes
                words = b0 // 4 + tl.arange(0, BB // 4)
                n4 = tl.zeros((BB // 4,), dtype=tl.uint32)
                for r in range(n_runs):
                    a = tl.load(x_ptr + row_a + r)
                    b = tl.load(x_ptr + row_b + r)
                    w = 2 * (a > b).to(tl.uint32) + (a == b).to(tl.uint32)
                    n4 += w * tl.load(c_ptr + r * (n_columns // 4) + words).to(tl.uint32, bitcast=True)
                for q in tl.static_range(4):  # no carry crosses a byte: each numerator stays <= 2k
                    counted += tl.histogram(((n4 >> (8 * q)) & 255).to(tl.int32), BINS)
            else:
                cols = b0 + tl.arange(0, BB)
                n = tl.zeros((BB,), dtype=tl.int32)
                for r in range(n_runs):
                    a = tl.load(x_ptr + row_a + r)
                    b = tl.load(x_ptr + row_b + r)
                    w = 2 * (a > b).to(tl.int32) + (a == b).to(tl.int32)
                    n += w * tl.load(c_ptr + r * n_columns + cols).to(tl.int32)
                counted += tl.histogram(n, BINS)
            hist += tl.where(slots[:, None] == p, counted[None, :], 0)
    hist -= tl.where(bins[None, :] == 0, n_columns - n_resamples, 0)  # the padding columns' numerators, 0
    if WITH_HIST:
        tl.store(hist_ptr + (first + slots)[:, None] * BINS + bins[None, :], hist)
    _summarize(hist, bins, positions_ptr, summary_ptr + (first + slots) * (NPOS + 2), NPOS)


@triton.jit
def _rank_summaries(
    pos_ptr,  # (resamples, entries) int32: each resampled value's searchsorted(right) in its sorted resample
    positions_ptr,  # (NPOS,) int32: the order statistics wanted
    summary_ptr,  # (entries padded, NPOS + 2) float64, written: each order statistic, then Σ v and Σ v²
    n_entries,
    n_resamples,
    BE: tl.constexpr,
    BB: tl.constexpr,
    BINS: tl.constexpr,
    NPOS: tl.constexpr,
):
    first = tl.program_id(0) * BE
    slots = tl.arange(0, BE)
    entries = first + slots
    acc = tl.zeros((BE * BINS,), dtype=tl.int32)
    for b0 in range(0, n_resamples, BB):
        rows = b0 + tl.arange(0, BB)
        inside = (rows[:, None] < n_resamples) & (entries < n_entries)[None, :]
        where = pos_ptr + rows[:, None] * n_entries + entries[None, :]
        # competition rank 1 + entries - position; outside the resamples level 0, taken off below
        rank = n_entries + 1 - tl.load(where, mask=inside, other=n_entries + 1)
        acc += tl.histogram(tl.reshape(rank + slots[None, :] * BINS, (BB * BE,), can_reorder=True), BE * BINS)
    hist = tl.reshape(acc, (BE, BINS))
    padding = tl.cdiv(n_resamples, BB) * BB - n_resamples
    hist -= tl.where(tl.arange(0, BINS)[None, :] == 0, padding, 0)
    _summarize(hist, tl.arange(0, BINS), positions_ptr, summary_ptr + entries * (NPOS + 2), NPOS)


@triton.jit
def _summarize(hist, bins, positions_ptr, out_ptr, NPOS: tl.constexpr):
    """Each row's order statistics and first two moments from its histogram of integer levels (``hist``
    (rows, BINS)): order statistic t is the number of levels whose cumulative count is at most t; the
    moments ``Σ v`` and ``Σ v²`` are sums of integers, exact in float64 (the host takes the sd from them,
    as ``torch_backend._histogram_summary`` does)."""
    cum = tl.cumsum(hist, axis=1)
    for t in tl.static_range(NPOS):
        wanted = tl.load(positions_ptr + t)
        counted = tl.sum((cum <= wanted).to(tl.int32), axis=1)
        tl.store(out_ptr + t, counted.to(tl.float64))
    levels = bins.to(tl.float64)[None, :]
    h = hist.to(tl.float64)
    tl.store(out_ptr + NPOS, tl.sum(h * levels, axis=1))
    tl.store(out_ptr + NPOS + 1, tl.sum(h * (levels * levels), axis=1))


def _bins(levels: int) -> int | None:
    """Bins of a histogram of ``levels`` integer levels (a power of two, at least 32), None beyond MAX_BINS."""
    bins = max(32, triton.next_power_of_2(levels))
    return bins if bins <= MAX_BINS else None


def histogram_bins(n_runs: int) -> int | None:
    """Bins of the paired kernel's histograms for k runs (numerators 0 ... 2k)."""
    return _bins(2 * n_runs + 1)


def paired_summaries(scores, pairs, counts, n_resamples: int, positions, out, hist=None) -> None:
    """Each pair's order statistics ``positions`` and first two moments of the numerators ``Σ_r w_r c_r``.

    ``scores``: (entries, k) float64; ``pairs``: (2, pairs) int32, the pairs' two entries,
    pairs a multiple of :data:`PAIRS_PER_PROGRAM`; ``counts``: (k, columns) uint8 or int16, the
    first ``n_resamples`` columns drawn, the rest (up to a multiple of :data:`RESAMPLES_PER_TILE`)
    zero; ``positions``: (npos,) int32; ``out``: (pairs, npos + 2) float64, written; ``hist``:
    optionally (pairs, :func:`histogram_bins`) int32, written with the histograms; all on one device.
    """
    n_pairs = pairs.shape[1]
    assert n_pairs % PAIRS_PER_PROGRAM == 0 and counts.shape[1] % RESAMPLES_PER_TILE == 0
    packed = PACKED_COUNTS and counts.element_size() == 1 and 2 * scores.shape[1] <= 255
    _paired_summaries[(n_pairs // PAIRS_PER_PROGRAM,)](
        scores,
        pairs,
        counts.view(torch.int32) if packed else counts,
        positions,
        out,
        out if hist is None else hist,
        scores.shape[1],
        n_pairs,
        counts.shape[1],
        n_resamples,
        BP=PAIRS_PER_PROGRAM,
        BB=RESAMPLES_PER_TILE,
        BINS=histogram_bins(scores.shape[1]),
        NPOS=positions.shape[0],
        WITH_HIST=hist is not None,
        PACKED=packed,
        num_warps=NUM_WARPS,
    )


#: Entries one program of :func:`rank_summaries` counts, and resamples it reads at a time (on an H200,
#: 1,000 entries x 10 runs, B = 10,000: 1 x 1,024 the fastest of 1, 2, 4 x 256, 512, 1,024; docs/scale.md).
ENTRIES_PER_PROGRAM = 1
RESAMPLES_PER_RANK_TILE = 1024


def rank_bins(n_entries: int) -> int | None:
    """Bins of :func:`rank_summaries`' histograms (levels 0 ... entries)."""
    return _bins(n_entries + 1)


def rank_summaries(positions, wanted, out) -> None:
    """Each entry's order statistics ``wanted`` and first two moments of its competition ranks.

    ``positions``: (B, entries) int32, ``searchsorted(sorted resample, value, right=True)``, so the
    rank is ``1 + entries - position`` (Bajgar et al.'s rank of a resample); ``wanted``: (npos,) int32;
    ``out``: (entries rounded up to :data:`ENTRIES_PER_PROGRAM`, npos + 2) float64, written; one device.
    """
    n_resamples, n_entries = positions.shape
    _rank_summaries[(triton.cdiv(n_entries, ENTRIES_PER_PROGRAM),)](
        positions,
        wanted,
        out,
        n_entries,
        n_resamples,
        BE=ENTRIES_PER_PROGRAM,
        BB=RESAMPLES_PER_RANK_TILE,
        BINS=rank_bins(n_entries),
        NPOS=wanted.shape[0],
        num_warps=NUM_WARPS,
    )
