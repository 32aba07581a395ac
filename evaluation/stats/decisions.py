"""The one decision rule of the leaderboard, pair by pair, and the runs it needs.

Every comparison of two entries, whatever the design (seed-paired runs, unpaired runs,
prediction files scored on one test set), reduces to the same four numbers: an
effect (P(A>B), or a difference of means), the two-sided p-value of "no difference",
and an interval that is the set of values that p-value's test does not reject (a
*dual* interval), at any level asked. From them:

1. the p-values of the family are adjusted for multiplicity (Holm by default);
2. each pair's interval is drawn at the level its adjusted test uses,
   ``a_i = alpha · p_i / p̃_i`` (``p̃`` before its cap at 1; ``alpha / M`` when
   ``p_i = 0``): Bonferroni's
   simultaneous intervals for ``correction="bonferroni"``, Holm's step-down levels
   for ``"holm"``, Benjamini–Yekutieli-style levels for ``"bh"``, ``alpha`` for
   ``"none"``. Because the interval is dual to the test, it excludes the null
   exactly when the adjusted p-value is below ``alpha``: interval and verdict can
   never disagree;
3. A is *better* than B (Bouthillier et al. 2021, App. C.6) when the difference is
   significant in A's favour (adjusted p < alpha) and meaningful (the upper end of
   the interval of P(A>B) exceeds γ).

The functions take the upper-triangle pairs as flat arrays, so a later caller can pass
any subset of pairs (neighbours and the leader only, say).

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys. Holm, S. (1979). Scand. J. Statist. 6, 65–70. Benjamini, Y. & Yekutieli, D.
(2005). False discovery rate–adjusted multiple confidence intervals for selected
parameters. JASA 100, 71–81.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from ._validation import check_gamma, check_int, check_open_unit
from .multiplicity import adjust_pvalues
from .proportions import wilson

__all__ = ["RunsNeeded", "runs_needed"]


@dataclass(frozen=True)
class PairDecisions:
    """Decisions of a family of pairs (flat arrays over the pairs, i < j).

    ``low``/``high``: the interval of P(i>j) at level ``1 - level``; ``significant``
    and ``meaningful`` for the directions i>j (row 0) and j>i (row 1).
    """

    pvalue: np.ndarray
    level: np.ndarray
    low: np.ndarray
    high: np.ndarray
    significant: np.ndarray
    meaningful: np.ndarray
    extra: tuple = ()


def adjusted_levels(
    pvalue_raw: np.ndarray, correction: str, alpha: float, family_size: int | None = None
) -> np.ndarray:
    """Per-pair significance level ``alpha · p / p̃`` (``alpha / M`` where p = 0), in (0, alpha].

    ``p̃`` is the adjusted p-value before its cap at 1 (computed on p-values scaled
    below 1/M, where the cap never binds), so that Bonferroni's level is exactly
    ``alpha / M`` for every pair, and ``p̃ < alpha`` exactly when ``p < level``.
    """
    m = max(1, pvalue_raw.size, family_size or 0)
    scale = 0.5 / m
    uncapped = adjust_pvalues(pvalue_raw * scale, correction, family_size) / scale
    with np.errstate(invalid="ignore", divide="ignore"):
        level = alpha * pvalue_raw / uncapped
    level = np.where((pvalue_raw > 0) & np.isfinite(level), level, alpha / m)
    return np.clip(level, np.finfo(float).tiny, alpha)


def decide_pairs(
    effect: np.ndarray,
    pvalue_raw: np.ndarray,
    interval: Callable,
    *,
    alpha: float,
    gamma: float,
    correction: str,
    family_size: int | None = None,
) -> PairDecisions:
    """Adjust the family, draw each dual interval at its adjusted level, and decide.

    ``effect`` (pairs,) is positive when i is ahead of j; ``interval(level)`` returns
    the interval ``(low, high)`` of P(i>j) of every pair at significance ``level``
    (an array, one level per pair), optionally followed by more arrays (kept as
    ``extra``, e.g. the interval of a difference of means the P-interval maps from).
    """
    padj = adjust_pvalues(pvalue_raw, correction, family_size)
    level = adjusted_levels(pvalue_raw, correction, alpha, family_size)
    low, high, *extra = interval(level)
    reject = padj < alpha
    significant = np.stack([reject & (effect > 0), reject & (effect < 0)])
    meaningful = np.stack([high > gamma, (1.0 - low) > gamma])
    return PairDecisions(padj, level, low, high, significant, meaningful, tuple(extra))


# --------------------------------------------------------------------------- runs needed
@dataclass(frozen=True)
class RunsNeeded:
    """Runs per entry the paired decision rule needs on a board of ``n_entries``.

    ``any_verdict``: fewest runs with which a verdict is possible at all (one entry
    winning every seed); ``for_power``: fewest runs with which a pair whose
    P(A>B) is γ is found significantly better with probability ``1 - beta``; ``level``: the
    per-pair significance level assumed (``alpha`` over the ``comparisons`` pairs, the
    first step of Holm's procedure).
    """

    n_entries: int
    comparisons: int
    any_verdict: int
    for_power: int
    level: float
    gamma: float
    alpha: float
    beta: float


def _runs_needed_iv(n_entries, gamma, alpha, beta, max_runs):
    n_entries = check_int(n_entries, "n_entries", minimum=2)
    return (
        n_entries,
        check_gamma(gamma),
        check_open_unit(alpha, "alpha"),
        check_open_unit(beta, "beta"),
        check_int(max_runs, "max_runs", minimum=2),
    )


def runs_needed(n_entries=2, *, gamma=0.75, alpha=0.05, beta=0.05, max_runs=5000) -> RunsNeeded:
    """Runs per entry that the board's decision rule needs, before the host chooses k.

    Parameters
    ----------
    n_entries : int, default 2
        Entries expected on the board; the family has ``n_entries (n_entries - 1)/2``
        pairs.
    gamma : float, default 0.75
        γ of the decision rule, in (0.5, 1).
    alpha : float, default 0.05
        Family-wise significance level.
    beta : float, default 0.05
        Type II error rate (1 - power) for a pair whose P(A>B) equals γ.
    max_runs : int, default 5000
        Largest k searched; ``max_runs + 1`` means "more than that".

    Returns
    -------
    RunsNeeded

    Raises
    ------
    ValueError
        If ``n_entries < 2``, ``gamma`` is outside (0.5, 1), ``alpha`` or ``beta``
        outside (0, 1), or ``max_runs < 2``.

    Notes
    -----
    Exact under the rule of :func:`~evaluation.stats.pairwise_comparisons` for
    seed-paired runs (continuous scores, no ties): with k runs a pair's wins are
    ``X ~ Bin(k, P(A>B))``; the rule says "A better" when the Wilson interval at the
    per-pair level ``alpha / M`` (Holm's first step, M pairs) lies above 1/2 and
    reaches above γ. ``any_verdict`` is the fewest k with a verdict at ``X = k``;
    ``for_power`` the fewest k from which the interval lies above 1/2 with probability at
    least ``1 - beta`` when ``P(A>B) = γ``, for every larger k (up to :data:`POWER_HORIZON`
    times the first k that reaches it): the power Noether's N is sized for, exact for this
    rule. The second condition is left out of the power: at ``P(A>B) = γ`` the interval's
    upper end fails to exceed γ in a tail that widens as α grows, so counting it made the
    runs needed rise with α (2 entries: 48 runs at α = 0.05, 109 at 0.10, none up to 5,000
    from 0.15 on). The full rule's rate at ``for_power`` and ``P(A>B) = γ`` is then below
    ``1 - beta`` in places: at α = β = 0.05, 95.4-97.4 % for 2-10 entries and γ of 0.6-0.9
    but 93.2 % for 2 entries at γ = 0.9; at α = 0.3, down to 70 % (a statistician's table).
    Noether's N (:func:`~evaluation.stats.noether_sample_size`, 29 by default) is the
    Mann–Whitney formula of Bouthillier et al. for one unpaired pair; this counts
    the paired rule and the board's multiplicity.

    Examples
    --------
    >>> r = runs_needed(10)
    >>> r.comparisons, r.any_verdict
    (45, 11)
    """
    return _runs_needed(*_runs_needed_iv(n_entries, gamma, alpha, beta, max_runs))


@lru_cache(maxsize=256)
def _runs_needed(n_entries: int, gamma: float, alpha: float, beta: float, max_runs: int) -> RunsNeeded:
    """:func:`runs_needed` of checked arguments, remembered: a pure function of them, which every
    report asks for the same few board sizes (its result is frozen)."""
    comparisons = n_entries * (n_entries - 1) // 2
    level = alpha / comparisons
    any_verdict = first = max_runs + 1
    powers: list[np.ndarray] = []
    step = 256
    for start in range(2, max_runs + 1, step):  # batches of k; each batch is one array operation
        k = np.arange(start, min(max_runs, start + step - 1) + 1)[:, None]
        x = np.arange(int(k.max()) + 1)[None, :]
        valid = x <= k
        low, high = wilson(np.minimum(x, k), k, level)
        above_half = valid & (low > 0.5)
        top = (above_half & (high > gamma))[np.arange(k.shape[0]), k[:, 0]]  # a verdict when A wins every seed
        # power: the interval above 1/2 when P(A>B) is gamma (the upper end then exceeds gamma but for a level/2
        # tail that grows with alpha: counted, the runs needed rose with alpha, to no k at all past alpha = 0.15)
        powers.append(np.where(above_half, stats.binom.pmf(np.minimum(x, k), k, gamma), 0.0).sum(axis=1))
        if any_verdict > max_runs and top.any():
            any_verdict = int(k[np.argmax(top), 0])
        if first > max_runs and (powers[-1] >= 1 - beta).any():
            first = int(k[np.argmax(powers[-1] >= 1 - beta), 0])
        if first <= max_runs and int(k[-1, 0]) >= min(max_runs, POWER_HORIZON * first):
            break
    power = np.concatenate(powers) if powers else np.zeros(0)
    for_power = first
    if first <= max_runs:  # the power of a discrete test saw-tooths in k: past the last dip below the target
        below = np.flatnonzero(power[first - 2 : POWER_HORIZON * first - 1] < 1 - beta)
        for_power = first + int(below[-1]) + 1 if below.size else first
    return RunsNeeded(n_entries, comparisons, any_verdict, min(for_power, max_runs + 1), level, gamma, alpha, beta)


#: ``for_power`` is the fewest k from which the power stays at or above 1 - beta up to this many times the first k
#: reaching it: a discrete test's power saw-tooths in k (Chernick & Liu 2002, Am. Stat. 56, 149-155), and the first
#: k left some larger ones below the target (2 entries: 46 runs advised, power 0.941 at 47; a statistician's trial).
POWER_HORIZON = 3
