"""Seed records: the seed of every source of variation for run i of a challenge.

Run i of **every** submission to a challenge uses the same seed record, so runs are
paired across entries (docs/DESIGN.md §4): same split, same initialisation seed, same data
order, and so on. The record is a pure function of the challenge's master seed, the run
index and the set of sources the host randomizes.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["SOURCES", "seed_record", "validate_sources"]

#: Sources of variation, in the order their seeds are spawned. Never reorder: stored
#: seed records of existing runs depend on it.
SOURCES = ("split", "init", "data_order", "augmentation", "dropout", "hpo")

_SEED_MASK = 0x7FFF_FFFF  # seeds are stored as non-negative 31-bit integers


def validate_sources(randomize: Iterable[str]) -> frozenset[str]:
    """Check a collection of source names and return it as a frozenset.

    Raises
    ------
    ValueError
        If `randomize` is a bare string, holds a non-string, or names an unknown source.
    """
    if isinstance(randomize, (str, bytes)):
        raise ValueError(
            f"`randomize` must be an iterable of source names such as ('split', 'init'), not the string {randomize!r}"
        )
    try:
        names = list(randomize)
    except TypeError:
        raise ValueError(f"`randomize` must be an iterable of source names, got {type(randomize).__name__}") from None
    not_str = [n for n in names if not isinstance(n, str)]
    if not_str:
        raise ValueError(f"`randomize` must hold source names (strings), got {not_str[0]!r}")
    unknown = sorted(set(names) - set(SOURCES))
    if unknown:
        raise ValueError(
            f"`randomize` names unknown source(s) {', '.join(map(repr, unknown))}; "
            f"known sources are {', '.join(SOURCES)}"
        )
    return frozenset(names)


def _non_negative_int_iv(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"`{name}` must be a non-negative integer, got {value!r}")
    if value < 0:
        raise ValueError(f"`{name}` must be a non-negative integer, got {value}")
    return int(value)


def _source_seeds(master_seed: int, run_index: int) -> tuple[int, ...]:
    run_seq = np.random.SeedSequence(master_seed, spawn_key=(run_index,))
    return tuple(int(child.generate_state(1, dtype=np.uint32)[0]) & _SEED_MASK for child in run_seq.spawn(len(SOURCES)))


def seed_record(master_seed: int, run_index: int, randomize: Iterable[str]) -> dict[str, int]:
    """Seed of every source of variation for run `run_index`.

    Parameters
    ----------
    master_seed : int
        The challenge's master seed (non-negative).
    run_index : int
        Index i of the run (0, 1, ..., k-1), shared by every submission.
    randomize : iterable of str
        The sources (a subset of `SOURCES`) that vary across runs. The others are held
        at run 0's value for every run.

    Returns
    -------
    dict of str to int
        One seed in ``[0, 2**31)`` per name of `SOURCES`, in that order.

    Raises
    ------
    ValueError
        If a seed or index is negative or not an integer, or `randomize` names an
        unknown source.

    Notes
    -----
    Run i's sequence is ``SeedSequence(master_seed, spawn_key=(i,))``, which is exactly
    ``SeedSequence(master_seed).spawn(k)[i]`` for any k > i. It spawns one child per
    source in `SOURCES` order; a source's seed is the first 32-bit word of its child's
    state with the top bit cleared. The record depends only on its arguments, never on
    how many records were drawn before.

    Examples
    --------
    >>> rec = seed_record(2024, 3, randomize=("split", "init"))
    >>> rec["hpo"] == seed_record(2024, 0, ("split", "init"))["hpo"]
    True
    """
    master_seed = _non_negative_int_iv(master_seed, "master_seed")
    run_index = _non_negative_int_iv(run_index, "run_index")
    varying = validate_sources(randomize)
    current = _source_seeds(master_seed, run_index)
    fixed = current if run_index == 0 else _source_seeds(master_seed, 0)
    return {name: (current[j] if name in varying else fixed[j]) for j, name in enumerate(SOURCES)}
