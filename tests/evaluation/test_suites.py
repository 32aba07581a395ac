"""Benchmark suites: rliable's aggregates, Friedman–Nemenyi and the Bayesian signed-rank test.

Oracles (dev dependencies, pinned in requirements-dev.txt): rliable 1.2.0 (with arch 7.2) for the IQM,
the mean and median of task means, performance profiles and the probability of
improvement with stratified-bootstrap intervals; scikit-posthocs 0.17.1 and autorank
1.3.0 for the Nemenyi p-values and the critical difference; baycomp 1.0.3 for the
Bayesian signed-rank test. Point estimates agree to 1e-12; bootstrap and Monte-Carlo
limits to the Monte-Carlo error of the two draws (tolerances below).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from evaluation.stats import suites as su


@pytest.fixture(scope="module")
def rliable():
    """rliable 1.2.0 and its arch 7.2 under pandas 3.

    arch < 8 (which rliable requires) calls pandas' private ``deprecate_kwarg(old, new)``;
    pandas 3 expects the warning class first. The call is adapted while arch is imported.
    """
    import pandas.util._decorators as decorators

    original = decorators.deprecate_kwarg

    def compatible(*args, **kwargs):
        return (
            original(FutureWarning, *args, **kwargs) if args and isinstance(args[0], str) else original(*args, **kwargs)
        )

    decorators.deprecate_kwarg = compatible
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            library = pytest.importorskip("rliable.library")
            metrics = pytest.importorskip("rliable.metrics")
    finally:
        decorators.deprecate_kwarg = original
    return library, metrics


@pytest.fixture(scope="module")
def suite():
    rng = np.random.default_rng(0)
    return {"a": rng.random((10, 3)) + 0.2, "b": rng.random((10, 3))}  # (runs, tasks), rliable's layout


def _table(suite):
    return np.stack([suite["a"], suite["b"]])


@pytest.mark.parametrize(
    "statistic, name", [("iqm", "aggregate_iqm"), ("mean", "aggregate_mean"), ("median", "aggregate_median")]
)
def test_aggregates_and_intervals_match_rliable(rliable, suite, statistic, name):
    library, metrics = rliable
    fn = getattr(metrics, name)
    points, intervals = library.get_interval_estimates(
        suite, lambda x: np.array([fn(x)]), reps=8_000, random_state=np.random.RandomState(0)
    )
    ours = su.aggregate_interval(_table(suite), statistic, n_resamples=8_000, rng=1, method="percentile")
    np.testing.assert_allclose(ours.estimate, [points["a"][0], points["b"][0]], rtol=1e-12)
    for e, key in enumerate("ab"):
        width = intervals[key][1, 0] - intervals[key][0, 0]
        assert (ours.low[e], ours.high[e]) == pytest.approx(tuple(intervals[key][:, 0]), abs=0.04 * width)


def test_probability_of_improvement_matches_rliable(rliable, suite):
    library, metrics = rliable
    point, interval = library.get_interval_estimates(
        {"ab": (suite["a"], suite["b"])},
        metrics.probability_of_improvement,
        reps=1_500,
        random_state=np.random.RandomState(0),
    )
    ours = su.probability_of_improvement(_table(suite), n_resamples=5_000, rng=1)
    assert ours.p[0, 1] == pytest.approx(point["ab"], abs=1e-12) and ours.p[1, 0] == pytest.approx(1 - point["ab"])
    assert (ours.low[0, 1], ours.high[0, 1]) == pytest.approx(tuple(interval["ab"][:, 0]), abs=0.03)


def test_performance_profile_matches_rliable(rliable, suite):
    library, _ = rliable
    taus = np.linspace(0, 1.2, 7)
    profiles, intervals = library.create_performance_profile(suite, taus, reps=4_000)
    ours = su.performance_profile(_table(suite), taus, n_resamples=4_000)
    for e, key in enumerate("ab"):
        np.testing.assert_allclose(ours.estimate[e], profiles[key], atol=1e-12)
        np.testing.assert_allclose(ours.low[e], intervals[key][0], atol=0.07)
        np.testing.assert_allclose(ours.high[e], intervals[key][1], atol=0.07)


def test_critical_difference_matches_scikit_posthocs_and_autorank():
    sp = pytest.importorskip("scikit_posthocs")
    autorank = pytest.importorskip("autorank")
    import pandas as pd

    rng = np.random.default_rng(3)
    x = rng.random((4, 8)) + np.arange(4)[:, None] * 0.1  # entries x tasks
    cd = su.critical_difference(x)
    np.testing.assert_allclose(cd.pairwise_pvalue, sp.posthoc_nemenyi_friedman(x.T).to_numpy(), atol=1e-12)
    assert (cd.statistic, cd.pvalue) == pytest.approx(tuple(stats.friedmanchisquare(*x)), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ar = autorank.autorank(
            pd.DataFrame(x.T, columns=list("abcd")), alpha=0.05, verbose=False, force_mode="nonparametric"
        )
    assert cd.cd == pytest.approx(ar.cd, rel=1e-4)  # autorank's qsturng approximates the studentized range
    np.testing.assert_allclose(cd.average_rank, ar.rankdf.meanrank.reindex(list("abcd")).to_numpy())


@pytest.mark.parametrize("rope", [0.0, 0.02])
def test_bayesian_signed_rank_matches_baycomp(rope):
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(4)
    x, y = rng.random(8), rng.random(8) + 0.05
    theirs = baycomp.SignedRankTest.probs(x, y, rope=rope, nsamples=50_000)
    ours = su.bayesian_signed_rank(x, y, rope=rope, n_samples=50_000)
    if rope == 0:
        theirs = (theirs[0], 0.0, theirs[1])
    # baycomp's "left" is x better; Monte-Carlo error of two 50,000-sample draws
    assert (ours.p_a_better, ours.p_rope, ours.p_b_better) == pytest.approx(theirs, abs=0.01)


def test_cliques_are_the_bars_of_the_diagram():
    cd = su.critical_difference([[0.9] * 6, [0.89] * 6, [0.5] * 6, [0.49] * 6])
    assert cd.average_rank.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert cd.cd == pytest.approx(stats.studentized_range.ppf(0.95, 4, np.inf) / np.sqrt(2) * np.sqrt(20 / 36))
    assert cd.cliques == [[0, 1], [1, 2], [2, 3]]  # ranks 1 apart, CD 1.92: neighbours only


def test_entries_tied_on_every_task_have_friedman_zero_and_p_one():
    """Found by an attack on rounded boards: entries that show one score on every task (coarse rounding makes it
    likely) gave scipy's tie-corrected Friedman statistic 0/0 = NaN, and /api/suites/{slug}/ answered 500."""
    cd = su.critical_difference([[0.8, 0.7], [0.8, 0.7], [0.8, 0.7]])
    assert (cd.statistic, cd.pvalue) == (0.0, 1.0)
    assert cd.average_rank.tolist() == [2.0, 2.0, 2.0] and np.isfinite(cd.pairwise_pvalue).all()
    partly = su.critical_difference([[0.8, 0.7], [0.8, 0.6], [0.8, 0.5]])  # one task tied: scipy's own answer
    assert partly.statistic == pytest.approx(stats.friedmanchisquare([0.8, 0.7], [0.8, 0.6], [0.8, 0.5]).statistic)


