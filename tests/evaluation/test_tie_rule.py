"""The tie rule's fast path (``_resample.tie_block_starts``) equals the rule applied pair by pair."""

from __future__ import annotations

import numpy as np

from evaluation.stats import _resample as rs


def _rule_pair_by_pair(ordered: np.ndarray) -> np.ndarray:
    """The rule as docs/statistics.md states it: a block starts at the first value and wherever a value exceeds the
    one before by more than ``TIE_RELATIVE`` of the larger of their magnitudes (infinities equal only to themselves)."""
    new = np.ones(ordered.shape, dtype=bool)
    for index in np.ndindex(ordered.shape[:-1]):
        row = ordered[index]
        for i in range(1, row.size):
            upper, lower = float(row[i]), float(row[i - 1])
            larger = min(max(abs(upper), abs(lower)), float(np.finfo(np.float64).max))
            with np.errstate(invalid="ignore"):
                beyond = bool(upper - lower > rs.TIE_RELATIVE * larger)
            new[index + (i,)] = beyond or (np.isinf(upper) and upper != lower)
    return new


def test_tie_block_starts_equals_the_rule_pair_by_pair_on_hard_values():
    """Rows mixing values a rounding apart, chains of ties, signed zeros, subnormals, the largest floats, infinities
    and NaN, sorted or not (``entries._rounding_ties`` passes rows sorted per owner only): the bound per row only
    skips gaps far beyond the rule, never changes a verdict."""
    rng = np.random.default_rng(0)
    pool = [0.1, 0.2, 0.3, 0.1 + 0.2, 0.2 + 1e-13, np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 7.0]
    pool += [7.000000000001, 7.0 * (1 + 0.9e-12), 7.0 * (1 + 1.8e-12)]
    for trial in range(1500):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 10))) if trial % 3 else (int(rng.integers(1, 10)),)
        if trial % 2:
            values = rng.choice(pool, size=shape)
        else:
            values = rng.normal(size=shape).round(int(rng.integers(0, 3))) * 10.0 ** int(rng.integers(-5, 5))
        if trial % 4 == 0:
            values = np.sort(values, axis=-1)
        with np.errstate(invalid="ignore", over="ignore"):
            assert np.array_equal(rs.tie_block_starts(values), _rule_pair_by_pair(values)), values


def test_competition_ranks_of_a_resampled_board_keep_the_tie_rule():
    """Ranks over (entries, resamples) with ties a rounding apart in some resamples: equal to scipy's "min" ranks of
    the values after the tie rule's canonical form, resample by resample."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(3)
    means = rng.normal(size=(40, 30)).round(2)
    means[5] = means[6] * (1 + 1e-13)  # entry 5 ties entry 6 by the rule in every resample
    ranks = rs.competition_rank(means)
    for b in range(means.shape[1]):
        expected = rankdata(-rs.tie_canonical(means[:, b]), method="min")
        assert np.array_equal(ranks[:, b], expected)
    assert np.array_equal(ranks[5], ranks[6])


def test_rounding_ties_of_entries_of_one_run_count_equals_the_rule_entry_by_entry():
    """``entries._rounding_ties`` sorts the entries of one run count along rows (issue 27), the others by a lexsort
    over owners: both say what the rule says entry by entry (two validation scores that differ but tie)."""
    from evaluation.report.entries import _rounding_ties

    def by_entry(valids):
        for v in valids:
            ordered = np.sort(v)
            if np.any(~_rule_pair_by_pair(ordered)[1:] & (np.diff(ordered) > 0)):
                return True
        return False

    rng = np.random.default_rng(5)
    pool = [0.1, 0.2, 0.3, 0.1 + 0.2, 0.8, 0.1 + 0.7, 7.0, 7.0 * (1 + 0.9e-12), 7.0 * (1 + 1.8e-12), 0.0, -0.0, 1e308]
    for trial in range(600):
        runs = int(rng.integers(1, 6))
        sizes = [runs] * int(rng.integers(1, 6)) if trial % 2 else [int(rng.integers(1, 6)) for _ in range(4)]
        valids = [rng.choice(pool, size=size) for size in sizes]
        assert _rounding_ties(valids) == by_entry(valids), valids
        assert _rounding_ties(valids) == _rounding_ties([*valids, np.array([0.5, 0.25, 0.125][: 1 + trial % 3])])
