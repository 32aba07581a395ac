"""Significance groups: a compact letter display of the pairwise decisions."""

from __future__ import annotations

import re
import string

import numpy as np

from ._types import PairwiseResult, TestBootstrapResult
from .ordering import leader_set

__all__ = ["compact_letters", "leader_group", "significance_groups", "split_letters"]

_LETTERS = string.ascii_lowercase + string.ascii_uppercase
_LETTER = re.compile(r"[a-zA-Z][0-9]*")


def _letter(i: int) -> str:
    base = _LETTERS[i % len(_LETTERS)]
    return base if i < len(_LETTERS) else f"{base}{i // len(_LETTERS)}"


def split_letters(groups: str) -> list[str]:
    """The letters of one entry's display: ``"a1b1"`` is ``["a1", "b1"]``, never its characters.

    After "Z" letters carry a number ("a1", "b1", ...), so two displays share a letter
    when their *letters* intersect; comparing characters would find "1" in both.

    Examples
    --------
    >>> split_letters("abZa1")
    ['a', 'b', 'Z', 'a1']
    """
    return _LETTER.findall(groups)


def _significance_groups_iv(result) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(result, TestBootstrapResult):
        result = result.comparisons
    if not isinstance(result, PairwiseResult):
        raise ValueError(
            "`result` must be a PairwiseResult (from pairwise_comparisons) or a "
            f"TestBootstrapResult (got {type(result).__name__})."
        )
    return np.asarray(result.better, dtype=bool), np.asarray(result.order)


def significance_groups(result) -> list[str]:
    """Compact letter display: entries sharing a letter cannot be told apart.

    Parameters
    ----------
    result : PairwiseResult or TestBootstrapResult
        All-pairs decisions; two entries differ when ``better[i, j]`` or
        ``better[j, i]``.

    Returns
    -------
    list of str
        One string of letters per entry, indexed like the entries. Letters are
        assigned following ``result.order``, so the leader's first letter is "a".
        After "z" come "A".."Z", then "a1", "b1", ...: read a display's letters
        with :func:`split_letters`, not character by character.

    Raises
    ------
    ValueError
        If ``result`` is not a pairwise result.

    Notes
    -----
    Insert-and-absorb algorithm of Piepho (2004), followed by his sweeping step.
    Start with one letter shared by all entries. *Insert*: for each significantly
    different pair (i, j), every letter held by both is split in two, one without i
    and one without j. *Absorb*: a letter whose entries are a subset of another
    letter's is removed. Splitting on all of entry i's pairs at once gives the same
    letters as splitting pair by pair and absorbing, so the loop runs over entries,
    not pairs. *Sweep*: an entry is dropped from a letter when every other holder of
    that letter shares a further letter with it; letters left empty disappear. The
    display guarantees that entries sharing a letter are not significantly different
    and that every pair that is not significantly different shares a letter.

    Past 8 letters per entry (:data:`MAX_LETTERS_PER_ENTRY`) the letters are a greedy
    cover with the same guarantee. Where that too would pass 8 letters per entry, or the
    letters all entries hold would pass k²/2 (:data:`MAX_HELD_SHARE`), each letter is a
    maximal run of the order in which no two entries differ: sharing a letter still
    means not significantly different, but a pair that is not may share none.
    :func:`compact_letters` returns the letters with the note that says so.

    References
    ----------
    Piepho, H.-P. (2004). An algorithm for a letter-based representation of
    all-pairwise comparisons. J. Comput. Graph. Statist. 13, 456–466.

    Examples
    --------
    >>> import numpy as np
    >>> from evaluation.stats import pairwise_comparisons
    >>> s = np.array([0.9, 0.9, 0.5])[:, None] + 0.01 * np.random.default_rng(0).standard_normal((3, 30))
    >>> significance_groups(pairwise_comparisons(s, n_resamples=1000))
    ['a', 'a', 'b']
    """
    better, order = _significance_groups_iv(result)
    return letters_from_differences(better | better.T, order)


#: Rows of a subset test multiplied at once (memory: this many x the letters held x 4 bytes).
_CHUNK = 256


def _contained(rows: np.ndarray, columns: np.ndarray, skip: int = 0) -> np.ndarray:
    """``out[r]``: ``rows[r]`` is a subset of some column other than ``columns[skip + r]`` (pass ``skip = -1``
    when ``rows`` are not among ``columns``). A float32 product (BLAS): exact, the counts are at most the entries."""
    outside = (~columns).astype(np.float32).T
    out = np.zeros(rows.shape[0], dtype=bool)
    for start in range(0, rows.shape[0], _CHUNK):
        block = rows[start : start + _CHUNK]
        subset = (block.astype(np.float32) @ outside) == 0  # subset[r, c]: block[r] ⊆ columns[c]
        if skip >= 0:
            subset[np.arange(block.shape[0]), skip + start + np.arange(block.shape[0])] = False
        out[start : start + block.shape[0]] = subset.any(axis=1)
    return out


