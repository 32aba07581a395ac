"""The rank bootstrap's state kept between updates (evaluation.stats.rank_state) gives the full computation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation import stats
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.stats.bootstrap import resampled_means
from evaluation.stats.rank_state import (
    RankStateSlot,
    rank_intervals_from_state,
    rank_intervals_with_state,
    state_key,
)

B, SEED, LEVEL = 300, 12345, 0.9


def _board(rng, n: int, k: int = 8) -> np.ndarray:
    return rng.normal(0, 0.05, (n, 1)) + rng.normal(0, 0.03, (n, k))


def _full(table):
    return stats.rank_intervals(table, n_resamples=B, rng=SEED, confidence_level=LEVEL)


def _update(table, m, state):
    """rank_intervals_from_state for the last ``m`` rows of ``table`` new, the others' intervals the full ones."""
    prev = _full(table[:-m])
    new = np.r_[np.zeros(len(table) - m, bool), np.ones(m, bool)]
    low, high = np.r_[prev.low, np.zeros(m, int)], np.r_[prev.high, np.zeros(m, int)]
    return rank_intervals_from_state(
        table, new, ~new, low, high, state, n_resamples=B, confidence_level=LEVEL, rng=SEED
    )


def _assert_equal(result, state, table):
    full = _full(table)
    assert (result.rank == full.rank).all() and (result.low == full.low).all() and (result.high == full.high).all()
    assert np.array_equal(state.ranks[state.rows], full.bootstrap_distribution)  # every rank in every resample


def test_the_state_holds_the_full_computations_resampled_means_and_ranks():
    table = _board(np.random.default_rng(0), 60)
    result, state = rank_intervals_with_state(table, n_resamples=B, confidence_level=LEVEL, rng=SEED)
    rows = list(stats.bootstrap.as_table(table, "scores", paired=True, min_runs=2))
    assert np.array_equal(state.boot[: state.size], resampled_means(rows, True, B, np.random.default_rng(SEED)))
    _assert_equal(result, state, table)


@pytest.mark.parametrize("case", ["apart", "two", "copy", "rounding", "one ulp"])
def test_updates_from_the_state_equal_the_full_computation(case):
    """New entries one after another, from the state each update returns: apart from the others, two at once, and
    ties (an old entry's copy, the same runs divided by 3 and multiplied back, one ulp above: columns re-ranked)."""
    rng = np.random.default_rng(3)
    table = _board(rng, 200)
    _, state = rank_intervals_with_state(table, n_resamples=B, confidence_level=LEVEL, rng=SEED)
    for step in range(3):
        add = {
            "apart": _board(rng, 1),
            "two": _board(rng, 2),
            "copy": table[[5 + step]],
            "rounding": (table[[7 + step]] / 3) * 3,
            "one ulp": np.nextafter(table[[9 + step]], 1.0),
        }[case]
        table = np.vstack([table, add])
        out = _update(table, len(add), state)
        assert out is not None
        result, state = out
        _assert_equal(result, state, table)


def test_the_state_of_another_board_is_not_used():
    """A key mismatch (other runs, seed or B): None, and the state is left as it was."""
    rng = np.random.default_rng(5)
    table = _board(rng, 50)
    _, state = rank_intervals_with_state(table, n_resamples=B, confidence_level=LEVEL, rng=SEED)
    key = state.key
    changed = table.copy()
    changed[3, 2] += 1e-3
    assert _update(np.vstack([changed, _board(rng, 1)]), 1, state) is None
    assert state.key == key == state_key(table, SEED, B) and state.size == 50


#: Runs per entry of the reports below: a board ranked by the mean shows rank intervals from 16 (rank23).
K = 16


def _entries(n: int, seed: int = 0) -> list[EntryRuns]:
    rng = np.random.default_rng(seed)
    return [
        EntryRuns(i + 1, f"m{i}", f"t{i}", "recipe", K, np.arange(K), 0.7 + 0.004 * i + 0.01 * rng.standard_normal(K))
        for i in range(n)
    ]


def _report(entries, settings, slot=None, previous=None):
    reuse = {row["submission_id"]: row for row in previous["entries"]} if previous else None
    return json.loads(json.dumps(build_report(entries, settings, reuse=reuse, previous=previous, rank_slot=slot)))


def test_a_report_updated_from_its_slot_equals_the_full_report():
    """The full report fills the slot; each update reads it (a newcomer tied with an old entry too) and refills it;
    a slot of another board (a mismatch) takes the full path. Every report equals the one built from nothing."""
    settings = ReportSettings(n_resamples=B, k_runs=K, master_seed=3)
    entries, slot = _entries(30), RankStateSlot()
    report = _report(entries, settings, slot)
    assert slot.state is not None and slot.state.size == 30
    for i, test in enumerate([entries[4].test, 0.75 + 0.01 * np.random.default_rng(9).standard_normal(K)]):
        entries = [*entries, EntryRuns(100 + i, f"n{i}", f"tn{i}", "recipe", K, np.arange(K), test)]
        key = slot.state.key
        report = _report(entries, settings, slot, previous=report)
        assert report == _report(entries, settings)
        assert slot.state.size == len(entries) and slot.state.key != key
    other = RankStateSlot()
    _report(_entries(30, seed=1), settings, other)
    entries = [*entries, EntryRuns(200, "late", "t-late", "recipe", K, np.arange(K), entries[0].test + 0.01)]
    assert _report(entries, settings, other, previous=report) == _report(entries, settings)
    assert other.state is not None and other.state.size == len(entries)


def test_a_slot_gives_its_state_to_one_taker():
    table = _board(np.random.default_rng(1), 10)
    _, state = rank_intervals_with_state(table, n_resamples=50, confidence_level=LEVEL, rng=SEED)
    slot = RankStateSlot(state)
    assert slot.take() is state and slot.take() is None and slot.state is None


def test_an_update_without_new_entries_reads_the_state_as_it_is():
    """No entry new (a board recomputed for another reason: a name changed, the private board after the public one):
    _append and _add_new reduced over zero new rows ("zero-size array to reduction operation maximum", found by
    inputs27 on test_board_surfaces and test_two_boards_invariants). The intervals are the state's; known ones kept."""
    table = _board(np.random.default_rng(8), 40)
    _, state = rank_intervals_with_state(table, n_resamples=B, confidence_level=LEVEL, rng=SEED)
    full, new = _full(table), np.zeros(len(table), bool)
    known = np.ones(len(table), bool)
    known[[3, 17]] = False  # two intervals not stored (widened ones, say): taken from the state's ranks
    low, high = np.where(known, full.low, 0), np.where(known, full.high, 0)
    out = rank_intervals_from_state(
        table, new, known, low, high, state, n_resamples=B, confidence_level=LEVEL, rng=SEED
    )
    assert out is not None
    result, state = out
    _assert_equal(result, state, table)
