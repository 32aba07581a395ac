"""Hyperparameter search spaces and trial sampling for recipe runs in ``search`` mode.

A search space is a dict mapping a hyperparameter name to a spec::

    {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
     "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
     "hidden": {"type": "int", "low": 16, "high": 128},
     "activation": {"type": "choice", "values": ["relu", "tanh"]}}

``int`` bounds are inclusive. Each run of a submission samples its own T trials with
its ``hpo`` seed (IdealEst, Bouthillier et al. 2021), so two runs explore different
points, and run i of every submission explores with the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["SPEC_TYPES", "METHODS", "validate_search_space", "sample_trials"]

SPEC_TYPES = ("uniform", "loguniform", "int", "choice")
METHODS = ("random", "noisy_grid")

_KEYS = {
    "uniform": {"type", "low", "high"},
    "loguniform": {"type", "low", "high"},
    "int": {"type", "low", "high"},
    "choice": {"type", "values"},
}


def _is_number(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float, np.integer, np.floating))


def validate_search_space(space) -> None:
    """Check a declared search space; return None or raise a ValueError naming the problem.

    Raises
    ------
    ValueError
        If `space` is not a non-empty dict of specs, or a spec has an unknown type,
        missing or unexpected keys, non-finite bounds, ``low >= high`` (``low > high``
        for ``int``), a non-positive ``loguniform`` bound, non-integer ``int`` bounds, or
        an empty or non-list ``values``.
    """
    if not isinstance(space, Mapping) or not space:
        raise ValueError("the search space must be a non-empty dict of name -> spec")
    for name, spec in space.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"search space names must be non-empty strings, got {name!r}")
        where = f"search space entry {name!r}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a dict with a 'type', got {spec!r}")
        kind = spec.get("type")
        if kind not in SPEC_TYPES:
            raise ValueError(f"{where} has unknown type {kind!r}; expected one of {', '.join(SPEC_TYPES)}")
        missing = sorted(_KEYS[kind] - set(spec))
        extra = sorted(set(spec) - _KEYS[kind])
        if missing:
            raise ValueError(f"{where} ({kind}) is missing {', '.join(missing)}")
        if extra:
            raise ValueError(f"{where} ({kind}) has unexpected key(s) {', '.join(extra)}")
        if kind == "choice":
            values = spec["values"]
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise ValueError(f"{where} (choice) needs a non-empty list 'values'")
            bad = [v for v in values if not (v is None or isinstance(v, (str, bool, int, float)))]
            if bad:
                raise ValueError(f"{where} (choice) values must be strings, numbers, booleans or null, got {bad[0]!r}")
            continue
        low, high = spec["low"], spec["high"]
        if not (_is_number(low) and _is_number(high)) or not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"{where} needs finite numbers for low and high, got {low!r}, {high!r}")
        if kind == "int":
            if float(low) != int(low) or float(high) != int(high):
                raise ValueError(f"{where} (int) needs integer bounds, got {low!r}, {high!r}")
            if low > high:
                raise ValueError(f"{where} (int) needs low <= high, got {low} > {high}")
        elif not low < high:
            raise ValueError(f"{where} ({kind}) needs low < high, got {low} >= {high}")
        if kind == "loguniform" and low <= 0:
            raise ValueError(f"{where} (loguniform) needs low > 0, got {low}")


def _budget_iv(budget) -> int:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"`budget` must be a positive integer, got {budget!r}")
    return int(budget)


def _n_levels(spec) -> float:
    """Number of distinct values a dimension can take (inf when continuous)."""
    if spec["type"] == "choice":
        return len(spec["values"])
    if spec["type"] == "int":
        return int(spec["high"]) - int(spec["low"]) + 1
    return math.inf


def _from_unit(spec, u: np.ndarray) -> list:
    """Map positions u in [0, 1) to values of the dimension (Python scalars)."""
    kind = spec["type"]
    if kind == "uniform":
        return [float(v) for v in spec["low"] + u * (spec["high"] - spec["low"])]
    if kind == "loguniform":
        lo, hi = math.log(spec["low"]), math.log(spec["high"])
        return [float(v) for v in np.exp(lo + u * (hi - lo))]
    n = _n_levels(spec)
    index = np.minimum((u * n).astype(np.int64), n - 1)
    if kind == "int":
        return [int(spec["low"]) + int(i) for i in index]
    return [spec["values"][int(i)] for i in index]


def _grid_shape(space: Mapping, names: list[str], budget: int) -> list[int]:
    """Levels per dimension: grow them round-robin while the product stays <= budget."""
    levels = [1] * len(names)
    caps = [_n_levels(space[n]) for n in names]
    grew = True
    while grew:
        grew = False
        for j in range(len(names)):
            product = math.prod(levels)
            if levels[j] < caps[j] and product // levels[j] * (levels[j] + 1) <= budget:
                levels[j] += 1
                grew = True
    return levels


def sample_trials(space, budget: int, *, method: str = "random", seed) -> list[dict]:
    """Sample `budget` hyperparameter configurations from a search space.

    Parameters
    ----------
    space : dict
        A search space (see the module docstring); checked with `validate_search_space`.
    budget : int
        Number of trials T.
    method : {"random", "noisy_grid"}
        ``"random"``: every value of every trial is drawn independently (uniform,
        log-uniform, uniform integer, uniform choice). ``"noisy_grid"``: see Notes.
    seed : int or numpy.random.Generator
        The run's ``hpo`` seed.

    Returns
    -------
    list of dict
        `budget` dicts mapping every name of `space` to a Python scalar (JSON-ready).

    Notes
    -----
    Noisy grid search (Bouthillier et al. 2021, App. E): each dimension's range is cut
    into m_d equal cells (on the log scale for ``loguniform``; integer and choice
    dimensions have at most as many cells as values) with Π m_d <= T, the m_d grown
    round-robin as far as the budget allows. Each cell contributes one level placed
    uniformly at random within it, so the grid keeps its regular structure but moves
    with the seed; the trials are the Cartesian product of the levels. When Π m_d < T
    the remaining trials are drawn at random, so every run trains exactly T models.

    Dimensions are processed in sorted name order, so the result does not depend on the
    order of the dict's keys.

    Examples
    --------
    >>> space = {"lr": {"type": "loguniform", "low": 1e-3, "high": 1.0}}
    >>> trials = sample_trials(space, 3, seed=0)
    >>> len(trials), all(1e-3 <= t["lr"] <= 1.0 for t in trials)
    (3, True)
    """
    validate_search_space(space)
    budget = _budget_iv(budget)
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {', '.join(METHODS)}, got {method!r}")
    if isinstance(seed, np.random.Generator):
        rng = seed
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer (the run's hpo seed), got {seed!r}")
    else:
        rng = np.random.default_rng(int(seed))
    names = sorted(space)

    def random_trials(count: int) -> list[dict]:
        columns = {n: _from_unit(space[n], rng.random(count)) for n in names}
        return [{n: columns[n][i] for n in names} for i in range(count)]

    if method == "random":
        return random_trials(budget)

    levels = _grid_shape(space, names, budget)
    axes = []
    for name, m in zip(names, levels):
        u = (np.arange(m) + rng.random(m)) / m  # one jittered position per cell
        axes.append(_from_unit(space[name], u))
    index = np.indices(levels).reshape(len(names), -1).T
    trials = [{n: axes[d][i] for d, (n, i) in enumerate(zip(names, row))} for row in index]
    return trials + random_trials(budget - len(trials))
