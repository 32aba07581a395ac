"""Comparisons of a large board where they carry information: neighbours, the leader, the frontier.

All pairs of n entries are n(n-1)/2 comparisons: 12.5 million for 5,000 entries. The
decision of a pair (Bouthillier et al. 2021, eq. 9 and App. C.6; Wilson's score
interval paired, Newcombe's unpaired, :mod:`evaluation.stats.decisions`) is closed
form, so what costs is the number of pairs, not a bootstrap. Here, with the entries
in ``priority`` (best first by the ranking statistic), an entry is compared with:

* its ``neighbours`` nearest entries on each side (the pairs a reader looks at);
* the leader (the leader group, and every entry's distance to the top);
* its *frontier*: the first entry below it that it beats, found by a forward walk
  that starts where the previous entry's frontier was (two pointers, Θ(n) pairs).

Multiplicity is adjusted over the whole family of n(n-1)/2 pairs
(:func:`~evaluation.stats.multiplicity.adjust_pvalues` with ``family_size``), as if
the pairs not compared had p-values of 1; the frontier walk uses Bonferroni's level
alpha / M. Pairs not compared are *inferred* by monotonicity: if a beats b, every entry
shown above a is taken to beat every entry shown below b; on boards of up to DENSE_LETTERS
entries never a seed-paired pair sharing fewer than MIN_SHARED_SEEDS seeds, which no test can
decide, nor a pair whose own P(A>B) points the other way (below 1/2). The entries an entry does not differ from are then a window of the order, the letters
are the maximal windows (Piepho 2004, on the implied differences), and the leader group is the
entries no verdict beats, decided or inferred (:attr:`SparseComparisons.beats`, the one relation
the letters, the leader group and the state of the art's ``beaten_by`` read). docs/scale.md says
when this equals the all-pairs result.

Inference never crosses an inversion: an entry a verdict moved is compared with every entry
it passed and with its neighbours where it lands, and on boards of up to DENSE_LETTERS
entries (larger seed-paired ones where a pair can be decided at all and the check fits
CHECKED_PAIRS_BUDGET) every other pair is tested at the on-demand level (``compare``'s); a lower entry
that beats an upper one joins the compared pairs, until the order needs none. A paired
table may hold NaN for a seed an entry lacks: each pair is decided on the seeds both have.

References
----------
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys. Piepho, H.-P. (2004). J. Comput. Graph. Statist. 13, 456–466. Kahn, A. B.
(1962). Commun. ACM 5, 558–562.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ._resample import BATCH_ELEMENTS, paired_wins
from .decisions import decide_pairs
from .groups import _letter, compact_letters

__all__ = [
    "DENSE_LETTERS",
    "MIN_SHARED_SEEDS",
    "NEIGHBOURS",
    "SparseComparisons",
    "order_from_verdicts",
    "sparse_comparisons",
]

#: Entries compared on each side in the order (boards of up to 2 x NEIGHBOURS + 1 entries: all pairs).
NEIGHBOURS = 5
#: Up to this many entries the letters are Piepho's (with his sweep) on the implied differences.
DENSE_LETTERS = 300
#: A seed-paired pair sharing fewer seeds has no test: it is not compared, and (boards of up to DENSE_LETTERS
#: entries) never inferred to differ.
MIN_SHARED_SEEDS = 2


@dataclass(frozen=True, eq=False)
class SparseComparisons:
    """Decisions of the compared pairs (flat arrays over pairs ``i[t] < j[t]``, matrix indices).

    ``better[0]``: i beats j, ``better[1]``: j beats i (likewise ``significant``,
    ``meaningful``); ``low``/``high``: the interval of P(i>j) at confidence ``level``; ``pvalue``
    adjusted over ``family_size`` pairs. ``order``: verdict-consistent, best first;
    ``frontier[e]``: the first position of ``order`` that e differs from below it (by
    monotone inference; n when none); ``groups``: letters per entry; ``leader``: the
    leader group in display order; ``groups_note``: why the letters are not a complete
    display (:data:`evaluation.stats.groups.WINDOWS_NOTE`), or None; ``beats[w, l]``: w beats l,
    by its compared pair's verdict or by inference, the relation the letters are drawn from (boards
    of up to :data:`DENSE_LETTERS` entries; None above, where the letters are the windows of
    ``frontier``: :meth:`beaten_by`).
    """

    i: np.ndarray
    j: np.ndarray
    p: np.ndarray
    low: np.ndarray
    high: np.ndarray
    pvalue: np.ndarray
    pvalue_raw: np.ndarray
    level: np.ndarray | None  # None when the all-pairs result carries no level
    significant: np.ndarray
    meaningful: np.ndarray
    better: np.ndarray
    order: np.ndarray
    priority: np.ndarray
    frontier: np.ndarray
    groups: list
    leader: np.ndarray
    family_size: int
    alpha: float
    interval_method: str
    groups_note: str | None = None
    beats: np.ndarray | None = None

    def lookup(self) -> dict:
        """``{(i, j): t}`` for the compared pairs, i < j."""
        return {(int(a), int(b)): t for t, (a, b) in enumerate(zip(self.i.tolist(), self.j.tolist()))}

    def beaten_by(self, e: int) -> np.ndarray:
        """The entries that beat entry ``e``, decided or inferred, in display order: as the letters and the
        leader group say (``e`` leads iff none does, :func:`_leader_group`). Above :data:`DENSE_LETTERS` entries
        the letters are windows of the order: every entry whose frontier ``e`` is at or past beats it, and so
        does the winner of each compared pair that beats it (shown above it, or below it in a cycle). The verdicts
        were read the wrong way round, naming the entries ``e`` beats: on 310 entries the leader was "beaten by" the
        276 it beats (found by a statistician)."""
        if self.beats is not None:
            return self.order[self.beats[self.order, e]]
        n = self.order.size
        shown = np.empty(n, dtype=np.int64)
        shown[self.order] = np.arange(n)
        by = np.zeros(n, dtype=bool)
        by[self.order[self.frontier <= shown[e]]] = True
        by[self.i[self.better[0] & (self.j == e)]] = True  # better[0]: i beats j
        by[self.j[self.better[1] & (self.i == e)]] = True  # better[1]: j beats i
        return self.order[by[self.order]]

    def beats_of(self, e: int) -> np.ndarray:
        """The entries that entry ``e`` beats, decided or inferred, in display order: the converse of
        :meth:`beaten_by` (``x`` in ``beats_of(e)`` iff ``e`` in ``beaten_by(x)``), on boards of either size."""
        if self.beats is not None:
            return self.order[self.beats[e, self.order]]
        n = self.order.size
        shown = np.empty(n, dtype=np.int64)
        shown[self.order] = np.arange(n)
        won = shown >= self.frontier[e]  # e's frontier at or before x: x in e's windows' losers
        won[self.j[self.better[0] & (self.i == e)]] = True
        won[self.i[self.better[1] & (self.j == e)]] = True
        return self.order[won[self.order]]


class _Tester:
    """Closed-form P(i>j), raw p-value and dual interval of any list of pairs.

    Paired rows may hold NaN for a seed an entry lacks: each pair is then decided on the
    seeds both entries have (eq. 9 is defined per pair), and a pair sharing fewer than 2
    seeds is left undecided (raw p-value 1, interval [0, 1]).
    """

    def __init__(self, rows, paired: bool):
        from .outperform import _mann_whitney_u, score_tests

        self.rows, self.paired, self._u, self._score = rows, paired, _mann_whitney_u, score_tests
        self.present = None
        self.wins: np.ndarray | None = None  # every pair's wins, counted once where needed (_pair_counts)
        self.shared_all: np.ndarray | None = None
        if paired:
            self.x = np.stack(rows)
            if np.isnan(self.x).any():
                self.present = ~np.isnan(self.x)

    def comparable(self, codes: np.ndarray, n: int) -> np.ndarray:
        """The pair codes whose entries share at least :data:`MIN_SHARED_SEEDS` seeds (all of them unpaired or
        complete): a pair sharing fewer says nothing, so it is left uncompared (decided "not significant", with
        p = 1 and P = 0.5, it read as a test that was never run), and no difference is inferred for it either
        (:meth:`untestable`, :func:`_verdict_relation`)."""
        if self.present is None:
            return codes
        shared = self.shared(codes // n, codes % n)
        assert shared is not None  # present is set
        return codes[shared >= MIN_SHARED_SEEDS]

    def untestable(self) -> np.ndarray | None:
        """``apart[u, v]``: u and v share fewer than :data:`MIN_SHARED_SEEDS` seeds, so no test decides them (None:
        a complete or unpaired table, every pair testable). An n x n matrix: boards of up to DENSE_LETTERS."""
        if self.present is None:
            return None
        present = self.present.astype(np.int32)
        apart = present @ present.T < MIN_SHARED_SEEDS
        np.fill_diagonal(apart, False)
        return apart

    def shared(self, i: np.ndarray, j: np.ndarray) -> np.ndarray | None:
        """Seeds each paired pair shares (None: every run, the table being complete)."""
        if self.present is None:
            return None
        return (self.present[i] & self.present[j]).sum(axis=1)

    def p(self, i: np.ndarray, j: np.ndarray, shared=None) -> np.ndarray:
        if self.paired:
            a, b = self.x[i], self.x[j]
            wins = paired_wins(a, b).sum(axis=1, dtype=np.float64)  # a NaN (a seed one lacks) counts for neither
            if shared is None:
                return wins / (2.0 * self.x.shape[1])
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(shared > 0, wins / (2.0 * shared), 0.5)
        return np.array(
            [
                self._u(self.rows[a], self.rows[b]) / (self.rows[a].size * self.rows[b].size)
                for a, b in zip(i.tolist(), j.tolist())
            ],
            dtype=np.float64,
        )

    def decide(self, i, j, *, alpha, gamma, correction, family_size):
        shared = self.shared(i, j) if self.paired else None
        p = self.p(i, j, shared)
        pvalue_raw, interval = self._score(self.rows, self.paired, i, j, p, shared)
        if shared is not None and (shared < MIN_SHARED_SEEDS).any():
            few = shared < MIN_SHARED_SEEDS
            pvalue_raw = np.where(few, 1.0, pvalue_raw)
            inner = interval

            def interval(level):  # a pair sharing < 2 seeds: no information
                low, high = inner(level)
                return np.where(few, 0.0, low), np.where(few, 1.0, high)

        return (
            p,
            pvalue_raw,
            decide_pairs(
                p - 0.5, pvalue_raw, interval, alpha=alpha, gamma=gamma, correction=correction, family_size=family_size
            ),
        )


def _candidate_pairs(n: int, neighbours: int) -> np.ndarray:
    """Position pairs (a < b) as codes ``a * n + b``: each entry with its ``neighbours`` next ones, the
    leader with all; every pair on a board of at most ``2 * neighbours + 1`` entries, as documented (the walk
    alone left pairs out from ``neighbours + 3`` entries on, and the letters inferred their verdicts)."""
    if n <= 2 * neighbours + 1:
        a, b = np.triu_indices(n, 1)
        return (a * n + b).astype(np.int64)
    parts = [np.arange(1, n, dtype=np.int64)]
    for d in range(1, min(neighbours, n - 1) + 1):
        a = np.arange(n - d, dtype=np.int64)
        parts.append(a * n + a + d)
    return np.concatenate(parts)


#: Pairs the frontier walk first tests at once for an entry, and the most it tests at once (the step doubles while
#: no pair is beaten): the pairs walked are those up to the first beaten one whatever the step, so the step sets
#: only how many decisions one array operation makes (20,000 entries none of which beats another: 1,251 calls of
#: 16 pairs became 12; docs/scale.md).
_WALK_STEP, _WALK_MAX_STEP = 16, 4096


def _frontier_pairs(
    tester: _Tester,
    priority: np.ndarray,
    alpha: float,
    gamma: float,
    family_size: int,
    start_after: int,
    correction: str,
) -> np.ndarray:
    """Position pairs of the forward walk, as codes ``a * n + b``: for each a, up to the first b > a that a beats.

    Pair by pair at alpha (``correction="none"``) or else at Bonferroni's alpha / M,
    which Holm's and Benjamini–Hochberg's adjustments never exceed for a first step:
    each pair's verdict is its own, so testing more pairs at once changes none.
    """
    walk = "none" if correction == "none" else "bonferroni"
    n = priority.size
    parts: list[np.ndarray] = []
    b0 = 0
    for a in range(n - 1):
        b0 = max(b0, a + start_after + 1)
        step = _WALK_STEP
        while b0 < n:
            bs = np.arange(b0, min(n, b0 + step))
            _, _, d = tester.decide(
                np.full(bs.size, priority[a]),
                priority[bs],
                alpha=alpha,
                gamma=gamma,
                correction=walk,
                family_size=family_size,
            )
            beats = np.flatnonzero(d.significant[0] & d.meaningful[0])
            if beats.size:  # the pairs tested before it are compared too (their verdicts, not an inference)
                parts.append(a * n + bs[: beats[0] + 1])
                b0 = int(bs[beats[0]])
                break
            parts.append(a * n + bs)
            b0 = int(bs[-1]) + 1
            step = min(2 * step, _WALK_MAX_STEP)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _unchecked_pairs(
    tester: _Tester,
    codes: np.ndarray,
    order: np.ndarray,
    priority: np.ndarray,
    neighbours: int,
    *,
    alpha: float,
    gamma: float,
    correction: str,
    family_size: int,
    unbeaten: np.ndarray,
) -> np.ndarray:
    """Entry pairs (codes ``i * n + j``, i < j, not in ``codes``) the display ``order`` needs compared.

    An entry a verdict moved is compared with every entry it passed (the pairs the order
    shows against the statistic) and with its ``neighbours`` on each side where it lands; the
    leader shown with every entry. On boards of up to :data:`DENSE_LETTERS` entries, every
    other pair is checked at the on-demand level (:func:`pair_decision`: Bonferroni's
    alpha / M for Holm and Benjamini–Hochberg): a pair whose lower entry beats the upper
    one is added, so the board and ``compare`` never disagree in direction; and so is a pair
    whose upper entry beats a lower one no compared pair beats yet (``unbeaten``), so the leader
    group never holds an entry ``compare`` says is beaten (a frontier walk that starts where the
    previous entry's ended can skip that pair).
    """
    n = order.size
    shown = np.empty(n, dtype=np.int64)
    shown[order] = np.arange(n)
    rank = np.empty(n, dtype=np.int64)
    rank[priority] = np.arange(n)
    parts = [np.minimum(order[0], order[1:]) * n + np.maximum(order[0], order[1:])]
    moved = np.flatnonzero(shown != rank)
    for start in range(0, moved.size, 256):
        e = moved[start : start + 256, None]
        others = np.arange(n)[None, :]
        passed = (rank[e] < rank[others]) != (shown[e] < shown[others])
        near = (np.abs(shown[e] - shown[others]) <= neighbours) & (e != others)
        row, b = np.nonzero(passed | near)
        a = e[row, 0]
        parts.append(np.minimum(a, b) * n + np.maximum(a, b))
    wanted = np.setdiff1d(np.concatenate(parts), codes)
    rule = {"alpha": alpha, "gamma": gamma, "correction": "none" if correction == "none" else "bonferroni"}
    if not _every_pair_checked(tester, n, rule, family_size):
        return wanted
    known = np.union1d(codes, wanted)
    upper, lower = np.triu_indices(n, 1)  # display positions
    u, v = order[upper], order[lower]
    rest = np.minimum(u, v) * n + np.maximum(u, v)
    keep = ~np.isin(rest, known)
    if n > DENSE_LETTERS:  # only the pairs whose observed P could be decided in either direction, counted at once
        p_lower, shared = _pair_counts(tester, v, u)
        keep &= (p_lower > 0.5) | ((p_lower < 0.5) & unbeaten[v])
    u, v, rest = u[keep], v[keep], rest[keep]
    runs = max(len(row) for row in tester.rows)
    step = max(1, CHECKED_CELLS_CHUNK // runs)  # per pair (Bonferroni's or no correction): chunks decide the same
    for start in range(0, u.size, step):
        cu, cv = u[start : start + step], v[start : start + step]
        _, _, d = tester.decide(cv, cu, **rule, family_size=family_size)
        up = d.significant[0] & d.meaningful[0]  # the entry shown lower beats the one shown above it
        down = d.significant[1] & d.meaningful[1] & unbeaten[cv]  # ... or the upper beats a leader-group candidate
        wanted = np.union1d(wanted, rest[start : start + step][up | down])
    return wanted


#: Every pair not compared is checked at ``compare``'s level on boards of up to DENSE_LETTERS entries, and on larger
#: seed-paired boards while the check costs at most this many (pair, run) comparisons.
CHECKED_PAIRS_BUDGET = 100_000_000
#: Pairs are decided this many (pair, run) comparisons at a time (a few arrays of that size each: ~0.1 GB).
CHECKED_CELLS_CHUNK = 4_000_000


def _every_pair_checked(tester: _Tester, n: int, rule: dict, family_size: int) -> bool:
    """Whether :func:`_unchecked_pairs` tests every pair: on boards of up to :data:`DENSE_LETTERS` entries, and on
    larger seed-paired ones whose check fits :data:`CHECKED_PAIRS_BUDGET` and could decide a pair at all.

    The last condition is exact, not a shortcut: two entries apart on every one of the board's k runs (the
    most a pair can show) are tested at the level; if even they are not decided, no pair of the board can be
    (k = 10 runs on 20,000 entries: P = 1 has p = 1.6e-3, above alpha / M = 2.5e-10), and checking the pairs
    would find nothing. A statistician found a 301-entry board of 100 runs whose far pair Y-X ``compare``
    decided for Y (adjusted p 5.6e-11) while the board showed X 279 places above Y, unflagged.
    """
    if n <= DENSE_LETTERS:
        return True
    runs = max(len(row) for row in tester.rows)
    if not tester.paired or n * (n - 1) // 2 * runs > CHECKED_PAIRS_BUDGET:
        return False
    apart = _Tester([np.ones(runs), np.zeros(runs)], True)
    _, _, d = apart.decide(np.array([0]), np.array([1]), **rule, family_size=family_size)
    return bool(d.significant[0][0] & d.meaningful[0][0])


def _pair_counts(tester: _Tester, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """P(a > b) (ties halved) and the seeds shared, for many pairs of a seed-paired table: the wins of every entry
    over every other counted run by run (an entries-by-entries matrix per run) instead of gathering each pair's
    runs (the same numbers as :meth:`_Tester.p`; a seed one entry lacks counts for neither)."""
    x = tester.x
    if tester.wins is None:  # once per board: the order is redone until no pair is left, the counts stay
        n = x.shape[0]
        tester.wins = np.zeros((n, n), dtype=np.int32)
        step = max(1, BATCH_ELEMENTS // n)  # rows of the n x n counts at a time: a few arrays of ~32 MB
        for r in range(x.shape[1]):
            column = x[:, r]
            for start in range(0, n, step):
                tester.wins[start : start + step] += paired_wins(column[start : start + step, None], column[None, :])
        if tester.present is not None:
            present = tester.present.astype(np.int32)
            tester.shared_all = present @ present.T
    wins, shared_all = tester.wins, tester.shared_all
    if shared_all is None:
        return wins[a, b] / (2.0 * x.shape[1]), None
    shared = shared_all[a, b]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shared > 0, wins[a, b] / (2.0 * shared), 0.5), shared


def order_from_verdicts(n: int, winners, losers, priority) -> np.ndarray:
    """Entries ``0..n-1`` best first: by ``priority`` (best first), each winner above its losers (Kahn's order
    on the "beats" edges ``winners[t] -> losers[t]``; a cycle takes the best remaining by priority)."""
    winners, losers = np.asarray(winners, np.int64), np.asarray(losers, np.int64)
    better = np.ones((2, winners.size), dtype=bool)
    better[1] = False
    return _sparse_order(n, winners, losers, better, np.asarray(priority, np.int64))


def _sparse_order(n: int, i, j, better, priority: np.ndarray) -> np.ndarray:
    """Kahn's order on the compared "beats" edges, best remaining by priority (cycles: the best left)."""
    rank = np.empty(n, dtype=np.int64)
    rank[priority] = np.arange(n)
    winners = np.concatenate([i[better[0]], j[better[1]]])
    losers = np.concatenate([j[better[0]], i[better[1]]])
    beaten_by = np.bincount(losers, minlength=n).tolist()  # Python lists, not numpy scalars entry by entry (issue 27)
    out_edges: dict = {}
    for w, l in zip(winners.tolist(), losers.tolist()):
        out_edges.setdefault(w, []).append(l)
    rank_of, by_rank = rank.tolist(), np.asarray(priority, dtype=np.int64).tolist()
    heap = [rank_of[e] for e in range(n) if beaten_by[e] == 0]
    heapq.heapify(heap)
    placed = [False] * n
    order: list[int] = []
    cursor = 0
    while len(order) < n:
        while heap and placed[by_rank[heap[0]]]:
            heapq.heappop(heap)
        if heap:
            e = by_rank[heapq.heappop(heap)]
        else:  # a cycle: the best remaining entry by priority
            while placed[by_rank[cursor]]:
                cursor += 1
            e = by_rank[cursor]
        placed[e] = True
        order.append(e)
        for loser in out_edges.get(e, ()):
            beaten_by[loser] -= 1
            if beaten_by[loser] == 0 and not placed[loser]:
                heapq.heappush(heap, rank_of[loser])
    return np.array(order, dtype=np.int64)


