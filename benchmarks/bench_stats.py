"""Speed of evaluation.stats on leaderboard-sized inputs, against the obvious alternatives.

Run:  .venv/bin/python benchmarks/bench_stats.py [--blas-threads N] [--repeat R]

Prints figures; it is not a test. Sizes: 100 entries x 50 runs (paired, then unpaired),
10,000 bootstrap resamples; 100 prediction entries x 100,000 test examples. Each of our
calls is set against what one would write without the library (scipy.stats.bootstrap
once per pair, a loop over resamples, ...), timed on a sample and scaled. Our calls run
first, so the peak RSS printed after them is ours; the alternatives run afterwards.

``--letters-only`` prints the letters' worst case alone: entries alike exactly across two halves of
the board (a complete display needs k²/4 letters), the complete greedy cover against the bounded
display (:func:`evaluation.stats.groups.compact_letters`) in the same run, with each call's peak of
traced allocations.

Timings on a shared machine are noisy: the load average is printed. Multi-threaded
OpenBLAS degrades badly when the cores are busy; ``--blas-threads 1`` (needs
threadpoolctl) shows the single-threaded figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation import stats as es  # noqa: E402

ENTRIES, RUNS, B = 100, 50, 10_000
EXAMPLES = 100_000
ROWS = []  # (label, ours_s, alternative_s, target)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


CPU = {}  # label -> CPU seconds of the best run (all threads of this process)


def timed(fn, repeat: int, label: str = ""):
    """Best wall time of ``repeat`` calls; CPU time of that call goes to CPU[label]."""
    best, out = np.inf, None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if wall < best:
            best, CPU[label] = wall, cpu
    return best, out


def scaled(fn, done: int, total: int) -> float:
    """Time ``fn`` (which does ``done`` of ``total`` units) and scale to ``total``."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * total / done


def make_scores(rng):
    means = 0.70 + 0.03 * np.linspace(0, 1, ENTRIES)[rng.permutation(ENTRIES)]
    seed_effect = 0.004 * rng.standard_normal(RUNS)  # shared by paired runs
    test = means[:, None] + seed_effect + 0.006 * rng.standard_normal((ENTRIES, RUNS))
    valid = test + 0.003 * rng.standard_normal((ENTRIES, RUNS))
    return test, valid


# ---------------------------------------------------------------- naive alternatives
def p_outperform_stat(x, y, axis=-1):
    return np.mean((x > y) + 0.5 * (x == y), axis=axis)


def alt_pairs(scores, pairs, paired):
    """scipy.stats.bootstrap + the test, once per pair; then Holm and the decision."""
    pvalues = []
    for i, j in pairs:
        a, b = scores[i], scores[j]
        if paired:
            ci = stats.bootstrap(
                (a, b), p_outperform_stat, paired=True, method="percentile", n_resamples=B, confidence_level=0.95, rng=0
            ).confidence_interval
            wins, losses = int(np.sum(a > b)), int(np.sum(a < b))
            pvalues.append(stats.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0)
        else:

            def u_stat(x, y, axis=-1):
                return np.mean(
                    (x[..., :, None] > y[..., None, :]) + 0.5 * (x[..., :, None] == y[..., None, :]), axis=(-2, -1)
                )

            ci = stats.bootstrap(
                (a, b), u_stat, method="percentile", n_resamples=B, confidence_level=0.95, rng=0, batch=500
            ).confidence_interval
            pvalues.append(stats.mannwhitneyu(a, b).pvalue)
        _ = (ci.low > 0.5) and (ci.high > 0.75)
    return pvalues


def alt_ranks(scores, n_resamples, paired, rng):
    k = scores.shape[1]
    ranks = []
    for _ in range(n_resamples):
        if paired:
            means = scores[:, rng.integers(0, k, k)].mean(axis=1)
        else:
            means = np.array([row[rng.integers(0, k, k)].mean() for row in scores])
        ranks.append(stats.rankdata(-means, method="min"))
    return np.percentile(np.array(ranks), [2.5, 97.5], axis=0)


def alt_letters(differ, order):
    """Insert-and-absorb with Python sets, pair by pair."""
    columns = [set(range(len(order)))]
    for a in range(len(order)):
        for b in range(a + 1, len(order)):
            i, j = order[a], order[b]
            if not differ[i, j]:
                continue
            new = []
            for col in columns:
                if i in col and j in col:
                    new += [col - {i}, col - {j}]
                else:
                    new.append(col)
            columns = [
                c
                for n, c in enumerate(new)
                if not any(c <= d and (c != d or m < n) for m, d in enumerate(new) if m != n)
            ]
    return columns