def _absorb(columns: np.ndarray) -> np.ndarray:
    """Drop duplicate columns and columns that are subsets of another column."""
    columns = np.unique(columns, axis=0)
    return columns[~_contained(columns, columns, 0)]


def _absorb_new(kept: np.ndarray, new: np.ndarray) -> np.ndarray:
    """:func:`_absorb` of ``kept`` and ``new`` where no column of ``kept`` is a subset of another column (of either).

    Insert-and-absorb's step: ``kept`` are the letters no pair split (an antichain), ``new`` the halves of the split
    ones, each a subset of a split letter; a kept letter inside a half would be inside that split letter, so only
    the halves need testing (work: halves x letters, not letters squared)."""
    new = np.unique(new, axis=0)
    both = np.vstack([kept, new])
    return np.vstack([kept, new[~_contained(new, both, kept.shape[0])]])


def compact_letters(differ: np.ndarray, order: np.ndarray) -> tuple[list[str], str | None]:
    """The letters of :func:`letters_from_differences` and ``None``, or, where a complete display would exceed
    its bounds (:data:`MAX_LETTERS_PER_ENTRY`, :data:`MAX_HELD_SHARE`), letters that are runs of the order
    and a note saying which half of the display's guarantee they drop (:data:`WINDOWS_NOTE`)."""
    differ = np.asarray(differ, dtype=bool)
    k = differ.shape[0]
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    most = max(MAX_LETTERS_PER_ENTRY * k, 64)
    columns = np.ones((1, k), dtype=bool)
    work = 0
    for i in order:  # insert and absorb, one entry's pairs at a time
        partners = differ[i]
        clash = columns[:, i] & (columns & partners).any(axis=1)
        if not clash.any():
            continue
        without_i = columns[clash].copy()
        without_i[:, i] = False
        without_partners = columns[clash] & ~partners
        split = int(clash.sum())
        work += 2 * split * (columns.shape[0] + split) * k  # at most the subset tests' multiply-adds
        columns = _absorb_new(columns[~clash], np.vstack([without_i, without_partners]))
        if columns.shape[0] > most or work > PIEPHO_WORK:
            # the maximal cliques grow exponentially: a cover instead, None past ``most`` letters
            cover = _greedy_cover(differ, order, most)
            break
    else:
        cover = columns
    note = None
    if cover is not None:
        columns = _sweep(cover[np.argsort([_key(c, rank) for c in cover], kind="stable")])
    if cover is None or int(columns.sum()) > max(MAX_HELD_SHARE * k * k, 64 * k):
        columns, note = _sweep(_windows(differ, order)), WINDOWS_NOTE
    columns = columns[np.argsort([_key(c, rank) for c in columns], kind="stable")]
    letters = [_letter(c) for c in range(columns.shape[0])]
    return ["".join(letters[c] for c in np.flatnonzero(columns[:, e])) for e in range(k)], note


def letters_from_differences(differ: np.ndarray, order: np.ndarray) -> list[str]:
    """Compact letter display of a symmetric "significantly different" matrix.

    ``differ[i, j]`` is True when i and j differ; ``order`` lists the entries best
    first. See :func:`significance_groups`; :func:`compact_letters` also says when the
    display had to drop its completeness.
    """
    return compact_letters(differ, order)[0]


#: Insert-and-absorb keeps every maximal set of entries no two of which differ; where verdicts do not follow one order
#: (a board of 180 prediction entries on 4 test examples, paired t-tests of 3 degrees of freedom) their number grows
#: exponentially (6,144 letters held at 160 entries, 7 s; at 180 the report never finished: a property hunt's
#: finding). Past this many per entry the letters are a greedy cover (:func:`_greedy_cover`), with the same guarantee,
#: and past this many per entry again the cover is abandoned for runs of the order (:func:`_windows`): a complete
#: display may need k²/4 letters (entries alike exactly across two halves of the board: every pair its own letter;
#: 8,100 letters for 180 entries, 11.8 s and 260 MB before the bound).
MAX_LETTERS_PER_ENTRY = 8
#: Insert-and-absorb's subset tests past this many multiply-adds (about a second) give way to the cover: random
#: verdicts on 300 entries took up to 2.3e9.
PIEPHO_WORK = 10**10
#: The letters all k entries hold together (a display's size: its board's page and report) are at most
#: ``max(MAX_HELD_SHARE * k * k, 64 * k)``; a staircase board (each entry alike to a window of the order) holds at
#: most about k²/4, and a complete display within the letters' bound may hold 8k² (entries alike to every other
#: entry hold every letter).
MAX_HELD_SHARE = 0.5
WINDOWS_NOTE = (
    "too many overlapping groups for a complete letter display: each letter is a run of consecutive entries no two "
    "of which differ significantly, so entries sharing a letter are not significantly different, but some pairs "
    "that are not significantly different share no letter; see the pairwise verdicts"
)


