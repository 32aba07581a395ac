"""Sparse comparisons against the all-pairs result on boards small enough to compute both (docs/scale.md)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation import stats
from evaluation.stats.sparse import DENSE_LETTERS, sparse_comparisons, window_letters


def _board(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 25)), int(rng.choice([10, 20, 30]))
    spread = float(rng.choice([0.05, 0.2, 1.0]))
    return rng.normal(0, spread, (n, 1)) + 0.1 * rng.standard_normal((n, k))


def _staircase(better: np.ndarray, order: np.ndarray) -> bool:
    """True when, in display order, a difference (a, b) implies (a', b') for a' <= a < b <= b'."""
    d = (better | better.T)[np.ix_(order, order)]
    upper = np.triu(d, 1)
    n = order.size
    down = upper[1:, :] & ~upper[:-1, :] & np.triu(np.ones((n - 1, n), bool), 2)
    right = upper[:, :-1] & ~upper[:, 1:] & np.triu(np.ones((n, n - 1), bool), 1)
    return not (down.any() or right.any())


def _share(groups: list[str]) -> np.ndarray:
    letters = [set(stats.split_letters(g)) for g in groups]
    return np.array([[bool(a & b) for b in letters] for a in letters])


@pytest.mark.parametrize("correction", ["none", "bonferroni", "holm", "bh"])
def test_compared_pairs_decide_as_all_pairs_and_groups_match_on_staircase_boards(correction):
    checked = 0
    for seed in range(40):
        x = _board(seed)
        dense = stats.pairwise_comparisons(x, correction=correction, n_resamples=10, keep_distribution=False)
        sparse = sparse_comparisons(x, correction=correction, neighbours=2, priority=dense.priority)
        i, j = sparse.i, sparse.j
        np.testing.assert_allclose(sparse.p, dense.p[i, j])
        np.testing.assert_allclose(sparse.pvalue_raw, dense.pvalue_raw[i, j])
        if correction in ("none", "bonferroni"):  # per-pair rules: the same decisions
            np.testing.assert_array_equal(sparse.better[0], dense.better[i, j])
            np.testing.assert_array_equal(sparse.better[1], dense.better[j, i])
            np.testing.assert_allclose(sparse.high, dense.high[i, j])
        else:  # step-wise rules over M pairs: a compared pair is never rejected more easily
            assert not (sparse.better[0] & ~dense.better[i, j]).any()
            assert not (sparse.better[1] & ~dense.better[j, i]).any()
            assert (sparse.pvalue >= dense.pvalue[i, j] - 1e-12).all()
        if correction in ("none", "bonferroni") and _staircase(dense.better, dense.order):
            checked += 1
            assert sparse.order.tolist() == dense.order.tolist()
            assert sparse.groups == stats.significance_groups(dense)
            assert sparse.leader.tolist() == stats.leader_group(dense).tolist()
    if correction in ("none", "bonferroni"):
        assert checked >= 10  # the comparison is not vacuous


def test_all_pairs_when_the_board_fits_in_the_neighbourhood():
    x = _board(3)[:8]
    dense = stats.pairwise_comparisons(x, n_resamples=10, keep_distribution=False)
    sparse = sparse_comparisons(x, neighbours=7, priority=dense.priority)
    assert sparse.i.size == 8 * 7 // 2
    assert sparse.groups == stats.significance_groups(dense)
    np.testing.assert_allclose(sparse.pvalue, dense.pvalue[sparse.i, sparse.j])


def test_pairs_grow_linearly():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 3, 400)[:, None] + 0.1 * rng.standard_normal((400, 10))
    sparse = sparse_comparisons(x, correction="bonferroni")
    assert sparse.i.size < 400 * 20
    assert sparse.family_size == 400 * 399 // 2


def test_window_letters_share_exactly_the_windows():
    frontier = np.array([3, 3, 4, 5, 5])  # 0-2 together, 2-3, 3-4
    groups = window_letters(frontier, np.arange(5))
    assert groups == ["a", "a", "ab", "bc", "c"]
    share = _share(groups)
    assert share[0, 2] and not share[0, 3] and share[3, 4] and not share[2, 4]


def test_sparse_refuses_a_bad_priority():
    with pytest.raises(ValueError, match="priority"):
        sparse_comparisons(np.zeros((3, 4)) + np.arange(4), priority=[0, 0, 1])


def test_above_dense_letters_the_leader_group_holds_no_entry_beaten_by_inference():
    """Found by a statistician on a random board of 310 entries (not every pair checked there): rank 66, letters
    'bcd...', sat in the leader group of an 'a' leader while rank 8 beat it (compare: adjusted p 2.1e-3). The leader
    group now ends at the first frontier, as the letters do."""
    from evaluation.report import EntryRuns, ReportSettings, build_report
    from evaluation.report.comparisons import compare

    n, k = 310, 30
    rng = np.random.default_rng(0)
    mu = np.sort(rng.uniform(0, 1.5, n))[::-1]
    x = mu[:, None] + rng.uniform(0.05, 0.5, n)[:, None] * rng.standard_normal((n, k))
    entries = [EntryRuns(i + 1, f"m{i}", "t", "recipe", k, np.arange(k), x[i]) for i in range(n)]
    report_settings = ReportSettings(n_resamples=100, k_runs=k)
    report = build_report(entries, report_settings)
    section, rows = report["sections"][0], {r["submission_id"]: r for r in report["entries"]}
    assert n > DENSE_LETTERS
    assert compare(entries[8], entries[66], report_settings, family_size=n * (n - 1) // 2)["verdict"] == "a_better"
    assert 67 not in section["leader_group"]
    top = set(rows[section["entries"][0]]["group_letters"])
    assert all(top & set(rows[sid]["group_letters"]) for sid in section["leader_group"])


def test_above_300_entries_compare_never_reverses_the_board_where_a_pair_can_be_decided():
    """Found by a statistician: at 301 entries (100 runs) the pairs not compared were no longer checked, and compare
    said Y beats X (P = 0.90 over 100 shared seeds, adjusted p 5.6e-11) while the board showed X 279 places above
    Y, unflagged (at 300 the check caught it). Seed-paired boards are now checked beyond 300 entries wherever a
    pair can be decided at all, within a work budget."""
    from evaluation.report import EntryRuns, ReportSettings, build_report
    from evaluation.report.comparisons import compare

    k, rng = 100, np.random.default_rng(7)
    base, idx = 0.02 * rng.standard_normal(k), np.arange(k)
    x = base + 0.69 + np.where(idx < 10, 0.5, 0.0)  # the higher mean, but it wins only 10 seeds against Y
    y = base + 0.70 + 1e-4 * rng.standard_normal(k)
    entries = [
        EntryRuns(1, "L", "l", "recipe", k, idx, base + 0.80 + 0.3 * rng.standard_normal(k)),
        EntryRuns(2, "X", "x", "recipe", k, idx, x),
        EntryRuns(3, "F0", "f", "recipe", k, idx, x - 0.001),
        EntryRuns(4, "Y", "y", "recipe", k, idx, y),
    ]
    entries += [
        EntryRuns(10 + j, f"F{j}", "f", "recipe", k, idx, base + 0.735 - 0.03 * j / 297 + 0.05 * rng.standard_normal(k))
        for j in range(297)
    ]
    settings = ReportSettings(n_resamples=100, k_runs=k)
    section = build_report(entries, settings)["sections"][0]
    assert len(section["compared"]) == 301
    verdict = compare(entries[3], entries[1], settings, family_size=301 * 300 // 2)
    assert verdict["verdict"] == "a_better" and verdict["better"] == 4  # Y beats X
    shown = section["entries"]
    flagged = {(i["above"], i["below"]) for i in section["inversions"]}
    assert shown.index(4) < shown.index(2) or (2, 4) in flagged


def test_the_all_pairs_check_is_skipped_only_where_no_pair_could_be_decided():
    """The check beyond 300 entries is skipped where even two entries apart on every run are not decided at the
    level (10 runs on 20,000 entries), and past the work budget; the counts it uses equal the pairs' own."""
    from evaluation.stats.sparse import _every_pair_checked, _pair_counts, _Tester

    rule = {"alpha": 0.05, "gamma": 0.75, "correction": "bonferroni"}
    ten = _Tester(list(np.zeros((2, 10))), True)
    assert not _every_pair_checked(ten, 20_000, rule, 20_000 * 19_999 // 2)
    hundred = _Tester(list(np.zeros((2, 100))), True)
    assert _every_pair_checked(hundred, 301, rule, 301 * 300 // 2)
    assert not _every_pair_checked(hundred, 5_000, rule, 5_000 * 4_999 // 2)  # past the budget
    table = np.random.default_rng(0).standard_normal((30, 12)).round(1)
    table[3, 2], table[5, :4] = np.nan, np.nan
    tester = _Tester(list(table), True)
    a, b = np.triu_indices(30, 1)
    p, shared = _pair_counts(tester, a, b)
    assert np.array_equal(p, tester.p(a, b, tester.shared(a, b))) and np.array_equal(shared, tester.shared(a, b))


@pytest.mark.parametrize("correction", ["holm", "none"])
def test_a_board_of_at_most_two_neighbourhoods_compares_every_pair_and_an_entry_far_below_moves_no_letter(correction):
    """A statistician's board (defaults: 5 neighbours): adding F far below 8 entries left X-Z uncompared (the walk
    tested X against Z and F in one chunk and kept only X-F), and the letters inferred X beats Z, which `compare`
    leaves undecided (adjusted p 0.37 without a correction). A board of at most 2 x 5 + 1 entries compares every
    pair, as documented, and the walk keeps every pair it tested."""
    from evaluation.report import EntryRuns, ReportSettings, build_report, compare

    k, rng = 20, np.random.default_rng(0)
    base = rng.standard_normal(k)
    values = {"L": base + 1.0, "X": base + 0.5}
    values.update({f"B{j}": base + 0.05 * rng.standard_normal(k) for j in range(5)})
    values["Z"] = base + np.where(np.arange(k) % 5 < 2, 0.6, -3.0)
    entries = [EntryRuns(i, n, "t", "recipe", k, np.arange(k), v) for i, (n, v) in enumerate(values.items(), 1)]
    far = EntryRuns(99, "F", "t", "recipe", k, np.arange(k), base - 100.0)
    settings = ReportSettings(n_resamples=300, k_runs=k, correction=correction)
    x, z = entries[1], entries[-1]
    for board in (entries, [*entries, far]):
        report = build_report(board, settings)
        section, n = report["sections"][0], len(board)
        assert len(section["comparisons"]) == n * (n - 1) // 2
        letters = {r["submission_id"]: set(r["group_letters"]) for r in report["entries"]}
        assert compare(x, z, settings, family_size=n * (n - 1) // 2)["verdict"] == "not_significant"
        assert letters[x.id] & letters[z.id]


def test_above_dense_letters_beaten_by_names_the_winners_of_an_entry_not_its_losers():
    """Found by a statistician (stats14): above DENSE_LETTERS entries ``SparseComparisons.beaten_by`` read each compared
    pair's verdict the wrong way round, naming the entries ``e`` beats: on 310 entries (40 seed-paired runs) the
    leader, beaten by nothing, was "beaten by" the 276 entries it beats, so the exact board's ``sota.beaten_by`` named
    them beside a leader group holding it, and 7 entries disagreed with the rule "``e`` leads iff nothing beats it".
    Reference: the compared pairs' own verdicts, read from ``i``, ``j`` and ``better`` here."""
    k, n = 40, 310
    rng = np.random.default_rng(0)
    x = (
        0.70
        + 0.0005 * rng.integers(0, 200, n)[:, None]
        + 0.01 * rng.standard_normal(k)[None, :]
        + rng.choice([0.001, 0.005, 0.02], n)[:, None] * rng.standard_normal((n, k))
    )
    res = sparse_comparisons(x)
    assert n > DENSE_LETTERS and res.beats is None  # the letters are windows of the order
    winners_of = {e: set() for e in range(n)}
    for i, j, b0, b1 in zip(res.i.tolist(), res.j.tolist(), res.better[0].tolist(), res.better[1].tolist()):
        if b0:
            winners_of[j].add(i)
        if b1:
            winners_of[i].add(j)
    shown = np.empty(n, dtype=np.int64)
    shown[res.order] = np.arange(n)
    leaders = set(res.leader.tolist())
    for e in range(n):
        by = res.beaten_by(e).tolist()
        assert winners_of[e] <= set(by), e  # every compared winner, none of its losers
        assert not set(by) & {loser for loser in range(n) if e in winners_of[loser]}, e
        assert (not by) == (e in leaders), e
    assert res.beaten_by(int(res.order[0])).size == 0


@pytest.mark.parametrize("paired", [True, False])
def test_the_frontier_walk_compares_the_same_pairs_whatever_its_step(monkeypatch, paired):
    """The walk tests more pairs at once while none is beaten (issue 27): the pairs compared and every verdict are
    those of a walk one pair at a time, on a board where some entries beat others and most do not."""
    from evaluation.stats import sparse

    rng = np.random.default_rng(27)
    x = np.repeat([0.9, 0.7, 0.5], [40, 60, 50])[:, None] + 0.02 * rng.standard_normal((150, 30))
    fast = sparse_comparisons(x, paired=paired, neighbours=3)
    monkeypatch.setattr(sparse, "_WALK_STEP", 1)
    monkeypatch.setattr(sparse, "_WALK_MAX_STEP", 1)
    slow = sparse_comparisons(x, paired=paired, neighbours=3)
    for name in ("i", "j", "p", "pvalue", "better", "order", "groups", "leader"):
        np.testing.assert_array_equal(np.asarray(getattr(fast, name)), np.asarray(getattr(slow, name)))
