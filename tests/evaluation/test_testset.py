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
    # Accuracies get Wilson's interval; statsmodels (dev dependency) as the oracle.
    from statsmodels.stats.proportion import proportion_confint

    res = paired_test_bootstrap(correct, n_resamples=4000, rng=1)
    assert isinstance(res, TestBootstrapResult) and isinstance(res.comparisons, PairwiseResult)
    np.testing.assert_allclose(res.estimate, correct.mean(axis=0))
    se = np.sqrt(res.estimate * (1 - res.estimate) / correct.shape[0])
    np.testing.assert_allclose(res.standard_error, se, rtol=0.06)
    assert list(res.entry_method) == ["wilson"] * 4
    for e in range(4):
        ref = proportion_confint(correct[:, e].sum(), correct.shape[0], 0.05, method="wilson")
        assert (res.low[e], res.high[e]) == pytest.approx(ref, abs=1e-12)


def test_losses_get_students_interval():
    rng = np.random.default_rng(4)
    loss = rng.gamma(2.0, 0.3, size=(400, 2))
    res = paired_test_bootstrap(loss, n_resamples=200)
    ref = stats.t.interval(0.95, 399, loc=loss.mean(axis=0), scale=stats.sem(loss, axis=0))
    np.testing.assert_allclose([res.low, res.high], ref, rtol=1e-12)
    assert list(res.entry_method) == ["t", "t"]


def test_several_files_count_the_spread_between_them():
    # Defect: 5 files were averaged per example and only examples resampled (80 % coverage).
    rng = np.random.default_rng(5)
    seed_effect = 0.03 * rng.standard_normal(5)
    files = (rng.random((5, 500)) < 0.8 + seed_effect[:, None]).astype(float)
    res = paired_test_bootstrap(files=[files, files[:1]], n_resamples=2000, rng=0)
    assert list(res.entry_method) == ["wilson-deff", "wilson"] and list(res.files) == [5, 1]
    var = files.mean(axis=0).var(ddof=1) / 500 + files.mean(axis=1).var(ddof=1) / 5
    assert res.high[0] - res.low[0] > 2 * 1.96 * np.sqrt(files.mean(axis=0).var(ddof=1) / 500)
    assert res.standard_error[0] == pytest.approx(np.sqrt(var), rel=0.2)  # the two-way bootstrap agrees


def test_one_shared_resample_index_set(correct):
    # Reproduce with the same count matrix: every entry's resampled mean uses the same rows.
    res = paired_test_bootstrap(correct, n_resamples=300, rng=5)
    counts = draw_counts(np.random.default_rng(5), correct.shape[0], 300)
    means = counts @ correct / correct.shape[0]
    np.testing.assert_allclose(res.bootstrap_distribution, means.T)
    d = means[:, 0] - means[:, 1]
    observed = correct[:, 0].mean() - correct[:, 1].mean()
    # P(0>1) = G(d), the symmetrised share ½[P*(D* > 0) + P*(D* < 2d)] over the resamples and d itself (B + 1)
    values = np.append(d, observed)
    above = np.sum(values > 1e-12) + 0.5 * np.sum(np.abs(values) <= 1e-12)
    below = np.sum(values < 2 * observed - 1e-12) + 0.5 * np.sum(np.abs(values - 2 * observed) <= 1e-12)
    assert res.comparisons.p[0, 1] == pytest.approx((above + below) / 2 / values.size)
    assert (res.diff_low[1, 0], res.diff_high[1, 0]) == pytest.approx((-res.diff_high[0, 1], -res.diff_low[0, 1]))


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


def test_binary_pairs_use_the_exact_mcnemar_test(correct):
    # statsmodels' exact McNemar test (dev dependency) is the oracle; the interval of the
    # difference is dual to it (Clopper–Pearson on the discordant examples).
    from statsmodels.stats.contingency_tables import mcnemar

    res = paired_test_bootstrap(correct, n_resamples=10, correction="none")
    for i, j in [(0, 1), (0, 2), (1, 3)]:
        a, b = correct[:, i].astype(bool), correct[:, j].astype(bool)
        table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
        assert res.comparisons.pvalue[i, j] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
        assert res.pair_method[i, j] == "mcnemar"
        assert (res.diff_low[i, j] > 0) == (res.comparisons.pvalue[i, j] < 0.05 and a.mean() > b.mean())


def test_other_pairs_use_paired_t_tests():
    rng = np.random.default_rng(6)
    loss = rng.gamma(2.0, [0.30, 0.31, 0.4], size=(300, 3))
    res = paired_test_bootstrap(loss, n_resamples=10, correction="none", higher_is_better=False)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        ref = stats.ttest_rel(loss[:, i], loss[:, j])
        assert res.comparisons.pvalue[i, j] == pytest.approx(ref.pvalue, rel=1e-8)
        ci = ref.confidence_interval(0.95)
        assert (res.diff_low[i, j], res.diff_high[i, j]) == pytest.approx((-ci.high, -ci.low), rel=1e-8)


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
        (
            lambda: paired_test_bootstrap([[1.0, np.nan], [0.0, 1.0]]),
            r"`outcomes` contains NaN or inf \(example 0, entry 1\)",
        ),
        (
            lambda: paired_test_bootstrap(files=[np.ones((2, 3)), [[1.0, np.inf, 0.0]]]),
            r"`files` contains NaN or inf \(example 1, entry 1\)",
        ),
        (
            lambda: paired_test_bootstrap(files=[np.ones((2, 3)), np.ones((2, 4))]),
            r"`files` must give every entry the same number of test examples",
        ),
        (lambda: paired_test_bootstrap(files=[np.ones((2, 2, 2))]), r"`files\[0\]` must be \(files, examples\)"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), files=[np.ones(5)]), r"Give exactly one of `outcomes`"),
        (lambda: paired_test_bootstrap(files=[]), r"`files` must not be empty"),
        (lambda: paired_test_bootstrap(np.array([[1.0, 0.0]])), r"`outcomes` needs at least 2 test examples"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), priority=[0, 0]), r"`priority` must be a permutation"),
        (lambda: paired_test_bootstrap(np.ones((2, 2, 2))), r"`outcomes` must be 2-D \(examples x entries\)"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), correction="fdr"), r"`correction` must be one of"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), confidence_level=0), r"`confidence_level` must be in \(0, 1\)"),
        (lambda: paired_test_bootstrap(np.ones((5, 2)), gamma=0.5), r"`gamma` must be in \(0.5, 1\)"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
