"""The resampling kernels on torch, designed for a GPU: every statistic a batched matrix product.

The same bootstraps as the numpy kernels (Efron & Tibshirani 1993, ch. 6 and 13;
Bouthillier et al. 2021, eq. 9 for P(A>B)) with torch's random stream: equal to the numpy
results within Monte Carlo error, not bit for bit, and reproducible per device for a seed.
Resamples are count matrices ``c[b, r]`` drawn on the device (``torch.randint`` +
``scatter_add_``, never copied from the host), so every statistic linear in the
multiplicities is a matrix product over all pairs or entries at once:

* paired P(A>B) of any list of pairs: ``w @ c.T`` with ``w = 2·[a > b] + [a = b]``;
* unpaired P(A>B) is bilinear in the two entries' counts: with
  ``M[i, j] = 2·[a_i > b_j] + [a_i = b_j]``, ``2U_b = c_a[b] · M · c_b[b]``, one batched
  product (``torch.bmm``) for a chunk of pairs and resamples;
* the test bootstrap's means: the examples' counts (chunks of B) times all entries'
  outcomes in one product, each entry's files weighted by its own counts;
* rank intervals: means ``x @ c.T / k``, competition ranks by ``torch.searchsorted`` in
  each sorted resample, percentiles by linear interpolation (numpy's default); the same
  ranking of any resampled statistic (Boo_n's, resampled with numpy).

Sums are float32 where they are exact (integer terms, totals below 2**24), float64 where
not. P(A>B)'s resampled numerators are integers: their percentiles and standard errors are
read from per-pair histograms accumulated on the device chunk by chunk (as
:func:`evaluation.stats._resample.integer_percentiles` does on the CPU), so only the
summaries cross to the host unless the distribution is asked for.

``backend="auto"`` (:func:`resolve_backend`) runs a kernel here on CUDA when a device is
present and the work is big enough to pay for the transfer, and with numpy otherwise.
torch is imported inside the functions: importing this module (or the web process) does
not import torch, and "auto" on a machine without an NVIDIA device never imports it.

References
----------
Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap. Chapman & Hall.
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks. MLSys.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _resample as rs

log = logging.getLogger(__name__)

__all__ = [
    "AUTO_MIN_ELEMENTS",
    "BACKENDS",
    "PairSummary",
    "cuda_present",
    "pairs_p_bootstrap",
    "rank_intervals_from_distribution_torch",
    "rank_intervals_torch",
    "resolve_backend",
    "testset_means_bootstrap",
    "torch_device",
]

BACKENDS = ("numpy", "torch", "auto")
#: Resampled values (statistics x resamples) from which "auto" sends a kernel to the GPU.
AUTO_MIN_ELEMENTS = 1 << 21
#: Elements of the largest temporary of one chunk: 512 MiB of float32 on a GPU, cache-sized on the CPU.
GPU_CHUNK_ELEMENTS = 1 << 27
CPU_CHUNK_ELEMENTS = 1 << 22
#: Largest histogram (pairs x levels) kept for the percentiles; beyond it they come from a sort.
HISTOGRAM_ELEMENTS = 1 << 27
#: Copies of each pair's histogram that resamples are spread over (b mod copies), summed at the end:
#: fewer atomic additions collide on one counter of the device.
HISTOGRAM_COPIES = 16
#: Device types that spread the histograms (the CPU adds without contention).
HISTOGRAM_COPIES_ON = ("cuda",)
#: How a GPU reads P(A>B)'s percentiles: "histogram" (as the CPU always does) or "sort" (each pair's
#: numerators sorted as the smallest integer type). On an H100, paired 100 x 50, B = 10,000: 2.5 ms
#: with histograms, 4.0 ms with the sort (benchmarks/bench_gpu.py --sort-rows).
GPU_SUMMARY = "histogram"
#: Largest (pairs x B) matrix a GPU keeps for the sort; beyond it the histograms.
SORT_ELEMENTS = 1 << 29
#: Device types whose unpaired P(A>B) is the bilinear product ``c_i · M · c_j`` (a batched matrix
#: product, O(B·k²) per pair); elsewhere numpy's O(B·k) arithmetic on cumulative counts, the same
#: numerators from the same draws (2 CPU cores, 20 x 50, B = 10,000: 0.42 s, the product 2.0-2.4 s,
#: numpy 0.85 s). Not timed on a GPU, so a GPU keeps the product it was measured with (1.6-1.9x the floor).
UNPAIRED_PRODUCT_ON = ("cuda",)
#: Device types whose rank intervals come from per-entry histograms of the ranks (entries x
#: (entries + 1) counters, up to HISTOGRAM_ELEMENTS) instead of a sort of each entry's B ranks. On the
#: CPU the sort of small integers is as fast and needs no counters.
RANK_HISTOGRAMS_ON = ("cuda",)
#: Device types whose paired P(A>B) and rank-interval summaries come from the fused Triton kernels
#: (:mod:`evaluation.stats.triton_kernels`) when Triton is installed: the same counts, no
#: (pairs x B) matrix of numerators nor global counters, one launch.
FUSED_PAIRED_ON = ("cuda",)


def cuda_present() -> bool:
    """True when torch sees a CUDA device; never imports torch where no NVIDIA driver is loaded."""
    if "torch" not in sys.modules and not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_backend(backend: str, device: str, elements: int) -> tuple[str, str]:
    """The (backend, device) one kernel runs on.

    "auto": torch on CUDA when a device is present (and ``device`` allows it) and the kernel
    resamples at least :data:`AUTO_MIN_ELEMENTS` values, numpy otherwise. "numpy" and
    "torch" are kept as asked.
    """
    if backend != "auto":
        return backend, device
    if device != "cpu" and elements >= AUTO_MIN_ELEMENTS and cuda_present():
        return "torch", "cuda" if device == "auto" else device
    return "numpy", "cpu"


def describe_device(backend: str, device: str = "auto") -> str:
    """Where a report's resampling runs, in words ("numpy on the CPU", "torch on cuda (NVIDIA H100 ...)")."""
    auto = backend == "auto"
    if auto:
        backend, device = resolve_backend("auto", device, AUTO_MIN_ELEMENTS)
    if backend == "numpy":
        return "numpy on the CPU"
    import torch

    dev = torch_device(device)
    where = f"torch on cuda ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else "torch on the CPU"
    return f"{where} for the large kernels, numpy for the small ones" if auto else where


