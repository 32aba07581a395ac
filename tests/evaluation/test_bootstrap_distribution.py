"""The bootstrap distribution and standard error that bootstrap results carry.

As ``scipy.stats.bootstrap``'s result: the percentiles of ``bootstrap_distribution``
are the percentile interval and its standard deviation (ddof=1) is ``standard_error``.
The default intervals are studentized (runs) or score intervals (P(A>B), accuracies);
the percentile interval of P(A>B) is kept as ``bootstrap_low``/``bootstrap_high``.
"""

import numpy as np
import pytest

from evaluation import stats as es

B = 400
Q = [2.5, 97.5]


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(4)
    return 0.7 + np.array([0.0, 0.004, 0.02])[:, None] + 0.01 * rng.standard_normal((3, 12))


@pytest.mark.parametrize("statistic", ["mean", "median", "iqm", "boo_n"])
def test_bootstrap_interval_carries_its_distribution(table, statistic):
    ci = es.bootstrap_interval(table[0], statistic, n_resamples=B, rng=1, method="percentile")
    assert ci.bootstrap_distribution.shape == (B,)
    assert (ci.low, ci.high) == tuple(np.percentile(ci.bootstrap_distribution, Q))
    assert ci.standard_error == np.std(ci.bootstrap_distribution, ddof=1)
    default = es.bootstrap_interval(table[0], statistic, n_resamples=B, rng=1)
    np.testing.assert_array_equal(default.bootstrap_distribution, ci.bootstrap_distribution)
    assert default.standard_error == ci.standard_error
    rows = es.bootstrap_interval(table, statistic, n_resamples=B, rng=1, method="percentile")
    assert rows.bootstrap_distribution.shape == (3, B)
    np.testing.assert_array_equal(np.percentile(rows.bootstrap_distribution, Q, axis=1), [rows.low, rows.high])
    np.testing.assert_allclose(rows.standard_error, np.std(rows.bootstrap_distribution, axis=1, ddof=1), rtol=1e-12)


def test_ragged_table_and_equality_ignore_nothing_else(table):
    ragged = es.bootstrap_interval([table[0, :5], table[1]], n_resamples=B, rng=2)
    assert ragged.bootstrap_distribution.shape == (2, B) and ragged.standard_error.shape == (2,)
    a = es.bootstrap_interval(table[0], n_resamples=B, rng=3)
    assert a == es.bootstrap_interval(table[0], n_resamples=B, rng=3)
    assert not a.bootstrap_distribution.flags.writeable


def test_rank_intervals_carry_resampled_ranks(table):
    r = es.rank_intervals(table, n_resamples=B, rng=5)
    assert r.bootstrap_distribution.shape == (3, B) and r.bootstrap_distribution.dtype == np.int64
    assert set(np.unique(r.bootstrap_distribution)) <= {1, 2, 3}
    lo, hi = np.percentile(r.bootstrap_distribution, Q, axis=1)
    np.testing.assert_array_equal(r.low, np.floor(lo + 1e-9))
    np.testing.assert_array_equal(r.high, np.ceil(hi - 1e-9))
    np.testing.assert_allclose(r.standard_error, np.std(r.bootstrap_distribution, axis=1, ddof=1))


@pytest.mark.parametrize("paired", [True, False])
def test_compare_and_pairwise_carry_the_resampled_probability(table, paired):
    c = es.compare(table[0], table[1], paired=paired, n_resamples=B, rng=6)
    assert c.bootstrap_distribution.shape == (B,)
    np.testing.assert_allclose(
        np.percentile(c.bootstrap_distribution, Q), (c.bootstrap_low, c.bootstrap_high), atol=1e-6
    )
    assert c.standard_error == pytest.approx(np.std(c.bootstrap_distribution, ddof=1), rel=1e-6)
    res = es.pairwise_comparisons(table[:2], paired=paired, n_resamples=B, rng=6)
    assert res.bootstrap_distribution.shape == (1, B) and res.bootstrap_distribution.dtype == np.float32
    np.testing.assert_array_equal(res.distribution(0, 1), c.bootstrap_distribution)
    np.testing.assert_allclose(res.distribution(1, 0), 1 - c.bootstrap_distribution)
    assert res.standard_error[0, 1] == res.standard_error[1, 0] == c.standard_error


def test_pairwise_distribution_indexes_every_pair(table):
    res = es.pairwise_comparisons(table, n_resamples=B, rng=7)
    assert res.bootstrap_distribution.shape == (3, B)
    for i, j in [(0, 1), (0, 2), (1, 2), (2, 0)]:
        np.testing.assert_allclose(
            np.percentile(res.distribution(i, j), Q), (res.bootstrap_low[i, j], res.bootstrap_high[i, j]), atol=1e-6
        )
    assert np.isnan(np.diag(res.standard_error)).all()
    with pytest.raises(ValueError, match=r"`i` and `j` must be distinct entries in \[0, 3\)"):
        res.distribution(1, 1)


def test_paired_test_bootstrap_carries_resampled_means():
    rng = np.random.default_rng(8)
    correct = rng.random((300, 3)) < [0.8, 0.75, 0.7]
    res = es.paired_test_bootstrap(correct, n_resamples=B, rng=9, confidence_level=0.9)
    assert res.bootstrap_distribution.shape == (3, B)
    np.testing.assert_allclose(res.bootstrap_distribution.mean(axis=1), correct.mean(axis=0), atol=0.01)
    np.testing.assert_allclose(res.standard_error, np.std(res.bootstrap_distribution, axis=1, ddof=1), rtol=1e-12)
    assert res.comparisons.bootstrap_distribution is None and res.comparisons.standard_error is None


def test_one_resample_has_standard_error_zero(table):
    assert es.bootstrap_interval(table[0], n_resamples=1).standard_error == 0.0
    assert es.compare(table[0], table[1], paired=True, n_resamples=1).standard_error == 0.0
    np.testing.assert_array_equal(es.rank_intervals(table, n_resamples=1).standard_error, 0.0)


def test_pairwise_can_leave_the_distribution_out(table):
    kept = es.pairwise_comparisons(table, n_resamples=B, rng=10)
    lean = es.pairwise_comparisons(table, n_resamples=B, rng=10, keep_distribution=False)
    assert lean.bootstrap_distribution is None
    for name in ("p", "low", "high", "pvalue", "better", "standard_error"):
        np.testing.assert_array_equal(getattr(lean, name), getattr(kept, name))
    with pytest.raises(ValueError, match="this result has no bootstrap distribution"):
        lean.distribution(0, 1)
    with pytest.raises(ValueError, match="`keep_distribution` must be True or False"):
        es.pairwise_comparisons(table, keep_distribution="no")
