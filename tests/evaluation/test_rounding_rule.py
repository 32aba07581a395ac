"""One rule for every number a rounded board publishes (``evaluation.boards.shown_score``), mirror-consistent.

Found by a property hunt (mirrors, twelfth session): a rounded board and its lower-is-better mirror rounded
half-way values differently. Python's ``round`` works on the binary value, so 0.425 (stored as 0.42499999...) went
to 0.42 while its mirror 0.575 (0.57499999...) went to 0.57, i.e. an accuracy of 0.43: 24 of 400 boards of run
scores on a decimal grid published other ties or another order than their mirror. A value half-way to 9 decimals
of ``value * 10**digits`` now goes to the even multiple, a rule symmetric under x -> -x and x -> 1 - x.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.boards import publish_rounded, shown_entries, shown_run_scores, shown_score, shown_submission_score
from evaluation.report import EntryRuns, ReportSettings, build_report


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.425, 0.42), (0.575, 0.58), (0.435, 0.44), (0.565, 0.56), (0.8149, 0.81), (0.8151, 0.82), (-0.425, -0.42)],
)
def test_a_half_way_value_goes_to_the_even_multiple(value, shown):
    assert shown_score(value, 2) == shown


def test_the_rule_is_symmetric_under_negation_and_one_minus():
    for digits in (1, 2, 3, 4):
        step = 10.0**-digits
        grid = np.round(np.arange(0, 20001) / 20000, 9)  # multiples of 0.00005: every half-way value to 4 digits
        for x in grid:
            assert shown_score(-x, digits) == -shown_score(x, digits), (x, digits)
            mirrored = shown_score(1 - x, digits)
            assert round((1 - shown_score(x, digits)) / step) == round(mirrored / step), (x, digits)


def test_not_finite_values_and_large_magnitudes_pass_through():
    assert np.isnan(shown_score(float("nan"), 2))
    assert shown_score(float("inf"), 2) == float("inf")
    assert shown_score(1.5e18, 3) == 1.5e18
    assert shown_run_scores(np.array([0.425, np.nan, 0.575]), 2)[[0, 2]].tolist() == [0.42, 0.58]


def test_a_submission_s_shown_score_takes_the_same_rule():
    """Runs shown 0.42 and 0.43: their mean 0.425 is published as 0.42, the mirror's 0.575 as 0.58."""
    assert shown_submission_score([0.42, 0.43], "rounded", 2) == 0.42
    assert shown_submission_score([0.58, 0.57], "rounded", 2) == 0.58


def _board(rng, sign: float, offset: float) -> list[EntryRuns]:
    """Five to eight entries of ten seed-paired runs whose scores lie on a grid of 0.005 (half-way to 2 digits)."""
    k = int(rng.integers(5, 9))
    base = rng.integers(80, 90, size=k) * 0.005 + 0.40
    entries = []
    for i in range(k):
        runs = np.round(base[i] + 0.005 * rng.integers(-3, 4, size=10), 3)
        entries.append(
            EntryRuns(
                i + 1,
                f"m{i}",
                f"t{i}",
                "recipe",
                10,
                np.arange(10),
                offset + sign * runs,
                created=f"2026-01-{i + 1:02d}",
            )
        )
    return entries


def _published(entries, higher_is_better: bool, digits: int = 2) -> dict:
    settings = ReportSettings(n_resamples=200, k_runs=10, master_seed=5, higher_is_better=higher_is_better)
    return publish_rounded(
        build_report(shown_entries(entries, digits), settings), digits, higher_is_better=higher_is_better
    )


@pytest.mark.parametrize("offset", [0.0, 1.0], ids=["negated", "one-minus"])
def test_a_rounded_loss_board_publishes_its_accuracy_mirror(offset):
    """Accuracy board against the loss board of the same runs (-x and 1 - x): the same order, ties, ranks, rank
    intervals, letters and verdicts, and shown scores that mirror, on 60 boards of half-way run scores."""
    for seed in range(60):
        acc = _published(_board(np.random.default_rng(seed), 1.0, 0.0), True)
        loss = _published(_board(np.random.default_rng(seed), -1.0, offset), False)
        a_rows = {row["submission_id"]: row for row in acc["entries"]}
        l_rows = {row["submission_id"]: row for row in loss["entries"]}
        (a_section,), (l_section,) = acc["sections"], loss["sections"]
        assert a_section["entries"] == l_section["entries"], seed  # the published order
        for sid, a in a_rows.items():
            b = l_rows[sid]
            for key in ("rank", "rank_display", "groups"):
                assert a.get(key) == b.get(key), (seed, sid, key, a.get(key), b.get(key))
            assert a["rank_interval"] == b["rank_interval"], (seed, sid)
            shown_a, shown_b = a["mean"]["estimate"], b["mean"]["estimate"]
            assert round((offset - shown_a) * 100) == round(shown_b * 100), (seed, sid, shown_a, shown_b)
        verdicts = {(p["a"], p["b"]): p["verdict"] for p in a_section["comparisons"]}
        assert verdicts == {(p["a"], p["b"]): p["verdict"] for p in l_section["comparisons"]}, seed


def test_one_value_and_an_array_are_rounded_alike():
    """``shown_score`` (each figure of a report) and ``shown_run_scores`` (runs, at once) are the same rule, bit
    for bit, on values half-way, near half-way and random, of every magnitude a float can hold digits of."""
    rng = np.random.default_rng(0)
    grid = np.arange(0, 20001) / 20000
    near = np.concatenate([grid + 1e-10, grid - 1e-10, grid + 3e-16, grid - 3e-16])
    randoms = rng.standard_normal(20000) * 10.0 ** rng.integers(-6, 9, size=20000)
    for values in (grid, near, randoms, -grid):
        for digits in (0, 1, 2, 3, 6):
            assert shown_run_scores(values, digits).tolist() == [shown_score(float(v), digits) for v in values]