def torch_device(device: str = "auto"):
    """``torch.device``: "auto" is CUDA when available, else the CPU; "cpu" or "cuda" as asked."""
    import torch

    if not isinstance(device, str):
        return device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"`device` must be 'auto', 'cpu' or 'cuda' (got {device!r}).")
    return torch.device(device)


def _chunk(dev) -> int:
    return GPU_CHUNK_ELEMENTS if dev.type == "cuda" else CPU_CHUNK_ELEMENTS


def _generator(seed: int, device):
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed) % (2**63))
    return generator


def _small_to_device(array: np.ndarray, device):
    """A small host array on ``device`` without waiting for the work queued there: a plain copy from pageable
    memory synchronises the stream, so a copy in the middle of a call left the device idle while the host
    launched the rest (the rank summary: 2.4 ms against the floor's 1.1 ms on an H200). On CUDA the array is
    staged in pinned memory and copied asynchronously (torch's pinned allocator keeps it until the copy ran)."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def _counts(n_items: int, n_resamples: int, generator, device, dtype):
    """Count matrix (B, n_items) of B resamples with replacement of n_items items, drawn on the device."""
    import torch

    idx = torch.randint(0, n_items, (n_resamples, n_items), generator=generator, device=device)
    counts = torch.zeros((n_resamples, n_items), dtype=dtype, device=device)
    return counts.scatter_add_(1, idx, torch.ones(idx.shape, dtype=dtype, device=device))


def _ragged_counts(lengths, kmax: int, n_resamples: int, generator, device, dtype):
    """Counts (B, entries, kmax): entry e resampled on its own over its first ``lengths[e]`` slots."""
    import torch

    u = torch.rand((n_resamples, lengths.numel(), kmax), generator=generator, device=device, dtype=torch.float64)
    idx = torch.minimum((u * lengths[None, :, None]).long(), (lengths - 1)[None, :, None])
    slots = (torch.arange(kmax, device=device)[None, :] < lengths[:, None]).to(dtype)  # (entries, kmax)
    counts = torch.zeros((n_resamples, lengths.numel(), kmax), dtype=dtype, device=device)
    return counts.scatter_add_(2, idx, slots.expand(n_resamples, -1, -1))


# --------------------------------------------------------------------------- P(A>B) of many pairs
@dataclass
class PairSummary:
    """Resampled P(A>B) of a list of pairs: percentiles ``(len(q), pairs)``, standard errors, distribution.

    ``distribution`` (pairs, B) float32 only when asked for, else None.
    """

    percentiles: np.ndarray
    standard_error: np.ndarray
    distribution: np.ndarray | None


class _Histograms:
    """Per-pair histograms of integer numerators in [0, vmax], accumulated over chunks of resamples."""

    def __init__(self, npairs: int, vmax: int, device):
        import torch

        self.width = int(vmax) + 1
        fits = npairs * self.width * HISTOGRAM_COPIES <= HISTOGRAM_ELEMENTS
        self.copies = HISTOGRAM_COPIES if device.type in HISTOGRAM_COPIES_ON and fits else 1
        self.counters = torch.zeros((npairs, self.copies * self.width), dtype=torch.float32, device=device)
        self.spread: Any = None

    def add(self, pairs: slice, numerators):
        import torch

        index = numerators.long()
        if self.copies > 1:  # resample b counts into copy b mod copies
            if self.spread is None or self.spread.numel() != index.shape[1]:
                self.spread = (torch.arange(index.shape[1], device=index.device) % self.copies) * self.width
            index += self.spread
        self.counters[pairs].scatter_add_(1, index, torch.ones(index.shape, dtype=torch.float32, device=index.device))

    @property
    def hist(self):
        return self.counters.view(self.counters.shape[0], self.copies, self.width).sum(dim=1)

    def summary(self, n_resamples: int, q, denominator: np.ndarray):
        """numpy-linear percentiles and ddof=1 standard deviations of P (numerator / denominator)."""
        pct, std = _histogram_summary(self.hist, n_resamples, q)
        return pct / denominator, std / denominator


def _histogram_summary(hist, n_resamples: int, q):
    """numpy-linear percentiles ``(len(q), rows)`` and ddof=1 standard deviations of integer levels.

    ``hist[r, v]`` counts the resamples of row r whose value is level v (0-based); the order
    statistic t of a row is the number of levels whose cumulative count is at most t, so the
    percentiles equal numpy's on the values themselves.
    """
    import torch

    lo_idx, hi_idx, frac = rs._linear_positions(n_resamples, q)
    cum = torch.cumsum(hist, dim=1)
    positions = np.concatenate([lo_idx, hi_idx]).astype(np.float64)
    levels = np.arange(hist.shape[1], dtype=np.float64)
    # one small constant for the few products below: the levels and their squares, then the positions
    const = _small_to_device(np.concatenate([levels, levels**2, positions]), cum.device)
    sums = hist.to(torch.float64) @ const[: 2 * levels.size].view(2, -1).T  # (rows, 2): Σ v·h, Σ v²·h
    # order statistic t = the number of levels whose cumulative count is at most t (rows are sorted)
    wanted = const[2 * levels.size :].to(cum.dtype).expand(cum.shape[0], positions.size).contiguous()
    counted = torch.searchsorted(cum, wanted, right=True).to(torch.float64)
    # everything crosses to the host in one transfer, at the end
    return _read_summary(torch.cat([counted, sums], dim=1), frac, n_resamples)


def _read_summary(table, frac, n_resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentiles ``(len(frac), rows)`` and ddof=1 standard deviations from a device table (rows, 2·len(frac)
    + 2): each row's order statistics below then above each percentile, then ``Σ v`` and ``Σ v²``; one
    transfer to the host."""
    *order, s1, s2 = table.cpu().numpy().T
    return _lerped(order, len(frac), frac), _sd_from_moments(s1, s2, n_resamples)


