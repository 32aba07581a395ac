"""Statistics engine of varboard: variance-aware evaluation of ML benchmark results.

Pure numpy + scipy (no Django), usable on its own with a table of runs::

    import numpy as np
    from evaluation import stats

    runs = np.loadtxt("resnet32_cifar100.csv", delimiter=",", skiprows=1)
    stats.bootstrap_interval(runs[:, 2], "boo_n", n=5, valid=runs[:, 1])

Conventions (DESIGN §6): scores are oriented so that higher is better before any
comparison; percentile intervals use numpy's default linear interpolation; every
random computation takes an explicit ``seed`` (int, SeedSequence or Generator,
converted once with ``np.random.default_rng``); invalid input raises ``ValueError``
naming the parameter. Results are frozen dataclasses.

Contents
--------
Boo_n (Bajgar et al. 2018)
    expected_max_normal, boo_n, boo_n_gaussian
Bootstrap over runs
    bootstrap_interval, rank_intervals
P(A>B) (Bouthillier et al. 2021)
    prob_outperform, compare, pairwise_comparisons, noether_sample_size
Multiplicity and groups
    adjust_pvalues (Holm 1979, Bonferroni, Benjamini–Hochberg 1995),
    significance_groups (Piepho 2004), leader_group
Prediction entries (bootstrap over test examples)
    paired_test_bootstrap
State of the art under multiplicity (Møllersen & Holsbø)
    sota_distribution, sota_exceedance, sota_distribution_nonidentical,
    sota_distribution_dependent, adjusted_sota
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
from .boon import boo_n, boo_n_gaussian, expected_max_normal
from .bootstrap import bootstrap_interval, rank_intervals
from .groups import leader_group, significance_groups
from .multiplicity import adjust_pvalues
from .outperform import compare, noether_sample_size, pairwise_comparisons, prob_outperform
from .sota import (
    adjusted_sota,
    sota_distribution,
    sota_distribution_dependent,
    sota_distribution_nonidentical,
    sota_exceedance,
)
from .testset import paired_test_bootstrap

__all__ = [
    "AdjustedSota",
    "Comparison",
    "Interval",
    "PairwiseResult",
    "RankIntervals",
    "SotaDistribution",
    "TestBootstrapResult",
    "adjust_pvalues",
    "adjusted_sota",
    "boo_n",
    "boo_n_gaussian",
    "bootstrap_interval",
    "compare",
    "expected_max_normal",
    "leader_group",
    "noether_sample_size",
    "paired_test_bootstrap",
    "pairwise_comparisons",
    "prob_outperform",
    "rank_intervals",
    "significance_groups",
    "sota_distribution",
    "sota_distribution_dependent",
    "sota_distribution_nonidentical",
    "sota_exceedance",
]
