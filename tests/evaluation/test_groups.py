"""Significance groups: compact letter display (Piepho 2004)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.stats import leader_group, pairwise_comparisons, significance_groups
from evaluation.stats.groups import letters_from_differences


def _letter_sets(groups):
    return [set(re.findall(r"[a-zA-Z]\d*", g)) for g in groups]


def _assert_valid_display(differ, groups):
    sets = _letter_sets(groups)
    k = len(groups)
    for i in range(k):
        assert sets[i], groups  # every entry has a letter
        for j in range(i + 1, k):
            shares = bool(sets[i] & sets[j])
            assert shares == (not differ[i, j]), (i, j, groups)


@st.composite
def difference_matrices(draw):
    k = draw(st.integers(1, 9))
    bits = draw(st.lists(st.booleans(), min_size=k * k, max_size=k * k))
    d = np.triu(np.array(bits, dtype=bool).reshape(k, k), 1)
    order = draw(st.permutations(range(k)))
    return d | d.T, np.array(order, dtype=np.int64)


@settings(max_examples=50, deadline=None)
@given(difference_matrices())
def test_display_is_valid_for_any_difference_pattern(case):
    differ, order = case
    groups = letters_from_differences(differ, order)
    _assert_valid_display(differ, groups)
    assert groups[order[0]].startswith("a")


def test_textbook_example():
    # A > C, A > D, B > D; A~B, B~C, C~D: display a, ab, bc, c.
    differ = np.zeros((4, 4), bool)
    for i, j in [(0, 2), (0, 3), (1, 3)]:
        differ[i, j] = differ[j, i] = True
    assert letters_from_differences(differ, np.arange(4)) == ["a", "ab", "bc", "c"]


def test_no_differences_one_group_all_different_own_groups():
    assert letters_from_differences(np.zeros((3, 3), bool), np.arange(3)) == ["a", "a", "a"]
    differ = ~np.eye(3, dtype=bool)
    assert letters_from_differences(differ, np.array([2, 0, 1])) == ["b", "c", "a"]


def test_many_letters_get_suffixes():
    k = 60
    groups = letters_from_differences(~np.eye(k, dtype=bool), np.arange(k))
    assert groups[0] == "a" and groups[26] == "A" and groups[52] == "a1"
    assert len(set(groups)) == k


def test_from_pairwise_result_leader_gets_a():
    rng = np.random.default_rng(0)
    means = np.array([0.60, 0.90, 0.8995, 0.70])
    scores = means[:, None] + 0.005 * rng.standard_normal((4, 30))
    result = pairwise_comparisons(scores, n_resamples=1000)
    groups = significance_groups(result)
    assert groups[1] == "a" and groups[2] == "a"
    assert "a" not in groups[0] + groups[3]
    _assert_valid_display(result.better | result.better.T, groups)
    np.testing.assert_array_equal(leader_group(result), [1, 2])


def test_errors():
    with pytest.raises(ValueError, match=r"`result` must be a PairwiseResult"):
        significance_groups(np.zeros((2, 2), bool))
