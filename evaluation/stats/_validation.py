"""Input validation shared by the public functions of :mod:`evaluation.stats`.

Every public function calls its own ``_<name>_iv()`` helper, which is built from the
checks below. Each check raises a ``ValueError`` whose message names the parameter
and the problem.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import SupportsInt, cast

import numpy as np


def check_int(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum`` (integral floats are accepted)."""
    ok = not isinstance(value, (bool, np.bool_))
    if ok and isinstance(value, numbers.Integral):
        value = int(value)
    elif ok and isinstance(value, numbers.Real) and float(value).is_integer():
        value = int(cast(SupportsInt, value))  # typeshed's numbers.Real declares no __int__
    else:
        ok = False
    if not ok or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum} (got {value!r}).")
    return value


def check_real(value, name: str) -> float:
    """Return ``value`` as a finite float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a real number (got {value!r}).")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"`{name}` must be finite (got {value!r}).")
    return value


def _check_open_interval(value, name: str, low: float, high: float) -> float:
    bounds = f"({low:g}, {high:g})"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a number in {bounds} (got {value!r}).")
    value = float(value)
    if not low < value < high:
        raise ValueError(f"`{name}` must be in {bounds} (got {value!r}).")
    return value


def check_open_unit(value, name: str) -> float:
    """Return ``value`` as a float strictly between 0 and 1."""
    return _check_open_interval(value, name, 0.0, 1.0)


def check_gamma(value, name: str = "gamma") -> float:
    """Return γ of Bouthillier et al.'s decision rule (P(A>B) must exceed it) as a float in (0.5, 1).

    The one check of γ's range: the statistics, the report settings, the model field and the
    planner form all use it.
    """
    return _check_open_interval(value, name, 0.5, 1.0)


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"`{name}` must be one of {allowed} (got {value!r}).")
    return value


def check_bool(value, name: str) -> bool:
    """Return ``value`` if it is a bool (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"`{name}` must be True or False (got {value!r}).")
    return bool(value)


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """Convert ``rng`` (int >= 0, SeedSequence or Generator) once with ``default_rng``.

    ``None`` is refused: every random computation here must be reproducible. A
    Generator is used as it is (its state advances), as in scipy.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) and int(rng) >= 0:
        return np.random.default_rng(int(rng))
    raise ValueError(
        f"`{name}` must be a non-negative integer, a numpy.random.SeedSequence or a "
        f"numpy.random.Generator (got {rng!r})."
    )


def _to_float_array(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be an array of real numbers.") from None
    return arr


def as_sample(x, name: str, min_size: int = 1) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array of finite values with >= ``min_size``."""
    arr = _to_float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (got shape {arr.shape}).")
    if arr.size == 0:
        raise ValueError(f"`{name}` must not be empty.")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"`{name}` contains NaN or inf (at index {bad[0]}).")
    if arr.size < min_size:
        raise ValueError(f"`{name}` needs at least {min_size} values to estimate a spread (got {arr.size}).")
    return arr


def as_samples(x, name: str, min_size: int = 1) -> np.ndarray:
    """Return ``x`` as a finite float64 array of shape ``(runs,)`` or ``(entries, runs)``."""
    arr = _to_float_array(x, name)
    if arr.ndim not in (1, 2):
        raise ValueError(f"`{name}` must be 1-D (runs) or 2-D (entries x runs) (got shape {arr.shape}).")
    if arr.size == 0:
        raise ValueError(f"`{name}` must not be empty.")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"`{name}` contains NaN or inf (at index {tuple(bad[0])}).")
    if arr.shape[-1] < min_size:
        raise ValueError(f"`{name}` needs at least {min_size} runs to estimate a spread (got {arr.shape[-1]}).")
    return arr


def as_table(scores, name: str, *, paired: bool, min_runs: int = 2, min_entries: int = 1) -> list[np.ndarray]:
    """Return a table of scores (entries x runs) as a list of 1-D float64 rows.

    Paired tables must be rectangular and complete. Unpaired tables may be ragged
    (a list of sequences) or NaN-padded; NaN marks a missing run and is dropped.
    """
    if isinstance(scores, np.ndarray) or not isinstance(scores, Sequence):
        arr = _to_float_array(scores, name)
        if arr.ndim != 2:
            raise ValueError(f"`{name}` must be 2-D (entries x runs) (got shape {arr.shape}).")
        if (
            isinstance(scores, np.ndarray)
            and arr.shape[0] >= min_entries
            and arr.shape[1] >= min_runs
            and np.isfinite(arr).all()
        ):
            return list(np.array(arr, dtype=np.float64, order="C"))  # complete and rectangular: one copy
        raw = list(arr)
    else:
        raw = [_to_float_array(row, f"{name}[{i}]") for i, row in enumerate(scores)]
        for i, row in enumerate(raw):
            if row.ndim != 1:
                raise ValueError(f"`{name}` must be 2-D (entries x runs); entry {i} has shape {row.shape}.")
    if len(raw) < min_entries:
        noun = "entry" if min_entries == 1 else "entries"
        raise ValueError(f"`{name}` needs at least {min_entries} {noun} (got {len(raw)}).")
    rows = []
    for i, row in enumerate(raw):
        inf = np.flatnonzero(np.isinf(row))
        if inf.size:
            raise ValueError(f"`{name}` contains inf (entry {i}, run {inf[0]}).")
        nan = np.flatnonzero(np.isnan(row))
        if nan.size and paired:
            raise ValueError(
                f"`{name}` contains NaN (entry {i}, run {nan[0]}); paired comparisons "
                "need every run of every entry: drop the incomplete runs or pass "
                "paired=False."
            )
        row = row[~np.isnan(row)]
        if row.size < min_runs:
            raise ValueError(
                f"`{name}`: entry {i} has {row.size} run{'' if row.size == 1 else 's'}; at least {min_runs} are needed."
            )
        rows.append(np.ascontiguousarray(row))
    if paired:
        sizes = {row.size for row in rows}
        if len(sizes) > 1:
            lengths = [row.size for row in rows]
            i = int(np.argmax(np.asarray(lengths) != lengths[0]))
            raise ValueError(
                f"`{name}` must have the same number of runs for every entry when "
                f"paired (entry 0 has {lengths[0]}, entry {i} has {lengths[i]})."
            )
    return rows
