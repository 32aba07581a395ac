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