def _windows(differ: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Letters that are the maximal runs of ``order`` in which no two entries differ (at most one per entry)."""
    k = differ.shape[0]
    shown = differ[np.ix_(order, order)]
    columns: list[np.ndarray] = []
    end = 0  # the run from position a is [a, end); it ends no earlier than the run from a - 1
    for a in range(k):
        last, end = end, max(end, a + 1)
        while end < k and not shown[end, a:end].any():
            end += 1
        if end > last:  # not inside the run from a - 1: maximal
            member = np.zeros(k, dtype=bool)
            member[order[a:end]] = True
            columns.append(member)
    return np.array(columns, dtype=bool)


def _greedy_cover(differ: np.ndarray, order: np.ndarray, most: int) -> np.ndarray | None:
    """Letters (columns) such that entries sharing a letter never differ and every pair that does not differ shares
    one: for each such pair not yet sharing a letter, taken in the board's order, a letter of the pair and every
    entry after it in the order that differs from none of its holders. Polynomial where Piepho's may not be;
    ``None`` once it would pass ``most`` letters (a complete display may need k²/4)."""
    k = differ.shape[0]
    alike = ~differ
    np.fill_diagonal(alike, True)
    covered = np.zeros((k, k), dtype=bool)
    np.fill_diagonal(covered, True)
    columns: list[np.ndarray] = []
    for i in order:
        for j in order:
            if covered[i, j] or not alike[i, j]:
                continue
            if len(columns) >= most:
                return None
            member = np.zeros(k, dtype=bool)
            member[[i, j]] = True
            fits = alike[i] & alike[j]
            for e in order:
                if fits[e] and not member[e]:
                    member[e] = True
                    fits &= alike[e]
            covered |= np.outer(member, member)
            columns.append(member)
    for i in order:  # an entry that differs from every other holds a letter of its own
        if not any(c[i] for c in columns):
            member = np.zeros(k, dtype=bool)
            member[i] = True
            columns.append(member)
    return _absorb(np.array(columns, dtype=bool))


def _key(column: np.ndarray, rank: np.ndarray) -> str:
    """Sort key of a letter: the leaderboard positions of its holders."""
    positions = np.sort(rank[np.flatnonzero(column)])
    return " ".join(f"{p:09d}" for p in positions)


def _sweep(columns: np.ndarray) -> np.ndarray:
    """Piepho's sweeping: remove letters from entries that do not need them."""
    columns = columns.copy()
    shared = columns.T.astype(np.int64) @ columns.astype(np.int64)  # letters shared
    for c in range(columns.shape[0]):
        members = np.flatnonzero(columns[c])
        if members.size == 0:
            continue
        sub = shared[np.ix_(members, members)]
        np.fill_diagonal(sub, 2)
        # e can leave letter c when it shares another letter with every co-holder
        # and keeps at least one letter of its own.
        free = (sub >= 2).all(axis=1) & (shared[members, members] >= 2)
        drop = members[free]
        if drop.size:
            before = columns[c].astype(np.int64)
            columns[c, drop] = False
            after = columns[c].astype(np.int64)
            shared += np.outer(after, after) - np.outer(before, before)
    return columns[columns.any(axis=1)]


def leader_group(result) -> np.ndarray:
    """Entries that no entry beats (the leader first), in the result's order.

    Parameters
    ----------
    result : PairwiseResult or TestBootstrapResult

    Returns
    -------
    ndarray of int
        Indices of the entries that share the lead.

    Raises
    ------
    ValueError
        If ``result`` is not a pairwise result.

    Notes
    -----
    docs/DESIGN.md §6 defined the group as "every entry the top entry does not beat";
    when the top entry is first by its mean but beaten on P(A>B) by another, that
    group contains an entry that beats the leader. The group is now the entries no
    entry beats: in the verdict-consistent ``order`` the leader is one of them, and
    no member is beaten by anyone (:mod:`evaluation.stats.ordering`). If a cycle of
    verdicts leaves no unbeaten entry, the group is the leader alone.
    """
    better, order = _significance_groups_iv(result)
    return leader_set(better, order)
