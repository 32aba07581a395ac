"""Statistics engine of varboard: variance-aware evaluation of ML benchmark results.

Pure numpy + scipy (no Django), usable on its own with a table of runs::

    import numpy as np
    from evaluation import stats

    runs = np.loadtxt("resnet32_cifar100.csv", delimiter=",", skiprows=1)
    stats.bootstrap_interval(runs[:, 2], "boo_n", n=5, valid=runs[:, 1], rng=0)

Conventions (docs/DESIGN.md §6): scores are oriented so that higher is better before any
comparison; percentile intervals use numpy's default linear interpolation; invalid
input raises ``ValueError`` naming the parameter. Results are frozen dataclasses.

Names, as ``scipy.stats`` has them, one name for one idea:

``rng``
    The source of randomness of every random computation: an int >= 0, a
    ``numpy.random.SeedSequence`` or a ``numpy.random.Generator``, converted once with
    ``np.random.default_rng`` (default 0: results are reproducible; None is refused).
``confidence_level``
    The level of an interval that describes an estimate: ``bootstrap_interval``,
    ``rank_intervals``, the entries' intervals of ``paired_test_bootstrap``, the limits
    of the ``sota_distribution*`` functions. The interval is the ``(1 - c)/2`` and
    ``(1 + c)/2`` percentiles.
``alpha``
    A significance level of a test, never an interval's level: the γ decision rule of
    ``compare``, ``pairwise_comparisons`` and ``paired_test_bootstrap`` (whose P(A>B)
    or difference interval at level ``1 - alpha`` *is* the test) and the multiple-testing
    level of their adjusted p-values; Noether's type I error; the family-wise level of
    ``adjusted_sota``'s bound (Šidák-adjusted over m entries).
``standard_error``, ``bootstrap_distribution``
    Carried by the results of the bootstrap functions (``bootstrap_interval``,
    ``rank_intervals``, ``compare``, ``pairwise_comparisons``, ``paired_test_bootstrap``)
    as by ``scipy.stats.bootstrap``'s; ``adjusted_sota`` takes a ``standard_error``.

Contents
--------
Boo_n (Bajgar et al. 2018)
    expected_max_normal, boo_n (the paper's estimator or the unbiased one), boo_n_gaussian
Bootstrap over runs (studentized by default)
    bootstrap_interval, rank_intervals (of the ranking statistic), rank_intervals_from_distribution
Proportions
    proportion_interval (Wilson, Clopper–Pearson)
P(A>B) (Bouthillier et al. 2021) and the one decision rule
    prob_outperform, compare, pairwise_comparisons, noether_sample_size, runs_needed,
    check_gamma (the one check of γ's range, also used by the web application)
Multiplicity, order and groups
    adjust_pvalues (Holm 1979, Bonferroni, Benjamini–Hochberg 1995),
    significance_groups (Piepho 2004), split_letters, leader_group, verdict_order,
    order_inversions
Prediction entries and per-instance results (one test set)
    paired_test_bootstrap
State of the art under multiplicity (Møllersen & Holsbø)
    sota_distribution, sota_exceedance, sota_distribution_nonidentical,
    sota_distribution_dependent, adjusted_sota, outcome_dependence
Benchmark suites (Agarwal et al. 2021, Demšar 2006, Benavoli et al. 2017): ``evaluation.stats.suites``
    aggregate_interval (IQM), performance_profile, probability_of_improvement,
    critical_difference, bayesian_signed_rank, normalize_runs
Variance by source (Bouthillier et al. 2021, Fig. 1): ``evaluation.stats.variance_study``
"""

from ._types import (
    AdjustedSota,
    Comparison,
    Interval,
    PairwiseResult,
    RankIntervals,
    SotaDistribution,
    TestBootstrapResult,
)
from ._validation import check_gamma
from .boon import boo_n, boo_n_gaussian, expected_max_normal
from .bootstrap import (
    bootstrap_interval,
    rank_intervals,
    rank_intervals_from_distribution,
    rank_intervals_update,
    seeded_intervals,
)
from .decisions import RunsNeeded, runs_needed
from .groups import leader_group, significance_groups, split_letters
from .multiplicity import adjust_pvalues
from .ordering import inversions as order_inversions
from .ordering import verdict_order
from .outperform import compare, noether_sample_size, pairwise_comparisons, prob_outperform
from .planning import RunPlan, plan_runs
from .proportions import proportion_interval
from .sota import (
    adjusted_sota,
    outcome_dependence,
    sota_distribution,
    sota_distribution_dependent,
    sota_distribution_nonidentical,
    sota_exceedance,
)
from .testset import paired_test_bootstrap

__all__ = [
    "check_gamma",
    "AdjustedSota",
    "Comparison",
    "Interval",
    "PairwiseResult",
    "RankIntervals",
    "RunsNeeded",
    "SotaDistribution",
    "TestBootstrapResult",
    "adjust_pvalues",
    "adjusted_sota",
    "outcome_dependence",
    "boo_n",
    "boo_n_gaussian",
    "bootstrap_interval",
    "seeded_intervals",
    "rank_intervals_update",
    "compare",
    "expected_max_normal",
    "leader_group",
    "noether_sample_size",
    "order_inversions",
    "paired_test_bootstrap",
    "pairwise_comparisons",
    "prob_outperform",
    "proportion_interval",
    "rank_intervals",
    "rank_intervals_from_distribution",
    "runs_needed",
    "RunPlan",
    "plan_runs",
    "significance_groups",
    "split_letters",
    "sota_distribution",
    "sota_distribution_dependent",
    "sota_distribution_nonidentical",
    "sota_exceedance",
    "verdict_order",
]
