"""Percentile-bootstrap intervals over runs and bootstrap rank intervals."""

import numpy as np
import pytest
from scipy import stats

from evaluation.stats import Interval, boo_n, bootstrap_interval, rank_intervals
from evaluation.stats._resample import integer_percentiles, percentiles


# ---------------------------------------------------------------- against scipy
@pytest.mark.parametrize(
    "statistic, scipy_statistic",
    [
        ("mean", np.mean),
        ("median", np.median),
        ("iqm", lambda x, axis: stats.trim_mean(x, 0.25, axis=axis)),
    ],
)
def test_matches_scipy_percentile_bootstrap(resnet, statistic, scipy_statistic):
    # Different resamples, same method: the limits agree to Monte-Carlo error.
    test = resnet[:, 2]
    ours = bootstrap_interval(test, statistic, n_resamples=20_000, rng=1)
    ref = stats.bootstrap(
        (test,),
        scipy_statistic,
        method="percentile",
        n_resamples=20_000,
        confidence_level=0.95,
        rng=np.random.default_rng(2),
        axis=-1,
    ).confidence_interval
    width = ref.high - ref.low
    assert ours.low == pytest.approx(ref.low, abs=0.06 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.06 * width)
    assert ours.estimate == pytest.approx(float(scipy_statistic(test, axis=-1)))


def test_boo_n_interval_resamples_valid_test_pairs(resnet):
    valid, test = resnet[:, 1], resnet[:, 2]
    ours = bootstrap_interval(test, "boo_n", n=5, valid=valid, n_resamples=5000, rng=3)
    assert ours.estimate == pytest.approx(boo_n(test, 5, valid=valid))

    ref = stats.bootstrap(
        (test, valid),
        lambda t, v: boo_n(t, 5, valid=v),
        paired=True,
        vectorized=False,
        method="percentile",
        n_resamples=2000,
        rng=np.random.default_rng(4),
    ).confidence_interval
    width = ref.high - ref.low
    assert ours.low == pytest.approx(ref.low, abs=0.1 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.1 * width)


def test_batched_boo_n_equals_scalar_boo_n_on_each_resample(asreader):
    # The count-matrix Boo_n (ties in valid!) equals eq. 7 on the explicit resamples.
    from evaluation.stats._resample import counts_from_indices, draw_indices
    from evaluation.stats.boon import _boo_n_resampled

    valid, test = asreader[:60, 1], asreader[:60, 2]
    idx = draw_indices(np.random.default_rng(0), 60, 40)
    batched = _boo_n_resampled(test[None], valid[None], counts_from_indices(idx, 60), 5)[0]
    direct = [boo_n(test[i], 5, valid=valid[i]) for i in idx]
    np.testing.assert_allclose(batched, direct, rtol=1e-12)


@pytest.mark.parametrize("statistic", ["mean", "median", "iqm", "boo_n", "boo_n_unbiased"])
@pytest.mark.parametrize("k", [7, 8])
def test_count_weights_equal_the_statistic_of_explicit_resamples(statistic, k):
    # The weights computed from the count matrix reproduce the statistic of each
    # explicit resample (np.repeat of the sorted runs), ties included.
    from evaluation.stats._resample import draw_counts
    from evaluation.stats.bootstrap import _bootstrap_sorted, _Spec

    estimator = "unbiased" if statistic == "boo_n_unbiased" else "paper"
    statistic = statistic.removesuffix("_unbiased")

    rng = np.random.default_rng(k)
    key = np.round(rng.random((4, k)), 1)
    x = np.round(rng.random((4, k)), 2)
    key[0] = x[0]  # Boo_n chosen by the test score itself
    order = np.lexsort((x, key), axis=1) if statistic == "boo_n" else np.argsort(x, axis=1)
    x, key = np.take_along_axis(x, order, 1), np.take_along_axis(key, order, 1)
    boot, _ = _bootstrap_sorted(
        x, key, _Spec(statistic, 3, estimator, "percentile", 0.95), 60, np.random.default_rng(1)
    )
    counts = draw_counts(np.random.default_rng(1), k, 60)
    ref = {
        "mean": np.mean,
        "median": np.median,
        "iqm": lambda s: stats.trim_mean(s, 0.25),
    }
    for b in range(60):
        for e in range(4):
            sample = np.repeat(x[e], counts[b])
            if statistic == "boo_n":
                expected = boo_n(sample, 3, valid=np.repeat(key[e], counts[b]), estimator=estimator)
            else:
                expected = ref[statistic](sample)
            assert boot[e, b] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_table_gives_one_interval_per_entry(resnet):
    table = np.stack([resnet[:37, 2], resnet[37:, 2]])
    ci = bootstrap_interval(table, n_resamples=2000, rng=0)
    assert ci.estimate.shape == ci.low.shape == ci.high.shape == (2,)
    np.testing.assert_allclose(ci.estimate, table.mean(axis=1))
    assert np.all((ci.low < ci.estimate) & (ci.estimate < ci.high))
    with pytest.raises(ValueError):
        ci.low[0] = 0.0  # results are read-only


def test_ragged_and_nan_padded_tables_agree():
    rows = [[0.1, 0.4, 0.2, 0.3], [0.5, 0.7, 0.6]]
    padded = np.array([[0.1, 0.4, 0.2, 0.3], [0.5, 0.7, 0.6, np.nan]])
    a = bootstrap_interval(rows, n_resamples=500, rng=0)
    b = bootstrap_interval(padded, n_resamples=500, rng=0)
    np.testing.assert_array_equal(a.low, b.low)
    np.testing.assert_array_equal(a.high, b.high)
    np.testing.assert_allclose(a.estimate, [0.25, 0.6])


