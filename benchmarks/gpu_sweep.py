"""The fused Triton kernels' shapes on a GPU, and where one call's time goes (issue 27). Not a test.

For paired P(A>B) (100 entries x 50 runs, all pairs) and rank intervals (1,000 x 10), B = 10,000:
each block shape of the kernel (pairs or entries per program x resamples per tile) timed
alternately with its floor (``bench_gpu.timed_together``, median of ``--repeats``), then one
call of each under ``torch.profiler`` (the device's kernels and the host's operations). The
defaults in ``evaluation/stats/triton_kernels.py`` are the shapes this chose. Run on the GPU
machine from the repository root, after ``benchmarks/gpu_check.sh``::

    python3 benchmarks/gpu_sweep.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from bench_gpu import floor_paired, floor_ranks, scores, timed_together  # noqa: E402

from evaluation.stats import torch_backend as tb  # noqa: E402
from evaluation.stats import triton_kernels as tk  # noqa: E402

B = 10_000


def paired_call(x, i, j, dev):
    return lambda: tb.pairs_p_bootstrap(list(x), i, j, paired=True, n_resamples=B, seed=1, q=[2.5, 97.5], device=dev)


def rank_call(x, dev):
    return lambda: tb.rank_intervals_torch(
        x, n_resamples=B, confidence_level=0.95, seed=1, device=dev, keep_distribution=False
    )


def plain(call):
    """``call()`` without the fused kernels: the numbers each shape must give, bit for bit."""
    saved, tb.FUSED_PAIRED_ON = tb.FUSED_PAIRED_ON, ()
    try:
        return call()
    finally:
        tb.FUSED_PAIRED_ON = saved


def same(a, b) -> bool:
    fields = ("percentiles", "standard_error") if hasattr(a, "percentiles") else ("low", "high", "standard_error")
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields)


def sweep(name, call, floor, shapes, set_shape, repeats, sync) -> None:
    expected = plain(call)
    for shape in shapes:
        set_shape(*shape)
        try:
            (t, got), (t_floor, _) = timed_together(call, floor, repeats, sync)
        except Exception as exc:  # a shape the device cannot compile (registers, shared memory)
            print(f"{name} {shape}: failed ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        print(
            f"{name} {shape}: {1e3 * t:.3f} ms, floor {1e3 * t_floor:.3f} ms ({t / t_floor:.2f}x)"
            f"{'' if same(got, expected) else ', NOT the unfused numbers'}{', fell back' if tb._fused_failed else ''}",
            flush=True,
        )


def profile(name, call) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    call()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    print(f"--- {name}: one call")
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=40))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ranks", action="store_true", help="also the rank kernel's shapes")
    args = parser.parse_args(argv)
    dev = torch.device("cuda")
    sync = torch.cuda.synchronize
    x = scores(100, 50)
    i, j = np.triu_indices(100, 1)
    paired, paired_floor = paired_call(x, i, j, dev), (lambda: floor_paired(torch, x, i, j, B, dev))
    ranks_x = scores(1000, 10)
    ranks, ranks_floor = rank_call(ranks_x, dev), (lambda: floor_ranks(torch, ranks_x, B, dev))
    defaults = (tk.PAIRS_PER_PROGRAM, tk.RESAMPLES_PER_TILE, tk.PACKED_COUNTS, tk.NUM_WARPS)
    rank_defaults = (tk.ENTRIES_PER_PROGRAM, tk.RESAMPLES_PER_RANK_TILE)

    def set_paired(bp, bb, packed, warps):
        tk.PAIRS_PER_PROGRAM, tk.RESAMPLES_PER_TILE, tk.PACKED_COUNTS, tk.NUM_WARPS = bp, bb, packed, warps

    def set_ranks(be, bb):
        tk.ENTRIES_PER_PROGRAM, tk.RESAMPLES_PER_RANK_TILE = be, bb

    shapes = [(bp, bb, packed, 4) for packed in (True, False) for bp in (1, 2, 4) for bb in (1024, 2048, 4096)]
    shapes += [(bp, bb, True, 8) for bp in (1, 2) for bb in (2048, 4096)]
    name = "paired 100 x 50 (pairs, resamples per program, packed counts, warps)"
    sweep(name, paired, paired_floor, shapes, set_paired, args.repeats, sync)
    set_paired(*defaults)
    if args.ranks:
        shapes = [(be, bb) for be in (1, 2) for bb in (1024, 2048)]
        name = "ranks 1000 x 10, entries x resamples per program"
        sweep(name, ranks, ranks_floor, shapes, set_ranks, args.repeats, sync)
        set_ranks(*rank_defaults)
    for label, call in (("paired", paired), ("paired floor", paired_floor), ("ranks", ranks)):
        profile(label, call)
    print(f"fused kernels failed and fell back: {tb._fused_failed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