def alt_entry_intervals(scores, valid, entries, statistic):
    for e in entries:
        if statistic == "mean":
            stats.bootstrap((scores[e],), np.mean, method="percentile", n_resamples=B, rng=0)
        else:
            stats.bootstrap(
                (scores[e], valid[e]),
                lambda t, v: es.boo_n(t, 5, valid=v),
                paired=True,
                vectorized=False,
                method="percentile",
                n_resamples=B,
                rng=0,
            )


def alt_test_bootstrap(outcomes, n_resamples, rng):
    n = outcomes.shape[0]
    means = [outcomes[rng.integers(0, n, n)].mean(axis=0) for _ in range(n_resamples)]
    return np.percentile(np.array(means), [2.5, 97.5], axis=0)


# ---------------------------------------------------------------- main
def letters_worst_case(sizes=(60, 120, 180, 300)) -> None:
    """Before and after of the letters' worst case: the complete cover (what a board got before the bound, with
    today's subset test) against :func:`evaluation.stats.groups.compact_letters`."""
    import tracemalloc

    from evaluation.stats import groups

    def complete(differ, order):
        cover = groups._greedy_cover(differ, order, sys.maxsize)
        return groups._sweep(cover), None

    def bounded(differ, order):
        return groups.compact_letters(differ, order)

    print("letters' worst case (alike exactly across two halves; complete = k²/4 letters):")
    print(f"  {'entries':>7s} {'display':9s} {'seconds':>8s} {'peak MB':>8s} {'letters':>8s} {'held':>8s}  note")
    for k in sizes:
        side = np.arange(k) % 2 == 0
        differ = side[:, None] == side[None, :]
        np.fill_diagonal(differ, False)
        order = np.arange(k)
        for name, fn in (("complete", complete), ("bounded", bounded)):
            t = time.perf_counter()
            out, note = fn(differ, order)
            seconds = time.perf_counter() - t
            tracemalloc.start()
            fn(differ, order)
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            if isinstance(out, list):
                held = [es.split_letters(g) for g in out]
                n_letters, n_held = len({x for h in held for x in h}), sum(map(len, held))
            else:
                n_letters, n_held = out.shape[0], int(out.sum())
            print(
                f"  {k:7d} {name:9s} {seconds:8.2f} {peak:8.0f} {n_letters:8,d} {n_held:8,d}  "
                f"{'runs of the order' if note else ''}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blas-threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sample-pairs", type=int, default=20)
    parser.add_argument("--skip-alternatives", action="store_true")
    parser.add_argument("--letters-only", action="store_true")
    args = parser.parse_args()
    limiter = None
    if args.blas_threads:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(args.blas_threads)
    if args.letters_only:
        letters_worst_case()
        return
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{os.cpu_count()} CPUs, BLAS threads: {args.blas_threads or 'default'}"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"baseline peak RSS: {peak_rss_mb():.0f} MB\n")
    rng = np.random.default_rng(0)
    scores, valid = make_scores(rng)
    pairs_total = ENTRIES * (ENTRIES - 1) // 2
    results = {}

    print(f"ours ({ENTRIES} entries x {RUNS} runs, B = {B:,}):")
    for paired in (True, False):
        tag = "paired" if paired else "unpaired"
        # As the report calls it: without the 198 MB of resampled P(i>j) per call.
        t, res = timed(
            lambda paired=paired: es.pairwise_comparisons(
                scores, paired=paired, n_resamples=B, rng=0, keep_distribution=False
            ),
            args.repeat,
            f"{tag}: all pairs",
        )
        results[tag, "pairs"] = (t, res)
        t_groups, groups = timed(lambda res=res: es.significance_groups(res), args.repeat, f"{tag}: groups")
        t_ranks, _ = timed(
            lambda paired=paired: es.rank_intervals(scores, paired=paired, n_resamples=B), args.repeat, f"{tag}: ranks"
        )
        results[tag, "groups"], results[tag, "ranks"] = t_groups, t_ranks
        # Entry intervals do not depend on pairing (each entry is resampled alone).
        t_mean, _ = timed(lambda: es.bootstrap_interval(scores, "mean", n_resamples=B), args.repeat, f"{tag}: mean CIs")
        t_boo, _ = timed(
            lambda: es.bootstrap_interval(scores, "boo_n", n=5, valid=valid, n_resamples=B),
            args.repeat,
            f"{tag}: Boo_5 CIs",
        )
        results[tag, "mean"], results[tag, "boo"] = t_mean, t_boo
        print(
            f"  {tag:8s} all {pairs_total:,} pairs {t:6.2f} s ({int(res.better.sum())} 'beats'), "
            f"groups {t_groups:.2f} s ({len(set(''.join(groups)))} letters), ranks {t_ranks:.2f} s, "
            f"mean CIs {t_mean:.2f} s, Boo_5 CIs {t_boo:.2f} s; peak RSS {peak_rss_mb():.0f} MB"
        )

    outcomes = (
        rng.random((EXAMPLES, ENTRIES), dtype=np.float32) < np.linspace(0.70, 0.72, ENTRIES, dtype=np.float32)
    ).astype(np.int8)
    t_test, res_test = timed(lambda: es.paired_test_bootstrap(outcomes, n_resamples=B), args.repeat, "test bootstrap")
    print(
        f"  test bootstrap {ENTRIES} entries x {EXAMPLES:,} examples {t_test:6.2f} s "
        f"({int(res_test.comparisons.better.sum())} 'beats'); peak RSS {peak_rss_mb():.0f} MB"
    )
    ours_peak = peak_rss_mb()
    print("\nCPU seconds of our calls (all threads; ~ wall time on an idle core):")
    print("  " + ", ".join(f"{k} {v:.2f}" for k, v in CPU.items()))
    print()
    letters_worst_case()
    if args.skip_alternatives:
        print(f"\npeak RSS after our calls: {ours_peak:.0f} MB")
        return

    print("\nalternatives (timed on a sample, scaled):")
    sample = [(int(i), int(j)) for i, j in zip(*np.triu_indices(ENTRIES, 1))][:: pairs_total // args.sample_pairs][
        : args.sample_pairs
    ]
    rows = []
    for paired in (True, False):
        tag = "paired" if paired else "unpaired"
        t_alt = scaled(lambda paired=paired: alt_pairs(scores, sample, paired), len(sample), pairs_total)
        res = results[tag, "pairs"][1]
        t_alt_groups = scaled(lambda res=res: alt_letters(res.better | res.better.T, res.order), 1, 1)
        t_alt_ranks = scaled(lambda paired=paired: alt_ranks(scores, 200, paired, np.random.default_rng(0)), 200, B)
        t_alt_mean = scaled(lambda: alt_entry_intervals(scores, valid, range(10), "mean"), 10, ENTRIES)
        t_alt_boo = scaled(lambda: alt_entry_intervals(scores, valid, range(1), "boo"), 1, ENTRIES)
        rows += [
            (
                f"{tag}: all pairs (CI, adj. p, decision)",
                results[tag, "pairs"][0],
                t_alt,
                "<= 1.5 s and >= 50x" if paired else "<= 10 s",
            ),
            (f"{tag}: significance groups", results[tag, "groups"], t_alt_groups, ""),
            (f"{tag}: rank intervals", results[tag, "ranks"], t_alt_ranks, ""),
            (f"{tag}: every entry's mean CI", results[tag, "mean"], t_alt_mean, ""),
            (f"{tag}: every entry's Boo_5 CI", results[tag, "boo"], t_alt_boo, ""),
        ]
        print(f"  {tag} done")
    t_alt_test = scaled(lambda: alt_test_bootstrap(outcomes, 20, np.random.default_rng(0)), 20, B)
    rows.append(("test bootstrap 100 x 100,000 (entry CIs only in alt.)", t_test, t_alt_test, "<= 10 s"))

    print(f"\n{'what':52s} {'ours':>9s} {'alternative':>12s} {'speed-up':>9s}  target")
    for label, ours, alt, target in rows:
        print(f"{label:52s} {ours:8.2f}s {alt:11.1f}s {alt / ours:8.0f}x  {target}")
    print(
        f"\npeak RSS after our calls: {ours_peak:.0f} MB (target <= 1536 MB); "
        f"after the alternatives: {peak_rss_mb():.0f} MB"
    )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if limiter is not None:
        limiter.restore_original_limits()


if __name__ == "__main__":
    main()
