"""What a host's scoring program declares (METRICS) and returns (score()), checked with messages
for the host (evaluation.scoring_programs). The sandboxed runs are in
tests/recipes/test_scoring_program.py."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.scoring_programs import (
    MAX_METRICS,
    ProgramMetric,
    ProgramScores,
    ScoringProgramError,
    parse_metrics,
    parse_scores,
)

TWO = [
    {"name": "macro_f1", "label": "Macro F1", "higher_is_better": True},
    {"name": "cost", "label": "Cost-weighted error", "higher_is_better": False},
]


def metrics():
    return parse_metrics(TWO)


# -- METRICS ----------------------------------------------------------------------------------------


def test_the_first_metric_is_primary_unless_another_is_marked():
    assert parse_metrics(TWO) == [
        ProgramMetric("macro_f1", "Macro F1", True, True),
        ProgramMetric("cost", "Cost-weighted error", False, False),
    ]
    marked = [TWO[0], {**TWO[1], "primary": True}]
    assert [m.primary for m in parse_metrics(marked)] == [False, True]
    assert parse_metrics(({"name": "rmse", "higher_is_better": False},)) == [ProgramMetric("rmse", "rmse", False, True)]


def test_a_metric_reads_back_as_its_dict():
    metric = parse_metrics(TWO)[1]
    assert parse_metrics([metric.as_dict()])[0] == ProgramMetric("cost", "Cost-weighted error", False, True)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            None,
            'METRICS must be a non-empty list of dicts such as {"name": "accuracy", "higher_is_better": True}; got None',
        ),
        (
            [],
            'METRICS must be a non-empty list of dicts such as {"name": "accuracy", "higher_is_better": True}; got a list []',
        ),
        (
            [{"name": f"m{i}", "higher_is_better": True} for i in range(MAX_METRICS + 1)],
            f"METRICS declares {MAX_METRICS + 1} metrics; at most {MAX_METRICS} are allowed",
        ),
        (["accuracy"], "METRICS[0] must be a dict with a 'name' and 'higher_is_better'; got 'accuracy'"),
        (
            [{"name": "macro-f1", "higher_is_better": True}],
            "METRICS[0]: 'name' must be a Python identifier (letters, digits, _) of at most 40 characters; got 'macro-f1'",
        ),
        (
            [{"name": "a" * 41, "higher_is_better": True}],
            "METRICS[0]: 'name' must be a Python identifier (letters, digits, _) of at most 40 characters; got "
            "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'",
        ),
        (
            [{"higher_is_better": True}],
            "METRICS[0]: 'name' must be a Python identifier (letters, digits, _) of at most 40 characters; got None",
        ),
        ([TWO[0], {"name": "cost"}], "METRICS[1] ('cost'): 'higher_is_better' is missing (True or False)"),
        (
            [{"name": "cost", "higher_is_better": 1}],
            "METRICS[0] ('cost'): 'higher_is_better' must be True or False; got 1",
        ),
        (
            [{"name": "cost", "higher_is_beter": True}],
            "METRICS[0] ('cost'): unknown key 'higher_is_beter'; a metric has the keys 'name', 'label', "
            "'higher_is_better', 'primary'",
        ),
        (
            [{"name": "cost", "higher_is_better": False, "label": "  "}],
            "METRICS[0] ('cost'): 'label' must be text of 1 to 80 printable characters; got '  '",
        ),
        (
            [{"name": "cost", "higher_is_better": False, "primary": "yes"}],
            "METRICS[0] ('cost'): 'primary' must be True or False; got 'yes'",
        ),
        ([TWO[0], TWO[1], TWO[0]], "METRICS declares 'macro_f1' more than once"),
        (
            [{**TWO[0], "primary": True}, {**TWO[1], "primary": True}],
            "METRICS marks 'macro_f1', 'cost' as primary; at most one metric may be primary",
        ),
    ],
    ids=[
        "none",
        "empty",
        "too_many",
        "not_a_dict",
        "not_an_identifier",
        "too_long",
        "no_name",
        "no_direction",
        "direction_not_bool",
        "typo",
        "blank_label",
        "primary_not_bool",
        "repeated",
        "two_primaries",
    ],
)
def test_malformed_metrics_are_named(raw, message):
    with pytest.raises(ScoringProgramError) as caught:
        parse_metrics(raw)
    assert str(caught.value) == message
    assert caught.value.kind == "metrics"


# -- score()'s result -------------------------------------------------------------------------------


def test_numbers_and_outcomes_are_read():
    got = parse_scores({"cost": {"score": 2.0, "outcomes": [1, 5.0, 0]}, "macro_f1": 0.7}, metrics(), n_rows=3)
    assert isinstance(got, ProgramScores)
    assert got.scores == {"macro_f1": 0.7, "cost": 2.0} and list(got.scores) == ["macro_f1", "cost"]
    assert list(got.outcomes) == ["cost"] and got.outcomes["cost"].dtype == np.float64
    np.testing.assert_array_equal(got.outcomes["cost"], [1.0, 5.0, 0.0])


def test_boolean_outcomes_count_as_0_and_1_and_the_mean_tolerance_is_relative():
    one = parse_metrics([{"name": "acc", "higher_is_better": True}])
    got = parse_scores({"acc": {"score": 2 / 3, "outcomes": [True, False, True]}}, one, n_rows=3)
    np.testing.assert_array_equal(got.outcomes["acc"], [1.0, 0.0, 1.0])
    big = parse_metrics([{"name": "loss", "higher_is_better": False}])
    outcomes = [1e12, 3e12]
    assert parse_scores({"loss": {"score": 2e12 * (1 + 5e-10), "outcomes": outcomes}}, big, 2).scores["loss"] > 2e12
    with pytest.raises(ScoringProgramError, match="the mean of its outcomes is 2000000000000.0"):
        parse_scores({"loss": {"score": 2e12 * (1 + 2e-9), "outcomes": outcomes}}, big, 2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            [0.7, 0.2],
            "score() must return a dict with one value per metric ('macro_f1', 'cost'); it returned a list [0.7, 0.2]",
        ),
        ({"macro_f1": 0.7}, "score() returned no value for the metric 'cost' declared in METRICS"),
        ({}, "score() returned no value for the metrics 'macro_f1', 'cost' declared in METRICS"),
        (
            {"macro_f1": 0.7, "cost": 0.1, "accuracy": 0.9},
            "score() returned 'accuracy', which METRICS does not declare (it declares 'macro_f1', 'cost')",
        ),
        ({"macro_f1": float("nan"), "cost": 0.1}, "metric 'macro_f1': the score is nan; it must be a finite number"),
        ({"macro_f1": float("inf"), "cost": 0.1}, "metric 'macro_f1': the score is inf; it must be a finite number"),
        (
            {"macro_f1": "0.7", "cost": 0.1},
            "metric 'macro_f1': the value must be a number, or a dict with 'score' and 'outcomes'; got '0.7'",
        ),
        (
            {"macro_f1": True, "cost": 0.1},
            "metric 'macro_f1': the value must be a number, or a dict with 'score' and 'outcomes'; got True",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.1}},
            "metric 'cost': a dict value must have exactly the keys 'score' and 'outcomes'; got 'score' (return a "
            "plain number for a metric without per-row outcomes)",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": None, "outcomes": [0, 0, 0]}},
            "metric 'cost': the value must be a number, or a dict with 'score' and 'outcomes'; got None",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.1, "outcomes": 0.1}},
            "metric 'cost': 'outcomes' must be a list or array of numbers; got 0.1",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.0, "outcomes": [0, 0]}},
            "metric 'cost': 2 outcomes for 3 rows of y_true; give one per row, in the order of y_true",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.0, "outcomes": [0, "0", 0]}},
            "metric 'cost': outcome 1 (row 1 of y_true) is '0', not a number",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.0, "outcomes": [0, [0], 0]}},
            "metric 'cost': outcome 1 (row 1 of y_true) is a list [0], not a number",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.0, "outcomes": [0, float("nan"), float("-inf")]}},
            "metric 'cost': the outcomes of rows 1, 2 of y_true are not finite (nan); every outcome must be a "
            "finite number",
        ),
        (
            {"macro_f1": 0.7, "cost": {"score": 0.5, "outcomes": [1, 0, 1]}},
            "metric 'cost': the score is 0.5 but the mean of its outcomes is 0.6666666666666666; the score must be "
            "the mean of the outcomes (within 1e-09 × max(1, |score|))",
        ),
    ],
    ids=[
        "not_a_dict",
        "missing_one",
        "missing_all",
        "extra",
        "nan",
        "inf",
        "text",
        "bool",
        "no_outcomes_key",
        "score_none",
        "outcomes_not_a_list",
        "outcomes_length",
        "outcome_text",
        "outcome_nested",
        "outcome_nan",
        "mean",
    ],
)
def test_unusable_scores_are_named(raw, message):
    with pytest.raises(ScoringProgramError) as caught:
        parse_scores(raw, metrics(), n_rows=3)
    assert str(caught.value) == message
    assert caught.value.kind == "scores"


def test_many_non_finite_outcomes_are_counted():
    outcomes = [float("nan")] * 8 + [0.0] * 2
    with pytest.raises(ScoringProgramError) as caught:
        parse_scores({"macro_f1": 0.7, "cost": {"score": 0.0, "outcomes": outcomes}}, metrics(), n_rows=10)
    assert "rows 0, 1, 2, 3, 4, … (8 in all) of y_true are not finite" in str(caught.value)


@pytest.mark.parametrize("n_rows", [0, -1, 2.0, True])
def test_a_bad_row_count_is_the_callers_bug(n_rows):
    with pytest.raises(ValueError, match="`n_rows` must be a positive integer"):
        parse_scores({"macro_f1": 0.7, "cost": 0.1}, metrics(), n_rows=n_rows)


def test_outcomes_past_what_a_run_stores_are_refused():
    """A host's review: a program whose outcomes were 1e40 passed its check; a run stores outcomes as float32,
    so the first scored file's became inf and the challenge's board answered "cannot be computed" for everyone."""
    with pytest.raises(ScoringProgramError) as caught:
        parse_scores({"macro_f1": 0.7, "cost": {"score": 1e40, "outcomes": [1e40, 1e40, 1e40]}}, metrics(), n_rows=3)
    assert str(caught.value) == (
        "metric 'cost': the outcomes of rows 0, 1, 2 of y_true are beyond ±1e+18 (1e+40); every outcome must lie "
        "within it (the board stores them as float32)"
    )
    kept = parse_scores({"macro_f1": 0.7, "cost": {"score": 1e18, "outcomes": [1e18, 1e18, 1e18]}}, metrics(), n_rows=3)
    assert kept is not None
