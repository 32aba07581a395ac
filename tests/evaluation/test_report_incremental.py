"""Incremental report: rows of unchanged entries reused give the report a full recomputation gives."""

from __future__ import annotations

import json

import numpy as np

from evaluation.report import EntryRuns, ReportSettings, build_report, entry_fingerprint


def _entries(n: int, seed: int = 0) -> list[EntryRuns]:
    rng = np.random.default_rng(seed)
    return [
        EntryRuns(
            i + 1,
            f"m{i}",
            f"t{i}",
            "recipe",
            8,
            np.arange(8),
            0.7 + 0.004 * i + 0.01 * rng.standard_normal(8),
            valid=0.7 + 0.01 * rng.standard_normal(8),
        )
        for i in range(n)
    ]


def test_reusing_rows_of_unchanged_entries_gives_the_full_report():
    settings = ReportSettings(n_resamples=300, k_runs=8, boo_n=3, statistic="boo_n", master_seed=3)
    entries = _entries(30)
    before = json.loads(json.dumps(build_report(entries[:-1], settings)))
    prints = {e.id: entry_fingerprint(e) for e in entries[:-1]}
    changed = entries[5]
    entries[5] = EntryRuns(
        changed.id, changed.name, changed.team, "recipe", 8, changed.run_index, changed.test + 0.05, valid=changed.valid
    )
    reuse = {
        row["submission_id"]: row
        for row in before["entries"]
        if prints.get(row["submission_id"])
        == entry_fingerprint(next(e for e in entries if e.id == row["submission_id"]))
    }
    assert entries[5].id not in reuse and len(reuse) == 28
    full = json.loads(json.dumps(build_report(entries, settings)))
    incremental = json.loads(json.dumps(build_report(entries, settings, reuse=reuse)))
    assert incremental == full


def test_fingerprint_sees_runs_and_names():
    e = _entries(1)[0]
    same = EntryRuns(e.id, e.name, e.team, e.kind, 8, e.run_index.copy(), e.test.copy(), valid=e.valid.copy())
    renamed = EntryRuns(e.id, "other", e.team, e.kind, 8, e.run_index, e.test, valid=e.valid)
    assert entry_fingerprint(e) == entry_fingerprint(same) != entry_fingerprint(renamed)


def test_a_new_entry_updates_the_rank_intervals_exactly():
    """The previous report's rank intervals, shifted where a newcomer cannot cross them, equal a full run."""
    for statistic, position in (("mean", 0.0), ("boo_n", 0.06), ("mean", 0.2)):
        settings = ReportSettings(n_resamples=300, k_runs=8, boo_n=2, statistic=statistic, master_seed=3)  # 8 >= 3n
        entries = _entries(40)
        newcomer = EntryRuns(
            99,
            "new",
            "t-new",
            "recipe",
            8,
            np.arange(8),
            0.7 + position + 0.01 * np.random.default_rng(7).standard_normal(8),
            valid=entries[0].valid,
        )
        before = json.loads(json.dumps(build_report(entries, settings)))
        reuse = {row["submission_id"]: row for row in before["entries"]}
        full = json.loads(json.dumps(build_report([*entries, newcomer], settings)))
        incremental = json.loads(json.dumps(build_report([*entries, newcomer], settings, reuse=reuse, previous=before)))
        assert incremental == full


def test_a_boo_1_board_with_prediction_entries_updates_as_it_is_built():
    """Boo_1 shows the mean's interval on every row (rows.boo_1_as_the_mean): a reused recipe row keeps its own, a
    prediction entry's is taken from its mean's after the section (never reused); the update equals a full build."""
    rng = np.random.default_rng(4)
    settings = ReportSettings(n_resamples=300, k_runs=8, boo_n=1, statistic="boo_n", master_seed=3)
    entries = _entries(6) + [
        EntryRuns(i, f"p{i}", "t", "recipe", 4, np.arange(4), 0.7 + 0.01 * rng.standard_normal(4)) for i in (50, 51)
    ]
    for i, files in ((60, 1), (61, 3), (62, 8)):
        outcomes = (rng.random((files, 120)) < 0.9).astype(float)
        entries.append(
            EntryRuns(i, f"q{i}", "t", "predictions", files, np.arange(files), outcomes.mean(1), outcomes=outcomes)
        )
    before = json.loads(json.dumps(build_report(entries[1:], settings)))
    reuse = {row["submission_id"]: row for row in before["entries"]}
    full = json.loads(json.dumps(build_report(entries, settings)))
    assert json.loads(json.dumps(build_report(entries, settings, reuse=reuse))) == full
    for row in full["entries"]:
        interval = [row["mean"][key] for key in ("low", "high", "method", "source")]
        assert [row["boo_n"].get(key) for key in ("low", "high", "method", "source")] == interval, row["method_name"]
