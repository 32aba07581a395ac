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
    files = [
        (rng.random((1, 600)) < 0.8).astype(float),
        (rng.random((2, 600)) < 0.75).astype(float),
        (rng.random((1, 600)) < 0.7).astype(float),
    ]
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

    x = _scores(12, 16, seed=5)  # 16 runs: a mean board's rank intervals need them (sections.runs_for_rank_interval)
    entries = [EntryRuns(i + 1, f"m{i}", "t", "recipe", 16, np.arange(16), x[i]) for i in range(12)]
    numpy_report = build_report(entries, ReportSettings(n_resamples=2000, k_runs=16))
    torch_report = build_report(entries, ReportSettings(n_resamples=2000, k_runs=16, backend="torch", device="cpu"))
    for a, b in zip(numpy_report["entries"], torch_report["entries"]):
        assert a["submission_id"] == b["submission_id"] and a["groups"] == b["groups"]
        assert abs(a["rank_interval"]["low"] - b["rank_interval"]["low"]) <= 1
        assert abs(a["rank_interval"]["high"] - b["rank_interval"]["high"]) <= 1
    assert numpy_report["sections"][0]["comparisons"] == torch_report["sections"][0]["comparisons"]


# --------------------------------------------------------------------------- the device kernels (issue 27)
def _devices() -> list[str]:
    import torch

    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=_devices())
def device(request):
    return request.param


@pytest.mark.parametrize("paired", [True, False])
def test_histogram_and_sorted_summaries_agree_on_the_same_draws(paired, device, monkeypatch):
    from evaluation.stats import torch_backend as tb

    x = np.round(_scores(6, 9), 3)
    i, j = np.triu_indices(6, 1)
    kw = dict(paired=paired, n_resamples=3001, seed=7, q=[2.5, 50, 97.5], device=device, keep_distribution=True)
    histogram = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    monkeypatch.setattr(tb, "HISTOGRAM_ELEMENTS", 0)  # force the sort path: same seed, same draws
    ordered = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    np.testing.assert_allclose(histogram.percentiles, ordered.percentiles, atol=1e-12)
    np.testing.assert_allclose(histogram.standard_error, ordered.standard_error, rtol=1e-9)
    # the kept distribution is the one summarised: numpy's percentiles of it give the same ends
    np.testing.assert_allclose(
        np.percentile(histogram.distribution.astype(np.float64), [2.5, 50, 97.5], axis=1),
        histogram.percentiles,
        atol=1e-6,
    )


def test_unpaired_kernel_with_unequal_run_counts_matches_numpy(device):
    rng = np.random.default_rng(11)
    rows = [
        0.80 + 0.02 * rng.standard_normal(12),
        0.79 + 0.02 * rng.standard_normal(7),
        0.70 + 0.02 * rng.standard_normal(20),
        np.round(0.78 + 0.02 * rng.standard_normal(5), 2),
    ]
    a = stats.pairwise_comparisons(rows, paired=False, n_resamples=6000, rng=3)
    b = stats.pairwise_comparisons(rows, paired=False, n_resamples=6000, rng=3, backend="torch", device=device)
    np.testing.assert_array_equal(a.better, b.better)
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(a.standard_error[off], b.standard_error[off], rtol=0.1)
    assert np.abs(a.bootstrap_low[off] - b.bootstrap_low[off]).max() <= 0.06
    assert np.abs(a.bootstrap_high[off] - b.bootstrap_high[off]).max() <= 0.06
    # an entry of 5 runs against one of 20: P(A>B) only takes multiples of 1/(5*20*2)
    pair = b.bootstrap_distribution[
        np.flatnonzero((np.triu_indices(4, 1)[0] == 2) & (np.triu_indices(4, 1)[1] == 3))[0]
    ]
    np.testing.assert_allclose(pair * 200, np.round(pair * 200), atol=1e-4)


def test_test_bootstrap_with_fractional_outcomes_matches_numpy(device):
    rng = np.random.default_rng(5)
    files = [rng.random((1, 400)), 0.9 * rng.random((3, 400)), 0.5 + 0.1 * rng.random((1, 400))]
    a = stats.paired_test_bootstrap(files=files, n_resamples=5000, rng=4)
    b = stats.paired_test_bootstrap(files=files, n_resamples=5000, rng=4, backend="torch", device=device)
    np.testing.assert_allclose(a.estimate, b.estimate)
    np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=0.1)
    np.testing.assert_array_equal(a.comparisons.better, b.comparisons.better)


