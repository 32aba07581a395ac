"""The leaderboard report against a JSON written by an earlier version.

``data/report_golden.json`` holds the reports of the synthetic entries below under a few
settings, as built by ``build_report`` for report format 6 (format 6: the number only; regenerated for issue 26: rows' ``secondary``, settings'
``secondary_metrics``, no number moved; for issue 27: settings.computed_on; for issue 23: pairs
decided on their shared seeds, intervals inside their bootstrap's support, the
dependence-aware state of the art, no rank interval on a Boo_n board below 3n runs and the coverage
table's P(A>B) averaged over its truth; then the mean's ``warning``, the unbiased Boo_n's bootstrap-t centred at
eq. 7 and a mean board's rank coverage, then the rank note flagged by its range over three board shapes; a prediction entry of several RMSE files showing its pooled score (format 9); ties relative only, the state of the art of several files and of a far runner-up, each entry's files resampled from its own stream (format 11); format 18, 19 and 20: the number only; format 21: ``sota.beaten_by``, null on every board here (added to the file, nothing regenerated); format 22, 23 and 24: the number only; format 29: `boo_n.picked_on` and `settings.boo_n_picked_note` added (regenerated, nothing else changed); format 25: Boo_n's interval from 10n runs, not 3n (the entries' Boo_3 intervals of 10 runs become null
with the reason, the coverage notes quote the figures measured at the first k shown); format 27 and 28: the number only; format 30: a prediction entry of 2 to 5 files has no rank interval, the others place it as their pair verdicts do, and ``settings.coverage`` gains the ``predictions.rank`` note (regenerated: only those keys moved); format 31: the prediction coverage notes' label and reason on a non-accuracy board (regenerated: only those strings moved); format 32: the number only (no recipe entry here has fewer than 6 runs outside the core); format 33: the number only; format 34: a board ranked by the mean shows no rank interval below 16 paired runs (regenerated: the rank intervals of the mean boards here, of 8 and 11 runs, become null and their ``recipe.rank`` note not shown, with the reason; other floats moved in their last bits only, this machine's sums); format 35: ``settings.coverage`` quotes the prediction board's rank intervals where shown (``predictions.rank``, flagged with its range over the board shapes; regenerated: only those notes moved); format 36: a prediction entry of one file on fewer than 500 test examples, or of 2 to 15 files, has no rank interval (regenerated: the prediction boards here, one file on 250 examples and 2 or 3 files, show none, and their ``predictions.rank`` notes say why); first
written at commit 3899679). Refactoring must not move the report: every
key, string, integer, boolean, null, group letter and list length must be identical, and
every float equal to 1e-12 relative. Not bit for bit: numpy picks its summation kernels by
the CPU's instruction set (AVX2, AVX-512), so the same code moves the last one or two bits
of a sum from one machine to another (seen between the machine that wrote the file and CI's).
A refactoring mistake moves a Monte Carlo figure by far more than 1e-12.

Regenerate (only when the report is meant to change, with a REPORT_FORMAT bump)::

    .venv/bin/python -m tests.evaluation.test_report_golden
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from evaluation.report import EntryRuns, ReportSettings, build_report

GOLDEN = Path(__file__).with_name("data") / "report_golden.json"


def _entries() -> list[EntryRuns]:
    rng = np.random.default_rng(2026)
    entries = []
    for i in range(5):  # recipes: seed-paired runs, one with a gap, one too short
        test = 0.70 + 0.01 * i + 0.012 * rng.standard_normal(12)
        valid = test + 0.005 * rng.standard_normal(12)
        index = np.arange(12)
        if i == 3:
            test, valid, index = test[1:], valid[1:], index[1:]
        entries.append(
            EntryRuns(
                i + 1,
                f"recipe{i}",
                f"team{i % 2}",
                "recipe",
                12,
                index,
                test,
                valid=valid,
                created=f"2026-01-0{i + 1}T00:00:00",
            )
        )
    entries.append(EntryRuns(6, "lonely", "t", "recipe", 12, np.arange(1), np.array([0.9])))
    entries.append(EntryRuns(7, "tied", "team0", "recipe", 12, np.arange(12), entries[0].test.copy()))
    for i in range(4):  # predictions: 1 to 3 files each, per-example correctness
        k = 1 + i % 3
        outcomes = (rng.random((k, 250)) < 0.72 + 0.03 * i).astype(float)
        entries.append(
            EntryRuns(
                20 + i,
                f"pred{i}",
                "team2",
                "predictions",
                k,
                np.arange(k),
                outcomes.mean(axis=1),
                outcomes=outcomes,
                in_progress=i == 1,
            )
        )
    entries.append(
        EntryRuns(30, "short", "t", "predictions", 1, np.arange(1), np.array([0.5]), outcomes=np.ones((1, 100)) * 0.5)
    )
    return entries


def _loss_entries() -> list[EntryRuns]:
    rng = np.random.default_rng(7)
    entries = []
    for i, scale in enumerate((0.5, 0.55, 0.8)):
        squared = rng.gamma(2.0, scale, size=(2, 300))
        entries.append(
            EntryRuns(
                i + 1, f"r{i}", "t", "predictions", 2, np.arange(2), np.sqrt(squared.mean(axis=1)), outcomes=squared
            )
        )
    test = 1.0 + 0.05 * rng.standard_normal((3, 8))
    entries += [EntryRuns(10 + i, f"loss{i}", "t", "recipe", 8, np.arange(8), test[i]) for i in range(3)]
    return entries


SETTINGS = {
    "default": (_entries, dict(n_resamples=300, k_runs=12, boo_n=4)),
    "boo_n_bonferroni": (
        _entries,
        dict(
            n_resamples=257,
            k_runs=12,
            boo_n=5,
            statistic="boo_n",
            correction="bonferroni",
            gamma=0.7,
            alpha=0.1,
            m_total_recipes=40,
        ),
    ),
    "accuracy_bh": (
        _entries,
        dict(
            n_resamples=200,
            boo_n=5,
            accuracy_like=True,
            m_total_predictions=30,
            correction="bh",
            beta=0.2,
            curve_max_n=5,
        ),
    ),
    "loss_none": (
        _loss_entries,
        dict(
            n_resamples=301,
            boo_n=5,
            higher_is_better=False,
            metric_from_mean=np.sqrt,
            correction="none",
            m_total_predictions=9,
            alpha=0.01,
        ),
    ),
}


def golden_reports() -> dict[str, dict]:
    out = {}
    for name, (make, fields) in SETTINGS.items():
        out[name] = build_report(make(), ReportSettings(master_seed=97, **fields))
    return out


def _dumps(data) -> str:
    return json.dumps(data, allow_nan=False, sort_keys=True, indent=1)


RELATIVE_TOLERANCE = 1e-12


def differences(actual, expected, path: str = "") -> list[str]:
    """Where ``actual`` departs from ``expected`` (JSON values): exact but for floats (1e-12 relative)."""
    if isinstance(expected, float) and isinstance(actual, float):
        close = math.isclose(actual, expected, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-300)
        return [] if close else [f"{path}: {actual!r} != {expected!r}"]
    if type(actual) is not type(expected):
        return [f"{path}: {type(actual).__name__} {actual!r} != {type(expected).__name__} {expected!r}"]
    if isinstance(expected, dict):
        if set(actual) != set(expected):
            return [f"{path}: keys {sorted(set(actual) ^ set(expected))} differ"]
        return [d for key in expected for d in differences(actual[key], expected[key], f"{path}.{key}")]
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"{path}: length {len(actual)} != {len(expected)}"]
        return [d for i, (a, e) in enumerate(zip(actual, expected)) for d in differences(a, e, f"{path}[{i}]")]
    return [] if actual == expected else [f"{path}: {actual!r} != {expected!r}"]


def test_report_matches_the_golden_json():
    expected = json.loads(GOLDEN.read_text())
    actual = json.loads(_dumps(golden_reports()))
    assert sorted(actual) == sorted(SETTINGS)
    for name in SETTINGS:
        assert differences(actual[name], expected[name], name) == []


def test_the_golden_comparison_catches_a_moved_figure_and_a_changed_group():
    report = json.loads(_dumps(golden_reports()["default"]))
    moved = json.loads(json.dumps(report))
    moved["entries"][0]["mean"]["estimate"] *= 1 + 1e-9
    moved["entries"][1]["groups"] = "zz"
    found = differences(moved, report)
    assert len(found) == 2 and ".mean.estimate" in found[0] and ".groups" in found[1]
    assert differences(report, report) == []


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(_dumps(golden_reports()) + "\n")
    print(f"wrote {GOLDEN}")
