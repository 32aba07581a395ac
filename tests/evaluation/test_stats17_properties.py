"""stats17's hunt: random boards around Boo_n's 10n threshold, and what a reader relies on there.

Boards (:func:`threshold_boards`): 2 to 7 recipe entries of 5 to 60 runs (often 10n - 1, 10n or 10n + 1), each on a
prefix of the seeds or a random subset of 70 (partial overlap), with or without validation scores; Boo_n's n in 2..5;
ranked by Boo_n or the mean; higher or lower is better; the challenge's k anywhere in 5..60, unrelated to the runs.

Invariants: a row shows a Boo_n interval iff its runs >= 10n (the mean's iff >= 6); the board's notes
(``settings.coverage``, ``settings.boo_n_warning``) say an interval is shown iff some row shows it; no rank interval
where the rank note says none is; every interval holds its estimate; a rank interval holds the rank shown; verdicts,
order, letters, leader group and ``compare`` agree in direction (the helpers of test_board_properties).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evaluation.boards import publish_rounded, shown_entries
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.comparisons import compare
from evaluation.report.sections import runs_for_rank_interval
from evaluation.stats.boon import min_runs_for_interval
from leaderboard.web.presenters import coverage_for_section
from tests.evaluation.test_board_properties import PROPERTY, _assert_one_relation, _inside, _rows

SEEDS = 70


@st.composite
def threshold_boards(draw):
    n = draw(st.integers(2, 5))
    need = min_runs_for_interval(n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    valid_mode = draw(st.sampled_from(["all", "none", "some"]))
    entries = []
    for i in range(1, draw(st.integers(2, 7)) + 1):
        k = draw(st.one_of(st.integers(5, 60), st.sampled_from([need - 1, need, need + 1])))
        k = min(max(k, 5), 60)
        index = np.arange(k) if draw(st.booleans()) else np.sort(rng.choice(SEEDS, k, replace=False))
        centre, spread = draw(st.integers(20, 44)), draw(st.integers(0, 8))
        test = rng.integers(centre - spread, centre + spread + 1, size=k) / 64.0
        with_valid = valid_mode == "all" or (valid_mode == "some" and draw(st.booleans()))
        valid = rng.integers(centre - 6, centre + 7, size=k) / 64.0 if with_valid else None
        if with_valid and draw(st.integers(0, 4)) == 0:  # a run without a validation score: left out of the entry
            valid[rng.integers(k)] = np.nan
        entries.append(EntryRuns(i, f"m{i}", f"t{i}", "recipe", k, index, test, valid=valid))
    examples = draw(st.integers(20, 40))
    for j in range(draw(st.integers(0, 2))):  # prediction entries of 1 to 60 files: Boo_n's interval from 10n files
        files = draw(st.one_of(st.integers(1, 60), st.sampled_from([need - 1, need])))
        outcomes = (rng.random((files, examples)) < draw(st.sampled_from([0.5, 0.7, 0.9]))).astype(float)
        entries.append(
            EntryRuns(
                100 + j, f"p{j}", "tp", "predictions", files, np.arange(files), outcomes.mean(axis=1), outcomes=outcomes
            )
        )
    report_settings = ReportSettings(
        higher_is_better=draw(st.booleans()),
        boo_n=n,
        statistic=draw(st.sampled_from(["mean", "boo_n"])),
        n_resamples=120,
        k_runs=draw(st.integers(5, 60)),
        master_seed=draw(st.integers(0, 2**31)),
        neighbours=3,
    )
    return entries, report_settings


def _shows(interval: dict) -> bool:
    return interval.get("low") is not None


@PROPERTY
@given(threshold_boards())
def test_rows_and_the_board_s_notes_agree_around_10n(board):
    entries, s = board
    report = build_report(entries, s)
    rows = _rows(report)
    need = min_runs_for_interval(s.boo_n)
    for row in rows.values():
        runs = row["runs_succeeded"]
        if runs < 2:
            continue
        assert _shows(row["boo_n"]) == (runs >= need), (row["submission_id"], runs, need)
        assert _shows(row["boo_n_unbiased"]) == (runs >= need), (row["submission_id"], runs, need)
        if row["kind"] == "recipe":  # a prediction entry's mean has the test set's interval
            assert _shows(row["mean"]) == (runs >= 6), (row["submission_id"], runs)
    notes = {note["interval"]: note for note in report["settings"]["coverage"]}
    every = all(_shows(row["boo_n"]) for row in rows.values() if row["runs_succeeded"] >= 2)
    assert (report["settings"]["boo_n_warning"] is None) == every, report["settings"]["boo_n_warning"]
    rows = {sid: row for sid, row in rows.items() if row["kind"] == "recipe"}
    page = coverage_for_section("recipe", report["settings"])
    ranked = [row for row in rows.values() if row["rank_interval"]]
    # the page's "No rank interval" line: the board's (none ranked), or the entries of too few runs outside the core
    # (stats21: "recipe.rank_runs"), every unranked compared row of fewer runs than a rank interval needs
    need_rank = runs_for_rank_interval(s.statistic, s.boo_n)
    unranked = [row for row in rows.values() if row.get("compared") and not row["rank_interval"]]
    assert page["rank_withheld"] is None or not ranked or all(r["runs_succeeded"] < need_rank for r in unranked)
    assert (page["rank_withheld"] is not None) == bool(unranked), (page["rank_withheld"], len(unranked))
    if any(note["label"] == "Boo_n" for note in page["coverage_short"]):
        assert any(_shows(row["boo_n"]) for row in rows.values())
    for key, statistic in (
        ("recipe.boo_n", "boo_n"),
        ("recipe.boo_n_unbiased", "boo_n_unbiased"),
        ("recipe.mean", "mean"),
    ):
        shown = any(_shows(row[statistic]) for row in rows.values())
        assert notes[key]["shown"] == shown, (key, notes[key], [r["runs_succeeded"] for r in rows.values()])
        assert (notes[key]["coverage"] is None) or shown, key
    assert notes["recipe.rank"]["shown"] or not ranked, (notes["recipe.rank"], len(ranked))


@PROPERTY
@given(threshold_boards())
def test_intervals_hold_their_estimates_and_rank_intervals_their_ranks_around_10n(board):
    entries, s = board
    report = build_report(entries, s)
    for sid, row in _rows(report).items():
        test = np.asarray([x for x in row["run_scores"] if x is not None])
        for statistic in ("mean", "boo_n", "boo_n_unbiased"):
            low, high = (0.0, 1.0) if row["kind"] == "predictions" and statistic == "mean" else (test.min(), test.max())
            _inside(row[statistic], low, high, f"{statistic} of {sid}")
        interval = row["rank_interval"]
        if interval:
            assert interval["low"] <= row["rank"] <= interval["high"], (sid, row["rank"], interval)
            (section,) = [x for x in report["sections"] if sid in x["compared"]]
            assert 1 <= interval["low"] and interval["high"] <= len(section["compared"])


@PROPERTY
@given(threshold_boards())
def test_verdicts_order_letters_leaders_and_compare_agree_around_10n(board):
    entries, s = board
    report = build_report(entries, s)
    rows = _rows(report)
    by_id = {e.id: e for e in entries}
    (section,) = [x for x in report["sections"] if x["kind"] == "recipe"]
    compared = section["compared"]
    if len(compared) < 2 or section.get("groups_note") is not None:
        return
    power = (section.get("runs_needed") or {}).get("for_power")
    for row in rows.values():  # 0 more runs where it has the runs the power target asks, decided or not (by design)
        if power is not None and row["kind"] == "recipe" and row["runs_succeeded"] >= power:
            assert row["runs_needed_for_decision"] == 0
            row["runs_needed_for_decision"] = None
    relation = _assert_one_relation(section, rows)
    family = len(compared) * (len(compared) - 1) // 2
    flagged = {frozenset((inv["above"], inv["below"])) for inv in section.get("inversions", [])}
    for winner, loser in relation:
        win, lose = rows[winner]["rank_interval"], rows[loser]["rank_interval"]
        if win and lose and frozenset((winner, loser)) not in flagged:
            assert win["low"] <= lose["high"], (winner, loser, win, lose)
        if np.intersect1d(by_id[winner].run_index, by_id[loser].run_index).size < 2:
            continue
        pair = compare(by_id[winner], by_id[loser], s, family_size=family)
        assert pair["p"] >= 0.5, (winner, loser, pair["p"], pair["verdict"])
        if pair["verdict"] in ("a_better", "b_better"):
            assert pair["better"] == winner, (winner, loser, pair)


@PROPERTY
@given(threshold_boards(), st.sampled_from([1, 2]))
def test_a_rounded_board_around_10n_keeps_the_rows_and_notes_agreeing(board, digits):
    """Under rounded feedback (evaluation.boards.publish_rounded, built from the shown runs): a rank interval only where
    the rank note says one is shown, each holding its rank; every interval holding its (rounded) estimate."""
    entries, s = board
    report = publish_rounded(
        build_report(shown_entries(entries, digits), s), digits, higher_is_better=s.higher_is_better
    )
    notes = {note["interval"]: note for note in report["settings"]["coverage"]}
    for row in report["entries"]:
        interval = row["rank_interval"]
        if row["kind"] == "recipe" and interval:
            assert notes["recipe.rank"]["shown"], (row["submission_id"], interval, notes["recipe.rank"])
        if interval:
            assert interval["low"] <= row["rank"] <= interval["high"], (row["submission_id"], row["rank"], interval)
        for statistic in ("mean", "boo_n", "boo_n_unbiased"):
            value = row[statistic]
            if value.get("low") is not None and value["estimate"] is not None:
                assert value["low"] <= value["estimate"] <= value["high"], (row["submission_id"], statistic, value)


@PROPERTY
@given(threshold_boards())
def test_an_incremental_update_around_10n_is_the_full_report(board):
    """A newcomer (the board's last recipe entry) added to the stored report of the others, their rows reused and the
    rank intervals updated from it (build_report's ``reuse`` and ``previous``), gives the full report, notes too."""
    import json

    entries, s = board
    recipes = [e for e in entries if e.kind == "recipe"]
    if len(recipes) < 3:
        return
    newcomer = recipes[-1]
    before = json.loads(json.dumps(build_report([e for e in entries if e is not newcomer], s)))
    reuse = {row["submission_id"]: row for row in before["entries"] if row["kind"] == "recipe"}
    full = json.loads(json.dumps(build_report(entries, s)))
    incremental = json.loads(json.dumps(build_report(entries, s, reuse=reuse, previous=before)))
    assert incremental == full
