"""Benchmark the torch resampling kernels against their floor and against numpy (issue 27). Not a test.

For each kernel of :mod:`evaluation.stats.torch_backend`, in one run on one device:

* **kernel**: the project's torch function (counts drawn on the device, chunks, the
  summaries that cross to the host), timed with the device synchronised, median of
  ``--repeats`` after one warm-up, its calls alternating with the floor's (the same clocks);
* **floor**: the plainest torch code of the same arithmetic on the same device (the counts
  drawn the same way, one matrix product over everything, no summaries): the kernel's target
  is at most 2x the floor;
* **numpy**: the numpy kernel of the same statistic (the same arithmetic on the CPU), and
  the agreement of the two results (percentile ends and standard errors within Monte
  Carlo error);
* the project's public functions with ``backend="numpy"`` and the torch backend
  (``pairwise_comparisons``, ``rank_intervals``, ``paired_test_bootstrap``), and
  ``build_report`` with ``backend="numpy"`` against ``backend="auto"``.

Targets (issue 27): on a GPU every kernel <= 2x its floor, unpaired all pairs 100 x 50,
B = 10,000 under 0.1 s, ``build_report`` of 5,000 entries under 3 s and of 20,000 under
15 s; on the CPU the torch kernels at most 3x numpy. Each prints PASS or FAIL. Run from the
repository root::

    .venv/bin/python benchmarks/bench_gpu.py                  # CUDA when present, else the CPU
    .venv/bin/python benchmarks/bench_gpu.py --device cpu     # the CPU figures
    .venv/bin/python benchmarks/bench_gpu.py --quick          # small sizes, a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import stats  # noqa: E402
from evaluation.stats import outperform  # noqa: E402
from evaluation.stats import torch_backend as tb  # noqa: E402

Q = [2.5, 97.5]


def timed(fn, repeats: int, sync, warm_up: bool = True) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls after one warm-up (a device's start, its allocations); the last result."""
    result = None
    if warm_up:
        result = fn()
        sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def timed_together(first, second, repeats: int, sync) -> tuple[tuple[float, object], tuple[float, object]]:
    """:func:`timed` of two functions called in turn (one warm-up each), so that both meet the device
    in the same state (its clocks rise and fall with the load): a kernel against its floor."""
    results = [first(), second()]
    sync()
    times: list[list[float]] = [[], []]
    for _ in range(repeats):
        for n, fn in enumerate((first, second)):
            start = time.perf_counter()
            results[n] = fn()
            sync()
            times[n].append(time.perf_counter() - start)
    return (statistics.median(times[0]), results[0]), (statistics.median(times[1]), results[1])


def scores(entries: int, runs: int, seed: int = 0) -> np.ndarray:
    """Close entries (groups overlap), rounded to 4 decimals so that ties occur as on real boards."""
    rng = np.random.default_rng(seed)
    return np.round(np.linspace(0.80, 0.70, entries)[:, None] + 0.02 * rng.standard_normal((entries, runs)), 4)


# --------------------------------------------------------------------------- floors: plain torch
def floor_paired(torch, x, i, j, b, dev):
    xt = torch.as_tensor(x, device=dev)
    k = xt.shape[1]
    idx = torch.randint(0, k, (b, k), device=dev)
    counts = torch.zeros((b, k), device=dev).scatter_add_(1, idx, torch.ones((b, k), device=dev))
    a, c = xt[torch.as_tensor(i, device=dev)], xt[torch.as_tensor(j, device=dev)]
    w = 2 * (a > c).float() + (a == c).float()
    return w @ counts.T


