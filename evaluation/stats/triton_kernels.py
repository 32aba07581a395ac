"""A fused Triton kernel for paired P(A>B): the numerators and their histograms in one pass.

Paired P(A>B) of a pair (a, b) in resample t is ``n_t / 2k`` with the integer numerator
``n_t = Σ_r w_r c_tr``, ``w_r = 2·[a_r > b_r] + [a_r = b_r]`` (Bouthillier et al. 2021, eq. 9,
ties one half), w compared in the kernel from the scores. The percentiles and standard errors need only each pair's histogram of
``n_t`` over the resamples (see :func:`evaluation.stats.torch_backend._histogram_summary`),
so this kernel computes ``n_t`` for a block of pairs and a tile of resamples in registers
and counts it at once (``tl.histogram``: warp ballots and shared memory, no atomic on
global memory). The (pairs x B) matrix of numerators, which the unfused path writes,
converts to int64 and scatters into global counters, is never formed.

The counts come from the caller (torch's generator, the same draws as the unfused path),
so the histograms are equal to the unfused path's, count for count.

Imported only where it runs: on CUDA with Triton installed, or on the CPU under
``TRITON_INTERPRET=1`` (the tests). Importing it without Triton raises ImportError.

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks. MLSys.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["PAIRS_PER_PROGRAM", "RESAMPLES_PER_TILE", "histogram_bins", "paired_histograms"]

#: Pairs one program counts (one histogram each, kept in registers).
PAIRS_PER_PROGRAM = 2
#: Resamples one program reads at a time (a power of two).
RESAMPLES_PER_TILE = 1024
#: Warps of one program.
NUM_WARPS = 4
#: Widest histogram the kernel keeps (numerators up to 2k, so k <= 511 runs).
MAX_BINS = 1024


@triton.jit
def _paired_histograms(
    x_ptr,  # (entries, runs) float64: the scores
    pairs_ptr,  # (2, pairs padded) int32: each pair's two entries (padding pairs: any entry, ignored)
    c_ptr,  # (runs, resamples padded) small integers: the resamples' counts of each run
    out_ptr,  # (pairs padded, BINS) int32: histograms, added to
    n_runs,
    n_pairs_padded,
    n_columns,
    BP: tl.constexpr,
    BB: tl.constexpr,
    BINS: tl.constexpr,
):
    first = tl.program_id(0) * BP
    slots = tl.arange(0, BP)
    bins = tl.arange(0, BINS)
    acc = tl.zeros((BP, BINS), dtype=tl.int32)
    for b0 in range(0, n_columns, BB):
        cols = b0 + tl.arange(0, BB)
        for p in tl.static_range(BP):
            row_a = tl.load(pairs_ptr + first + p) * n_runs
            row_b = tl.load(pairs_ptr + n_pairs_padded + first + p) * n_runs
            n = tl.zeros((BB,), dtype=tl.int32)
            for r in range(n_runs):
                a = tl.load(x_ptr + row_a + r)
                b = tl.load(x_ptr + row_b + r)
                w = 2 * (a > b).to(tl.int32) + (a == b).to(tl.int32)
                n += w * tl.load(c_ptr + r * n_columns + cols).to(tl.int32)
            counted = tl.histogram(n, BINS)
            acc += tl.where(slots[:, None] == p, counted[None, :], 0)
    where = out_ptr + (first + slots)[:, None] * BINS + bins[None, :]
    tl.store(where, tl.load(where) + acc)


def histogram_bins(n_runs: int) -> int | None:
    """Bins of the kernel's histograms for k runs (a power of two above 2k), None beyond MAX_BINS."""
    bins = max(32, triton.next_power_of_2(2 * n_runs + 1))
    return bins if bins <= MAX_BINS else None


def paired_histograms(scores, pairs, counts, out) -> None:
    """Add each pair's histogram of numerators ``Σ_r w_r c_r`` to ``out``.

    ``scores``: (entries, k) float64; ``pairs``: (2, pairs) int32, the pairs' two entries,
    pairs a multiple of :data:`PAIRS_PER_PROGRAM`; ``counts``: (k, columns) uint8 or int16,
    columns a multiple of :data:`RESAMPLES_PER_TILE` (padding columns count 0, so they land in
    bin 0: the caller takes them off); ``out``: (pairs, :func:`histogram_bins`) int32; all
    on the same device.
    """
    n_pairs = pairs.shape[1]
    assert n_pairs % PAIRS_PER_PROGRAM == 0 and counts.shape[1] % RESAMPLES_PER_TILE == 0
    _paired_histograms[(n_pairs // PAIRS_PER_PROGRAM,)](
        scores,
        pairs,
        counts,
        out,
        scores.shape[1],
        n_pairs,
        counts.shape[1],
        BP=PAIRS_PER_PROGRAM,
        BB=RESAMPLES_PER_TILE,
        BINS=out.shape[1],
        num_warps=NUM_WARPS,
    )
