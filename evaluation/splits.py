"""Data splits for recipe runs: out-of-bootstrap and fixed train/test.

A split holds index arrays into the challenge's data pool. Run i of every submission
uses the split drawn with run i's ``split`` seed, so runs are paired (DESIGN.md §4).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = ["Split", "out_of_bootstrap_split", "fixed_split"]


@dataclass(frozen=True, eq=False)
class Split:
    """Train/validation/test rows of a pool.

    Attributes
    ----------
    train : ndarray of int64, shape (n_train,)
        Pool indices of the training rows. Out-of-bootstrap training sets contain
        repeats and are in draw order.
    valid, test : ndarray of int64, shapes (n_valid,), (n_test,)
        Sorted, disjoint pool indices; never overlap `train`.
    split_id : str
        Short stable identifier derived from the scheme and the three index arrays,
        e.g. ``"oob-3fa2c1d9e0b7"``. Two splits are the same iff their ids are equal
        (compare ids: arrays make ``==`` ambiguous, so the class defines no equality).
    scheme : str
        ``"out_of_bootstrap"`` or ``"fixed"``.
    """

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    split_id: str
    scheme: str


_PREFIX = {"out_of_bootstrap": "oob", "fixed": "fixed"}


def _make_split(train, valid, test, scheme: str) -> Split:
    arrays = []
    digest = hashlib.sha256(scheme.encode())
    for part in (train, valid, test):
        arr = np.ascontiguousarray(part, dtype=np.int64)
        arr.setflags(write=False)
        digest.update(len(arr).to_bytes(8, "little"))
        digest.update(arr.astype("<i8", copy=False).tobytes())
        arrays.append(arr)
    return Split(*arrays, split_id=f"{_PREFIX[scheme]}-{digest.hexdigest()[:12]}", scheme=scheme)


def _fraction_iv(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ValueError(f"`{name}` must be a number strictly between 0 and 1, got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"`{name}` must be strictly between 0 and 1, got {value}")
    return float(value)


def _seed_iv(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(
            f"`seed` must be a non-negative integer (the run's split seed), got {seed!r}"
        )
    if seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer, got {seed}")
    return np.random.default_rng(int(seed))


def out_of_bootstrap_split(
    n_pool: int, seed, *, test_fraction: float = 0.5, stratify=None
) -> Split:
    """Out-of-bootstrap split of a pool of `n_pool` rows.

    Parameters
    ----------
    n_pool : int
        Number of rows in the pool (at least 2).
    seed : int or numpy.random.Generator
        The run's ``split`` seed.
    test_fraction : float, default 0.5
        Fraction of the out-of-bag rows that go to the test set; the rest form the
        validation set.
    stratify : array_like, shape (n_pool,), optional
        Class labels. When given, the bootstrap draws within each class (so the training
        set keeps the pool's class counts) and each class's out-of-bag rows are split
        between validation and test separately.

    Returns
    -------
    Split
        ``train`` has exactly `n_pool` rows (with repeats); ``valid`` and ``test`` are
        disjoint samples of the out-of-bag rows that together cover all of them.

    Raises
    ------
    ValueError
        If `n_pool` < 2, `test_fraction` is not in (0, 1), `stratify` has the wrong
        length, or the out-of-bag set is too small to give both a validation and a test
        row.

    Notes
    -----
    Bouthillier et al. (2021), Appendix B: the training set is a bootstrap sample of the
    pool; the rows never drawn (about 36.8 % of the pool, (1 - 1/n)^n) are out of bag
    and split into validation and test. Unstratified, the test set receives
    ``round(test_fraction * n_oob)`` rows (at least one each side). Stratified, each
    class's share is rounded stochastically (floor plus a Bernoulli draw of the
    remainder), which keeps the expected fraction exact for small classes.

    References
    ----------
    X. Bouthillier et al., "Accounting for variance in machine learning benchmarks",
    MLSys 2021.

    Examples
    --------
    >>> s = out_of_bootstrap_split(100, seed=7)
    >>> len(s.train), len(set(s.valid) & set(s.test))
    (100, 0)
    """
    if isinstance(n_pool, bool) or not isinstance(n_pool, (int, np.integer)):
        raise ValueError(f"`n_pool` must be an integer, got {n_pool!r}")
    if n_pool < 2:
        raise ValueError(f"`n_pool` must be at least 2, got {n_pool}")
    n_pool = int(n_pool)
    test_fraction = _fraction_iv(test_fraction, "test_fraction")
    rng = _seed_iv(seed)

    if stratify is None:
        train = rng.integers(0, n_pool, size=n_pool)
        oob = np.setdiff1d(np.arange(n_pool), train)
        if len(oob) < 2:
            raise ValueError(
                f"the out-of-bag set has {len(oob)} row(s); at least 2 are needed to form "
                f"a validation and a test set (n_pool={n_pool} is too small)"
            )
        n_test = min(max(int(test_fraction * len(oob) + 0.5), 1), len(oob) - 1)
        shuffled = rng.permutation(oob)
        test, valid = shuffled[:n_test], shuffled[n_test:]
    else:
        labels = np.asarray(stratify)
        if labels.ndim != 1 or len(labels) != n_pool:
            raise ValueError(
                f"`stratify` must be a 1-d array of {n_pool} labels, got shape {labels.shape}"
            )
        train_parts, valid_parts, test_parts = [], [], []
        for cls in np.unique(labels):
            members = np.flatnonzero(labels == cls)
            drawn = members[rng.integers(0, len(members), size=len(members))]
            oob_c = rng.permutation(np.setdiff1d(members, drawn))
            share = test_fraction * len(oob_c)
            n_test_c = int(share) + int(rng.random() < share - int(share))
            train_parts.append(drawn)
            test_parts.append(oob_c[:n_test_c])
            valid_parts.append(oob_c[n_test_c:])
        train = rng.permutation(np.concatenate(train_parts))
        valid, test = np.concatenate(valid_parts), np.concatenate(test_parts)
        if len(valid) == 0 or len(test) == 0:
            raise ValueError(
                f"the stratified out-of-bag split left an empty "
                f"{'validation' if len(valid) == 0 else 'test'} set "
                f"({len(valid) + len(test)} out-of-bag rows; n_pool={n_pool} is too small)"
            )
    return _make_split(train, np.sort(valid), np.sort(test), "out_of_bootstrap")


def _index_iv(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-d array of row indices")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"`{name}` must hold integer row indices, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError(f"`{name}` holds a negative index ({arr.min()})")
    if len(np.unique(arr)) != len(arr):
        raise ValueError(f"`{name}` holds repeated indices")
    return arr.astype(np.int64)


def fixed_split(train_idx, test_idx, *, valid_fraction: float = 0.2, seed) -> Split:
    """Fixed train/test split with a validation set carved from the training rows.

    Parameters
    ----------
    train_idx, test_idx : array_like of int
        Disjoint pool indices of the host's fixed training and test rows.
    valid_fraction : float, default 0.2
        Fraction of the training rows moved to the validation set (at least one row,
        and at least one row is left for training).
    seed : int or numpy.random.Generator
        Seed of the validation carve-out. Pass a seed that is the **same for every run**
        (e.g. run 0's ``split`` seed, which is what `seed_record` gives when ``"split"``
        is not randomized): under this scheme only the model-side sources (init, data
        order, augmentation, dropout, HPO) vary, and a changing seed would make the
        validation set vary too.

    Returns
    -------
    Split
        ``scheme == "fixed"``; ``train`` keeps the given order minus the validation rows.

    Raises
    ------
    ValueError
        If the index arrays are empty, not integers, negative, repeated or overlapping,
        `train_idx` has fewer than 2 rows, or `valid_fraction` is not in (0, 1).

    Examples
    --------
    >>> s = fixed_split(range(80), range(80, 100), seed=0)
    >>> len(s.train), len(s.valid), len(s.test)
    (64, 16, 20)
    """
    train_idx = _index_iv(train_idx, "train_idx")
    test_idx = _index_iv(test_idx, "test_idx")
    valid_fraction = _fraction_iv(valid_fraction, "valid_fraction")
    rng = _seed_iv(seed)
    if len(train_idx) < 2:
        raise ValueError(f"`train_idx` must hold at least 2 rows, got {len(train_idx)}")
    overlap = np.intersect1d(train_idx, test_idx)
    if len(overlap):
        raise ValueError(
            f"`train_idx` and `test_idx` overlap in {len(overlap)} row(s), e.g. row {overlap[0]}"
        )
    n_valid = min(max(int(valid_fraction * len(train_idx) + 0.5), 1), len(train_idx) - 1)
    chosen = np.zeros(len(train_idx), dtype=bool)
    chosen[rng.permutation(len(train_idx))[:n_valid]] = True
    return _make_split(
        train_idx[~chosen], np.sort(train_idx[chosen]), np.sort(test_idx), "fixed"
    )