def test_normalize_runs_minmax_and_direction():
    runs = [[np.array([1.0, 3.0]), np.array([0.2, 0.4])], [np.array([2.0]), np.array([0.3])]]
    out = su.normalize_runs(runs, higher_is_better=[True, False])
    np.testing.assert_allclose(out[0][0], [0.0, 1.0])
    np.testing.assert_allclose(out[0][1], [1.0, 0.0])  # a loss: the lowest is the best
    np.testing.assert_allclose(out[1][1], [0.5])


def test_stratified_bootstrap_keeps_the_tasks_and_ragged_runs():
    runs = [[np.arange(5.0), np.arange(3.0) + 10], [np.arange(4.0), np.arange(6.0) + 10]]
    ci = su.aggregate_interval(runs, "mean", n_resamples=300)
    assert ci.estimate.tolist() == [(2 + 11) / 2, (1.5 + 12.5) / 2]
    assert np.all((ci.bootstrap_distribution > 5) & (ci.bootstrap_distribution < 9))  # a task never vanishes


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: su.aggregate_interval([], "iqm"), r"`runs` needs at least one entry and one task"),
        (lambda: su.aggregate_interval([[[1.0]], [[1.0], [2.0]]]), r"`runs`: entry 1 has 2 tasks, entry 0 has 1"),
        (lambda: su.aggregate_interval([[[np.nan]]]), r"`runs`: entry 0, task 0 needs at least one finite score"),
        (lambda: su.aggregate_interval([[["a"]]]), r"`runs` must hold, per entry and per task, an array of scores"),
        (
            lambda: su.aggregate_interval(np.ones((1, 2, 2)), "max"),
            r"`statistic` must be one of 'iqm', 'mean', 'median'",
        ),
        (lambda: su.performance_profile(np.ones((1, 2, 2)), []), r"`taus` must be a non-empty 1-D array"),
        (lambda: su.normalize_runs(np.ones((1, 2, 2)), method="z"), r"`method` must be one of 'none', 'minmax'"),
        (
            lambda: su.normalize_runs(np.ones((1, 2, 2)), higher_is_better=[True]),
            r"`higher_is_better` must give one value per task",
        ),
        (lambda: su.critical_difference([[1.0, 2.0], [2.0, 3.0]]), r"`scores` must be 2-D with at least 3 entries"),
        (lambda: su.critical_difference([[1.0, np.nan], [1.0, 2.0], [0.0, 1.0]]), r"`scores` contains NaN or inf"),
        (lambda: su.critical_difference([["a", "b"], ["c", "d"]]), r"`scores` must be an array of real numbers"),
        (lambda: su.bayesian_signed_rank([1.0, 2.0], [1.0]), r"`x` and `y` must have the same length"),
        (lambda: su.bayesian_signed_rank([1.0, np.inf], [1.0, 2.0]), r"`x` and `y` must be finite"),
        (lambda: su.bayesian_signed_rank(["a", "b"], [1.0, 2.0]), r"`x` and `y` must be arrays of real numbers"),
        (lambda: su.bayesian_signed_rank([1.0, 2.0], [1.0, 2.0], rope=-1), r"`rope` must be >= 0"),
        (lambda: su.bayesian_signed_rank([1.0, 2.0], [1.0, 2.0], prior=0), r"`prior` must be positive"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_profile_of_every_run_above_tau_is_one_inside_its_interval():
    """Tasks of unequal runs, every run above tau: the estimate (a sum of 1/(T k_t) weights) was 1.0000000000000002
    beside limits clipped to [0, 1] (a statistician's finding, 2-6 of 150 random suites)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        runs = [[rng.uniform(0.5, 1, int(rng.integers(1, 11))) for _ in range(int(rng.integers(2, 6)))]]
        profile = su.performance_profile(runs, [0.0, 0.25], n_resamples=200, rng=0)
        assert np.all((profile.low <= profile.estimate) & (profile.estimate <= profile.high))
        assert np.all((profile.estimate >= 0) & (profile.estimate <= 1)), profile.estimate


@pytest.mark.parametrize("tasks", [1, 3])
def test_probability_of_improvement_ties_runs_equal_but_for_rounding(tasks):
    """Found by a property hunt: the same 12 runs scored as correct / n and as correct * (1 / n), 1 ulp apart on every
    run, gave P(improvement) = 0.458 (the second entry better) where the board and ``prob_outperform`` give 1/2:
    a task's Mann–Whitney wins counted any difference. Runs within the board's tie rule (``_resample.paired_wins``,
    1e-12 relative) tie, as on the board."""
    from evaluation import stats as library

    n, k = 10_000, 12
    correct = np.array([c for c in range(6800, 6900) if c * (1 / n) != c / n][:k])
    divided, multiplied = correct / n, correct * (1 / n)
    res = su.probability_of_improvement([[divided] * tasks, [multiplied] * tasks], n_resamples=500, rng=1)
    assert res.p[0, 1] == res.p[1, 0] == 0.5 == library.prob_outperform(divided, multiplied, paired=False)
    assert res.low[0, 1] < 0.5 < res.high[0, 1]


@pytest.mark.parametrize("statistic", ["iqm", "mean", "median"])
@pytest.mark.parametrize("method", ["expanded", "percentile"])
def test_an_aggregate_and_its_interval_stay_within_the_entrys_runs(statistic, method):
    """Found by suites19: every aggregate is a weighted mean of the entry's runs, so it and its resamples lie between
    their least and greatest. An entry scoring 1 on every run of two tasks of 5 and 6 runs (the best everywhere,
    min-max normalised) had an IQM of 0.9999999999999999 in [0.9999999999999998, 1.0000000000000002], above 1 on a
    [0, 1] scale, and an entry of runs all 0.7 an interval of non-zero width."""
    entries = [[np.ones(5), np.ones(6)], [np.zeros(5), np.zeros(5)], [np.full(3, 0.7), np.full(2, 0.7)]]
    rng = np.random.default_rng(2)
    entries += [[rng.random(k) for k in (3, 2, 2)], [np.round(rng.random(k), 1) for k in (4, 1)]]
    for runs in entries:
        ci = su.aggregate_interval([runs], statistic, n_resamples=200, method=method)
        lo, hi = min(r.min() for r in runs), max(r.max() for r in runs)
        assert lo <= ci.low[0] <= ci.estimate[0] <= ci.high[0] <= hi
