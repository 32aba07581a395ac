import numpy as np
import pytest

from evaluation.splits import fixed_split, out_of_bootstrap_split


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_out_of_bootstrap_properties(seed):
    n = 500
    s = out_of_bootstrap_split(n, seed)
    assert s.scheme == "out_of_bootstrap" and s.split_id.startswith("oob-")
    assert len(s.train) == n and s.train.min() >= 0 and s.train.max() < n
    assert len(np.unique(s.train)) < n  # drawn with replacement
    oob = np.setdiff1d(np.arange(n), s.train)
    assert np.array_equal(np.sort(np.concatenate([s.valid, s.test])), oob)  # valid+test = out of bag
    assert len(np.intersect1d(s.valid, s.test)) == 0
    assert len(np.intersect1d(s.train, s.test)) == 0 and len(np.intersect1d(s.train, s.valid)) == 0
    assert abs(len(s.test) - len(oob) / 2) <= 1
    assert 0.3 < len(oob) / n < 0.44  # about (1 - 1/n)^n = 36.8 %


def test_test_fraction_is_respected():
    s = out_of_bootstrap_split(1000, 4, test_fraction=0.25)
    n_oob = len(s.valid) + len(s.test)
    assert len(s.test) == int(0.25 * n_oob + 0.5)


def test_split_is_deterministic_and_id_is_stable():
    a, b = out_of_bootstrap_split(300, 9), out_of_bootstrap_split(300, 9)
    assert a.split_id == b.split_id
    assert np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test)
    assert out_of_bootstrap_split(300, 10).split_id != a.split_id
    # the id is a function of the indices: recomputing from the same arrays gives the same id
    from evaluation.splits import _make_split
    assert _make_split(a.train, a.valid, a.test, a.scheme).split_id == a.split_id


def test_split_arrays_are_read_only():
    s = out_of_bootstrap_split(50, 1)
    with pytest.raises(ValueError):
        s.train[0] = 3


def test_stratified_bootstrap_keeps_class_counts():
    y = np.repeat(np.array(["a", "b", "c"]), [300, 150, 50])
    for seed in range(5):
        s = out_of_bootstrap_split(len(y), seed, stratify=y)
        _, pool_counts = np.unique(y, return_counts=True)
        _, train_counts = np.unique(y[s.train], return_counts=True)
        assert np.array_equal(pool_counts, train_counts)
        assert len(np.intersect1d(s.valid, s.test)) == 0
        assert len(np.intersect1d(s.train, np.concatenate([s.valid, s.test]))) == 0
        for cls in "abc":  # every class's out-of-bag rows are split about in half
            oob_c = np.setdiff1d(np.flatnonzero(y == cls), s.train)
            n_test_c = np.isin(s.test, oob_c).sum()
            assert abs(n_test_c - len(oob_c) / 2) <= 1


def test_stratified_is_deterministic():
    y = np.arange(200) % 3
    assert out_of_bootstrap_split(200, 5, stratify=y).split_id == \
        out_of_bootstrap_split(200, 5, stratify=y).split_id


@pytest.mark.parametrize("args, kwargs, message", [
    ((1, 0), {}, "`n_pool` must be at least 2, got 1"),
    ((2.5, 0), {}, "`n_pool` must be an integer"),
    ((100, 0), {"test_fraction": 1.0}, "`test_fraction` must be strictly between 0 and 1, got 1.0"),
    ((100, 0), {"test_fraction": 0}, "`test_fraction` must be strictly between 0 and 1"),
    ((100, -3), {}, "`seed` must be a non-negative integer"),
    ((100, None), {}, "`seed` must be a non-negative integer"),
    ((100, 0), {"stratify": np.zeros(99)}, "`stratify` must be a 1-d array of 100 labels"),
])
def test_out_of_bootstrap_validation(args, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("`", ".").replace("(", ".").replace(")", ".")):
        out_of_bootstrap_split(*args, **kwargs)


def test_empty_out_of_bag_is_an_error():
    # with 2 rows the bootstrap often draws both; some seed must hit a too-small OOB set
    messages = []
    for seed in range(20):
        try:
            out_of_bootstrap_split(2, seed)
        except ValueError as exc:
            messages.append(str(exc))
    assert messages and all("out-of-bag set has" in m for m in messages)


def test_fixed_split():
    s = fixed_split(np.arange(100), np.arange(100, 130), valid_fraction=0.2, seed=3)
    assert s.scheme == "fixed" and s.split_id.startswith("fixed-")
    assert len(s.valid) == 20 and len(s.train) == 80 and np.array_equal(s.test, np.arange(100, 130))
    assert len(np.intersect1d(s.train, s.valid)) == 0
    assert np.array_equal(np.sort(np.concatenate([s.train, s.valid])), np.arange(100))
    # the carve-out depends only on the (fixed) seed
    assert fixed_split(np.arange(100), np.arange(100, 130), seed=3).split_id == s.split_id
    assert fixed_split(np.arange(100), np.arange(100, 130), seed=4).split_id != s.split_id


@pytest.mark.parametrize("train, test, kwargs, message", [
    ([0, 1, 2], [2, 3], {}, "overlap in 1 row"),
    ([0], [2, 3], {}, "at least 2 rows"),
    ([], [2, 3], {}, "non-empty 1-d array"),
    ([0, 0, 1], [2], {}, "repeated indices"),
    ([0, -1], [2], {}, "negative index"),
    ([0.5, 1], [2], {}, "integer row indices"),
    ([0, 1, 2], [3], {"valid_fraction": 1.5}, "`valid_fraction` must be strictly between 0 and 1"),
])
def test_fixed_split_validation(train, test, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        fixed_split(train, test, seed=0, **kwargs)
