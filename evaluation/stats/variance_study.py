"""Variance by source: how much each source of randomness moves an entry's score.

Bouthillier et al. (2021), §2 and Figure 1: run a learning pipeline k times varying one
source of variation (data split, weight initialisation, data order, augmentation,
dropout, hyperparameter search) while the others are held fixed, then all sources
jointly; compare the standard deviations. In their study the data split and the
hyperparameter search dominate, and an estimator that fixes the hyperparameters
(FixHOptEst) underestimates the variance of one that searches them anew for every run
(IdealEst).

The study here takes, per block, the k test scores of the runs in which only that
source varied (key = the source), the k runs in which all varied (``"all"``), and
optionally the k runs in which all varied but the hyperparameters stayed fixed
(``"all_fixed_hpo"``).

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys. Snedecor, G. W. & Cochran, W. G. (1989). Statistical Methods, 8th ed., §2.12 (the
chi-square interval of a standard deviation) and §6.11 (the F interval of a variance ratio).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._types import _freeze_arrays
from ._validation import as_sample, check_open_unit

__all__ = ["VarianceStudyResult", "variance_study"]

JOINT = "all"
JOINT_FIXED_HPO = "all_fixed_hpo"


@dataclass(frozen=True, eq=False)
class VarianceStudyResult:
    """Per source (in ``sources`` order): standard deviation, interval, share of the joint variance.

    ``sd``/``sd_low``/``sd_high``: each source's standard deviation of the score (ddof=1)
    and its chi-square interval; ``share``/``share_low``/``share_high``: its variance
    over the joint variance (``"all"``) with the F interval (not constrained to sum to
    1: sources interact, and each share is estimated from k runs); ``total_*``: the joint
    standard deviation. ``fixed_hpo_ratio``: the variance with fixed hyperparameters
    over the joint variance with a search in every run (below 1: FixHOptEst
    underestimates), with its F interval; None without both blocks. Shares and the ratio
    are NaN when the joint runs have no variance at all.
    ``standard_error``: of each ``sd``, ``s / sqrt(2 (k - 1))``. No bootstrap is used.
    """

    sources: tuple
    runs: np.ndarray
    sd: np.ndarray
    sd_low: np.ndarray
    sd_high: np.ndarray
    share: np.ndarray
    share_low: np.ndarray
    share_high: np.ndarray
    total_sd: float
    total_low: float
    total_high: float
    fixed_hpo_ratio: float | None = None
    fixed_hpo_low: float | None = None
    fixed_hpo_high: float | None = None
    confidence_level: float = 0.95
    standard_error: np.ndarray | None = None
    bootstrap_distribution: None = None

    def __post_init__(self):
        _freeze_arrays(self)


def _variance_study_iv(blocks, confidence_level):
    if not isinstance(blocks, Mapping) or not blocks:
        raise ValueError("`blocks` must map each source (and 'all') to the scores of its runs.")
    if JOINT not in blocks:
        raise ValueError("`blocks` needs the 'all' block: the runs in which every source varied.")
    out = {}
    for name, scores in blocks.items():
        if not isinstance(name, str):
            raise ValueError(f"`blocks` keys must be source names (got {name!r}).")
        out[name] = as_sample(scores, f"blocks[{name!r}]", min_size=2)
    return out, check_open_unit(confidence_level, "confidence_level")


def _variance(x: np.ndarray) -> float:
    """Sample variance (ddof=1), 0 for a constant block (its mean's rounding left 1e-34). Only equal values count
    as no spread: a cut-off relative to max|x| zeroed real spreads far from 0 (sd 1.3e-7 of runs near 1e6; found
    by a statistician)."""
    return 0.0 if np.ptp(x) == 0 else float(x.var(ddof=1))


def _sd_interval(s2: np.ndarray, df: np.ndarray, a: float):
    """Chi-square interval of a standard deviation from a sample variance with df degrees of freedom."""
    return np.sqrt(df * s2 / stats.chi2.ppf(1 - a / 2, df)), np.sqrt(df * s2 / stats.chi2.ppf(a / 2, df))


def _ratio_interval(num: np.ndarray, den: float, df1: np.ndarray, df2: float, a: float):
    """F interval of a ratio of variances of independent normal samples."""
    if den == 0:  # no joint variance: no share can be stated
        nan = np.full(np.shape(num), np.nan)
        return nan, nan, nan
    ratio = num / den
    return ratio, ratio / stats.f.ppf(1 - a / 2, df1, df2), ratio / stats.f.ppf(a / 2, df1, df2)


def variance_study(blocks, *, confidence_level=0.95) -> VarianceStudyResult:
    """Standard deviation of the score by source of variation, and each source's share.

    Parameters
    ----------
    blocks : mapping of str to array_like
        For each studied source, the scores of the k runs in which only it varied;
        ``"all"``: the runs in which all varied; ``"all_fixed_hpo"`` (optional): all but
        the hyperparameter search varied. At least 2 runs each.
    confidence_level : float, default 0.95

    Returns
    -------
    VarianceStudyResult
        Sources in the order given, ``"all"`` and ``"all_fixed_hpo"`` excluded.

    Raises
    ------
    ValueError
        If ``blocks`` is not a mapping with an ``"all"`` block, a block has fewer than
        2 finite scores, or ``confidence_level`` is outside (0, 1).

    Notes
    -----
    Bouthillier et al. (2021), Fig. 1. For a block of k runs with variance s², the
    interval of σ is ``[sqrt((k-1)s²/χ²_{1-a/2}), sqrt((k-1)s²/χ²_{a/2})]`` (exact for
    normal scores); a share ``s_j²/s_all²`` has the interval ``[R/F_{1-a/2}, R/F_{a/2}]``
    with ``F(k_j - 1, k_all - 1)``, taking the blocks as independent (they share run 0's
    seeds, so slightly conservative). FixHOptEst's underestimate is ``1 - ratio`` with
    ``ratio = s_fixed² / s_all²``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r = variance_study({"split": 0.8 + 0.02 * rng.standard_normal(20), "init": 0.8 + 0.005 * rng.standard_normal(20),
    ...                     "all": 0.8 + 0.021 * rng.standard_normal(20)})
    >>> r.sources, bool(r.share[0] > r.share[1])
    (('split', 'init'), True)
    """
    blocks, confidence_level = _variance_study_iv(blocks, confidence_level)
    a = 1 - confidence_level
    sources = tuple(name for name in blocks if name not in (JOINT, JOINT_FIXED_HPO))
    runs = np.array([blocks[s].size for s in sources], dtype=np.int64)
    var = np.array([_variance(blocks[s]) for s in sources])
    joint = blocks[JOINT]
    joint_var, joint_df = _variance(joint), joint.size - 1
    sd_low, sd_high = _sd_interval(var, runs - 1, a)
    share, share_low, share_high = _ratio_interval(var, joint_var, runs - 1, joint_df, a)
    total_low, total_high = _sd_interval(np.array([joint_var]), np.array([joint_df]), a)
    fixed: tuple[float | None, float | None, float | None] = (None, None, None)
    if JOINT_FIXED_HPO in blocks:
        fixed_runs = blocks[JOINT_FIXED_HPO]
        ratio = _ratio_interval(
            np.array([_variance(fixed_runs)]), joint_var, np.array([fixed_runs.size - 1]), joint_df, a
        )
        ratio_est, ratio_low, ratio_high = (float(v[0]) for v in ratio)
        fixed = (ratio_est, ratio_low, ratio_high)
    return VarianceStudyResult(
        sources,
        runs,
        np.sqrt(var),
        sd_low,
        sd_high,
        share,
        share_low,
        share_high,
        float(np.sqrt(joint_var)),
        float(total_low[0]),
        float(total_high[0]),
        *fixed,
        confidence_level,
        np.sqrt(var) / np.sqrt(2 * (runs - 1)),
    )
