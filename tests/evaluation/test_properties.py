"""Properties that hold for any input (hypothesis), reproducibility, and isolation."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from evaluation import stats as es

SETTINGS = settings(max_examples=50, deadline=None)
# Scores on a grid of 0.01 so that ties are frequent.
values = st.integers(0, 40).map(lambda v: v / 100)
runs = hnp.arrays(np.float64, st.integers(2, 12), elements=values)
pools = st.integers(1, 30)


@SETTINGS
@given(runs)
def test_boo_1_is_the_mean(x):
    assert np.isclose(es.boo_n(x, 1), x.mean())


@SETTINGS
@given(runs, pools)
def test_boo_n_non_decreasing_in_n_and_bounded(x, n):
    a, b = es.boo_n(x, n), es.boo_n(x, n + 1)
    assert b >= a - 1e-12
    assert x.min() - 1e-12 <= a <= x.max() + 1e-12


@SETTINGS
@given(st.data(), pools)
def test_boo_n_with_valid_bounded_and_boo_1_mean(data, n):
    x = data.draw(runs)
    v = data.draw(hnp.arrays(np.float64, x.size, elements=values))
    assert np.isclose(es.boo_n(x, 1, valid=v), x.mean())
    assert x.min() - 1e-12 <= es.boo_n(x, n, valid=v) <= x.max() + 1e-12


@SETTINGS
@given(st.data())
def test_prob_outperform_complements(data):
    a = data.draw(runs)
    paired = data.draw(st.booleans())
    b = data.draw(hnp.arrays(np.float64, a.size, elements=values)) if paired else data.draw(runs)
    p = es.prob_outperform(a, b, paired=paired)
    assert 0 <= p <= 1
    assert np.isclose(p + es.prob_outperform(b, a, paired=paired), 1.0)


@SETTINGS
@given(runs, st.sampled_from(["mean", "median", "iqm", "boo_n"]))
def test_interval_contains_its_estimate(x, statistic):
    ci = es.bootstrap_interval(x, statistic, n=3, n_resamples=300, rng=0)
    assert ci.low - 1e-12 <= ci.estimate <= ci.high + 1e-12


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_permuting_runs_changes_nothing(data):
    k = data.draw(st.integers(2, 10))
    table = data.draw(hnp.arrays(np.float64, (3, k), elements=values))
    valid = data.draw(hnp.arrays(np.float64, k, elements=values))
    perm = data.draw(st.permutations(range(k)))
    shuffled = table[:, perm]
    assert np.isclose(es.boo_n(table[0], 3, valid=valid), es.boo_n(shuffled[0], 3, valid=valid[perm]))
    for statistic in ("mean", "boo_n"):
        v = valid if statistic == "boo_n" else None
        a = es.bootstrap_interval(table[0], statistic, valid=v, n_resamples=200)
        b = es.bootstrap_interval(shuffled[0], statistic, valid=None if v is None else v[perm], n_resamples=200)
        assert a == b
    for paired in (True, False):
        r1 = es.pairwise_comparisons(table, paired=paired, n_resamples=200)
        r2 = es.pairwise_comparisons(shuffled, paired=paired, n_resamples=200)
        for name in ("p", "low", "high", "pvalue", "better"):
            np.testing.assert_array_equal(getattr(r1, name), getattr(r2, name))
        q1 = es.rank_intervals(table, paired=paired, n_resamples=200)
        q2 = es.rank_intervals(shuffled, paired=paired, n_resamples=200)
        np.testing.assert_array_equal(q1.low, q2.low)
        np.testing.assert_array_equal(q1.high, q2.high)


@SETTINGS
@given(hnp.arrays(np.float64, st.tuples(st.integers(2, 5), st.integers(2, 8)), elements=values))
def test_pairwise_is_antisymmetric_and_better_implies_significant(table):
    r = es.pairwise_comparisons(table, n_resamples=200)
    k = table.shape[0]
    off = ~np.eye(k, dtype=bool)
    assert np.allclose((r.p + r.p.T)[off], 1)
    assert not (r.better & r.better.T).any()
    assert np.all(r.low[r.better] > 0.5) and np.all(r.high[r.better] > r.gamma)
    groups = es.significance_groups(r)
    assert groups[r.order[0]].startswith("a")


def test_same_seed_same_output_and_generator_accepted():
    rng = np.random.default_rng(0)
    table = rng.random((4, 12))
    for fn in (
        lambda s: es.pairwise_comparisons(table, n_resamples=300, rng=s).low,
        lambda s: es.pairwise_comparisons(table, paired=False, n_resamples=300, rng=s).high,
        lambda s: es.rank_intervals(table, n_resamples=300, rng=s).high,
        lambda s: es.bootstrap_interval(table, "boo_n", n_resamples=300, rng=s).low,
        lambda s: es.paired_test_bootstrap(table.T, n_resamples=300, rng=s).low,
        lambda s: es.sota_distribution_dependent(50, 0.7, 5, 0.5, n_sim=300, rng=s).pmf,
    ):
        np.testing.assert_array_equal(fn(7), fn(7))
        np.testing.assert_array_equal(fn(7), fn(np.random.default_rng(7)))


def test_different_seeds_differ():
    x = np.random.default_rng(0).random(30)
    assert es.bootstrap_interval(x, rng=1) != es.bootstrap_interval(x, rng=2)


def test_global_numpy_random_state_untouched():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    es.pairwise_comparisons(np.random.default_rng(0).random((3, 10)), n_resamples=100)
    es.bootstrap_interval(np.arange(5.0), n_resamples=100)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_import_does_not_import_django():
    repo = Path(__file__).resolve().parents[2]
    code = (
        "import sys, evaluation.stats as s; s.pairwise_comparisons([[1., 2.], [2., 3.]], n_resamples=10);"
        "bad = [m for m in sys.modules if m == 'django' or m.startswith('django.')];"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=repo, check=True, env={"PATH": "/usr/bin:/bin"})


def test_public_names_exported():
    expected = {
        "expected_max_normal",
        "boo_n",
        "boo_n_gaussian",
        "bootstrap_interval",
        "prob_outperform",
        "compare",
        "noether_sample_size",
        "sota_distribution",
        "sota_exceedance",
        "sota_distribution_nonidentical",
        "sota_distribution_dependent",
        "adjusted_sota",
        "adjust_pvalues",
        "pairwise_comparisons",
        "significance_groups",
        "rank_intervals",
        "paired_test_bootstrap",
        "Interval",
        "Comparison",
        "SotaDistribution",
        "AdjustedSota",
        "PairwiseResult",
        "RankIntervals",
        "TestBootstrapResult",
    }
    assert expected <= set(es.__all__)
    assert all(hasattr(es, name) for name in es.__all__)
