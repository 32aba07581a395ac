"""Bootstrap over test examples for prediction entries."""

import numpy as np
import pytest
from scipy import stats

from evaluation.stats import PairwiseResult, TestBootstrapResult, paired_test_bootstrap, significance_groups
from evaluation.stats._resample import draw_counts


@pytest.fixture(scope="module")
def correct():
    rng = np.random.default_rng(0)
    return (rng.random((3000, 4)) < [0.80, 0.795, 0.70, 0.60]).astype(np.int8)


def test_entry_intervals_and_se(correct):
    res = paired_test_bootstrap(correct, n_resamples=4000, seed=1)
    assert isinstance(res, TestBootstrapResult) and isinstance(res.comparisons, PairwiseResult)
    np.testing.assert_allclose(res.estimate, correct.mean(axis=0))
    se = np.sqrt(res.estimate * (1 - res.estimate) / correct.shape[0])
    np.testing.assert_allclose(res.se, se, rtol=0.06)
    for e in range(4):
        ref = stats.bootstrap((correct[:, e],), np.mean, method="percentile", n_resamples=4000,
                              rng=np.random.default_rng(e)).confidence_interval
        width = ref.high - ref.low
        assert res.low[e] == pytest.approx(ref.low, abs=0.08 * width)
        assert res.high[e] == pytest.approx(ref.high, abs=0.08 * width)


def test_one_shared_resample_index_set(correct):
    # Reproduce with the same count matrix: every entry's resampled mean uses the same rows.
    res = paired_test_bootstrap(correct, n_resamples=300, seed=5)
    counts = draw_counts(np.random.default_rng(5), correct.shape[0], 300)
    means = counts @ correct / correct.shape[0]
    np.testing.assert_allclose(res.low, np.percentile(means, 2.5, axis=0))
    d = means[:, 0] - means[:, 1]
    assert res.comparisons.p[0, 1] == pytest.approx(np.mean(d > 0) + 0.5 * np.mean(d == 0))
    lo, hi = np.percentile(d, [2.5, 97.5])
    assert (res.diff_low[0, 1], res.diff_high[0, 1]) == pytest.approx((lo, hi))
    assert (res.diff_low[1, 0], res.diff_high[1, 0]) == pytest.approx((-hi, -lo))


def test_pairwise_decisions(correct):
    res = paired_test_bootstrap(correct, n_resamples=2000)
    c = res.comparisons
    np.testing.assert_array_equal(c.order, np.argsort(-correct.mean(axis=0), kind="stable"))
    assert set(c.order[:2]) == {0, 1}
    assert c.better[0, 2] and c.better[0, 3] and c.better[2, 3]
    assert not c.better[0, 1] and not c.better[1, 0]
    off = ~np.eye(4, dtype=bool)
    assert np.all(c.low[off] <= c.p[off] + 1e-12) and np.all(c.p[off] <= c.high[off] + 1e-12)
    np.testing.assert_allclose((c.p + c.p.T)[off], 1.0)
    assert significance_groups(res) == ["a", "a", "b", "c"]


def test_pvalues_are_paired_t_tests(correct):
    res = paired_test_bootstrap(correct, n_resamples=10, correction="none")
    for i, j in [(0, 1), (0, 2), (1, 3)]:
        ref = stats.ttest_rel(correct[:, i], correct[:, j]).pvalue
        assert res.comparisons.pvalue[i, j] == pytest.approx(ref, rel=1e-8)


def test_identical_entries_have_pvalue_one():
    x = np.random.default_rng(0).random((100, 1)) < 0.5
    res = paired_test_bootstrap(np.hstack([x, x]), n_resamples=100)
    assert res.comparisons.pvalue[0, 1] == 1.0 and res.comparisons.p[0, 1] == 0.5


def test_losses_lower_is_better():
    rng = np.random.default_rng(2)
    loss = np.abs(rng.normal([0.5, 0.8], 0.3, size=(2000, 2)))
    res = paired_test_bootstrap(loss, n_resamples=1000, higher_is_better=False)
    np.testing.assert_allclose(res.estimate, loss.mean(axis=0))
    np.testing.assert_allclose(res.comparisons.means, loss.mean(axis=0))
    assert res.comparisons.order.tolist() == [0, 1]
    assert res.comparisons.better[0, 1] and res.diff_low[0, 1] > 0


def test_single_entry_one_dimensional():
    res = paired_test_bootstrap(np.array([1, 0, 1, 1, 0, 1.0]), n_resamples=200)
    assert res.estimate.shape == (1,) and res.comparisons.p.shape == (1, 1)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: paired_test_bootstrap(np.empty((0, 2))), r"`outcomes` must not be empty"),
        (lambda: paired_test_bootstrap([[1.0, np.nan], [0.0, 1.0]]), r"`outcomes` contains NaN or inf \(example 0, entry 1\)"),
        (lambda: paired_test_bootstrap([[1.0, 0.0]]), r"`outcomes` needs at least 2 test examples"),
        (lambda: paired_test_bootstrap(np.ones((2, 2, 2))), r"`outcomes` must be 2-D \(examples x entries\)"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), correction="fdr"), r"`correction` must be one of"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), confidence=0), r"`confidence` must be in \(0, 1\)"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), gamma=0.5), r"`gamma` must be in \(0.5, 1\)"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
