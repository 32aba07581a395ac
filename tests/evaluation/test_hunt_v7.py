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


def test_the_state_of_the_art_of_a_loss_board_mirrors_when_an_entry_lies_on_the_contenders_edge():
    """Found by a property hunt (mirrors of the state of the art, partial seed overlap): A's mean 44.33/64 lies
    exactly 12 standard errors (1/192 each) below the runner-up's 48.33/64, the edge of the non-identical form's
    contenders (``evaluation.stats.sota._contending``). The accuracy board's mean was an ulp above the edge (A
    contended, shrinkage 0.88, estimate 0.7551, bound 0.7424); the loss board of 1 - x an ulp below (the identical
    form: estimate 1 - 0.2488 = 0.7512, bound 1 - 0.2609 = 0.7391). Scores within rounding of the edge are on it."""
    runs = {
        "A": ([1, 2, 3, 4, 6, 7], [44, 45, 43, 45, 44, 45]),
        "B": ([2, 4], [49, 48]),
        "C": ([5, 8, 9], [49, 48, 48]),
    }
    reports = []
    for higher_is_better in (True, False):
        entries = []
        for i, (name, (index, grid)) in enumerate(runs.items(), 1):
            test = np.asarray(grid, dtype=float) / 64
            entries.append(
                EntryRuns(i, name, "t" + name, "recipe", 10, np.asarray(index), test if higher_is_better else 1 - test)
            )
        settings = ReportSettings(n_resamples=100, k_runs=10, higher_is_better=higher_is_better, master_seed=5)
        reports.append(build_report(entries, settings)["sections"][0]["sota"])
    up, down = reports
    assert up["submission_id"] == down["submission_id"] == 2
    assert (up["model"], down["model"]) == ("nonidentical", "nonidentical")
    for key in ("raw", "estimate", "bound"):
        assert up[key] == pytest.approx(1 - down[key], abs=1e-12), key
    assert up["shrinkage"] == pytest.approx(down["shrinkage"], abs=1e-9)


#: Two files of 12 examples whose outcomes are uncorrelated (Pearson r = 0 exactly).
UNCORRELATED = ([0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0], [0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1])


def test_uncorrelated_outcomes_and_their_mirror_give_the_same_dependence():
    """Found by a property hunt (mirrors of prediction sections): ρ̂ = sqrt(max(0, r̄)) read r̄'s rounding, ±1e-16,
    as a correlation: these two entries' error rates gave ρ̂ = 1.49e-8 (sqrt(eps)) and their accuracies 0, so a
    loss board showed another ρ than its accuracy board, and (on a board of three files each) the dependent form
    where the accuracy board had the non-identical one. 107 of 20,000 random pairs and triples of 0/1 vectors
    of 8-12 examples differed so; a mean correlation within rounding of 0 is now 0."""
    from evaluation.stats import outcome_dependence

    x = np.asarray(UNCORRELATED, dtype=float)
    assert outcome_dependence(x) == outcome_dependence(1 - x) == (0.0, 2)
    reports = []
    for higher_is_better in (True, False):
        entries = []
        for i, outcomes in enumerate(UNCORRELATED, 1):
            o = np.asarray([outcomes], dtype=float)
            o = o if higher_is_better else 1 - o
            entries.append(EntryRuns(i, f"p{i}", f"t{i}", "predictions", 1, np.arange(1), o.mean(axis=1), outcomes=o))
        settings = ReportSettings(n_resamples=100, higher_is_better=higher_is_better, accuracy_like=True)
        reports.append(build_report(entries, settings)["sections"][0]["sota"])
    up, down = reports
    assert up["rho"] == down["rho"] == 0.0 and up["model"] == down["model"]
    for key in ("raw", "estimate", "bound"):
        assert up[key] == pytest.approx(1 - down[key], abs=1e-12), key


def test_the_ladder_releases_mirrored_scores_at_a_margin_that_does_not_divide_one():
    """Found by a property hunt (Ladder boards and their mirrors): at η = 0.03 (any η ≥ 1e-9 is accepted),
    accuracies 0.50 and 0.51 were both released as 0.51 (the Ladder board tied them, "=1"), while their error rates
    0.50 and 0.49 were released as 0.51 and 0.48 (accuracies 0.49 and 0.52: two ranks, the other team first).
    0.80 was released as 0.81 and its error 0.20 as 0.21 (accuracy 0.79). The grid now starts at the metric's best
    score (``ladder_anchor``: 1 for the accuracy, 0 for its error rate), a point both share."""
    from evaluation.boards import ladder, ladder_anchor

    up_anchor = ladder_anchor((0.0, 1.0), higher_is_better=True)
    down_anchor = ladder_anchor((0.0, 1.0), higher_is_better=False)
    assert (up_anchor, down_anchor) == (1.0, 0.0)
    for margin in (0.03, 0.07, 0.015, 0.3, 0.01):
        for score in np.round(np.linspace(0, 1, 201), 9):
            (up,) = ladder([score], margin, anchor=up_anchor)
            (down,) = ladder([1 - score], margin, higher_is_better=False, anchor=down_anchor)
            assert up == pytest.approx(1 - down, abs=1e-9), (margin, score, up, 1 - down)
    (a,), (b,) = ladder([0.50], 0.03, anchor=up_anchor), ladder([0.51], 0.03, anchor=up_anchor)
    (c,), (d,) = (ladder([x], 0.03, higher_is_better=False, anchor=down_anchor) for x in (0.50, 0.49))
    assert (a == b) is (c == d)  # the same ties on both boards
    # where η divides 1 the grid is the one anchored at 0, as before
    for score in np.round(np.linspace(0, 1, 201), 9):
        assert ladder([score], 0.05, anchor=up_anchor) == ladder([score], 0.05)
