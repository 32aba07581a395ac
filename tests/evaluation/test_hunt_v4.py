"""Counterexamples of a fourth property hunt (partial seeds, lower-is-better mirrors, degenerate inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report


@pytest.mark.parametrize("value", [0.78, 0.7, 0.1, 0.3])
def test_constant_runs_have_no_spread_on_an_accuracy_board_and_its_error_board(value):
    """Found by a property hunt (lower-is-better mirrors): three runs of 0.78 have a ddof=1 standard deviation of
    1.4e-16 (their mean rounds to 0.7799999999999999), three of 0.22 one of exactly 0. The accuracy board's state of
    the art then adjusted the leader by a standard error of 7.9e-17 (bound 0.779934, 8e11 standard errors below its
    constant runs), where the error board of the same runs (1 - x) said "the best entry's runs are all equal" and
    bound 0.22, the mirror of 0.78. Runs equal under the tie rule have no spread."""
    a = np.full(3, value)
    b = value - np.array([0.08, 0.06, 0.04])
    sotas = []
    for higher_is_better, orient in ((True, lambda v: v), (False, lambda v: 1 - v)):
        entries = [
            EntryRuns(1, "A", "t", "recipe", 3, np.arange(3), orient(a)),
            EntryRuns(2, "B", "t", "recipe", 3, np.arange(3), orient(b)),
        ]
        report_settings = ReportSettings(
            n_resamples=100, k_runs=3, higher_is_better=higher_is_better, accuracy_like=True, score_range=(0.0, 1.0)
        )
        report = build_report(entries, report_settings)
        row = next(r for r in report["entries"] if r["submission_id"] == 1)
        assert row["std"] == 0.0 and row["mean"]["se"] == 0.0
        sotas.append(report["sections"][0]["sota"])
    accuracy, error = sotas
    for sota in sotas:
        assert sota["se"] == 0.0 and sota["note"] == "the best entry's runs are all equal (standard error 0)"
        assert sota["estimate"] == sota["bound"] == sota["raw"]
    assert accuracy["bound"] == pytest.approx(1 - error["bound"], abs=1e-12)


@pytest.mark.parametrize("se", [3.3e-7, 3.3e-5, 3.3e-4])
def test_the_bound_of_a_certain_leader_is_not_set_by_the_grid(se):
    """Found by a property hunt (after constant runs had no spread): a leader far ahead and far more certain than
    the others (0.78 with se 3.3e-5 beside 0.72 +- 0.0115 and 0.65 +- 0.029) got a lower bound 5 of its standard
    errors below its score (500 at se 3.3e-7): P(max >= best) was interpolated on a grid whose step follows the
    widest standard error. The others cannot reach 0.78, so the bound is the leader's own one-sided limit at
    alpha / 2, 1.96 se below (Moellersen & Holsboe, eq. 8, evaluated at the best itself)."""
    from scipy import stats as sps

    from evaluation import stats

    a = stats.adjusted_sota(
        0.78, 3, standard_error=se, estimates=[0.78, 0.72, 0.65], standard_errors=[se, 0.0115, 0.029]
    )
    assert (0.78 - a.lower) / se == pytest.approx(sps.norm.isf(0.025), abs=0.01)


def test_a_resample_without_spread_at_the_estimate_is_not_unbounded_by_rounding():
    """Found by a property hunt (accuracies against their error rates 1 - x): runs [0.81, 0.83, 0.84, 0.84, 0.83,
    0.83] showed the mean 0.83 in [0.8178, 0.8371], their error rates the mean 0.17 in [0.16, 0.1822], whose mirror
    is [0.8178, 0.84]. A resample of the three runs at 0.83 has no spread and its mean equals the estimate; its t*
    is 0/0 (0), but computed, the difference was +-1e-16, whose sign alone made t* +-infinite, one limit unbounded
    and clipped to the runs' range. A difference at the tie rule of the estimate is none."""
    from evaluation import stats

    runs = np.array([0.81, 0.83, 0.84, 0.84, 0.83, 0.83])
    seed = 1
    accuracy = stats.seeded_intervals(runs[None], [seed], "mean", n_resamples=100, confidence_level=0.95)
    error = stats.seeded_intervals(
        (1 - runs)[None], [seed], "mean", n_resamples=100, confidence_level=0.95, higher_is_better=False
    )
    assert accuracy[0][0] == pytest.approx(1 - error[1][0], abs=1e-9)
    assert accuracy[1][0] == pytest.approx(1 - error[0][0], abs=1e-9)