def test_table_boo_n_with_valid(resnet):
    test = np.stack([resnet[:37, 2], resnet[37:74, 2]])
    valid = np.stack([resnet[:37, 1], resnet[37:74, 1]])
    ci = bootstrap_interval(test, "boo_n", n=5, valid=valid, n_resamples=500, rng=0)
    np.testing.assert_allclose(ci.estimate, [boo_n(t, 5, valid=v) for t, v in zip(test, valid)])


def test_coverage_of_the_mean_on_normal_data():
    # 400 repetitions, fixed seed: the 95% interval covers the true mean 93–97% of the time.
    rng = np.random.default_rng(2024)
    data = rng.normal(0.0, 1.0, size=(400, 50))
    covered = [
        (ci := bootstrap_interval(row, n_resamples=2000, rng=i)).low <= 0.0 <= ci.high for i, row in enumerate(data)
    ]
    assert 0.93 <= np.mean(covered) <= 0.97


def test_integer_percentiles_match_numpy():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 41, size=(300, 997))
    q = [2.5, 50, 97.5, 0, 100, 33.3]
    np.testing.assert_allclose(
        integer_percentiles(values, 40, q), np.percentile(values, q, axis=-1), rtol=0, atol=1e-12
    )


def test_percentiles_match_numpy():
    rng = np.random.default_rng(1)
    q = [2.5, 97.5, 0, 100, 50, 12.34]
    x = rng.standard_normal((7, 1001))
    np.testing.assert_array_equal(percentiles(x, q), np.percentile(x, q, axis=-1))
    ints = rng.integers(-5000, 5000, size=(5, 999)).astype(np.float32)
    np.testing.assert_array_equal(percentiles(ints, q), np.percentile(ints.astype(np.float64), q, axis=-1))


def test_interval_of_a_sample_is_a_float_interval():
    ci = bootstrap_interval([1.0, 2.0, 3.0], n_resamples=100)
    assert isinstance(ci, Interval) and isinstance(ci.low, float)
    assert ci == bootstrap_interval([3.0, 1.0, 2.0], n_resamples=100)


# ---------------------------------------------------------------- rank intervals
def test_rank_intervals_clear_separation():
    rng = np.random.default_rng(0)
    scores = np.array([0.5, 0.9, 0.7])[:, None] + 0.01 * rng.standard_normal((3, 20))
    r = rank_intervals(scores, n_resamples=1000)
    np.testing.assert_array_equal(r.rank, [3, 1, 2])
    np.testing.assert_array_equal(r.low, [3, 1, 2])
    np.testing.assert_array_equal(r.high, [3, 1, 2])


def test_rank_intervals_indistinguishable_entries_overlap():
    rng = np.random.default_rng(1)
    scores = 0.7 + 0.01 * rng.standard_normal((4, 10))
    for paired in (True, False):
        r = rank_intervals(scores, paired=paired, n_resamples=1000)
        assert np.all(r.low <= r.rank) and np.all(r.rank <= r.high)
        assert np.all(r.high - r.low >= 1)


def test_rank_intervals_ties_share_the_better_rank():
    r = rank_intervals([[1.0, 2.0], [1.0, 2.0], [0.0, 0.5]], n_resamples=50)
    np.testing.assert_array_equal(r.rank, [1, 1, 3])


def test_rank_intervals_unpaired_ragged():
    r = rank_intervals([[0.9, 0.91, 0.92], [0.5, 0.52], [0.7, 0.71, 0.69, 0.7]], paired=False, n_resamples=500)
    np.testing.assert_array_equal(r.rank, [1, 3, 2])


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bootstrap_interval([], n_resamples=10), r"`values` must not be empty"),
        (lambda: bootstrap_interval([1.0], n_resamples=10), r"`values` needs at least 2 runs"),
        (lambda: bootstrap_interval([1.0, np.nan], n_resamples=10), r"`values` contains NaN or inf"),
        (lambda: bootstrap_interval([1.0, 2.0], "max"), r"`statistic` must be one of 'mean', 'median', 'iqm', 'boo_n'"),
        (lambda: bootstrap_interval([1.0, 2.0], n_resamples=0), r"`n_resamples` must be an integer >= 1"),
        (lambda: bootstrap_interval([1.0, 2.0], confidence_level=1.0), r"`confidence_level` must be in \(0, 1\)"),
        (lambda: bootstrap_interval([1.0, 2.0], rng=None), r"`rng` must be a non-negative integer"),
        (lambda: bootstrap_interval([1.0, 2.0], rng=-1), r"`rng` must be a non-negative integer"),
        (lambda: bootstrap_interval([1.0, 2.0], valid=[1.0, 2.0]), r"`valid` is only used with statistic='boo_n'"),
        (
            lambda: bootstrap_interval([1.0, 2.0], "boo_n", valid=[1.0]),
            r"`valid` must have a finite value for every run",
        ),
        (lambda: bootstrap_interval([1.0, 2.0], "boo_n", n=0), r"`n` must be an integer >= 1"),
        (lambda: bootstrap_interval([[1.0, 2.0], [1.0]], n_resamples=10), r"entry 1 has 1 run; at least 2 are needed"),
        (lambda: bootstrap_interval([[1.0, np.inf], [1.0, 2.0]]), r"`values` contains inf \(entry 0, run 1\)"),
        (lambda: bootstrap_interval(np.ones((2, 2, 2))), r"`values` must be 2-D"),
        (
            lambda: rank_intervals([[1.0, np.nan], [1.0, 2.0]]),
            r"contains NaN \(entry 0, run 1\); paired comparisons need every run",
        ),
        (lambda: rank_intervals([[1.0, 2.0, 3.0], [1.0, 2.0]]), r"same number of runs for every entry when paired"),
        (lambda: rank_intervals([[1.0, 2.0]], paired="no"), r"`paired` must be True or False"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
