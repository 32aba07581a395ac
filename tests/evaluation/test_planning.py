"""The host's planner: Noether's runs per entry for a board of E entries, and their cost."""

from __future__ import annotations

import math

import pytest

from evaluation.stats import noether_sample_size, plan_runs, runs_needed


def test_five_entries_against_a_hand_computed_value():
    # E = 5 entries: M = 10 pairs, each at α/M = 0.005. z_{0.995} = 2.5758, z_{0.95} = 1.6449 (normal tables);
    # (2.5758 + 1.6449)² / (6 (0.75 - 0.5)²) = 17.814 / 0.375 = 47.50 → 48 runs per entry (Noether 1987).
    # Cost: 5 entries × 48 runs × 2 minutes = 480 minutes = 8 worker hours.
    plan = plan_runs(5, gamma=0.75, alpha=0.05, beta=0.05, run_minutes=2.0)
    assert (plan.comparisons, plan.pair_alpha, plan.k_noether) == (10, pytest.approx(0.005), 48)
    assert plan.worker_hours_noether == pytest.approx(8.0)
    assert plan.k_decision == runs_needed(5).for_power
    assert plan.worker_hours_decision == pytest.approx(5 * plan.k_decision * 2.0 / 60)


def test_two_entries_is_noethers_single_pair():
    plan = plan_runs(2)
    assert plan.comparisons == 1 and plan.k_noether == noether_sample_size(0.75, 0.05, 0.05) == 29


def test_more_entries_or_a_smaller_effect_need_more_runs():
    ks = [plan_runs(e).k_noether for e in (2, 5, 10, 50)]
    assert ks == sorted(ks) and ks[0] < ks[-1]
    assert plan_runs(5, gamma=0.6).k_noether > plan_runs(5, gamma=0.75).k_noether
    # γ = 0.6 by hand: (2.5758 + 1.6449)² / (6 · 0.01) = 296.9 → 297.
    assert plan_runs(5, gamma=0.6).k_noether == 297
    assert math.isclose(plan_runs(5, run_minutes=0).worker_hours_noether, 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_entries": 1}, "`n_entries` must be an integer >= 2"),
        ({"n_entries": 5, "gamma": 0.5}, "`gamma` must be in (0.5, 1)"),
        ({"n_entries": 5, "gamma": "high"}, "`gamma` must be a number in (0.5, 1)"),
        ({"n_entries": 5, "alpha": 0}, "`alpha` must be in (0, 1)"),
        ({"n_entries": 5, "beta": 1.5}, "`beta` must be in (0, 1)"),
        ({"n_entries": 5, "run_minutes": -1}, "`run_minutes` must be zero or positive"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan_runs(**kwargs)
