"""Data splits for recipe runs: out-of-bootstrap and fixed train/test.

A split holds index arrays into the challenge's data pool. Run i of every submission
uses the split drawn with run i's ``split`` seed, so runs are paired (docs/DESIGN.md §4).
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
        Sorted pool indices; never overlap `train` or each other. Out-of-bootstrap test
        sets are resamples of the hidden rows and contain repeats.
    split_id : str
        Short stable identifier derived from the scheme and the training and validation
        index arrays, e.g. ``"oob-3fa2c1d9e0b7"``: public rows only. The test rows follow
        from the same seed, but they are drawn within the hidden rows' classes (and board
        parts), so an id hashing them checked a guess of the hidden labels: the runs
        endpoint publishes it, and an attacker hashed every labelling of 20 hidden rows
        until one matched (20 of 20, with no score published). Two splits of one pool
        from one seed are the same iff their ids are equal (compare ids: arrays make
        ``==`` ambiguous, so the class defines no equality).
    scheme : str
        ``"out_of_bootstrap"`` or ``"fixed"``.
    """

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    split_id: str
    scheme: str


_PREFIX = {"out_of_bootstrap": "oob", "fixed": "fixed"}


def public_split_id(prefix: str, domain: bytes, train: np.ndarray, valid: np.ndarray) -> str:
    """A split's identifier from its public rows alone (:class:`Split`'s ``split_id``: never the test rows)."""
    digest = hashlib.sha256(domain)
    for arr in (train, valid):
        digest.update(len(arr).to_bytes(8, "little"))
        digest.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
    return f"{prefix}-{digest.hexdigest()[:12]}"


def _make_split(train, valid, test, scheme: str) -> Split:
    arrays = []
    for part in (train, valid, test):
        arr = np.ascontiguousarray(part, dtype=np.int64)
        arr.setflags(write=False)
        arrays.append(arr)
    train_arr, valid_arr, test_arr = arrays
    split_id = public_split_id(_PREFIX[scheme], scheme.encode(), train_arr, valid_arr)
    return Split(train_arr, valid_arr, test_arr, split_id=split_id, scheme=scheme)


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
        raise ValueError(f"`seed` must be a non-negative integer (the run's split seed), got {seed!r}")
    if seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer, got {seed}")
    return np.random.default_rng(int(seed))


def _bootstrap(rows: np.ndarray, rng, labels) -> np.ndarray:
    """``len(rows)`` draws with replacement from ``rows``, within each class when ``labels`` is given."""
    if labels is None:
        return rows[rng.integers(0, len(rows), size=len(rows))]
    classes = labels[rows]
    parts = []
    for cls in np.unique(classes):
        members = rows[classes == cls]
        parts.append(members[rng.integers(0, len(members), size=len(members))])
    return rng.permutation(np.concatenate(parts))


def _labels_iv(stratify, n_pool: int):
    if stratify is None:
        return None
    labels = np.asarray(stratify)
    if labels.ndim != 1 or len(labels) < n_pool:
        raise ValueError(
            f"`stratify` must be a 1-d array with a label for every pool row (at least {n_pool}), "
            f"got shape {labels.shape}"
        )
    return labels


def out_of_bootstrap_split(public_idx, hidden_idx, seed, *, stratify=None) -> Split:
    """Out-of-bootstrap split in competition form: train and validate on public rows, test on hidden rows.

    Parameters
    ----------
    public_idx : array_like of int, shape (n_public,)
        Pool indices of the rows whose labels contestants have (at least 2).
    hidden_idx : array_like of int, shape (n_hidden,)
        Pool indices of the rows whose labels no contestant ever receives (at least 1).
    seed : int or numpy.random.Generator
        The run's ``split`` seed.
    stratify : array_like, optional
        Class labels of the pool (indexed by pool index). When given, every draw is made
        within each class, so the training and test sets keep the class counts of the
        public and hidden rows.

    Returns
    -------
    Split
        ``train``: ``n_public`` draws with replacement from the public rows (draw order);
        ``valid``: the public rows never drawn (out of bag), sorted; ``test``:
        ``n_hidden`` draws with replacement from the hidden rows, sorted (rows repeat).

    Raises
    ------
    ValueError
        For bad index arrays (empty, negative, repeated, overlapping), fewer than 2 public
        rows, a `stratify` of the wrong shape, or an empty out-of-bag set.

    Notes
    -----
    Bouthillier et al. (2021), Appendix B, draw the training set as a bootstrap sample of
    the data and validate and test on the rows never drawn. In a competition the test
    rows must be rows whose labels were never public, or a recipe could look them up (by
    id or by features) in the public files it was trained on: measured, accuracy 1.0.
    So the bootstrap runs on both sides of that line (docs/DESIGN.md §4): the public rows
    give the training set and its out-of-bag validation set (about 36.8 % of them,
    (1 - 1/n)^n), and the test set is a bootstrap resample of the hidden rows, so the
    variance that comes from which rows are tested on is kept too.

    References
    ----------
    X. Bouthillier et al., "Accounting for variance in machine learning benchmarks",
    MLSys 2021.

    Examples
    --------
    >>> s = out_of_bootstrap_split(range(100), range(100, 140), seed=7)
    >>> len(s.train), len(s.test), int(s.test.min()) >= 100
    (100, 40, True)
    """
    public_idx = _index_iv(public_idx, "public_idx")
    hidden_idx = _index_iv(hidden_idx, "hidden_idx")
    if len(public_idx) < 2:
        raise ValueError(f"`public_idx` must hold at least 2 rows, got {len(public_idx)}")
    overlap = np.intersect1d(public_idx, hidden_idx)
    if len(overlap):
        raise ValueError(f"`public_idx` and `hidden_idx` overlap in {len(overlap)} row(s), e.g. row {overlap[0]}")
    labels = _labels_iv(stratify, int(max(public_idx.max(), hidden_idx.max())) + 1)
    rng = _seed_iv(seed)
    train = _bootstrap(public_idx, rng, labels)
    valid = np.setdiff1d(public_idx, train)
    if len(valid) == 0:
        raise ValueError(
            f"the out-of-bag set is empty: every one of the {len(public_idx)} public rows was drawn "
            "into the training set; more public rows are needed"
        )
    test = np.sort(_bootstrap(hidden_idx, rng, labels))
    return _make_split(train, valid, test, "out_of_bootstrap")


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
        raise ValueError(f"`train_idx` and `test_idx` overlap in {len(overlap)} row(s), e.g. row {overlap[0]}")
    n_valid = min(max(int(valid_fraction * len(train_idx) + 0.5), 1), len(train_idx) - 1)
    chosen = np.zeros(len(train_idx), dtype=bool)
    chosen[rng.permutation(len(train_idx))[:n_valid]] = True
    return _make_split(train_idx[~chosen], np.sort(train_idx[chosen]), np.sort(test_idx), "fixed")