def _frontier(n: int, i, j, better, order: np.ndarray) -> np.ndarray:
    """``g[position]``: first display position a beaten-by-inference entry starts at (suffix minimum)."""
    shown = np.empty(n, dtype=np.int64)
    shown[order] = np.arange(n)
    first = np.full(n, n, dtype=np.int64)
    for w, l in ((i[better[0]], j[better[0]]), (j[better[1]], i[better[1]])):
        sw, sl = shown[w], shown[l]
        down = sl > sw  # a beat shown upward is an inversion of a cycle: not a window
        np.minimum.at(first, sw[down], sl[down])
    return np.minimum.accumulate(first[::-1])[::-1]


def window_letters(frontier: np.ndarray, order: np.ndarray) -> list[str]:
    """Letters of the staircase ``frontier``: one per maximal window [a, frontier[a] - 1] of the order.

    With the differences a staircase, the "not different" entries of each position form
    a window, and the maximal windows are the maximal groups (Piepho 2004's
    insert-and-absorb result), lettered in order of their first entry.
    """
    n = order.size
    front = np.asarray(frontier).tolist()  # Python ints, not numpy scalars position by position (issue 27)
    starts = [a for a in range(n) if a == 0 or front[a] > front[a - 1]]
    held: list[list[str]] = [[] for _ in range(n)]
    for c, a in enumerate(starts):
        for pos in range(a, min(n, int(front[a]))):
            held[pos].append(_letter(c))
    out = [""] * n
    for pos, e in enumerate(order.tolist()):
        out[e] = "".join(held[pos])
    return out


