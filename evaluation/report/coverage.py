"""What the board says about its own intervals: their coverage, measured by simulation.

``benchmarks/bench_coverage.py`` simulates runs whose truth is known and measures how
often each interval the board shows covers it, at k = 5, 10 and 30 runs. The figures
below are its output (seeded; rerun it after changing a method). The page prints the
line for the challenge's k, so that an interval that covers less than its nominal level
says so where it is shown.
"""

from __future__ import annotations

__all__ = ["COVERAGE", "coverage_notes"]

#: Measured coverage of nominal 95 % intervals, by interval and runs k (bench_coverage.py
#: --reps 400 --seed 2026; for runs, the average of its normal and skewed scenarios).
COVERAGE: dict[str, dict[int, float]] = {
    "recipe.mean": {5: 0.939, 10: 0.944, 30: 0.948},
    "recipe.boo_n": {5: 0.968, 10: 0.916, 30: 0.919},
    "recipe.boo_n_unbiased": {5: 0.516, 10: 0.935, 30: 0.917},
    "recipe.pab": {5: 0.995, 10: 0.980, 30: 0.968},
    "recipe.rank": {5: 0.734, 10: 0.886, 30: 0.985},
    "predictions.accuracy": {5: 0.960, 10: 0.945, 30: 0.970},
    "predictions.accuracy_files": {5: 0.975, 10: 0.975, 30: 0.950},
    "study.sd": {5: 0.945, 10: 0.942, 30: 0.962},
    "suite.iqm": {5: 0.880, 10: 0.930, 30: 0.960},
    "suite.poi": {5: 0.950, 10: 0.920, 30: 0.960},
}

#: What each key of :data:`COVERAGE` is, in words.
LABELS: dict[str, str] = {
    "recipe.mean": "mean", "recipe.boo_n": "Boo_n", "recipe.boo_n_unbiased": "unbiased Boo_n",
    "recipe.pab": "P(A>B)", "recipe.rank": "rank", "predictions.accuracy": "accuracy (one file)",
    "predictions.accuracy_files": "accuracy (k files, k = runs)",
    "study.sd": "standard deviation of a source", "suite.iqm": "IQM (3 tasks)",
    "suite.poi": "probability of improvement",
}


def coverage_notes(k: int, prefixes: tuple[str, ...] = ("recipe.", "predictions.")) -> list[dict]:
    """The measured coverage of each interval (keys starting with ``prefixes``) at the tabulated k nearest to ``k``."""
    out = []
    for key, by_k in COVERAGE.items():
        if not key.startswith(prefixes):
            continue
        usable = [kk for kk in sorted(by_k) if kk <= k] or [min(by_k)]
        at = usable[-1]
        cov = by_k[at]
        out.append({"interval": key, "label": LABELS.get(key, key), "k": at, "coverage": cov,
                    "ok": 0.93 <= cov <= 0.97})
    return out
