"""Counterexamples of a fifth property hunt (prediction boards against references and their own invariants)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.secondary import MetricInfo


def _entry(sid: int, name: str, outcomes: np.ndarray) -> EntryRuns:
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    files = len(outcomes)
    return EntryRuns(sid, name, "t", "predictions", files, np.arange(files), outcomes.mean(axis=1), outcomes=outcomes)


@pytest.mark.parametrize("unit", [1.0, 2.0, 1000.0, 0.001])
def test_absolute_errors_of_zero_and_one_unit_read_the_same_in_every_unit(unit):
    """Found by a property hunt (units of a regression board): an MAE board, A exact on 100 examples and B off by one
    unit on 5 of them. Its errors, all 0 or 1, were read as correctness indicators: McNemar's exact test (p = 0.0625,
    no verdict, one letter, both leaders) and Wilson intervals (A's MAE of 0 within [0, 0.037] whatever the unit). In
    millimetres (errors 0 or 1,000) or halves, the same board was a paired t-test: A better, p = 0.025, two letters.
    A loss that reaches past 1 (the metric's ``score_range``) is no proportion: its outcomes take the t interval and
    tests in every unit."""
    a, b = np.zeros(100), np.zeros(100)
    b[:5] = 1.0
    settings = ReportSettings(higher_is_better=False, score_range=(0.0, None), n_resamples=1000)

    def board(scale):
        report = build_report([_entry(1, "A", scale * a), _entry(2, "B", scale * b)], settings)
        rows = {r["submission_id"]: r for r in report["entries"]}
        (pair,) = report["sections"][0]["comparisons"]
        return report, rows, pair

    reference, rows_1, pair_1 = board(1.0)
    scaled, rows_u, pair_u = board(unit)
    assert pair_u["method"] == pair_1["method"] == "paired-t"
    assert pair_u["verdict"] == pair_1["verdict"] == "a_better"
    assert pair_u["pvalue"] == pytest.approx(pair_1["pvalue"], rel=1e-9)
    assert [r["groups"] for r in scaled["entries"]] == [r["groups"] for r in reference["entries"]]
    assert scaled["sections"][0]["leader_group"] == reference["sections"][0]["leader_group"]
    for sid in (1, 2):
        assert rows_u[sid]["mean"]["method"] == rows_1[sid]["mean"]["method"] == "Student t over test examples"
        for key in ("estimate", "low", "high"):
            assert rows_u[sid]["mean"][key] == pytest.approx(unit * rows_1[sid]["mean"][key], rel=1e-9, abs=1e-300)


def test_a_loss_secondary_metric_of_zero_and_one_unit_is_no_proportion():
    """The same rule for a secondary metric's interval: an MAE of errors 0 or 1 read as a proportion got Wilson's."""
    rng = np.random.default_rng(0)
    errors = (rng.random((1, 50)) < 0.2).astype(float)
    mae = MetricInfo(name="mae", label="MAE", higher_is_better=False, score_range=(0.0, None))
    entry = EntryRuns(
        1,
        "A",
        "t",
        "predictions",
        1,
        np.arange(1),
        np.array([0.5]),
        outcomes=np.ones((1, 50)),
        secondary={"mae": (errors.mean(axis=1), errors)},
    )
    row = build_report([entry], ReportSettings(n_resamples=100, secondary=(mae,)))["entries"][0]
    assert row["secondary"][0]["mean"]["method"] == "Student t over test examples"


def test_zero_one_outcomes_of_a_proportion_or_an_unknown_metric_keep_wilson_and_mcnemar():
    rng = np.random.default_rng(1)
    correct = (rng.random((2, 60)) < 0.7).astype(float)
    for score_range in ((0.0, 1.0), (None, None)):
        report = build_report(
            [_entry(1, "A", correct[0]), _entry(2, "B", correct[1])],
            ReportSettings(n_resamples=200, score_range=score_range),
        )
        assert report["sections"][0]["comparisons"][0]["method"] == "mcnemar"
        assert {r["mean"]["method"] for r in report["entries"]} == {"Wilson score interval"}


@pytest.mark.parametrize("value", [0.3, 0.25, 0.1, 0.7, 1e-7])
def test_constant_outcomes_have_no_standard_error_whatever_their_value(value):
    """Found by a property hunt (constant entries): 100 losses of 0.3 had a bootstrap standard error of 2.5e-16 (the
    resampled means round apart; 0.7: 6.9e-15), 100 of 0.25 exactly 0. The state of the art then adjusted the 0.3
    leader by that rounding (model "dependent", bound 0.3000000000000006) where the 0.25 leader read "the best
    entry's runs are all equal" (bound 0.25). Outcomes that all tie have no spread, as runs do (hunt 4)."""
    rng = np.random.default_rng(0)
    others = [value + np.abs(rng.normal(0.03, 0.1, 100)) for _ in range(3)]
    for loss in (False, True):
        sign = 1.0 if loss else -1.0  # higher is better: the negated losses
        board = [_entry(1, "A", sign * np.full(100, value))]
        board += [_entry(i + 2, f"B{i}", sign * o) for i, o in enumerate(others)]
        report = build_report(board, ReportSettings(n_resamples=500, higher_is_better=not loss))
        row = next(r for r in report["entries"] if r["submission_id"] == 1)
        sota = report["sections"][0]["sota"]
        assert row["mean"]["se"] == 0.0
        assert sota["submission_id"] == 1 and sota["se"] == 0.0
        assert sota["note"] == "the best entry's runs are all equal (standard error 0)"
        assert sota["estimate"] == sota["bound"] == sota["raw"]


def test_letters_of_verdicts_that_follow_no_order_stay_polynomial(monkeypatch):
    """Found by a property hunt (huge boards of tiny files): 180 prediction entries on 4 test examples (paired t-tests
    of 3 degrees of freedom, 768 of 19,900 pairs decided in no particular order) never finished their report: Piepho's
    insert-and-absorb held every maximal set of mutually alike entries, 6,144 at 160 entries (7 s), doubling on.
    Past 8 letters per entry the letters are a greedy cover, with the display's guarantee: entries sharing a letter
    never differ, every pair that does not differ shares one."""
    from evaluation.stats import groups

    rng = np.random.default_rng(0)
    k = 40
    differ = np.triu(rng.random((k, k)) < 0.3, 1)
    differ |= differ.T
    held = []
    absorb = groups._absorb
    monkeypatch.setattr(groups, "_absorb", lambda columns: held.append(len(out := absorb(columns))) or out)
    letters = groups.letters_from_differences(differ, np.arange(k))
    assert max(held) <= 2 * 8 * k  # 2,145 held before (2.4 s at 40 entries); the cover holds 139 here
    sets = [set(groups.split_letters(g)) for g in letters]
    for i in range(k):
        for j in range(i + 1, k):
            assert bool(sets[i] & sets[j]) == (not differ[i, j]), (i, j)
    assert letters[0].startswith("a")


@pytest.mark.parametrize("flip", [False, True])
def test_tied_leaders_whose_standard_errors_differ_by_rounding_are_chosen_by_name(flip):
    """Found by a property hunt (examples permuted): an RMSE entry of 3 files and its copy got standard errors
    0.13279503385221506 and 0.13279503385221503 once the test examples were listed in another order (the resampled
    sums' rounding by column), and the state of the art named the copy, chosen as the less certain by an ulp."""
    from evaluation.report.sota import section_sota

    se = [0.13279503385221506, 0.13279503385221503]
    if flip:
        se.reverse()
    rows = [
        {"submission_id": sid, "method_name": name, "team": "t", "mean": {"estimate": 1.142102555434022, "se": e}}
        for sid, name, e in ((1, "A", se[0]), (5, "A-copy", se[1]))
    ]
    sota = section_sota(rows, rows, None, ReportSettings(higher_is_better=False), binomial_n=None)
    assert sota["submission_id"] == 1


def test_all_tie_agrees_with_the_sorted_blocks_and_takes_the_short_way_where_it_can():
    """``_resample.all_tie`` (the constant outcomes' test) equals one block of ``tie_block_starts`` over the sorted
    values, including chains of ties that span more than one tie's width, and decides a clear spread in O(n)."""
    from evaluation.stats import _resample as rs

    rng = np.random.default_rng(5)
    x = 0.3
    chain = x * (1 + 0.9e-12 * np.arange(6))  # each within the rule of the one before, the ends 4.5e-12 apart
    cases = [np.full(100, 0.3), np.full(7, 0.25), chain, np.array([0.1, 0.2]), rng.random(50), chain[::-1]]
    cases.append(np.concatenate([np.full(10, 0.3), [0.3 * (1 + 5e-12)]]))
    for values in cases:
        expected = not rs.tie_block_starts(np.sort(values))[1:].any()
        assert rs.all_tie(values) == expected, values
    assert rs.all_tie(chain) and not rs.all_tie(np.array([0.1, 0.2]))
