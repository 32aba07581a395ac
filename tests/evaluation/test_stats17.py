"""stats17: the board's notes (settings.coverage, settings.boo_n_warning) describe the runs its entries have.

They were computed from the challenge's k (``ReportSettings.k_runs``) while every row decides from its own runs: a
results-only board of 74-run entries at k = 30 read "k = 30 < 10n = 50: no Boo_5 interval is shown" beside rows that
show one, and a board of 12-run entries at k = 60 quoted Boo_5's coverage at k = 50 beside rows that withhold it.
"""

from __future__ import annotations

import numpy as np

from evaluation.report import EntryRuns, ReportSettings, build_report


def _board(runs: list[int], **kw) -> dict:
    rng = np.random.default_rng(17)
    entries = [
        EntryRuns(i, f"m{i}", "t", "recipe", k, np.arange(k), 0.8 + 0.01 * i + 0.02 * rng.standard_normal(k))
        for i, k in enumerate(runs, start=1)
    ]
    return build_report(entries, ReportSettings(n_resamples=200, **kw))


def _notes(report: dict) -> dict:
    return {n["interval"]: n for n in report["settings"]["coverage"]}


def test_a_board_of_more_runs_than_k_says_its_boo_n_intervals_are_shown():
    report = _board([74, 74, 74], k_runs=30, boo_n=5, statistic="boo_n")
    assert all(r["boo_n"]["low"] is not None and r["rank_interval"] for r in report["entries"])
    notes = _notes(report)
    assert notes["recipe.boo_n"]["shown"] and notes["recipe.boo_n"]["coverage"] == 0.939
    assert notes["recipe.rank"]["shown"] and notes["recipe.rank"]["coverage"] is not None
    assert report["settings"]["boo_n_warning"] is None


def test_a_board_of_fewer_runs_than_k_quotes_no_coverage_of_intervals_it_withholds():
    report = _board([12, 12, 12], k_runs=60, boo_n=5, statistic="boo_n")
    assert all(r["boo_n"]["low"] is None and r["rank_interval"] is None for r in report["entries"])
    notes = _notes(report)
    assert not notes["recipe.boo_n"]["shown"] and "k = 12 < 10n = 50" in notes["recipe.boo_n"]["reason"]
    assert not notes["recipe.rank"]["shown"] and "k = 12" in notes["recipe.rank"]["reason"]
    assert report["settings"]["boo_n_warning"].startswith("12 runs for Boo_5: no interval")
    few = _board([5, 5], k_runs=30)  # the mean's interval from 6 runs
    assert all(r["mean"]["low"] is None for r in few["entries"])
    assert not _notes(few)["recipe.mean"]["shown"] and not _notes(few)["recipe.rank"]["shown"]


def test_a_board_of_mixed_run_counts_names_the_entries_without_a_boo_n_interval():
    report = _board([74, 74, 12], k_runs=30, boo_n=5, statistic="boo_n")
    shown = {r["runs_succeeded"]: r["boo_n"]["low"] is not None for r in report["entries"]}
    assert shown == {74: True, 12: False}
    assert _notes(report)["recipe.boo_n"]["shown"]
    warning = report["settings"]["boo_n_warning"]
    assert "1 of 3 entries" in warning and "12 runs" in warning and "10n = 50" in warning


def test_the_page_names_the_runs_the_notes_describe_not_the_challenge_k():
    from leaderboard.web.presenters import coverage_for_section

    page = coverage_for_section("recipe", _board([12, 12], k_runs=60)["settings"])
    assert page["coverage_k"] == 10 and page["board_k"] == 12


def test_a_lone_compared_entry_shows_no_rank_interval_where_the_note_says_none_is():
    """A board of one compared recipe entry showed the rank interval [1, 1] beside "k = 12 < 10n = 50: no rank interval
    on a board ranked by Boo_5" (and at 3 runs beside the mean board's "k = 3 < 6"): the rule withheld it only where
    two entries or more are compared (stats17's hunt)."""
    for runs, kw in ((12, dict(statistic="boo_n", boo_n=5, k_runs=30)), (3, dict(k_runs=3)), (60, dict(k_runs=30))):
        report = _board([runs], **kw)
        (row,) = report["entries"]
        note = _notes(report)["recipe.rank"]
        assert note["shown"] == (row["rank_interval"] is not None), (runs, note, row["rank_interval"])
    report = _board([74], k_runs=30, boo_n=5, statistic="boo_n")  # its own runs reach 10n: shown, and the note says so
    assert report["entries"][0]["rank_interval"] and _notes(report)["recipe.rank"]["shown"]
