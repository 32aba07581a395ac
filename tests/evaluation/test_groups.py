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


def _halves_alike(k):
    """Entries alike exactly across two halves of the board, each differing from its own half (an alike graph that
    is complete bipartite): every alike pair needs a letter of its own, k²/4 in a complete display."""
    side = np.arange(k) % 2 == 0  # the halves alternate in the order, so consecutive entries are alike
    differ = side[:, None] == side[None, :]
    np.fill_diagonal(differ, False)
    return differ


def test_letters_stay_bounded_where_a_complete_display_needs_k_squared_over_4():
    """A contestant's entries whose verdicts form this pattern made the greedy cover hold 8,100 letters for 180
    entries (11.8 s, 260 MB; 3,600 letters here, 3 s): past 8 letters per entry the display is the runs of the
    order, every entry sharing a letter with its neighbours, and says it is not complete."""
    from evaluation.stats import groups, split_letters

    k = 120
    differ = _halves_alike(k)
    letters = letters_from_differences(differ, np.arange(k))
    held = [split_letters(g) for g in letters]
    assert len({letter for h in held for letter in h}) <= 8 * k  # MAX_LETTERS_PER_ENTRY: 3,600 before
    assert sum(map(len, held)) <= k * k / 2
    sets = [set(h) for h in held]
    for i in range(k):
        assert sets[i]
        for j in range(i + 1, k):
            assert not (sets[i] & sets[j]) or not differ[i, j], (i, j)  # sharing a letter: not different
    assert all(sets[i] & sets[i + 1] for i in range(k - 1))  # the runs of the order: pairs of neighbours here
    assert groups.compact_letters(differ, np.arange(k)) == (letters, groups.WINDOWS_NOTE)
    small = _halves_alike(8)  # 16 letters: complete, no note
    display, note = groups.compact_letters(small, np.arange(8))
    assert note is None
    _assert_valid_display(small, display)


def test_a_board_whose_letters_are_runs_says_so(monkeypatch):
    """The note reaches the board's section (``groups_note``), and its rounded board's; a complete display adds no
    key."""
    from evaluation.report import EntryRuns, ReportSettings, build_report
    from evaluation.stats import groups, sparse

    rng = np.random.default_rng(3)
    board = [
        EntryRuns(i + 1, f"m{i}", "t", "recipe", 12, np.arange(12), 0.7 + 0.01 * i + 0.01 * rng.standard_normal(12))
        for i in range(4)
    ]
    settings = ReportSettings(n_resamples=200)
    assert "groups_note" not in build_report(board, settings)["sections"][0]
    complete = groups.compact_letters
    monkeypatch.setattr(sparse, "compact_letters", lambda d, o: (complete(d, o)[0], groups.WINDOWS_NOTE))
    report = build_report(board, settings)
    assert report["sections"][0]["groups_note"] == groups.WINDOWS_NOTE
    from evaluation.boards import publish_rounded

    assert publish_rounded(report, 2)["sections"][0]["groups_note"] == groups.WINDOWS_NOTE  # a rounded board too
