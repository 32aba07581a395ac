import math

import pytest

from evaluation.hpo import sample_trials, validate_search_space

SPACE = {
    "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
    "hidden": {"type": "int", "low": 16, "high": 128},
    "activation": {"type": "choice", "values": ["relu", "tanh", "gelu"]},
}


def in_space(trial):
    return (
        1e-4 <= trial["lr"] <= 1e-1
        and 0 <= trial["dropout"] <= 0.5
        and isinstance(trial["hidden"], int)
        and 16 <= trial["hidden"] <= 128
        and trial["activation"] in ("relu", "tanh", "gelu")
        and set(trial) == set(SPACE)
    )


@pytest.mark.parametrize("method", ["random", "noisy_grid"])
def test_trials_are_deterministic_and_in_range(method):
    a = sample_trials(SPACE, 20, method=method, seed=5)
    assert a == sample_trials(SPACE, 20, method=method, seed=5)
    assert len(a) == 20 and all(in_space(t) for t in a)
    # independent of the dict's key order
    assert a == sample_trials(dict(reversed(list(SPACE.items()))), 20, method=method, seed=5)


@pytest.mark.parametrize("method", ["random", "noisy_grid"])
def test_different_seeds_give_different_trials(method):
    assert sample_trials(SPACE, 16, method=method, seed=1) != sample_trials(SPACE, 16, method=method, seed=2)


def test_random_search_covers_the_log_scale():
    lrs = [t["lr"] for t in sample_trials({"lr": SPACE["lr"]}, 400, seed=0)]
    below = sum(lr < 10**-2.5 for lr in lrs)
    assert 150 < below < 250  # half the log range lies below 10^-2.5


def test_noisy_grid_is_a_jittered_grid():
    space = {"a": {"type": "uniform", "low": 0.0, "high": 1.0}, "b": {"type": "loguniform", "low": 1.0, "high": 100.0}}
    for seed in range(3):
        trials = sample_trials(space, 9, method="noisy_grid", seed=seed)
        a_levels = sorted({t["a"] for t in trials})
        b_levels = sorted({t["b"] for t in trials})
        assert len(a_levels) == 3 and len(b_levels) == 3 and len(trials) == 9
        for j, value in enumerate(a_levels):  # one level per third of [0, 1)
            assert j / 3 <= value < (j + 1) / 3
        for j, value in enumerate(b_levels):  # one per third of the log range
            assert j / 3 <= math.log10(value) / 2 < (j + 1) / 3
    assert sample_trials(space, 9, method="noisy_grid", seed=0) != sample_trials(space, 9, method="noisy_grid", seed=1)


def test_noisy_grid_fills_the_budget_and_uses_every_choice():
    space = {"act": {"type": "choice", "values": ["x", "y"]}, "lr": SPACE["lr"]}
    trials = sample_trials(space, 7, method="noisy_grid", seed=0)
    assert len(trials) == 7
    assert {t["act"] for t in trials[:6]} == {"x", "y"}


def test_int_dimension_with_few_values_enumerates_them():
    trials = sample_trials({"k": {"type": "int", "low": 1, "high": 3}}, 3, method="noisy_grid", seed=0)
    assert [t["k"] for t in trials] == [1, 2, 3]


@pytest.mark.parametrize(
    "space, message",
    [
        ({}, "non-empty dict"),
        ([("a", 1)], "non-empty dict"),
        ({"a": 3}, "must be a dict with a 'type'"),
        ({"a": {"type": "normal", "low": 0, "high": 1}}, "unknown type 'normal'"),
        ({"a": {"type": "uniform", "low": 0}}, "is missing high"),
        ({"a": {"type": "uniform", "low": 0, "high": 1, "step": 2}}, "unexpected key.s. step"),
        ({"a": {"type": "uniform", "low": 1, "high": 1}}, "needs low < high"),
        ({"a": {"type": "uniform", "low": 0, "high": float("inf")}}, "finite numbers"),
        ({"a": {"type": "loguniform", "low": 0, "high": 1}}, "needs low > 0"),
        ({"a": {"type": "int", "low": 0.5, "high": 3}}, "integer bounds"),
        ({"a": {"type": "int", "low": 4, "high": 3}}, "needs low <= high"),
        ({"a": {"type": "choice", "values": []}}, "non-empty list 'values'"),
        ({"a": {"type": "choice", "values": [[1]]}}, "strings, numbers, booleans or null"),
    ],
)
def test_invalid_spaces_are_rejected(space, message):
    with pytest.raises(ValueError, match=message):
        validate_search_space(space)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"budget": 0}, "`budget` must be a positive integer"),
        ({"budget": 2, "method": "bayes"}, "`method` must be one of random, noisy_grid"),
        ({"budget": 2, "seed": -1}, "`seed` must be a non-negative integer"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        sample_trials(SPACE, **kwargs)
