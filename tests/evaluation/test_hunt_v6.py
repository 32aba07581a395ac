"""Counterexamples of a sixth property hunt (incremental updates, published boards, letters bounded)."""

from __future__ import annotations

import json

import numpy as np

from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.stats import rank_intervals
from evaluation.stats.bootstrap import rank_intervals_update

#: Eight runs' correct counts of 10 examples: scored as c / n and as c * (1 / n) they differ by an ulp on some runs.
COUNTS = np.array([9, 7, 5, 2, 3, 0, 0, 0])


def test_rank_update_ties_entries_equal_to_rounding_as_the_full_computation():
    """Found by a property hunt (incremental vs full report): two entries of the same runs, scored as c / n and as
    c * (1 / n), tie in every resample under the tie rule (rank 1 both) and a newcomer overlaps them. The full
    computation gives both the rank interval [1, 2]; the exact update compared their resampled means exactly (one
    ulp decided) and gave one of them [1, 3]. The update now ties them as ``competition_rank`` does."""
    a, b = COUNTS / 10, COUNTS * (1 / 10)
    assert (a != b).any()
    newcomer = a.mean() + 0.01 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5])
    kw = dict(n_resamples=200, rng=0)
    old = rank_intervals(np.stack([a, b]), **kw)
    table = np.stack([a, b, newcomer])
    full = rank_intervals(table, **kw)
    got = rank_intervals_update(table, [False, False, True], [True, True, False], [*old.low, 0], [*old.high, 0], **kw)
    assert full.low.tolist() == [1, 1, 1] and full.high.tolist() == [2, 2, 3]
    assert got.low.tolist() == full.low.tolist() and got.high.tolist() == full.high.tolist()


def test_incremental_report_of_a_newcomer_beside_entries_equal_to_rounding_is_the_full_report():
    settings = ReportSettings(n_resamples=200, k_runs=8, master_seed=3)
    entries = [
        EntryRuns(1, "A", "t1", "recipe", 8, np.arange(8), COUNTS / 10),
        EntryRuns(2, "B", "t2", "recipe", 8, np.arange(8), COUNTS * (1 / 10)),
    ]
    spread = 0.01 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5])
    newcomer = EntryRuns(3, "C", "t3", "recipe", 8, np.arange(8), COUNTS.mean() / 10 + spread)
    before = json.loads(json.dumps(build_report(entries, settings)))
    reuse = {row["submission_id"]: row for row in before["entries"]}
    full = json.loads(json.dumps(build_report([*entries, newcomer], settings)))
    incremental = json.loads(json.dumps(build_report([*entries, newcomer], settings, reuse=reuse, previous=before)))
    assert incremental == full
