import numpy as np
import pytest

from evaluation.splits import fixed_split, out_of_bootstrap_split

PUBLIC, HIDDEN = np.arange(500), np.arange(500, 700)


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_out_of_bootstrap_trains_and_validates_on_public_rows_and_tests_on_hidden_rows(seed):
    s = out_of_bootstrap_split(PUBLIC, HIDDEN, seed)
    assert s.scheme == "out_of_bootstrap" and s.split_id.startswith("oob-")
    assert len(s.train) == len(PUBLIC) and np.isin(s.train, PUBLIC).all()
    assert len(np.unique(s.train)) < len(PUBLIC)  # drawn with replacement
    assert np.array_equal(s.valid, np.setdiff1d(PUBLIC, s.train))  # validation = every out-of-bag public row
    assert 0.3 < len(s.valid) / len(PUBLIC) < 0.44  # about (1 - 1/n)^n = 36.8 %
    # the test rows are a resample of the hidden rows only: no row whose label is public
    assert len(s.test) == len(HIDDEN) and np.isin(s.test, HIDDEN).all()
    assert len(np.unique(s.test)) < len(HIDDEN)  # a bootstrap resample: the test rows vary by run too
    assert np.array_equal(s.test, np.sort(s.test))


def test_split_is_deterministic_and_id_is_stable():
    a, b = out_of_bootstrap_split(PUBLIC[:300], HIDDEN, 9), out_of_bootstrap_split(PUBLIC[:300], HIDDEN, 9)
    assert a.split_id == b.split_id
    assert np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test)
    assert out_of_bootstrap_split(PUBLIC[:300], HIDDEN, 10).split_id != a.split_id
    # the id is a function of the indices: recomputing from the same arrays gives the same id
    from evaluation.splits import _make_split

    assert _make_split(a.train, a.valid, a.test, a.scheme).split_id == a.split_id


def test_split_arrays_are_read_only():
    s = out_of_bootstrap_split(PUBLIC[:50], HIDDEN[:20], 1)
    with pytest.raises(ValueError):
        s.train[0] = 3


def test_stratified_bootstrap_keeps_class_counts_on_both_sides():
    y = np.concatenate(
        [np.repeat(np.array(["a", "b", "c"]), [300, 150, 50]), np.repeat(np.array(["a", "b", "c"]), [120, 60, 20])]
    )
    for seed in range(5):
        s = out_of_bootstrap_split(PUBLIC, HIDDEN, seed, stratify=y)
        assert np.array_equal(np.unique(y[PUBLIC], return_counts=True)[1], np.unique(y[s.train], return_counts=True)[1])
        assert np.array_equal(np.unique(y[HIDDEN], return_counts=True)[1], np.unique(y[s.test], return_counts=True)[1])
        assert len(np.intersect1d(s.train, s.valid)) == 0 and np.isin(s.test, HIDDEN).all()


def test_stratified_is_deterministic():
    y = np.arange(700) % 3
    assert (
        out_of_bootstrap_split(PUBLIC, HIDDEN, 5, stratify=y).split_id
        == out_of_bootstrap_split(PUBLIC, HIDDEN, 5, stratify=y).split_id
    )


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (([0], [1, 2], 0), {}, "`public_idx` must hold at least 2 rows, got 1"),
        (([0, 1, 2], [2, 3], 0), {}, "overlap in 1 row"),
        (([0, 1, 2], [], 0), {}, "`hidden_idx` must be a non-empty 1-d array"),
        (([0, 1, 1], [3], 0), {}, "`public_idx` holds repeated indices"),
        (([0.5, 1], [3], 0), {}, "integer row indices"),
        ((PUBLIC, HIDDEN, -3), {}, "`seed` must be a non-negative integer"),
        ((PUBLIC, HIDDEN, None), {}, "`seed` must be a non-negative integer"),
        (
            (PUBLIC, HIDDEN, 0),
            {"stratify": np.zeros(99)},
            "`stratify` must be a 1-d array with a label for every pool row",
        ),
    ],
)
def test_out_of_bootstrap_validation(args, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("`", ".").replace("(", ".").replace(")", ".")):
        out_of_bootstrap_split(*args, **kwargs)


def test_empty_out_of_bag_is_an_error():
    # with 2 public rows the bootstrap often draws both; some seed must hit an empty out-of-bag set
    messages = []
    for seed in range(20):
        try:
            out_of_bootstrap_split([0, 1], [2, 3], seed)
        except ValueError as exc:
            messages.append(str(exc))
    assert messages and all("out-of-bag set is empty" in m for m in messages)


def test_fixed_split():
    s = fixed_split(np.arange(100), np.arange(100, 130), valid_fraction=0.2, seed=3)
    assert s.scheme == "fixed" and s.split_id.startswith("fixed-")
    assert len(s.valid) == 20 and len(s.train) == 80 and np.array_equal(s.test, np.arange(100, 130))
    assert len(np.intersect1d(s.train, s.valid)) == 0
    assert np.array_equal(np.sort(np.concatenate([s.train, s.valid])), np.arange(100))
    # the carve-out depends only on the (fixed) seed
    assert fixed_split(np.arange(100), np.arange(100, 130), seed=3).split_id == s.split_id
    assert fixed_split(np.arange(100), np.arange(100, 130), seed=4).split_id != s.split_id


@pytest.mark.parametrize(
    "train, test, kwargs, message",
    [
        ([0, 1, 2], [2, 3], {}, "overlap in 1 row"),
        ([0], [2, 3], {}, "at least 2 rows"),
        ([], [2, 3], {}, "non-empty 1-d array"),
        ([0, 0, 1], [2], {}, "repeated indices"),
        ([0, -1], [2], {}, "negative index"),
        ([0.5, 1], [2], {}, "integer row indices"),
        ([0, 1, 2], [3], {"valid_fraction": 1.5}, "`valid_fraction` must be strictly between 0 and 1"),
    ],
)
def test_fixed_split_validation(train, test, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        fixed_split(train, test, seed=0, **kwargs)


def test_the_split_id_says_nothing_of_the_hidden_rows():
    """Found by an attacker: the split id hashed the test rows, drawn within the hidden rows' classes and board
    parts, and the runs endpoint publishes it with the seed: hashing every labelling of 20 hidden rows found the
    one that matched (20 of 20, under the Ladder, no score needed; 20 of 20 private rows too). It now hashes the
    public rows alone: two pools that differ only in their hidden labels or their private cut give one id."""
    from evaluation.boards import split_with_parts

    public, hidden = np.arange(60), np.arange(60, 80)
    labels = np.r_[np.arange(60) % 2, np.zeros(20, int)]
    other = labels.copy()
    other[60:70] = 1  # other hidden labels, the same public ones
    a = out_of_bootstrap_split(public, hidden, 3, stratify=labels)
    b = out_of_bootstrap_split(public, hidden, 3, stratify=other)
    assert a.test.tolist() != b.test.tolist() and a.split_id == b.split_id
    cut = [split_with_parts(public, [hidden[:10], hidden[10:]], 3, stratify=labels)]
    cut.append(split_with_parts(public, [hidden[5:15], np.r_[hidden[:5], hidden[15:]]], 3, stratify=other))
    assert cut[0].test.tolist() != cut[1].test.tolist() and cut[0].split_id == cut[1].split_id
    assert out_of_bootstrap_split(public, hidden, 4, stratify=labels).split_id != a.split_id  # another seed
