"""Planning a challenge before it opens: the runs k a decision needs, and what they cost.

A host who expects E entries and cares about an effect P(A>B) = γ asks how many runs per
entry (k) the board needs for its comparisons to reach a verdict, and how many worker
hours that costs. Noether's (1987) sample size for the Mann–Whitney test answers the
first question for one pair; a board of E entries makes ``M = E (E - 1) / 2``
comparisons, so each is tested at ``α / M`` (Bonferroni, the first step of Holm's
procedure). The paired rule the board actually applies is counted exactly by
:func:`~evaluation.stats.runs_needed`; both are returned.

References
----------
Noether, G. E. (1987). Sample size determination for some common nonparametric tests.
JASA 82, 645–647. Bouthillier, X. et al. (2021). Accounting for Variance in Machine
Learning Benchmarks. MLSys, App. C.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validation import check_gamma, check_int, check_open_unit, check_real
from .boon import min_runs_for_interval, min_runs_rule
from .decisions import runs_needed
from .outperform import noether_sample_size

__all__ = ["RunPlan", "plan_runs"]


@dataclass(frozen=True)
class RunPlan:
    """Runs per entry for a board of ``n_entries`` and their cost.

    ``k_noether``: Noether's N at the per-pair level ``pair_alpha``; ``k_decision``:
    the fewest runs with which the board's paired decision rule detects P(A>B) = γ
    with power ``1 - beta`` (``max_runs + 1`` when more than searched);
    ``worker_hours``: ``n_entries · k · run_minutes / 60`` for each; ``boo_n`` and
    ``k_boo_n``: the fewest runs for which the board shows a Boo_n interval, 10n
    (:func:`~evaluation.stats.boon.min_runs_for_interval`; None without ``boo_n``).
    """

    n_entries: int
    comparisons: int
    gamma: float
    alpha: float
    beta: float
    pair_alpha: float
    k_noether: int
    k_decision: int
    run_minutes: float
    worker_hours_noether: float
    worker_hours_decision: float
    boo_n: int | None = None
    k_boo_n: int | None = None

    @property
    def k_board(self) -> int:
        """The runs per entry the board itself asks for: its decision rule's ``k_decision`` (the figure behind
        its "needs N more" hints), and at least ``k_boo_n`` where Boo_n is shown (an interval from 10n runs)."""
        return max(self.k_decision, self.k_boo_n or 0)

    @property
    def boo_n_rule(self) -> str | None:
        """``k_boo_n`` in words ("10n = 50"; for Boo_1, the mean's 6), :func:`~evaluation.stats.boon.min_runs_rule`."""
        return None if self.boo_n is None else min_runs_rule(self.boo_n)


def _plan_runs_iv(n_entries, gamma, alpha, beta, run_minutes):
    n_entries = check_int(n_entries, "n_entries", minimum=2)
    run_minutes = check_real(run_minutes, "run_minutes")
    if run_minutes < 0:
        raise ValueError(f"`run_minutes` must be zero or positive (got {run_minutes}).")
    return n_entries, check_gamma(gamma), check_open_unit(alpha, "alpha"), check_open_unit(beta, "beta"), run_minutes


def plan_runs(
    n_entries: int,
    *,
    gamma: float = 0.75,
    alpha: float = 0.05,
    beta: float = 0.05,
    run_minutes: float = 1.0,
    max_runs: int = 5000,
    boo_n: int | None = None,
) -> RunPlan:
    """How many runs per entry a board of ``n_entries`` needs, and the worker hours.

    Parameters
    ----------
    n_entries : int
        Entries the host expects (at least 2).
    gamma : float, default 0.75
        The effect that matters: P(A>B) to detect, in (0.5, 1).
    alpha : float, default 0.05
        Family-wise significance level over the board's ``M`` comparisons.
    beta : float, default 0.05
        Type II error rate (1 - power).
    run_minutes : float, default 1.0
        Worker time one run takes, in minutes.
    max_runs : int, default 5000
        Largest k searched for the paired rule.
    boo_n : int, optional
        The challenge's n of Boo_n: the plan then says the runs its interval needs (10n).

    Returns
    -------
    RunPlan

    Raises
    ------
    ValueError
        If ``n_entries < 2``, ``gamma`` is outside (0.5, 1), ``alpha`` or ``beta``
        outside (0, 1), ``run_minutes`` is negative or ``boo_n`` < 1.

    Notes
    -----
    Noether (1987), eq. for the Mann–Whitney test with equal groups:
    ``k = ⌈(z_{1-α/M} + z_{1-β})² / (6 (γ - ½)²)⌉`` runs per entry, ``M = E (E - 1) / 2``.
    Cost: ``E · k · run_minutes / 60`` worker hours.

    Examples
    --------
    >>> plan = plan_runs(5, run_minutes=2.0)
    >>> plan.comparisons, plan.k_noether, plan.worker_hours_noether
    (10, 48, 8.0)
    """
    n_entries, gamma, alpha, beta, run_minutes = _plan_runs_iv(n_entries, gamma, alpha, beta, run_minutes)
    comparisons = n_entries * (n_entries - 1) // 2
    pair_alpha = alpha / comparisons
    k_noether = noether_sample_size(gamma, pair_alpha, beta)
    k_decision = runs_needed(n_entries, gamma=gamma, alpha=alpha, beta=beta, max_runs=max_runs).for_power
    hours = n_entries * run_minutes / 60.0
    k_boo_n = None if boo_n is None else min_runs_for_interval(boo_n)
    return RunPlan(
        n_entries,
        comparisons,
        gamma,
        alpha,
        beta,
        pair_alpha,
        k_noether,
        k_decision,
        run_minutes,
        k_noether * hours,
        k_decision * hours,
        None if boo_n is None else int(boo_n),
        k_boo_n,
    )
