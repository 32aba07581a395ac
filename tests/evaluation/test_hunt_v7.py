"""Counterexamples of a seventh property hunt (mixed sections, partial seeds, edge sizes, mirrors of the state of the art)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_the_state_of_the_art_bound_lies_inside_the_metric_s_range(higher_is_better):
    """Found by a property hunt (boards of 2-3 entries, score_range set): the normal approximation's bound was not
    clipped to the metric's range as every entry's interval is. Two recipes of five accuracies (A: 0, 0.5, 0, 0, 0,
    mean 0.1 and standard error 0.1) gave the state of the art the lower bound -0.124 on [0, 1]; the loss board
    of 1 - x the upper bound 1.124. Clipped: 0 and 1, still mirrors of each other."""
    a = np.array([0.0, 0.5, 0.0, 0.0, 0.0])
    b = np.array([0.0, 0.0, 0.0, 0.0, 0.25])
    if not higher_is_better:
        a, b = 1 - a, 1 - b
    entries = [
        EntryRuns(1, "A", "t", "recipe", 5, np.arange(5), a),
        EntryRuns(2, "B", "t", "recipe", 5, np.arange(5), b),
    ]
    settings = ReportSettings(n_resamples=200, k_runs=5, score_range=(0.0, 1.0), higher_is_better=higher_is_better)
    sota = build_report(entries, settings)["sections"][0]["sota"]
    assert sota["submission_id"] == 1 and sota["method"] == "normal"
    assert sota["raw"] == pytest.approx(0.1 if higher_is_better else 0.9)
    assert 0.0 <= sota["bound"] <= 1.0 and 0.0 <= sota["estimate"] <= 1.0
    assert sota["bound"] == (0.0 if higher_is_better else 1.0)