def _verdict_relation(n: int, i, j, better, order: np.ndarray, frontier: np.ndarray, tester: _Tester) -> np.ndarray:
    """``beats[w, l]``: w beats l, by its compared pair's verdict or by inference (whoever beats an entry, every
    entry shown above it does), the n x n relation of a board of up to :data:`DENSE_LETTERS` entries: its letters
    (Piepho's, on ``beats | beats.T``), its leader group and the state of the art's ``beaten_by`` read it.

    A compared pair keeps its own verdict, and a pair no test can decide (:meth:`_Tester.untestable`: sharing fewer
    than :data:`MIN_SHARED_SEEDS` seeds) is never inferred to differ: on 3 entries, every pair compared that can be,
    A beat B and C, shown below B and undecided against it, shared no seed with A, yet the letters (a, b, b) said
    A beats C and A "needs 0 more runs" (a statistician's hunt, 3 of 1,000 boards). Inference stands in for a test
    a board does not run; where none is possible it has nothing to stand in for, even along a chain of verdicts
    (A beats B, B beats C: P(A>B) is not transitive, and A and C are not significantly different).

    Nor is W inferred to beat L where the pair's own point estimate points the other way (P(W>L) < 1/2, the
    closed-form statistic ``compare`` reports, :meth:`_Tester.p`): the pair is left not different. On 13 entries
    ranked by Boo_5, 5 neighbours, W beating V made F3, F5 and F2, shown above W, beat S, shown below V, while S was
    better on most seeds (P(F3>S) = 0.35) and ``compare`` said "not significant": the board claimed a difference
    against the observed direction (a statistician, stats15). The order is not moved (it follows the compared
    verdicts, which stay), so it agrees with every decided verdict as before; it only stops implying these pairs.
    """
    beats = np.zeros((n, n), dtype=bool)
    for a in range(n):
        beats[order[a], order[int(frontier[a]) :]] = True
    untestable = tester.untestable()
    if untestable is not None:
        beats &= ~untestable
    beats[i, j] = beats[j, i] = False  # a compared pair is decided by its own test, not inferred
    w, lo = np.nonzero(beats)  # an inferred difference against the pair's own P(W>L) is not kept
    step = max(1, CHECKED_CELLS_CHUNK // max(len(row) for row in tester.rows))
    for start in range(0, w.size, step):
        cw, cl = w[start : start + step], lo[start : start + step]
        against = tester.p(cw, cl, tester.shared(cw, cl) if tester.paired else None) < 0.5
        beats[cw[against], cl[against]] = False
    beats[i[better[0]], j[better[0]]] = True
    beats[j[better[1]], i[better[1]]] = True
    return beats


def _paired_with_gaps(scores) -> list[np.ndarray] | None:
    """A paired table whose NaN marks a seed an entry lacks, as rows (None: no NaN, the usual checks)."""
    x = np.asarray(scores, dtype=np.float64) if isinstance(scores, np.ndarray) else None
    if x is None or x.ndim != 2 or not np.isnan(x).any():
        return None
    if np.isinf(x).any():
        e, r = np.argwhere(np.isinf(x))[0]
        raise ValueError(f"`scores` contains inf (entry {e}, run {r}).")
    runs = (~np.isnan(x)).sum(axis=1)
    if (runs < 2).any():
        e = int(np.argmax(runs < 2))
        raise ValueError(f"`scores`: entry {e} has {runs[e]} run{'' if runs[e] == 1 else 's'}; at least 2 are needed.")
    return list(np.ascontiguousarray(x))


def _sparse_iv(scores, paired, priority, neighbours):
    from ._validation import as_table, check_bool, check_int

    paired = check_bool(paired, "paired")
    rows = _paired_with_gaps(scores) if paired else None
    if rows is None:
        rows = as_table(scores, "scores", paired=paired, min_runs=2)
    neighbours = check_int(neighbours, "neighbours", minimum=1)
    n = len(rows)
    if priority is None:
        means = np.nanmean(np.stack(rows), axis=1) if paired else np.array([r.mean() for r in rows])
        priority = np.argsort(-means, kind="stable")
    priority = np.asarray(priority, dtype=np.int64)
    if priority.shape != (n,) or sorted(priority.tolist()) != list(range(n)):
        raise ValueError(f"`priority` must be a permutation of the {n} entries.")
    return rows, paired, priority, neighbours


def sparse_comparisons(
    scores, *, paired=True, priority=None, gamma=0.75, alpha=0.05, correction="holm", neighbours=NEIGHBOURS
) -> SparseComparisons:
    """Decide the pairs that carry information and infer the groups of a large board.

    Parameters
    ----------
    scores : array_like, shape (entries, runs)
        As for :func:`~evaluation.stats.pairwise_comparisons` (at least 2 entries).
    paired : bool, default True
    priority : array_like of int, optional
        Entries best first by the ranking statistic (default: by mean).
    gamma, alpha, correction
        The decision rule, as for :func:`~evaluation.stats.pairwise_comparisons`;
        the family is all n(n-1)/2 pairs.
    neighbours : int, default NEIGHBOURS
        Entries compared on each side in the order.

    Returns
    -------
    SparseComparisons

    Raises
    ------
    ValueError
        For an invalid table, ``priority`` or ``neighbours``, naming it.

    Notes
    -----
    Θ(n · (neighbours + 2)) pairs, each O(runs): see the module docstring and
    docs/scale.md for where the groups equal the all-pairs ones (Bouthillier et al.
    2021, eq. 9; Piepho 2004).

    Examples
    --------
    >>> x = np.array([0.9, 0.9, 0.5])[:, None] + 0.01 * np.random.default_rng(0).standard_normal((3, 30))
    >>> sparse_comparisons(x).groups
    ['a', 'a', 'b']
    """
    rows, paired, priority, neighbours = _sparse_iv(scores, paired, priority, neighbours)
    n = len(rows)
    family = n * (n - 1) // 2
    tester = _Tester(rows, paired)
    rule = {"alpha": alpha, "gamma": gamma, "correction": correction, "family_size": family}
    codes = tester.comparable(_first_pairs(tester, priority, neighbours, rule), n)
    i, j, p, pvalue_raw, d, order = _settled_decisions(tester, codes, priority, neighbours, rule)
    better = d.significant & d.meaningful
    frontier = _frontier(n, i, j, better, order)
    note = beats = None
    if n <= DENSE_LETTERS:
        beats = _verdict_relation(n, i, j, better, order, frontier, tester)
        groups, note = compact_letters(beats | beats.T, order)
    else:
        groups = window_letters(frontier, order)
    return SparseComparisons(
        i,
        j,
        p,
        d.low,
        d.high,
        d.pvalue,
        pvalue_raw,
        1.0 - d.level,
        d.significant,
        d.meaningful,
        better,
        order,
        priority,
        frontier,
        groups,
        _leader_group(n, i, j, better, order, frontier, beats),
        family,
        alpha,
        "wilson" if paired else "newcombe",
        note,
        beats,
    )


def _first_pairs(tester: _Tester, priority: np.ndarray, neighbours: int, rule: dict) -> np.ndarray:
    """Entry pairs (codes ``i * n + j``, i < j, sorted) of the neighbours, the leader and the frontier walk."""
    n = priority.size
    walked = _frontier_pairs(
        tester, priority, rule["alpha"], rule["gamma"], rule["family_size"], neighbours, rule["correction"]
    )
    codes = np.unique(np.concatenate([_candidate_pairs(n, neighbours), walked.astype(np.int64)]))
    a, b = priority[codes // n], priority[codes % n]
    return np.unique(np.minimum(a, b) * n + np.maximum(a, b))  # entry pairs i < j, sorted by (i, j)


def _settled_decisions(tester: _Tester, codes: np.ndarray, priority: np.ndarray, neighbours: int, rule: dict):
    """``(i, j, p, pvalue_raw, decisions, order)`` once the display order needs no pair left undecided.

    The compared pairs grow until no verdict moves an entry past one it was not compared
    with (row 5 of issue 23); ``rule`` holds ``alpha``, ``gamma``, ``correction`` and ``family_size``.
    """
    n = priority.size
    while True:
        i, j = codes // n, codes % n
        p, pvalue_raw, d = tester.decide(i, j, **rule)
        better = d.significant & d.meaningful
        order = _sparse_order(n, i, j, better, priority)
        unbeaten = np.zeros(n, dtype=bool)
        unbeaten[_unbeaten(n, i, j, better, order)] = True
        extra = tester.comparable(
            _unchecked_pairs(tester, codes, order, priority, neighbours, **rule, unbeaten=unbeaten), n
        )
        if not extra.size:
            return i, j, p, pvalue_raw, d, order
        codes = np.union1d(codes, extra)


def _unbeaten(n: int, i, j, better, order: np.ndarray) -> np.ndarray:
    """The leader group in display order: the entries no compared pair beats (the first one if none)."""
    beaten = np.zeros(n, dtype=bool)
    beaten[j[better[0]]] = True
    beaten[i[better[1]]] = True
    leader = order[~beaten[order]]
    return leader if leader.size else order[:1].copy()


def _leader_group(
    n: int, i, j, better, order: np.ndarray, frontier: np.ndarray, beats: np.ndarray | None
) -> np.ndarray:
    """The leader group in display order: the entries no verdict beats, decided or inferred, as the letters say.

    On boards of up to :data:`DENSE_LETTERS` entries the letters are drawn from ``beats``
    (:func:`_verdict_relation`: whoever beats an entry, every entry shown above it does, a compared pair keeping its
    own verdict, a pair no test can decide or whose own P(A>B) points the other way never inferred): an entry leads when nothing beats it there, i.e. no
    compared pair beats it and it shares a letter with every entry above it. Above that the letters are windows of
    the order (:func:`window_letters`) and every entry past the first frontier (``frontier[0]``: the first position
    some compared pair beats) is beaten by inference, so only the unbeaten entries before it lead: found by a
    statistician on 310 entries, where not every pair is checked (rank 66, letters ``bcd...``, sat in the leader
    group of an ``a`` leader while rank 8 beat it, adjusted p 2.1e-3). Applied to every board, that rule left out
    entries no verdict beats that share the leader's letter: on 4 entries, every pair compared and one verdict (B
    beats C), A and D shown below C were not in B's group (a statistician's hunt: 64 of 400 random boards).
    Either way an entry leads iff :meth:`SparseComparisons.beaten_by` names no one (the first entry if none does).
    """
    if beats is None:
        unbeaten = _unbeaten(n, i, j, better, order)
        shown = np.empty(n, dtype=np.int64)
        shown[order] = np.arange(n)
        leaders = unbeaten[shown[unbeaten] < frontier[0]]
    else:
        leaders = order[~beats[:, order].any(axis=0)]
    return leaders if leaders.size else order[:1].copy()


def sparse_from_pairwise(res) -> SparseComparisons:
    """The all-pairs result as a :class:`SparseComparisons` of every pair (one report code path)."""
    from .groups import leader_group

    n = res.p.shape[0]
    better = np.asarray(res.better, dtype=bool)
    groups, note = compact_letters(better | better.T, np.asarray(res.order))
    i, j = np.triu_indices(n, 1)
    both = lambda m: np.stack([m[i, j], m[j, i]])  # noqa: E731
    return SparseComparisons(
        i,
        j,
        res.p[i, j],
        res.low[i, j],
        res.high[i, j],
        res.pvalue[i, j],
        res.pvalue_raw[i, j],
        None if res.level is None else res.level[i, j],
        both(res.significant),
        both(res.meaningful),
        both(res.better),
        np.asarray(res.order),
        np.asarray(res.priority),
        np.full(n, n),
        groups,
        np.asarray(leader_group(res)),
        i.size,
        res.alpha,
        res.interval_method,
        note,
        better,  # every pair compared: nothing inferred
    )


def sparse_inversions(sc: SparseComparisons) -> list[tuple[int, int, str]]:
    """:func:`evaluation.stats.ordering.inversions` over the compared pairs only."""
    n = sc.order.size
    shown = np.empty(n, dtype=np.int64)
    shown[sc.order] = np.arange(n)
    stat_rank = np.empty(n, dtype=np.int64)
    stat_rank[sc.priority] = np.arange(n)
    out = []
    for w, l in ((sc.i[sc.better[0]], sc.j[sc.better[0]]), (sc.j[sc.better[1]], sc.i[sc.better[1]])):
        for a, b in zip(w.tolist(), l.tolist()):
            if shown[b] < shown[a]:
                out.append((b, a, "verdict"))
            elif stat_rank[a] > stat_rank[b]:
                out.append((a, b, "statistic"))
    out.sort(key=lambda t: (shown[t[0]], shown[t[1]]))
    return out


def pair_decision(a, b, *, paired=True, gamma=0.75, alpha=0.05, correction="holm", family_size=1) -> SparseComparisons:
    """One pair decided as a member of a family of ``family_size`` pairs (a board's pair on demand).

    The same closed-form rule as :func:`sparse_comparisons` (Bouthillier et al. 2021,
    eq. 9, App. C.6), the family padded with p-values of 1: Bonferroni's level alpha / M,
    and Holm's or Benjamini–Hochberg's first step, for a pair outside the compared set.
    """
    rows, paired, _, _ = _sparse_iv(
        [np.asarray(a, float), np.asarray(b, float)]
        if not paired
        else np.stack([np.asarray(a, float), np.asarray(b, float)]),
        paired,
        None,
        1,
    )
    i, j = np.array([0]), np.array([1])
    p, pvalue_raw, d = _Tester(rows, paired).decide(
        i, j, alpha=alpha, gamma=gamma, correction=correction, family_size=max(1, int(family_size))
    )
    better = d.significant & d.meaningful
    order = np.array([0, 1]) if p[0] >= 0.5 else np.array([1, 0])
    return SparseComparisons(
        i,
        j,
        p,
        d.low,
        d.high,
        d.pvalue,
        pvalue_raw,
        1.0 - d.level,
        d.significant,
        d.meaningful,
        better,
        order,
        order,
        np.array([2, 2]),
        ["", ""],
        order[:1],
        max(1, int(family_size)),
        alpha,
        "wilson" if paired else "newcombe",
        None,
        np.array([[False, better[0][0]], [better[1][0], False]]),
    )