def _lerped(order, n_q: int, frac) -> np.ndarray:
    """Percentiles (n_q, rows) from the order statistics below (``order[:n_q]``) and above each one."""
    return np.stack([rs._lerp(order[j], order[j + n_q], frac[j]) for j in range(n_q)])


def _sd_from_moments(s1: np.ndarray, s2: np.ndarray, n: int) -> np.ndarray:
    """ddof=1 standard deviations of integer values from their exact sums ``s1 = Σ v`` and ``s2 = Σ v²``:
    ``sqrt(max(s2 − s1²/n, 0) / (n − 1))``, on the host in IEEE float64, so that every summary (sort,
    histograms, the fused kernels) gives the same bits (torch divides by a scalar as a product)."""
    return np.sqrt(np.maximum(s2 - s1 * s1 / n, 0.0) / max(n - 1, 1))


def _sorted_summary(numerators, vmax: int, n_resamples: int, q, denominator: np.ndarray):
    """Percentiles and standard errors from the full (pairs, B) matrix of integer numerators in [0, vmax].

    Sorted as the smallest integer type that holds them; the moments are exact sums in float64.
    """
    import torch

    lo_idx, hi_idx, frac = rs._linear_positions(n_resamples, q)
    compact = (
        torch.uint8 if vmax < 2**8 else torch.int16 if vmax < 2**15 else torch.int32 if vmax < 2**31 else torch.float64
    )
    ordered = torch.sort(numerators.to(compact), dim=1).values
    wide = numerators if vmax * vmax < 2**24 else numerators.to(torch.float64)  # squares exact
    total = numerators.sum(dim=1, dtype=torch.float64)
    squares = (wide * wide).sum(dim=1, dtype=torch.float64)
    picked = torch.cat([ordered[:, lo_idx], ordered[:, hi_idx]], dim=1).to(torch.float64).cpu().numpy().T
    s1, s2 = torch.stack([total, squares]).cpu().numpy()
    std = _sd_from_moments(s1, s2, n_resamples)
    return _lerped(picked, lo_idx.size, frac) / denominator, std / denominator


def _paired_numerators(x, i, j, dtype):
    """The wins matrix of the pairs, ``w = 2·[x_i > x_j] + [x_i = x_j]`` (pairs, k), on x's device."""
    a, b = x[i], x[j]
    return 2 * (a > b).to(dtype) + (a == b).to(dtype)


