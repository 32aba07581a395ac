"""The torch resampling kernels (run here on the CPU) agree with numpy within Monte Carlo error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from evaluation import stats

pytest.importorskip("torch")


def _scores(entries: int = 8, runs: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.linspace(0.80, 0.70, entries)[:, None] + 0.02 * rng.standard_normal((entries, runs))


def test_rank_intervals_torch_matches_numpy():
    x = _scores(20)
    a = stats.rank_intervals(x, n_resamples=4000, rng=1)
    b = stats.rank_intervals(x, n_resamples=4000, rng=1, backend="torch", device="cpu")
    assert a.rank.tolist() == b.rank.tolist()
    assert np.abs(a.low - b.low).max() <= 1 and np.abs(a.high - b.high).max() <= 1
    np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=0.15, atol=0.05)
    again = stats.rank_intervals(x, n_resamples=4000, rng=1, backend="torch", device="cpu")
    assert again.low.tolist() == b.low.tolist()  # a seed gives the same numbers on a device


@pytest.mark.parametrize("paired", [True, False])
def test_pairwise_bootstrap_torch_matches_numpy(paired):
    x = _scores(5, 15)
    a = stats.pairwise_comparisons(x, paired=paired, n_resamples=4000, rng=2)
    b = stats.pairwise_comparisons(x, paired=paired, n_resamples=4000, rng=2, backend="torch", device="cpu")
    np.testing.assert_array_equal(a.better, b.better)  # decisions are closed form
    np.testing.assert_allclose(a.p, b.p)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(a.standard_error[off], b.standard_error[off], rtol=0.12, atol=0.004)
    assert np.abs(a.bootstrap_low[off] - b.bootstrap_low[off]).max() <= 0.1
    assert b.bootstrap_distribution.shape == (10, 4000)
    assert abs(b.bootstrap_distribution.mean(axis=1) - a.bootstrap_distribution.mean(axis=1)).max() < 0.02


def test_test_bootstrap_torch_matches_numpy():
    rng = np.random.default_rng(3)
    files = [(rng.random((1, 600)) < 0.8).astype(float), (rng.random((2, 600)) < 0.75).astype(float),
             (rng.random((1, 600)) < 0.7).astype(float)]
    a = stats.paired_test_bootstrap(files=files, n_resamples=4000, rng=4)
    b = stats.paired_test_bootstrap(files=files, n_resamples=4000, rng=4, backend="torch", device="cpu")
    np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=0.1)
    np.testing.assert_allclose(a.comparisons.p, b.comparisons.p, atol=0.03)
    np.testing.assert_array_equal(a.comparisons.better, b.comparisons.better)


def test_an_unknown_backend_is_named():
    with pytest.raises(ValueError, match="backend"):
        stats.rank_intervals(_scores(), backend="jax")


def test_importing_the_statistics_does_not_import_torch():
    code = "import sys, evaluation.stats, evaluation.report; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_report_with_the_torch_backend_agrees_with_numpy():
    from evaluation.report import EntryRuns, ReportSettings, build_report

    x = _scores(12, 10, seed=5)
    entries = [EntryRuns(i + 1, f"m{i}", "t", "recipe", 10, np.arange(10), x[i]) for i in range(12)]
    numpy_report = build_report(entries, ReportSettings(n_resamples=2000, k_runs=10))
    torch_report = build_report(entries, ReportSettings(n_resamples=2000, k_runs=10, backend="torch", device="cpu"))
    for a, b in zip(numpy_report["entries"], torch_report["entries"]):
        assert a["submission_id"] == b["submission_id"] and a["groups"] == b["groups"]
        assert abs(a["rank_interval"]["low"] - b["rank_interval"]["low"]) <= 1
        assert abs(a["rank_interval"]["high"] - b["rank_interval"]["high"]) <= 1
    assert numpy_report["sections"][0]["comparisons"] == torch_report["sections"][0]["comparisons"]