def test_auto_is_numpy_without_a_gpu_and_torch_on_cuda_for_large_work(monkeypatch):
    from evaluation.stats import torch_backend as tb

    monkeypatch.setattr(tb, "cuda_present", lambda: False)
    assert tb.resolve_backend("auto", "auto", 10**9) == ("numpy", "cpu")
    monkeypatch.setattr(tb, "cuda_present", lambda: True)
    assert tb.resolve_backend("auto", "auto", 10**9) == ("torch", "cuda")
    assert tb.resolve_backend("auto", "auto", tb.AUTO_MIN_ELEMENTS - 1) == ("numpy", "cpu")  # too small to pay
    assert tb.resolve_backend("auto", "cpu", 10**9) == ("numpy", "cpu")
    assert tb.resolve_backend("torch", "cpu", 1) == ("torch", "cpu")  # an explicit choice is kept
    with pytest.raises(ValueError, match="backend"):
        stats.pairwise_comparisons(_scores(3), backend="gpu")


def test_auto_on_a_machine_without_an_nvidia_driver_never_imports_torch():
    import os

    if os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia"):
        pytest.skip("this machine has an NVIDIA driver")
    code = (
        "import sys, numpy as np; from evaluation import stats; "
        "r = stats.pairwise_comparisons(np.arange(60.).reshape(3, 20), n_resamples=100000, backend='auto'); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_spreading_the_histograms_over_copies_changes_no_figure(monkeypatch):
    from evaluation.stats import torch_backend as tb

    x = np.round(_scores(7, 10), 3)
    i, j = np.triu_indices(7, 1)
    kw = dict(paired=True, n_resamples=2500, seed=3, q=[2.5, 97.5], device="cpu")
    one = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    monkeypatch.setattr(tb, "HISTOGRAM_COPIES_ON", ("cpu", "cuda"))  # as on a GPU: b counted in copy b mod 16
    spread = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    np.testing.assert_array_equal(one.percentiles, spread.percentiles)
    np.testing.assert_allclose(one.standard_error, spread.standard_error, rtol=1e-12)


def test_rank_intervals_without_the_distribution_keep_every_other_field(device):
    x = _scores(15, 10, seed=8)
    kept = stats.rank_intervals(x, n_resamples=3000, rng=2, backend="torch", device=device)
    bare = stats.rank_intervals(x, n_resamples=3000, rng=2, backend="torch", device=device, keep_distribution=False)
    assert bare.bootstrap_distribution is None and kept.bootstrap_distribution.shape == (15, 3000)
    for field in ("rank", "low", "high"):
        np.testing.assert_array_equal(getattr(kept, field), getattr(bare, field))
    # on a GPU the bare intervals come from histograms of the ranks: the same sums in another order
    np.testing.assert_allclose(kept.standard_error, bare.standard_error, rtol=1e-9)
    np.testing.assert_allclose(kept.standard_error, kept.bootstrap_distribution.std(axis=1, ddof=1))
    lo, hi = np.percentile(kept.bootstrap_distribution, [2.5, 97.5], axis=1)
    (
        np.testing.assert_array_equal(kept.low, np.floor(lo + 1e-9)),
        np.testing.assert_array_equal(kept.high, np.ceil(hi - 1e-9)),
    )
    numpy_bare = stats.rank_intervals(x, n_resamples=3000, rng=2, keep_distribution=False)
    assert numpy_bare.bootstrap_distribution is None


def test_ranking_a_boo_n_distribution_on_the_device_gives_numpy_s_intervals(device, monkeypatch):
    from evaluation.stats import bootstrap
    from evaluation.stats import torch_backend as tb

    rng = np.random.default_rng(12)
    estimate = rng.random(30)
    boot = np.round(estimate[:, None] + 0.05 * rng.standard_normal((30, 1500)), 2)  # ties in every resample
    a = stats.rank_intervals_from_distribution(estimate, boot)
    b = tb.rank_intervals_from_distribution_torch(estimate, boot, confidence_level=0.95, device=device)
    for field in ("rank", "low", "high", "bootstrap_distribution"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=1e-9)
    # "auto" sends the ranking of a large Boo_n board to the device: the intervals do not move
    x = np.round(_scores(30, 15, seed=9), 3)
    on_numpy = stats.rank_intervals(x, statistic="boo_n", n=3, n_resamples=1500, rng=5)
    monkeypatch.setattr(bootstrap, "resolve_backend", lambda backend, dev, elements: ("torch", device))
    routed = stats.rank_intervals(x, statistic="boo_n", n=3, n_resamples=1500, rng=5, backend="auto")
    for field in ("rank", "low", "high", "bootstrap_distribution"):
        np.testing.assert_array_equal(getattr(on_numpy, field), getattr(routed, field))


def test_rank_histograms_give_the_sort_s_intervals(device, monkeypatch):
    from evaluation.stats import torch_backend as tb

    x = np.round(_scores(40, 10, seed=6), 2)  # tied means: competition ranks share a level
    kw = dict(n_resamples=2001, confidence_level=0.9, seed=3, device=device)
    monkeypatch.setattr(tb, "RANK_HISTOGRAMS_ON", ())
    ordered = tb.rank_intervals_torch(x, keep_distribution=False, **kw)
    monkeypatch.setattr(tb, "RANK_HISTOGRAMS_ON", ("cpu", "cuda"))
    counted = tb.rank_intervals_torch(x, keep_distribution=False, **kw)
    kept = tb.rank_intervals_torch(x, keep_distribution=True, **kw)  # the distribution asks for the sort
    for field in ("rank", "low", "high"):
        np.testing.assert_array_equal(getattr(ordered, field), getattr(counted, field))
        np.testing.assert_array_equal(getattr(kept, field), getattr(counted, field))
    np.testing.assert_allclose(counted.standard_error, ordered.standard_error, rtol=1e-9)
    np.testing.assert_allclose(counted.standard_error, kept.bootstrap_distribution.std(axis=1, ddof=1), rtol=1e-9)
    assert counted.bootstrap_distribution is None and (counted.low < counted.high).any()


def test_the_unpaired_gather_and_product_kernels_give_the_same_numerators(monkeypatch):
    """numpy's O(B·k) arithmetic (the CPU's) and the bilinear product (a GPU's) on the same draws."""
    from evaluation.stats import torch_backend as tb

    rng = np.random.default_rng(21)
    rows = [np.round(0.8 + 0.02 * rng.standard_normal(k), 2) for k in (9, 4, 13, 9, 6)]  # ties, unequal k
    i, j = np.triu_indices(5, 1)
    kw = dict(paired=False, n_resamples=1500, seed=9, q=[2.5, 50, 97.5], device="cpu", keep_distribution=True)
    gathered = tb.pairs_p_bootstrap(rows, i, j, **kw)
    monkeypatch.setattr(tb, "UNPAIRED_PRODUCT_ON", ("cpu", "cuda"))
    product = tb.pairs_p_bootstrap(rows, i, j, **kw)
    np.testing.assert_array_equal(gathered.distribution, product.distribution)
    np.testing.assert_array_equal(gathered.percentiles, product.percentiles)
    # and pairs in any order, first entries repeated apart, as a caller may list them
    shuffled = np.random.default_rng(1).permutation(i.size)
    again = tb.pairs_p_bootstrap(rows, j[shuffled], i[shuffled], **kw)
    for p, q in enumerate(shuffled):
        np.testing.assert_allclose(
            again.distribution[p] + gathered.distribution[q], 1.0, atol=1e-6
        )  # P(B>A) = 1 - P(A>B)


def test_a_one_entry_board_ranks_on_the_device_as_with_numpy(device):
    """The tie blocks (``_tie_block_ends``) appended a column of zero width to a one-entry board and failed."""
    from evaluation.stats import torch_backend as tb

    scores = np.array([[0.7, 0.8, 0.75]])
    on_numpy = stats.rank_intervals(scores, n_resamples=200, rng=1)
    on_device = tb.rank_intervals_torch(scores, n_resamples=200, confidence_level=0.95, seed=1, device=device)
    from_boot = tb.rank_intervals_from_distribution_torch(
        scores.mean(axis=1), np.tile(scores.mean(), (1, 200)), confidence_level=0.95, device=device
    )
    for result in (on_numpy, on_device, from_boot):
        assert (result.rank.tolist(), result.low.tolist(), result.high.tolist()) == ([1], [1], [1])


def test_the_device_s_tie_blocks_are_numpy_s_competition_ranks_with_and_without_the_finite_shortcut(device):
    """``_tie_block_ends`` (labelled tie blocks, 2026-11-30) gives ``1 + entries - position`` equal to
    ``competition_rank`` on rows with exact ties, ties to rounding (1e-13 relative), near misses (2e-12) and,
    on the general path, infinities; the shortcut for values known finite gives the same positions."""
    import torch

    from evaluation.stats import _resample as rs
    from evaluation.stats import torch_backend as tb

    rng = np.random.default_rng(11)
    for trial in range(60):
        entries = int(rng.integers(1, 9))
        base = rng.choice([1.0, 1e-13, 1e6, -3.0])
        steps = rng.choice([0.0, 1e-13, 2e-12, 1e-3], size=(7, entries)) * rng.integers(0, 3, size=(7, entries))
        values = base * (1 + steps)
        finite = trial % 2 == 0
        if not finite:
            values[rng.random(values.shape) < 0.2] = np.inf
            values[rng.random(values.shape) < 0.1] = -np.inf
        expected = rs.competition_rank(values.T).T  # (resamples, entries)
        for shortcut in (False, True) if finite else (False,):
            ends = tb._tie_block_ends(torch.as_tensor(values, device=device), shortcut).cpu().numpy()
            np.testing.assert_array_equal(1 + entries - ends, expected)