def _pair_chunks(npairs: int, per_pair: int, dev):
    step = max(1, min(npairs, _chunk(dev) // max(1, per_pair)))
    return [slice(s, min(npairs, s + step)) for s in range(0, npairs, step)]


def pairs_p_bootstrap(
    rows, i, j, *, paired: bool, n_resamples: int, seed: int, q, device="auto", keep_distribution: bool = False
) -> PairSummary:
    """Percentiles ``q`` (in %) and standard errors of the resampled P(row_i > row_j), ties one half.

    Paired: one joint resample of the k runs shared by every pair (numerator ``w @ c.T``,
    denominator 2k). Unpaired: each entry resampled on its own, the Mann–Whitney
    ``2U = c_i · M · c_j`` (denominator ``2 k_i k_j``). Pairs and resamples go in chunks;
    the numerators are integers, summarised on the device: per-pair histograms, or (on a
    GPU, :data:`GPU_SUMMARY`) a sort of the whole matrix as small integers.
    """
    import torch

    dev = torch_device(device)
    generator = _generator(seed, dev)
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    lengths = np.array([np.size(r) for r in rows], dtype=np.int64)
    if paired:
        denominator = np.full(i.size, 2.0 * lengths[0])
    else:
        denominator = 2.0 * lengths[i] * lengths[j]
    vmax = int(denominator.max()) if i.size else 0
    dtype = torch.float32 if vmax < 2**24 else torch.float64
    sort = i.size * (vmax + 1) > HISTOGRAM_ELEMENTS or (
        dev.type == "cuda" and GPU_SUMMARY == "sort" and i.size * n_resamples <= SORT_ELEMENTS
    )
    if paired and not (sort or keep_distribution) and dev.type in FUSED_PAIRED_ON and not _fused_failed:
        try:
            fused = _fused_paired_summary(rows, i, j, n_resamples, generator, dev, dtype, q)
        except torch.OutOfMemoryError:  # the device's memory, not the kernel: the plain path would not fare better
            raise
        except Exception as exc:  # Triton cannot build or run it on this device (an older GPU, a driver)
            _fused_unavailable(exc)
            fused, generator = None, _generator(seed, dev)  # the plain path, from the same first draw
        if fused is not None:
            pct, std = fused
            return PairSummary(pct / denominator, std / denominator, None)
    hist = None if sort else _Histograms(i.size, vmax, dev)
    full = torch.empty((i.size, n_resamples), dtype=dtype, device=dev) if sort or keep_distribution else None
    if paired:
        kernel = _paired_kernel
    else:
        kernel = _unpaired_kernel if dev.type in UNPAIRED_PRODUCT_ON else _unpaired_gather_kernel
    for b0, b1, numerators, pairs in kernel(rows, i, j, n_resamples, generator, dev, dtype):
        if hist is not None:
            hist.add(pairs, numerators)
        if full is not None:
            full[pairs, b0:b1] = numerators
    if hist is not None:
        pct, se = hist.summary(n_resamples, q, denominator)
    else:
        assert full is not None  # no histogram: the full matrix is kept
        pct, se = _sorted_summary(full, vmax, n_resamples, q, denominator)
    dist = None
    if keep_distribution:
        assert full is not None  # kept whenever the distribution is asked for
        dist = (full / torch.as_tensor(denominator, dtype=full.dtype, device=dev)[:, None]).float().cpu().numpy()
    return PairSummary(pct, se, dist)


def _paired_kernel(rows, i, j, n_resamples, generator, dev, dtype):
    """Yields (b0, b1, numerators (pairs, b1 - b0), pairs slice): ``w @ c.T`` per chunk."""
    import torch

    x = torch.as_tensor(np.stack(rows).astype(np.float64), device=dev)
    k = x.shape[1]
    ti, tj = torch.as_tensor(i, device=dev), torch.as_tensor(j, device=dev)
    for b0, b1 in _paired_resample_chunks(k, i.size, n_resamples, dev):
        counts_t = _counts(k, b1 - b0, generator, dev, dtype).T.contiguous()  # (k, Bc)
        for pairs in _pair_chunks(i.size, b1 - b0, dev):
            w = _paired_numerators(x, ti[pairs], tj[pairs], dtype)
            yield b0, b1, w @ counts_t, pairs


def _paired_resample_chunks(k: int, npairs: int, n_resamples: int, dev) -> list[tuple[int, int]]:
    """The chunks [b0, b1) of resamples whose counts the paired kernels draw, one call each."""
    step = max(1, min(n_resamples, _chunk(dev) // max(1, k, npairs)))
    return [(b0, min(n_resamples, b0 + step)) for b0 in range(0, n_resamples, step)]


_fused_failed = False


def _fused_unavailable(exc: Exception) -> None:
    """Stop using the fused kernel in this process, and say so once: the plain torch path gives the same numbers."""
    global _fused_failed
    _fused_failed = True
    log.warning(
        "a fused Triton kernel (paired P(A>B), rank intervals) failed (%s: %s); using the plain torch path",
        type(exc).__name__,
        exc,
    )


def _fused_paired_summary(rows, i, j, n_resamples, generator, dev, dtype, q, hist=None):
    """Each pair's numpy-linear percentiles ``q`` ``(len(q), pairs)`` and ddof=1 standard deviations of the
    paired numerators, from the fused Triton kernel (one launch, one transfer back), or None (no Triton, or
    too many runs for its bins) before any draw. The counts are drawn as :func:`_paired_kernel` draws
    them, so the numbers equal the unfused path's (:func:`_histogram_summary` of the same histograms).
    ``hist``: a list that receives the (pairs, 2k + 1) histograms (the tests)."""
    import torch

    try:
        from . import triton_kernels as tk
    except ImportError:
        return None
    k = np.size(rows[0])
    bins = tk.histogram_bins(k)
    columns = -(-n_resamples // tk.RESAMPLES_PER_TILE) * tk.RESAMPLES_PER_TILE
    # too many runs for the kernel's bins; no pair to launch it for; counts past its 32-bit offsets
    if bins is None or i.size == 0 or k * columns >= 2**31:
        return None
    x = torch.as_tensor(np.stack(rows).astype(np.float64), device=dev)
    padded_pairs = -(-i.size // tk.PAIRS_PER_PROGRAM) * tk.PAIRS_PER_PROGRAM
    lo_idx, hi_idx, frac = rs._linear_positions(n_resamples, q)
    # the pairs (padding: entry 0 with itself, sliced off) and the order statistics wanted, in one copy
    small = np.zeros(2 * padded_pairs + 2 * lo_idx.size, dtype=np.int32)
    small[: i.size], small[padded_pairs : padded_pairs + i.size] = i, j
    small[2 * padded_pairs :] = np.concatenate([lo_idx, hi_idx])
    small_t = torch.as_tensor(small, device=dev)
    # every chunk's draws side by side as small integers (k x B bytes), one launch; only the end is padded
    counts_t = torch.zeros((k, columns), dtype=torch.uint8 if k < 2**8 else torch.int16, device=dev)
    for b0, b1 in _paired_resample_chunks(k, i.size, n_resamples, dev):
        counts_t[:, b0:b1] = _counts(k, b1 - b0, generator, dev, dtype).T
    out = torch.empty((padded_pairs, 2 * lo_idx.size + 2), dtype=torch.float64, device=dev)
    counted = None if hist is None else torch.empty((padded_pairs, bins), dtype=torch.int32, device=dev)
    pairs_t, positions_t = small_t[: 2 * padded_pairs].view(2, padded_pairs), small_t[2 * padded_pairs :]
    tk.paired_summaries(x, pairs_t, counts_t, n_resamples, positions_t, out, counted)
    if counted is not None:
        hist.append(counted[: i.size, : 2 * k + 1])
    return _read_summary(out[: i.size], frac, n_resamples)


def _unpaired_kernel(rows, i, j, n_resamples, generator, dev, dtype):
    """Yields (b0, b1, 2U (pairs, b1 - b0), pairs slice): ``bmm(c_i, M) · c_j`` per chunk.

    Entries are padded to the longest (padding slots have count 0, so they add nothing).
    """
    import torch

    lengths = np.array([np.size(r) for r in rows], dtype=np.int64)
    kmax = int(lengths.max())
    padded = np.full((len(rows), kmax), np.nan)
    for e, r in enumerate(rows):
        padded[e, : lengths[e]] = r
    x = torch.as_tensor(padded, device=dev)
    t_len = torch.as_tensor(lengths, device=dev)
    ti, tj = torch.as_tensor(i, device=dev), torch.as_tensor(j, device=dev)
    b_step = max(1, min(n_resamples, _chunk(dev) // max(1, len(rows) * kmax)))
    for b0 in range(0, n_resamples, b_step):
        b1 = min(n_resamples, b0 + b_step)
        counts = _ragged_counts(t_len, kmax, b1 - b0, generator, dev, dtype).permute(1, 0, 2)  # (entries, Bc, kmax)
        for pairs in _pair_chunks(i.size, 3 * (b1 - b0) * kmax, dev):
            a, b = x[ti[pairs]], x[tj[pairs]]  # (P, kmax)
            m = 2 * (a[:, :, None] > b[:, None, :]).to(dtype) + (a[:, :, None] == b[:, None, :]).to(dtype)
            left = torch.bmm(counts[ti[pairs]], m)  # (P, Bc, kmax)
            yield b0, b1, (left * counts[tj[pairs]]).sum(dim=2), pairs


def _unpaired_gather_kernel(rows, i, j, n_resamples, generator, dev, dtype):
    """:func:`_unpaired_kernel`'s numerators on the same draws, O(B·k) per pair instead of O(B·k²).

    numpy's arithmetic (:func:`evaluation.stats.outperform._unpaired_engine`): with ``cum_i`` the
    cumulative counts of entry i's runs in sorted order, ``#(a* < t) = cum_i[below(t)]`` and
    ``#(a* <= t) = cum_i[at_or_below(t)]`` for positions fixed across resamples, so
    ``2U = 2 k_i k_j - Σ_s c_j[s] (cum_i[below(x_js)] + cum_i[at_or_below(x_js)])``. Pairs are
    taken in runs of the same first entry.
    """
    import torch

    lengths = np.array([np.size(r) for r in rows], dtype=np.int64)
    kmax = int(lengths.max())
    padded = np.full((len(rows), kmax), np.inf)  # padding slots: count 0, read as cum[0] = 0
    for e, r in enumerate(rows):
        padded[e, : lengths[e]] = r
    t_len = torch.as_tensor(lengths, device=dev)
    b_step = max(1, min(n_resamples, _chunk(dev) // max(1, len(rows) * kmax)))
    runs = []  # (first entry, its sorted order, the pairs' slices with their positions in it)
    for r0, r1 in _runs_of_first_entries(i):
        first = int(i[r0])
        order = np.argsort(padded[first, : lengths[first]], kind="stable")
        a_sorted = padded[first, order]
        subs = []
        for sub in _pair_chunks(r1 - r0, 3 * b_step * kmax, dev):
            pairs = slice(r0 + sub.start, r0 + sub.stop)
            others = padded[j[pairs]]  # (P, kmax)
            at = [
                torch.as_tensor(np.where(np.isfinite(others), np.searchsorted(a_sorted, others, side=s), 0).ravel())
                for s in ("left", "right")
            ]
            total = torch.as_tensor(2.0 * lengths[first] * lengths[j[pairs]], dtype=dtype, device=dev)
            subs.append((pairs, torch.as_tensor(j[pairs], device=dev), at, total))
        runs.append((first, torch.as_tensor(order, device=dev), subs))
    for b0 in range(0, n_resamples, b_step):
        b1 = min(n_resamples, b0 + b_step)
        # (entries, kmax, Bc): one slot's counts over the resamples lie together
        counts = _ragged_counts(t_len, kmax, b1 - b0, generator, dev, dtype).permute(1, 2, 0).contiguous()
        for first, order, subs in runs:
            cum = torch.zeros((order.numel() + 1, b1 - b0), dtype=dtype, device=dev)
            torch.cumsum(counts[first].index_select(0, order), dim=0, out=cum[1:])
            for pairs, theirs, (left, right), total in subs:
                below_both = (cum.index_select(0, left) + cum.index_select(0, right)).view(-1, kmax, b1 - b0)
                yield b0, b1, total[:, None] - (counts.index_select(0, theirs) * below_both).sum(dim=1), pairs


def _runs_of_first_entries(i: np.ndarray) -> list[tuple[int, int]]:
    """Slices [r0, r1) of consecutive pairs with the same first entry."""
    if i.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
    return list(zip(starts.tolist(), np.r_[starts[1:], i.size].tolist()))


# --------------------------------------------------------------------------- test bootstrap
def testset_means_bootstrap(entries, *, n_resamples: int, seed: int, device="auto", file_keys=None) -> np.ndarray:
    """Each entry's mean outcome in B resamples, (B, entries): test examples shared, files per entry.

    ``entries``: one array (files, examples) per entry, all with the same examples. One
    product ``c @ O`` per chunk of resamples gives every file's resampled sum (``O``: the
    outcomes of all files, examples x files), float32 when the outcomes are integers and the
    sums stay below 2**24; each entry's files are then weighted by its own counts, drawn on the device from a
    generator of its own seeded by ``seed`` and its content (``file_keys``:
    :func:`evaluation.stats._resample.file_stream_keys`, computed here when not given), files in sorted order.
    """
    import torch

    dev = torch_device(device)
    generator = _generator(seed, dev)
    files = np.array([e.shape[0] for e in entries])
    # to the device as they are; joined, checked and transposed there
    table = torch.cat([torch.as_tensor(np.asarray(e, dtype=np.float64), device=dev) for e in entries])  # (F, n)
    n = table.shape[1]
    exact = bool((table == table.round()).all()) and float(table.abs().max()) * n < 2**24
    dtype = torch.float32 if exact else torch.float64
    outcomes = table.T.to(dtype).contiguous()  # (n, F)
    owner = np.repeat(np.arange(len(entries)), files)
    mean_of_files = np.zeros((table.shape[0], len(entries)))
    mean_of_files[np.arange(owner.size), owner] = 1.0 / (files[owner] * n)
    mean_of_files_t = torch.as_tensor(mean_of_files, device=dev)
    starts = np.concatenate([[0], np.cumsum(files)])
    if file_keys is None:
        file_keys = rs.file_stream_keys(entries, 1.0)
    streams = {
        e: (_generator(int(np.random.SeedSequence([seed, key]).generate_state(1, np.uint64)[0]), dev), order)
        for e, (key, order) in enumerate(file_keys)
        if order is not None
    }
    out = torch.empty((n_resamples, len(entries)), dtype=torch.float64, device=dev)
    step = max(1, min(n_resamples, _chunk(dev) // (2 * n)))
    for b0 in range(0, n_resamples, step):
        b1 = min(n_resamples, b0 + step)
        sums = (_counts(n, b1 - b0, generator, dev, dtype) @ outcomes).to(torch.float64)  # (Bc, F)
        for e, (stream, order) in streams.items():
            columns = torch.as_tensor(starts[e] + order, device=dev)
            sums[:, columns] *= _counts(order.size, b1 - b0, stream, dev, torch.float64)
        out[b0:b1] = sums @ mean_of_files_t
    return out.cpu().numpy()


# --------------------------------------------------------------------------- rank intervals
def _linear_quantiles(values, q):
    """numpy's default ("linear") percentiles along the last axis of a torch tensor, shape (len(q), rows)."""
    import torch

    b = values.shape[-1]
    ordered = torch.sort(values, dim=-1).values
    lo_idx, hi_idx, frac = rs._linear_positions(b, q)
    out = [
        rs._lerp(ordered[..., lo].to(torch.float64), ordered[..., hi].to(torch.float64), t)
        for lo, hi, t in zip(lo_idx, hi_idx, frac)
    ]
    return torch.stack(out)


def rank_intervals_torch(
    scores, *, n_resamples: int, confidence_level: float, seed: int, device="auto", keep_distribution: bool = True
):
    """Rank intervals of paired entries by their mean (1 = best): one joint bootstrap on the device.

    Returns a :class:`~evaluation.stats.RankIntervals` (competition ranks, "1224"), as
    :func:`~evaluation.stats.rank_intervals` with ``statistic="mean"``; the ranks in each
    resample cross to the host only with ``keep_distribution``.
    """
    import torch

    dev = torch_device(device)
    table = np.asarray(scores, dtype=np.float64)
    x = torch.as_tensor(table, device=dev)
    counts = _counts(x.shape[1], n_resamples, _generator(seed, dev), dev, torch.float64)
    means = counts @ x.T / x.shape[1]  # (B, entries)
    # resampled means of scores below 1e300 cannot overflow: the ties need no care for infinities
    finite = bool(table.size) and bool(np.isfinite(table).all()) and float(np.abs(table).max()) < 1e300
    # the observed means on the host, as numpy's path computes them: no wait for the device here
    return _rank_intervals(means, table.mean(axis=1), confidence_level, keep_distribution, finite)


def rank_intervals_from_distribution_torch(
    estimate, boot, *, confidence_level: float, device="auto", keep_distribution: bool = True
):
    """:func:`~evaluation.stats.rank_intervals_from_distribution` with the ranking on the device.

    Competition ranks are exact (1 + the entries strictly above, by ``searchsorted``), so
    the intervals equal numpy's; the standard errors agree to rounding.
    """
    import torch

    dev = torch_device(device)
    means = torch.as_tensor(np.asarray(boot, dtype=np.float64), device=dev).T.contiguous()  # (B, entries)
    return _rank_intervals(means, np.asarray(estimate, dtype=np.float64), confidence_level, keep_distribution)


def _rank_intervals(
    means, estimate: np.ndarray, confidence_level: float, keep_distribution: bool, finite: bool = False
):
    """RankIntervals from the resampled statistic (B, entries) on the device and the observed one (``finite``:
    every resampled value is known finite, :func:`_tie_block_ends`)."""
    import torch

    from ._types import RankIntervals

    n_resamples, n_entries = means.shape
    positions = _tie_block_ends(means, finite)
    q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
    fused = None if keep_distribution else _fused_rank_summary(positions, q)
    if fused is not None:
        (lo, hi), spread = fused
        boot_ranks = None
    elif not keep_distribution and _rank_histograms(means.device, n_entries):
        (lo, hi), spread = _rank_histogram_summary(positions.to(torch.int64), q)
        boot_ranks = None
    else:
        # competition rank: 1 + entries with a larger value (beyond a tie) in the same resample, (B, entries)
        ranks = 1 + n_entries - positions
        compact = torch.int16 if n_entries < 2**15 else torch.int32  # fewer radix passes in the sort below
        ranks = ranks.T.to(compact)  # (entries, B)
        lo, hi = _linear_quantiles(ranks, q).cpu().numpy()
        total, squares = ranks.sum(dim=1, dtype=torch.float64), (ranks.to(torch.float64) ** 2).sum(dim=1)
        s1, s2 = torch.stack([total, squares]).cpu().numpy()
        spread = _sd_from_moments(s1, s2, n_resamples)
        boot_ranks = ranks.cpu().numpy().astype(np.int64) if keep_distribution else None
    return RankIntervals(
        rs.competition_rank(estimate),
        np.floor(lo + 1e-9).astype(np.int64),
        np.ceil(hi - 1e-9).astype(np.int64),
        confidence_level,
        spread,
        boot_ranks,
    )


def _tie_block_ends(means, finite: bool = False):
    """Per resample (row of ``means``, (B, entries)), each value's count of values at most it, a tie counted
    whole: ``searchsorted(sorted row, value, right=True)`` where values within ``TIE_RELATIVE`` of the larger of
    theirs and the one below them are equal, as :func:`evaluation.stats._resample.competition_rank` ties them; int32, (B, entries).

    Each sorted row is cut into tie blocks, labelled by the cumulative count of block starts, and a value's end
    is the count of labels at most its own (``searchsorted`` of the labels): a dozen passes over the (B, entries)
    values on the device. ``finite`` (the caller knows every value is finite and far from overflowing) skips the
    passes that keep infinities apart."""
    import torch

    values, order = torch.sort(means, dim=1)
    upper, lower = values[:, 1:], values[:, :-1]
    larger = torch.maximum(upper, -lower)  # max(|upper|, |lower|) of a sorted pair
    if not finite:
        larger = larger.clamp_(max=torch.finfo(values.dtype).max)
    starts = (upper - lower) > larger.mul_(rs.TIE_RELATIVE)  # a new tie block begins at position i + 1
    if not finite:
        starts |= torch.isinf(upper) & (upper != lower)
    labels = torch.zeros(values.shape, dtype=torch.int32, device=means.device)
    torch.cumsum(starts, dim=1, dtype=torch.int32, out=labels[:, 1:])
    ends = torch.searchsorted(labels, labels, right=True, out_int32=True)  # the first block start after it
    return torch.empty_like(ends).scatter_(1, order, ends)


def _fused_rank_summary(positions, q):
    """Each entry's rank percentiles ``q`` ``(len(q), entries)`` and standard errors from the fused Triton
    kernel (:data:`FUSED_PAIRED_ON` devices), or None (not such a device, no Triton, more entries than its
    bins, or it failed here: :func:`_fused_unavailable`); the numbers of :func:`_rank_histogram_summary`."""
    import torch

    n_resamples, n_entries = positions.shape
    if positions.device.type not in FUSED_PAIRED_ON or _fused_failed:
        return None
    try:
        from . import triton_kernels as tk
    except ImportError:
        return None
    if tk.rank_bins(n_entries) is None or n_resamples * n_entries >= 2**31:  # past the kernel's 32-bit offsets
        return None
    lo_idx, hi_idx, frac = rs._linear_positions(n_resamples, q)
    try:
        wanted = _small_to_device(np.concatenate([lo_idx, hi_idx]).astype(np.int32), positions.device)
        padded = -(-n_entries // tk.ENTRIES_PER_PROGRAM) * tk.ENTRIES_PER_PROGRAM
        out = torch.empty((padded, wanted.numel() + 2), dtype=torch.float64, device=positions.device)
        tk.rank_summaries(positions, wanted, out)
        return _read_summary(out[:n_entries], frac, n_resamples)
    except torch.OutOfMemoryError:
        raise
    except Exception as exc:  # Triton cannot build or run it on this device: the histograms give the same numbers
        _fused_unavailable(exc)
        return None


def _rank_histograms(device, n_entries: int) -> bool:
    """Whether rank intervals are read from per-entry histograms of ranks (:data:`RANK_HISTOGRAMS_ON`)."""
    return device.type in RANK_HISTOGRAMS_ON and n_entries * (n_entries + 1) <= HISTOGRAM_ELEMENTS


def _rank_histogram_summary(positions, q):
    """Percentiles (in ranks) and standard errors of each entry's ranks, by histogram.

    ``positions`` (B, entries): each value's ``searchsorted(..., right=True)`` in its sorted
    resample, so its competition rank is ``1 + entries - position``. Entry e's rank r is
    counted in bin ``e·(entries + 1) + r``, computed in one pass from the positions, then one
    scatter over the resamples as they lie (no transpose, no sort of the B ranks of every
    entry); the same numbers as sorting.
    """
    import torch

    n_resamples, n_entries = positions.shape
    width = n_entries + 1
    bin_of_position_zero = torch.arange(n_entries, dtype=torch.int64, device=positions.device) * width + width
    flat = (bin_of_position_zero - positions).reshape(-1)
    counters = torch.zeros(n_entries * width, dtype=torch.float32, device=positions.device)
    counters.scatter_add_(0, flat, torch.ones(1, dtype=torch.float32, device=positions.device).expand(flat.numel()))
    return _histogram_summary(counters.view(n_entries, width), n_resamples, q)
