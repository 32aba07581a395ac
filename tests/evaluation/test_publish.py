"""The publish rule under rounded feedback (evaluation.boards; issue 21): what a reader gets is a function of the
shown values only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.boards import (
    float_precision,
    publish_rounded,
    rounded_tie_reason,
    shown_entries,
    shown_run_scores,
    shown_submission_score,
)
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.report.comparisons import compare, section_pairs
from evaluation.stats.groups import split_letters


def test_shown_submission_score_is_the_rounded_mean_of_the_shown_runs():
    """The rounded board is computed from the runs' shown scores (shown_entries), so the submission's score is
    round(mean(round(run))): ARCHITECTURE.md's runs 0.8149 and 0.8201 show 0.81 and 0.82, whose mean 0.815 is
    rounded again (never published with its third digit): half-way, to the even 0.82 (``shown_score``). Runs
    0.8149, 0.8149 and 0.8249 show 0.81, 0.81 and 0.82, whose mean 0.8133 shows 0.81, where the exact runs' mean
    0.8182 would show 0.82, a number the shown runs do not give (as it was before)."""
    assert np.mean([round(0.8149, 2), round(0.8201, 2)]) == pytest.approx(0.815)
    assert shown_submission_score([0.8149, 0.8201], "rounded", 2) == 0.82
    assert shown_submission_score([0.8149, 0.8149, 0.8249], "rounded", 2) == 0.81
    assert round(float(np.mean([0.8149, 0.8149, 0.8249])), 2) == 0.82
    assert shown_submission_score([0.8149, 0.8251], "rounded", 2) == 0.82
    assert shown_submission_score([0.8149, 0.8201], "exact", 2) == pytest.approx(0.8175)
    assert shown_submission_score([0.8149, None], "rounded", 2) == 0.81
    assert shown_submission_score([], "rounded", 2) is None
    assert shown_submission_score([0.5], "ladder", 2) is None
    with pytest.raises(ValueError, match="feedback"):
        shown_submission_score([0.5], "fuzzy", 2)


@pytest.mark.parametrize("runs", [[0.95] * 3, [0.1] * 3, [0.7] * 6, [0.9, 1.0], [0.85] * 7])
def test_shown_submission_score_under_exact_feedback_is_the_runs_value_without_summation_noise(runs):
    """A reviewer: the API gave a submission's score as 0.9499999999999998 while its three runs showed 0.95
    (np.mean([0.95] * 3)). The exact score is the mean to 15 significant digits, as the runs show it."""
    assert shown_submission_score(runs, "exact", 3) == float(f"{np.mean(runs):.15g}") == round(np.mean(runs), 12)
    assert shown_submission_score([0.95] * 3, "exact", 3) == 0.95
    pooled = shown_submission_score([0.3] * 3, "exact", 3, pool=lambda s: np.sqrt(np.mean(np.square(s))))
    assert pooled == 0.3  # an RMSE entry's files pooled (quadratic mean) as well
    assert float_precision(0.8175) == 0.8175 and float_precision(1 / 3) == 0.333333333333333


def _probes(n_rows=60, n_probes=5, seed=0):
    """A base entry and one-row probes: each flips one public row, so the exact scores differ by 1/n_rows."""
    rng = np.random.default_rng(seed)
    base = np.zeros(n_rows)
    base[rng.choice(n_rows, 7, replace=False)] = 1.0  # 7/60 ≈ 0.117 and a fixed row's 8/60 ≈ 0.133 both show 0.1
    entries = [
        EntryRuns(1, "base", "t", "predictions", 1, np.arange(1), np.array([base.mean()]), outcomes=base[:, None].T)
    ]
    for j in range(n_probes):
        probe = base.copy()
        row = int(np.flatnonzero(base == 0)[j])
        probe[row] = 1.0 if j % 2 == 0 else 0.0  # even probes "fix" a row, odd ones change nothing
        entries.append(
            EntryRuns(
                2 + j,
                f"probe{j}",
                "t",
                "predictions",
                1,
                np.arange(1),
                np.array([probe.mean()]),
                outcomes=probe[None, :],
            )
        )
    return entries


def test_probes_that_round_alike_tie_and_are_not_compared():
    entries = _probes()
    exact = build_report(entries, ReportSettings(n_resamples=200, k_runs=1, master_seed=3, boo_n=1))
    exact_values = {row["submission_id"]: row["ranking_value"] for row in exact["entries"]}
    assert len(set(exact_values.values())) > 1  # the exact scores differ
    assert {round(v, 1) for v in exact_values.values()} == {0.1}  # ... but all show 0.1
    names = {row["submission_id"]: row["method_name"] for row in exact["entries"]}
    assert section_pairs(exact["sections"][0], names)  # the exact report compares them
    assert len({row["rank"] for row in exact["entries"]}) > 1  # ... and ranks them apart
    shown = publish_rounded(exact, 1, higher_is_better=True)
    rows = {row["submission_id"]: row for row in shown["entries"]}
    assert {row["rank_display"] for row in rows.values()} == {"=1"}
    assert {row["ranking_value"] for row in rows.values()} == {0.1}
    assert len({row["groups"] for row in rows.values()}) == 1
    assert len({repr(row["rank_interval"]) for row in rows.values()}) == 1
    assert all(row["runs_needed_for_decision"] is None for row in rows.values())
    # Order among the tie is public (created, then id), not the exact score.
    assert [row["submission_id"] for row in shown["entries"]] == sorted(rows)
    section = shown["sections"][0]
    assert section["entries"] == sorted(rows) and section["leader_group"] == sorted(rows)
    assert section_pairs(section, {sid: rows[sid]["method_name"] for sid in rows}) == []


def test_different_shown_values_keep_their_order_and_no_prediction_comparison():
    """Prediction entries on a rounded board are ranked by their shown score; their comparison (from each test
    row's outcome) is not published, and each row says why."""
    a = EntryRuns(
        1,
        "low",
        "t",
        "predictions",
        1,
        np.arange(1),
        np.array([0.2]),
        outcomes=(np.arange(100) < 20).astype(float)[None, :],
    )
    b = EntryRuns(
        2,
        "high",
        "t",
        "predictions",
        1,
        np.arange(1),
        np.array([0.9]),
        outcomes=(np.arange(100) < 90).astype(float)[None, :],
    )
    shown = publish_rounded(
        build_report([a, b], ReportSettings(n_resamples=200, k_runs=1, master_seed=3, boo_n=1)),
        1,
        higher_is_better=True,
    )
    assert [(row["submission_id"], row["rank_display"]) for row in shown["entries"]] == [(2, "1"), (1, "2")]
    assert section_pairs(shown["sections"][0], {1: "low", 2: "high"}) == [] and shown["sections"][0]["compared"] == []
    assert all("prediction entries are ranked by their shown score" in r["excluded_reason"] for r in shown["entries"])
    assert "bootstrap" not in shown["sections"][0]["label"] and "shown score" in shown["sections"][0]["label"]
    # lower is better: the order flips
    shown = publish_rounded(
        build_report([a, b], ReportSettings(n_resamples=200, k_runs=1, master_seed=3, boo_n=1, higher_is_better=False)),
        1,
        higher_is_better=False,
    )
    assert [row["submission_id"] for row in shown["entries"]] == [1, 2]


def test_tie_reason_names_the_digits():
    assert "rounded to 1 digit:" in rounded_tie_reason(1)
    assert "rounded to 3 digits" in rounded_tie_reason(3)


def _recipe(i, name, scores, created):
    scores = np.asarray(scores, dtype=float)
    return EntryRuns(i, name, "t", "recipe", 10, np.arange(scores.size), scores, created=created)


@pytest.mark.parametrize("exact", [(0.812, 0.814), (0.814, 0.812)])
def test_entries_not_ranked_are_listed_and_led_in_a_public_order(exact):
    """Review: two one-run entries (not compared) showing 0.81 kept the exact order, and the state of the art
    named the exactly better one. Swapping their exact scores must change nothing published."""
    entries = [_recipe(1, "A", [exact[0]], "2024-01-01"), _recipe(2, "B", [exact[1]], "2024-01-02")]
    data = publish_rounded(build_report(entries, ReportSettings(n_resamples=100, k_runs=10, master_seed=3, boo_n=1)), 2)
    (section,) = data["sections"]
    assert section["entries"] == [1, 2] and [row["submission_id"] for row in data["entries"]] == [1, 2]
    assert section["sota"]["submission_id"] == 1 and section["sota"]["raw"] == 0.81


def test_no_order_note_or_rounded_setting_is_published_between_tied_entries():
    """Review: an inversion ("A is shown above B despite a worse ranking statistic: it beats it on P(A>B)") between
    two entries both showing 0.8 told their exact order and their comparison; sota.alpha read 0.1 at one digit."""
    k = 20
    base = 0.80 + 0.001 * np.random.default_rng(1).standard_normal(k)
    a = base + 0.002
    a[0] = base[0] - 0.10
    entries = [_recipe(1, "A", a, "2024-01-01"), _recipe(2, "B", base, "2024-01-02")]
    report = build_report(entries, ReportSettings(n_resamples=500, k_runs=k, master_seed=3, boo_n=1))
    assert report["sections"][0]["inversions"]  # the exact board has one
    data = publish_rounded(report, 1)
    (section,) = data["sections"]
    assert [row["rank_display"] for row in data["entries"]] == ["=1", "=1"]
    assert section["inversions"] == [] and section["comparisons"] == []
    assert all(row["group_letters"] == list(row["groups"]) for row in data["entries"])  # the block's, not its own
    assert section["sota"]["alpha"] == 0.05 and section["sota"]["bound_side"] is None


def _recipe_world(shift: float) -> list[EntryRuns]:
    """Three recipe entries of 12 seed-paired runs; ``shift`` moves the second entry's runs inside their rounding
    cells (each run shows the same at 2 digits), as a one-row probe moves a run's exact score."""
    rng = np.random.default_rng(4)
    cells = [np.round(0.80 + 0.02 * rng.standard_normal(12), 2) for _ in range(3)]
    cells[1] = cells[1] + shift  # |shift| < 0.005: every run of entry 2 still rounds to its cell
    return [_recipe(i + 1, f"m{i}", runs, f"2026-01-0{i + 1}") for i, runs in enumerate(cells)]


def test_a_rounded_recipe_board_moves_no_number_when_no_shown_run_score_moves():
    """Found by a two-worlds crawl (docs/integrity.md): statistics computed from the exact runs and rounded
    afterwards (a Boo_n limit, P(A>B), a rank interval) moved across a rounding step while every shown score
    stayed. The board is now computed from the shown per-run scores (shown_entries)."""
    settings = ReportSettings(n_resamples=300, k_runs=12, master_seed=5, statistic="boo_n", boo_n=3)

    def published(entries):
        return json.dumps(publish_rounded(build_report(entries, settings), 2), sort_keys=True)

    worlds = [_recipe_world(shift) for shift in (-0.0049, 0.0, 0.0049)]
    assert all(
        [shown_run_scores(e.test, 2).tolist() for e in world]
        == [shown_run_scores(e.test, 2).tolist() for e in worlds[1]]
        for world in worlds
    )
    shown = {published(shown_entries(world, 2)) for world in worlds}
    assert len(shown) == 1  # one board for all three worlds
    exact = {published(world) for world in worlds}
    assert len(exact) > 1  # built from the exact runs, the same probes moved published numbers (the old leak)


def test_a_rounded_board_keeps_its_published_verdicts_order():
    """Found by a statistician: A beats B on 11 of 12 seeds, B shows the higher mean (one seed 0.30 up). The exact
    board puts A first and flags the inversion of the statistic; the rounded board listed B first, its leader,
    with the published verdict 'A better' unflagged. It now orders by shown value with the published verdicts
    applied, as the exact board does, and flags what it moves."""
    base = np.array([0.70, 0.72, 0.71, 0.73, 0.69, 0.74, 0.70, 0.72, 0.71, 0.73, 0.70, 0.72])
    b = base - 0.01
    b[0] = base[0] + 0.30
    entries = [
        EntryRuns(1, "A", "t1", "recipe", 12, np.arange(12), base),
        EntryRuns(2, "B", "t2", "recipe", 12, np.arange(12), b),
    ]
    report_settings = ReportSettings(n_resamples=200, k_runs=12, statistic="mean")
    exact = build_report(entries, report_settings)["sections"][0]
    rounded = publish_rounded(build_report(shown_entries(entries, 2), report_settings), 2)
    section = rounded["sections"][0]
    rows = {row["submission_id"]: row for row in rounded["entries"]}
    (pair,) = section["comparisons"]
    assert pair["better"] == 1 and pair["inversion"]  # A better, flagged
    assert section["entries"] == exact["entries"] == [1, 2] and section["leader_group"] == exact["leader_group"] == [1]
    assert [(inv["above"], inv["below"], inv["kind"]) for inv in section["inversions"]] == [(1, 2, "statistic")]
    assert rows[1]["mean"]["estimate"] < rows[2]["mean"]["estimate"] and (rows[1]["rank"], rows[2]["rank"]) == (1, 2)


def test_a_rounded_board_s_published_verdicts_read_from_its_published_numbers():
    """Found by a statistician: rounded to the board's digits, a "better" pair showed its interval starting at 0.5
    and its adjusted p-value equal to alpha (13 of 400 random boards; 0.50012 and 0.04986 before rounding, at the
    default 3 digits too), against the rule low > 1/2 and p < alpha. A pair's numbers, functions of the shown run
    scores like the rest, keep their precision."""
    checked = 0
    for seed in (19, 138, *range(20)):
        rng = np.random.default_rng(seed)
        k, n, digits = int(rng.integers(6, 40)), int(rng.integers(2, 6)), int(rng.choice([1, 2, 3]))
        entries = [
            EntryRuns(
                i + 1,
                f"m{i}",
                "t",
                "recipe",
                k,
                np.arange(k),
                np.clip(0.7 + 0.01 * i + 0.02 * rng.standard_normal(k), 0, 1),
                created=str(i),
            )
            for i in range(n)
        ]
        settings = ReportSettings(n_resamples=200, k_runs=k, master_seed=seed)
        published = publish_rounded(build_report(shown_entries(entries, digits), settings), digits)
        for pair in published["sections"][0]["comparisons"]:
            if pair["verdict"] in ("a_better", "b_better"):
                low = pair["low"] if pair["better"] == pair["a"] else 1 - pair["high"]
                assert low > 0.5 and pair["pvalue"] < settings.alpha, (seed, pair)
                checked += 1
    assert checked >= 10


def test_a_rounded_tie_shares_no_letter_with_an_entry_a_published_verdict_separates_it_from():
    """Found by a statistician: B and C tie at a shown 0.80, C beats D on all 12 seeds and B does not; the tie block
    took the union of its letters, so C showed 'ab' and shared 'b' with D beside the published "C better than D".
    Each tied entry now keeps its own letters (redone from the published relation, ties sharing one)."""
    k = 12
    d = np.tile([0.78, 0.79, 0.80], 4)
    runs = {"B": np.where(np.arange(k) % 2 == 0, 0.70, 0.90), "C": d + 0.01, "D": d}
    entries = [
        EntryRuns(i, name, "t" + name, "recipe", k, np.arange(k), x, created=f"2024-01-0{i}")
        for i, (name, x) in enumerate(runs.items(), 1)
    ]
    data = publish_rounded(build_report(shown_entries(entries, 2), ReportSettings(n_resamples=500, k_runs=k)), 2)
    rows = {row["method_name"]: row for row in data["entries"]}
    assert rows["B"]["rank_display"] == rows["C"]["rank_display"] == "=1"
    letters = {name: set(split_letters(row["groups"])) for name, row in rows.items()}
    decided = [p for p in data["sections"][0]["comparisons"] if p["verdict"] in ("a_better", "b_better")]
    assert decided, "the board publishes C's verdict over D"
    for pair in decided:
        a, b = (
            next(r["method_name"] for r in rows.values() if r["submission_id"] == sid) for sid in (pair["a"], pair["b"])
        )
        assert not letters[a] & letters[b], (a, b, letters)
    assert letters["B"] & letters["C"] and letters["B"] & letters["D"]  # the tie shares; B and D do not differ


def test_the_ladder_releases_no_gain_of_exactly_its_margin():
    """Found by a statistician: the Ladder (Blum & Hardt 2015, Algorithm 1) releases a score only when it beats the
    last release by strictly more than eta, but in floating point 0.04 - 0.03 > 0.01: where eta is 1/n of the public
    rows, 80 of 99 one-row gains were released at n = 100 (single-row probes, the Ladder's whole point)."""
    from evaluation.boards import ladder

    assert ladder([0.03, 0.04], 0.01) == [0.03, 0.03]
    for n in (50, 100, 150, 200):
        eta = 1 / n
        released = [ladder([i / n, (i + 1) / n], eta)[1] != ladder([i / n], eta)[0] for i in range(n - 1)]
        assert not any(released), (n, sum(released))
        down = [ladder([(i + 1) / n, i / n], eta, higher_is_better=False)[1] for i in range(n - 1)]
        assert down == [round(round(((i + 1) / n) / eta) * eta, 12) for i in range(n - 1)]
    assert ladder([0.03, 0.0401], 0.01) == [0.03, 0.04]  # more than the margin is released


def _read_relation(section: dict, rows: dict) -> set[tuple[int, int]]:
    """``(winner, loser)`` as a reader of the published section reads it, written out pair by pair: a published
    "better" verdict, or two compared entries sharing no letter (a complete display, no ``groups_note``), the one
    shown above beating the one below unless a published verdict says the reverse."""
    compared = section["compared"]
    wins = {
        (p["better"], p["b"] if p["better"] == p["a"] else p["a"])
        for p in section["comparisons"]
        if p["verdict"] in ("a_better", "b_better")
    }
    out = set(wins)
    if section.get("groups_note") is None:
        for at, down in enumerate(compared):
            for up in compared[:at]:
                apart = not set(rows[up]["group_letters"]) & set(rows[down]["group_letters"])
                if apart and (down, up) not in wins:
                    out.add((up, down))
    return out


def _inferred_board(sign: float = 1.0, s_mean: float = 0.71) -> list[EntryRuns]:
    """13 entries on 20 seeds, ranked by Boo_5 (every pair of an entry and its 5 neighbours compared, the leader with
    all): S has the highest mean (0.710) and little spread, so it ranks 10th; W and V share their noise and W beats V
    on every seed, so every entry shown above W would beat, by inference, every entry shown below V that it is not
    compared with (S among them, 8 places below F3), were S not better on most seeds (P(F3>S) = 0.35: no difference is
    inferred against it); S beats the three G entries, which tie when rounded. With ``s_mean`` 0.70, F1 (0.707) has
    the highest mean and F2 beats S by inference alone (P(F2>S) = 0.55)."""
    k = 20
    rng = np.random.default_rng(11)
    e = rng.standard_normal(k)
    runs = {
        "T": 0.72 + 0.08 * rng.standard_normal(k),
        "W": 0.70 + 0.03 * e,
        "V": 0.69 + 0.03 * e,
        **{f"F{i}": 0.70 + 0.03 * rng.standard_normal(k) for i in range(6)},
        "S": s_mean + 0.002 * rng.standard_normal(k),
        **{f"G{i}": 0.69 + 0.002 * rng.standard_normal(k) for i in range(3)},
    }
    return [
        EntryRuns(i, name, "t" + name, "recipe", k, np.arange(k), sign * x, created=f"2024-01-{i:02d}")
        for i, (name, x) in enumerate(runs.items(), 1)
    ]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_rounded_board_s_leader_group_and_state_of_the_art_read_the_relation_its_letters_show(sign):
    """Found by a statistician (stats14): the rounded board publishes the exact board's letters, drawn from the
    verdicts and the differences they imply (evaluation.stats.sparse), but rebuilt its leader group and the state of
    the art's ``beaten_by`` from the published verdicts alone. Here S, the highest mean, is lettered 'be' beside
    F3, F5 and F2's 'a' (beaten by inference: the exact board leaves S out of its leader group and says F3, F5 and F2
    beat it), yet the rounded board put S in its leader group ("Not beaten by any entry, like the leader") and said
    nothing beats it (22 of 60 random boards of 8-24 entries had a rounded leader group other than the entries its
    letters and verdicts leave unbeaten). The rounded board's relation is now the exact one restricted to what it
    publishes: its decided verdicts and the differences its letters show, less the pairs tied on shown values.

    That board (S at 0.710) no longer shows S beaten: P(F3>S) = 0.35, and no difference is inferred against the
    pair's own direction (stats15, :func:`test_no_difference_is_inferred_against_the_pair_s_observed_direction`).
    With S at 0.700, F2 beats S by inference alone (P(F2>S) = 0.55, no published verdict): S is left out of both
    leader groups, and the state of the art, F1 (the highest mean, 0.707), is beaten by nothing on either board."""
    entries = _inferred_board(sign, s_mean=0.70)
    ids = {e.name: e.id for e in entries}
    settings = ReportSettings(n_resamples=200, k_runs=20, statistic="boo_n", boo_n=5, higher_is_better=sign > 0)
    exact = build_report(shown_entries(entries, 3), settings)
    data = publish_rounded(json.loads(json.dumps(exact)), 3, higher_is_better=sign > 0)
    boards = {"exact": exact, "rounded": data}
    relation = {}
    for name, report in boards.items():
        section, rows = report["sections"][0], {row["submission_id"]: row for row in report["entries"]}
        relation[name] = _read_relation(section, rows)
        assert section.get("groups_note") is None, name
        beaten = {loser for _, loser in relation[name]}
        assert section["leader_group"] == [sid for sid in section["compared"] if sid not in beaten], name
        assert ids["S"] not in section["leader_group"], name
        assert [sid for sid in section["compared"] if (sid, ids["S"]) in relation[name]] == [ids["F2"]], name
        assert {ids["F2"], ids["S"]} not in [{p["a"], p["b"]} for p in section["comparisons"]], name  # inferred
        assert section["sota"]["submission_id"] == ids["F1"], name  # the highest mean
        beaten_by = [sid for sid in section["compared"] if (sid, ids["F1"]) in relation[name]]
        assert section["sota"]["beaten_by"] is None and not beaten_by, name
        for sid in section["compared"]:  # "needs 0 more runs" iff it differs from every other compared entry
            if rows[sid]["runs_needed_for_decision"] is not None:
                differs = all(
                    (sid, o) in relation[name] or (o, sid) in relation[name] for o in section["compared"] if o != sid
                )
                assert (rows[sid]["runs_needed_for_decision"] == 0) == differs, (name, sid)
    rows = {row["submission_id"]: row for row in data["entries"]}
    tied = {(a, b) for a in rows for b in rows if a != b and rows[a]["tied"] and rows[a]["rank"] == rows[b]["rank"]}
    assert tied  # the three G entries show 0.692 (or -0.692)
    assert relation["rounded"] == relation["exact"] - tied


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_no_difference_is_inferred_against_the_pair_s_observed_direction(sign):
    """Found by a statistician (stats15, issue 23 row 5): on :func:`_inferred_board` the letters said F3, F5 and F2
    beat S by inference (W beats V, S shown below V), while S is better on most seeds (P(F3>S) = 0.35, P(F5>S) = 0.35,
    P(F2>S) = 0.40) and ``compare`` says "not significant" for all three: the board claimed a difference against the
    observed direction. On boards of up to DENSE_LETTERS entries an inferred difference W > L is kept only where the
    pair's own P(W>L), the statistic ``compare`` reports, is at least 1/2; otherwise the pair is not different, and
    the letters, the leader group and the state of the art's ``beaten_by`` follow, on the exact and the rounded
    board, and on the loss board alike."""
    entries = shown_entries(_inferred_board(sign), 3)  # the runs both boards are computed from
    shown = {e.id: e for e in entries}
    ids = {e.name: e.id for e in entries}
    settings = ReportSettings(n_resamples=200, k_runs=20, statistic="boo_n", boo_n=5, higher_is_better=sign > 0)
    exact = build_report(entries, settings)
    rounded = publish_rounded(json.loads(json.dumps(exact)), 3, higher_is_better=sign > 0)
    for name, report in (("exact", exact), ("rounded", rounded)):
        section, rows = report["sections"][0], {row["submission_id"]: row for row in report["entries"]}
        assert section.get("groups_note") is None, name
        relation = _read_relation(section, rows)
        compared = section["compared"]
        family = len(compared) * (len(compared) - 1) // 2
        for f in ("F3", "F5", "F2"):
            pair = compare(shown[ids[f]], shown[ids["S"]], settings, family_size=family)
            assert pair["p"] < 0.5 and pair["verdict"] == "not_significant", (name, f, pair["p"])
            assert set(rows[ids[f]]["group_letters"]) & set(rows[ids["S"]]["group_letters"]), (name, f)
            assert (ids[f], ids["S"]) not in relation, (name, f)
        beaten = {loser for _, loser in relation}
        assert (ids["S"] in section["leader_group"]) == (ids["S"] not in beaten), name
        assert section["leader_group"] == [sid for sid in compared if sid not in beaten], name
        assert section["sota"]["submission_id"] == ids["S"], name
        assert section["sota"]["beaten_by"] == ([w for w in compared if (w, ids["S"]) in relation] or None), name
        for winner, loser in relation:  # the board and compare never disagree in direction
            pair = compare(shown[winner], shown[loser], settings, family_size=family)
            assert pair["p"] >= 0.5, (name, winner, loser, pair["p"])
