"""``sections.shared_runs`` takes every entry holding the shared runs at once (issue 27): the same core, in the same
order, with the same runs, as the greedy step by step that docs and the function's docstring state."""

from __future__ import annotations

import numpy as np

from evaluation.report.entries import EntryRuns
from evaluation.report.sections import shared_runs


def _step_by_step(entries, floor=2):
    """The greedy one entry per step (the implementation before issue 27's batch)."""
    pool = sorted(entries, key=lambda e: (-e.test.size, e.id))
    if not pool:
        return [], np.empty(0, dtype=np.int64)
    chosen = [pool[0]]
    common = set(pool[0].run_index.tolist())
    best = enough = (0, 1, set(common))
    queues: dict[frozenset, list[int]] = {}
    for position, e in enumerate(pool[1:], start=1):
        queues.setdefault(frozenset(e.run_index.tolist()), []).append(position)
    heads = {key: 0 for key in queues}
    while heads:
        key = max(heads, key=lambda q: (len(common & q), -queues[q][heads[q]]))
        common &= key
        chosen.append(pool[queues[key][heads[key]]])
        heads[key] += 1
        if heads[key] == len(queues[key]):
            del heads[key]
        if len(common) < 2:
            break
        observations = len(chosen) * (len(chosen) - 1) // 2 * len(common)
        if observations >= best[0]:
            best = (observations, len(chosen), set(common))
        if len(common) >= floor and observations >= enough[0]:
            enough = (observations, len(chosen), set(common))
    best = enough if enough[1] >= 2 else best
    return chosen[: best[1]], np.array(sorted(best[2]), dtype=np.int64)


def test_shared_runs_equals_the_greedy_step_by_step():
    rng = np.random.default_rng(27)
    for trial in range(400):
        entries = []
        for i in range(int(rng.integers(1, 25))):
            top = int(rng.integers(1, 9))
            runs = np.arange(top) if rng.random() < 0.5 else np.flatnonzero(rng.random(top + 3) < 0.7)
            runs = runs if runs.size else np.arange(1)
            entries.append(
                EntryRuns(int(rng.integers(0, 10**6)) * 100 + i, "m", "t", "recipe", 8, runs, rng.random(runs.size))
            )
        floor = int(rng.integers(1, 6))
        core, shared = shared_runs(entries, floor)
        core_ref, shared_ref = _step_by_step(entries, floor)
        assert [e.id for e in core] == [e.id for e in core_ref], trial
        assert shared.tolist() == shared_ref.tolist() and shared.dtype == shared_ref.dtype, trial