def floor_unpaired(torch, x, i, j, b, dev):
    xt = torch.as_tensor(x, device=dev)
    n, k = xt.shape
    idx = torch.randint(0, k, (n, b, k), device=dev)
    counts = torch.zeros((n, b, k), device=dev).scatter_add_(2, idx, torch.ones((n, b, k), device=dev))
    ti, tj = torch.as_tensor(i, device=dev), torch.as_tensor(j, device=dev)
    step = max(1, (1 << 29) // (b * k))  # the plain product, in as few pieces as memory allows
    out = []
    for s in range(0, len(i), step):
        a, c = xt[ti[s : s + step]], xt[tj[s : s + step]]
        m = 2 * (a[:, :, None] > c[:, None, :]).float() + (a[:, :, None] == c[:, None, :]).float()
        out.append((torch.bmm(counts[ti[s : s + step]], m) * counts[tj[s : s + step]]).sum(dim=2))
    return torch.cat(out)


def floor_testset(torch, table, b, dev):
    outcomes = torch.as_tensor(table.T.copy(), dtype=torch.float32, device=dev)
    n = outcomes.shape[0]
    step = max(1, (1 << 30) // n if dev.type == "cuda" else (1 << 22) // n)
    out = []
    for s in range(0, b, step):
        rows = min(step, b - s)
        idx = torch.randint(0, n, (rows, n), device=dev)
        counts = torch.zeros((rows, n), device=dev).scatter_add_(1, idx, torch.ones((rows, n), device=dev))
        out.append(counts @ outcomes)
    return torch.cat(out)


def floor_ranks(torch, x, b, dev):
    xt = torch.as_tensor(x, device=dev)
    k = xt.shape[1]
    idx = torch.randint(0, k, (b, k), device=dev)
    counts = torch.zeros((b, k), dtype=torch.float64, device=dev).scatter_add_(
        1, idx, torch.ones((b, k), dtype=torch.float64, device=dev)
    )
    means = counts @ xt.T
    ordered = torch.sort(means, dim=1).values
    return torch.searchsorted(ordered, means, right=True)


# --------------------------------------------------------------------------- numpy references
def numpy_pairs(x, paired: bool, b: int):
    """The numpy engine's percentile ends and standard errors of every pair (the same arithmetic)."""
    rows = [r for r in x]
    boot = outperform._Bootstrap(len(rows) * (len(rows) - 1) // 2, b, keep_distribution=False)
    _, _, _, low, high, boot = outperform._engine(
        rows, paired, b, 0.05, np.random.default_rng(1), keep_distribution=False, backend="numpy"
    )
    return np.stack([low, high]), boot.standard_error


def agreement(a_pct, a_se, b_pct, b_se) -> str:
    dp = float(np.abs(np.asarray(a_pct) - np.asarray(b_pct)).max())
    rel = float(np.max(np.abs(a_se - b_se) / np.maximum(np.abs(a_se), 1e-12)))
    ok = dp <= 0.06 and rel <= 0.15
    return f"max |d end| {dp:.3f}, max SE rel diff {rel:.3f} {'agree' if ok else 'DISAGREE'}"


# --------------------------------------------------------------------------- one row per kernel
class Bench:
    def __init__(self, torch, dev, repeats: int):
        self.torch, self.dev, self.repeats = torch, dev, repeats
        self.failures = 0

    def sync(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def row(self, name, kernel, floor, numpy_fn, agree=None, limit=None):
        (t_kernel, got), (t_floor, _) = timed_together(kernel, floor, self.repeats, self.sync)
        t_numpy, ref = timed(numpy_fn, max(1, self.repeats // 2), lambda: None, warm_up=False)
        verdict = []
        if self.dev.type == "cuda":
            verdict.append(self.check(t_kernel <= 2 * t_floor, "kernel <= 2x floor"))
            if limit is not None:
                verdict.append(self.check(t_kernel <= limit, f"kernel < {limit} s"))
        else:
            verdict.append(self.check(t_kernel <= 3 * t_numpy, "torch cpu <= 3x numpy"))
        print(
            f"{name:<46} kernel {t_kernel:9.4f} s  floor {t_floor:9.4f} s  ({t_kernel / t_floor:4.1f}x)  "
            f"numpy {t_numpy:8.3f} s  ({t_numpy / t_kernel:6.1f}x faster)  {'; '.join(verdict)}"
        )
        if agree is not None:
            print(f"{'':<46} {agree(got, ref)}")

    def check(self, ok: bool, what: str) -> str:
        self.failures += 0 if ok else 1
        return f"{'PASS' if ok else 'FAIL'} {what}"


def print_unfused(fn, bench: Bench, how: str) -> None:
    """Time ``fn`` again without the fused Triton kernels (the same draws), where they run."""
    if bench.dev.type not in tb.FUSED_PAIRED_ON:
        return
    saved, tb.FUSED_PAIRED_ON = tb.FUSED_PAIRED_ON, ()
    try:
        t_unfused, _ = timed(fn, bench.repeats, bench.sync)
    finally:
        tb.FUSED_PAIRED_ON = saved
    print(f"{'':<46} the same without the fused Triton kernel ({how}): {t_unfused:.4f} s")


def kernel_rows(bench: Bench, args):
    torch, dev, b = bench.torch, bench.dev, args.resamples
    for paired, entries in ((True, args.entries), (False, 20), (False, args.entries)):
        x = scores(entries, args.runs)
        i, j = np.triu_indices(entries, 1)
        name = f"P(A>B) all pairs, {'paired' if paired else 'unpaired'}, {entries} x {args.runs}, B={b}"

        def kernel(x=x, i=i, j=j, paired=paired):
            s = tb.pairs_p_bootstrap(list(x), i, j, paired=paired, n_resamples=b, seed=1, q=Q, device=dev)
            return s.percentiles, s.standard_error

        floor = (
            (lambda x=x, i=i, j=j: floor_paired(torch, x, i, j, b, dev))
            if paired
            else (lambda x=x, i=i, j=j: floor_unpaired(torch, x, i, j, b, dev))
        )
        limit = 0.1 if (not paired and entries == 100) else None
        bench.row(
            name,
            kernel,
            floor,
            lambda x=x, paired=paired: numpy_pairs(x, paired, b),
            agree=lambda got, ref: agreement(got[0], got[1], ref[0], ref[1]),
            limit=limit,
        )
        if paired:
            print_unfused(kernel, bench, "numerators, then a scatter")
        if args.sort_rows:  # the same kernel with the device's other summary
            saved = tb.GPU_SUMMARY
            tb.GPU_SUMMARY = "histogram" if saved == "sort" else "sort"
            try:
                t_other, _ = timed(kernel, bench.repeats, bench.sync)
            finally:
                tb.GPU_SUMMARY = saved
            print(
                f"{'':<46} the same with {'histograms' if saved == 'sort' else 'a sort'} for the percentiles: "
                f"{t_other:.4f} s"
            )

    x = scores(args.rank_entries, 10)
    t_kept, _ = timed(
        lambda: tb.rank_intervals_torch(x, n_resamples=b, confidence_level=0.95, seed=1, device=dev),
        bench.repeats,
        bench.sync,
    )
    print(f"rank intervals with the ranks of every resample copied to the host: {t_kept:.4f} s")

    def ranks(x=x):
        return tb.rank_intervals_torch(
            x, n_resamples=b, confidence_level=0.95, seed=1, device=dev, keep_distribution=False
        )

    bench.row(
        f"rank intervals, paired, {args.rank_entries} x 10, B={b}",
        ranks,
        lambda: floor_ranks(torch, x, b, dev),
        lambda: stats.rank_intervals(x, n_resamples=b, rng=1),
        agree=lambda got, ref: (
            f"max |d rank end| {int(max(np.abs(got.low - ref.low).max(), np.abs(got.high - ref.high).max()))}"
        ),
    )
    print_unfused(ranks, bench, "a scatter into counters, then a summary")

    rng = np.random.default_rng(3)
    table = (rng.random((100, args.examples)) < np.linspace(0.8, 0.7, 100)[:, None]).astype(np.float64)
    entries_files = [t[None, :] for t in table]
    design = __import__("evaluation.stats.testset", fromlist=["_Design"])._Design(entries_files, 1.0)
    bench.row(
        f"test bootstrap means, 100 x {args.examples}, B={b}",
        lambda: tb.testset_means_bootstrap(entries_files, n_resamples=b, seed=1, device=dev),
        lambda: floor_testset(torch, table, b, dev),
        lambda: design.resampled_means(b, np.random.default_rng(1)),
        agree=lambda got, ref: f"max SE rel diff {float(np.max(np.abs(got.std(0) - ref.std(0)) / ref.std(0))):.3f}",
    )


def function_rows(bench: Bench, args):
    """The project's public functions, numpy against torch on the device, and the report."""
    b, dev = args.resamples, str(bench.dev)
    x = scores(args.entries, args.runs)
    for paired in () if args.report_only else (True, False):
        print_pair(
            "pairwise_comparisons " + ("paired" if paired else "unpaired") + f" {args.entries} x {args.runs}",
            lambda be, paired=paired: stats.pairwise_comparisons(
                x, paired=paired, n_resamples=b, keep_distribution=False, backend=be, device=dev
            ),
            bench,
        )
    from evaluation.report import ReportSettings, build_report

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_scale import synthetic_entries

    for n in args.report_sizes:
        entries = synthetic_entries(n, 10)
        print_pair(
            f"build_report {n} entries x 10 runs, B=2000",
            lambda be, entries=entries: build_report(
                entries, ReportSettings(n_resamples=2000, k_runs=10, boo_n=5, master_seed=1, backend=be, device=dev)
            ),
            bench,
            repeats=1,
            limit={5000: 3.0, 20000: 15.0}.get(n),
        )


def print_pair(name, fn, bench: Bench, repeats=None, limit=None):
    repeats = repeats or max(1, bench.repeats // 2)
    t_numpy, _ = timed(lambda: fn("numpy"), repeats, bench.sync, warm_up=False)
    t_torch, _ = timed(lambda: fn("auto" if name.startswith("build_report") else "torch"), repeats, bench.sync)
    verdict = ""
    if limit is not None and bench.dev.type == "cuda":
        verdict = bench.check(t_torch <= limit, f"< {limit} s")
    print(f"{name:<46} numpy {t_numpy:8.3f} s  torch/auto {t_torch:8.3f} s  {verdict}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto", help="cuda, cpu or auto (CUDA when present)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-functions", action="store_true", help="only the kernels")
    parser.add_argument(
        "--sort-rows", action="store_true", help="also time P(A>B) with the other summary (histograms on a GPU)"
    )
    parser.add_argument("--report-only", action="store_true", help="of the public functions, only build_report")
    parser.add_argument("--no-kernels", action="store_true", help="only the public functions")
    args = parser.parse_args(argv)
    import torch

    dev = tb.torch_device(args.device)
    gpu = dev.type == "cuda"
    args.resamples = 2000 if args.quick else 10_000
    args.entries, args.runs = (30, 20) if args.quick else (100, 50)
    args.rank_entries = 200 if args.quick else 1000
    args.examples = 5_000 if args.quick else (100_000 if gpu else 20_000)
    args.report_sizes = [200] if args.quick else ([5000, 20000] if gpu else [5000])
    where = torch.cuda.get_device_name(dev) if gpu else f"CPU, {torch.get_num_threads()} torch threads"
    print(
        f"device: {dev} ({where}); torch {torch.__version__}, numpy {np.__version__}; "
        f"B = {args.resamples}, median of {args.repeats}"
    )
    bench = Bench(torch, dev, args.repeats)
    if not args.no_kernels:
        kernel_rows(bench, args)
    if not args.no_functions:
        function_rows(bench, args)
    print(f"{bench.failures} target(s) missed" if bench.failures else "all targets met")
    return 1 if bench.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
