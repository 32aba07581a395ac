"""The two sections of the report: seed-paired recipe runs and prediction files.

A section chooses the entries it can compare, runs the pairwise comparisons and rank
intervals on them, and assembles rows, comparisons and the state of the art. Recipe
entries are chosen with the run indices they all share (:func:`shared_runs`, the joint rank
bootstrap's table; docs/DESIGN.md §4), each pair decided on the runs both have; prediction entries through the paired bootstrap over test examples
(docs/DESIGN.md §6). See :mod:`evaluation.report` for the decisions.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evaluation import stats
from evaluation.report.comparisons import TABLE_COLUMNS, comparison_rows, comparison_table
from evaluation.report.entries import EntryRuns
from evaluation.report.ranking import by_merit, inversion_rows, priority_order, rank_and_group
from evaluation.report.rows import boo_1_as_the_mean, exclude, shown_limits
from evaluation.report.settings import PURPOSE, SECTION_CODE, SECTION_LABELS, ReportSettings, derive_seed
from evaluation.report.sota import section_sota, twin_keys
from evaluation.report.values import apply_map, finite, outcomes_are_proportions, score_over_files, se_through
from evaluation.stats.boon import min_runs_for_interval, min_runs_rule
from evaluation.stats.bootstrap import (
    rank_intervals_backend,
    resampled_boo_n,
    resampled_means,
)
from evaluation.stats.rank_state import rank_intervals_from_state, rank_intervals_with_state
from evaluation.stats.sparse import sparse_comparisons, sparse_from_pairwise

#: The names of a prediction entry's interval of its mean (:func:`evaluation.stats.testset.entry_mean_intervals`).
ENTRY_METHODS = {
    "wilson": "Wilson score interval",
    "t": "Student t over test examples",
    "welch-t": "Welch t over test examples and files",
    "wilson-deff": "Wilson score interval at the design-effect sample size (test examples and files)",
}

__all__ = [
    "ENTRY_METHODS",
    "MIN_EXAMPLES_RANK_INTERVAL",
    "MIN_RUNS_MEAN_RANK_INTERVAL",
    "assemble_section",
    "files_rank_withheld",
    "prediction_section",
    "rank_runs_rule",
    "recipe_section",
    "shared_runs",
    "sota_beaten_by",
]


def shared_runs(entries: list[EntryRuns], floor: int = 2) -> tuple[list[EntryRuns], np.ndarray]:
    """The core, the entries the rank bootstrap resamples jointly, and the run indices they all share.

    Greedy: the next entry keeps most of the shared indices, the earliest in pool order (most
    runs, then submission id: never a name, so renaming moves nothing) on a tie; the core keeps
    the most pairs x shared runs among those sharing at least ``floor`` runs (the runs a rank
    interval needs: four entries of 5 runs joining three of 10 left no rank interval at all, a
    statistician's finding), or among all when no two entries share that many. Entries with the same run indices are interchangeable, so each step
    looks at the first remaining entry of each distinct set of run indices: Θ(entries x sets),
    not Θ(entries²).
    """
    pool = sorted(entries, key=lambda e: (-e.test.size, e.id))
    if not pool:
        return [], np.empty(0, dtype=np.int64)
    chosen = [pool[0]]
    common = set(pool[0].run_index.tolist())
    best = enough = (0, 1, set(common))  # one entry alone: nothing to compare
    queues: dict[frozenset, list[int]] = {}
    sets: dict[bytes, frozenset] = {}  # each distinct run index array's set once (20,000 entries: issue 27)
    for position, e in enumerate(pool[1:], start=1):
        raw = np.asarray(e.run_index, dtype=np.int64).tobytes()
        key = sets.get(raw)
        if key is None:
            key = sets[raw] = frozenset(e.run_index.tolist())
        queues.setdefault(key, []).append(position)
    heads = {key: 0 for key in queues}
    while heads:
        key = max(heads, key=lambda q: (len(common & q), -queues[q][heads[q]]))
        if common <= key and len(common) >= 2:
            # Every entry holding all the shared runs comes next, in pool order, and keeps them all: the steps one
            # by one (observations rising) end where one batch does (20,000 entries of 16 runs: 20,000 steps; issue 27)
            full = [q for q in heads if common <= q]
            taken = sorted(p for q in full for p in queues[q][heads[q] :])
            for q in full:
                del heads[q]
        else:
            common &= key
            taken = [queues[key][heads[key]]]
            heads[key] += 1
            if heads[key] == len(queues[key]):
                del heads[key]
        chosen += [pool[p] for p in taken]
        if len(common) < 2:
            break
        observations = len(chosen) * (len(chosen) - 1) // 2 * len(common)
        if observations >= best[0]:
            best = (observations, len(chosen), set(common))
        if len(common) >= floor and observations >= enough[0]:
            enough = (observations, len(chosen), set(common))
    best = enough if enough[1] >= 2 else best  # no two entries share ``floor`` runs: the most pairs x runs
    return chosen[: best[1]], np.array(sorted(best[2]), dtype=np.int64)


def assemble_section(
    kind: str,
    rows: list[dict],
    compared: list[dict],
    res,
    ranks,
    index,
    s: ReportSettings,
    sota: dict | None,
    methods=None,
    **design,
) -> dict:
    """Rows in display order, the leader group, the comparisons and the inversions of a section.

    The leader group is every compared entry that no entry beats (the leader first,
    :func:`evaluation.stats.leader_group`): it never holds an entry beaten by another. The state of the art
    names the entries that beat its own (:func:`sota_beaten_by`), as the letters and leader group say.
    """
    compared = rank_and_group(compared, res, ranks, index, s)
    sign = 1.0 if s.higher_is_better else -1.0
    ids = {r["submission_id"] for r in compared}
    rest = by_merit([r for r in rows if r["submission_id"] not in ids], sign)
    for row in compared:
        row["compared"] = True
    by_index = {i: sid for sid, i in index.items()}
    leader = [compared[0]["submission_id"]] if compared else []
    if res is not None:
        leader = [by_index[int(i)] for i in res.leader]
    inversions = inversion_rows(res, index, {r["submission_id"]: r for r in compared})
    note = None if res is None else res.groups_note
    return {
        "kind": kind,
        "label": SECTION_LABELS[kind],
        **design,
        "entries": [r["submission_id"] for r in (*compared, *rest)],
        "compared": [r["submission_id"] for r in compared],
        "leader_group": leader,
        **({} if note is None else {"groups_note": note}),
        "inversions": inversions,
        "sota": sota if sota is None else {**sota, "beaten_by": sota_beaten_by(res, index, sota.get("submission_id"))},
        **_comparisons(compared, res, index, kind, inversions, methods, s.comparison_table),
        "_rows": [*compared, *rest],
    }


def sota_beaten_by(res, index: dict[int, int], best: int | None) -> list[int] | None:
    """The submission ids of the entries that beat ``best`` (the state of the art's entry), decided or inferred, in
    display order; None when none does (or ``best`` is not compared).

    The state of the art is about the maximum of the means (Møllersen & Holsbø), so it names the highest mean even
    where a verdict on P(A>B) shows another entry above it: A, 0.2 above B on 3 of 30 seeds and 0.005 below on 27
    (means 0.7148 and 0.6993), is beaten by B (P(B>A) = 0.9, p = 1.2e-5), and the banner called A "the best entry"
    beside a board showing B first and alone in the leader group (a statistician's hunt). It keeps the statistic and
    says who beats it, from the relation the letters and the leader group read
    (:meth:`evaluation.stats.sparse.SparseComparisons.beaten_by`): None exactly when nothing beats it, and then it is
    in the leader group.
    """
    if res is None or best not in index:
        return None
    ids = {i: sid for sid, i in index.items()}
    beaten_by = [ids[int(e)] for e in res.beaten_by(index[best])]
    return beaten_by or None


def _comparisons(compared: list[dict], res, index, kind: str, inversions, methods, as_table: bool) -> dict:
    """``{"comparisons": rows}``, or ``{"comparison_table": table}`` (``ReportSettings.comparison_table``)."""
    if not as_table:
        return {"comparisons": [] if res is None else comparison_rows(compared, res, index, kind, inversions, methods)}
    if res is None:
        return {"comparison_table": {"section": kind, "size": 0, **{c: [] for c in TABLE_COLUMNS}}}
    return {"comparison_table": comparison_table(compared, res, index, kind, inversions, methods)}


def runs_needed_rows(rows: list[dict], compared: set[int], s: ReportSettings) -> dict | None:
    """``runs_needed_for_decision`` of recipe rows; the section's summary (for the ``compared`` entries).

    A compared entry's runs are sized for the board it is compared on; an entry shown but not compared
    yet (too few runs) for the board it joins, every entry shown compared: sized for a board of two,
    one compared entry and three of one run each were told "47 more" where they will need 71 runs each
    (a statistician's finding).
    """
    try:
        need = stats.runs_needed(max(2, len(compared)), gamma=s.gamma, alpha=s.alpha, beta=s.beta)
        joining = stats.runs_needed(max(2, len(rows)), gamma=s.gamma, alpha=s.alpha, beta=s.beta)
    except ValueError:
        return None
    for row in rows:
        target = need if row["submission_id"] in compared else joining
        row["runs_needed_for_decision"] = max(0, target.for_power - row["runs_succeeded"])
    return {
        "entries": need.n_entries,
        "comparisons": need.comparisons,
        "any_verdict": need.any_verdict,
        "for_power": need.for_power,
    }


def recipe_section(
    entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings, prior: dict | None = None, rank_slot=None
) -> dict:
    """Every entry of 2 runs or more is compared: its pairs decided on the seeds each pair shares, ranked and
    lettered. The *core* (:func:`shared_runs`) only decides how the rank bootstrap resamples: jointly on the
    runs the core shares, each other entry alone on its own runs (:func:`_mixed_ranks`). Choosing who was
    ranked by the core let a newcomer far below evict the leader, whose runs it did not share with the
    newcomer's (a statistician's finding)."""
    eligible = [e for e in entries if e.test.size >= 2]
    for e in entries:
        if e.test.size < 2:
            exclude(rows[e.id], f"{e.test.size} run: at least 2 are needed to compare")
    core, shared = shared_runs(eligible, rank_runs_needed(s))
    core = sorted(core, key=lambda e: e.id)
    core_ids = {e.id for e in core}
    alone = [e for e in eligible if e.id not in core_ids]
    chosen = sorted(eligible, key=lambda e: e.id)
    index = {e.id: i for i, e in enumerate(chosen)}
    sign = 1.0 if s.higher_is_better else -1.0
    res = ranks = None
    withheld = ranks_withheld(s, shared.size)
    few = {e.id for e in alone if ranks_withheld(s, e.test.size)}  # resampled alone over too few runs
    placed = np.zeros(len(chosen), dtype=bool)
    if len(chosen) >= 2:
        priority = priority_order([rows[e.id] for e in chosen], index, sign)
        res = sparse_comparisons(
            _pair_table(chosen, sign),
            paired=True,
            gamma=s.gamma,
            alpha=s.alpha,
            correction=s.correction,
            priority=priority,
            neighbours=s.neighbours,
        )
        if not withheld:
            table, valid = _core_table(core, shared, sign)
            if alone:
                ranks, placed = _mixed_ranks(table, valid, core, alone, chosen, s, res, few)
            else:
                ranks = _recipe_ranks(table, valid, chosen, shared, s, prior, rank_slot)
    all_rows = [rows[e.id] for e in entries]
    needed = runs_needed_rows(all_rows, {e.id for e in chosen}, s)
    sota = section_sota(
        all_rows,
        [rows[e.id] for e in chosen],
        s.m_total_recipes,
        s,
        binomial_n=None,
        run_keys=_run_keys(entries),
    )
    section = assemble_section(
        "recipe",
        all_rows,
        [rows[e.id] for e in chosen],
        res,
        ranks,
        index,
        s,
        sota,
        design="seed-paired runs",
        paired_runs=shared.tolist(),
        n_examples=None,
        runs_needed=needed,
    )
    decided_rows([rows[e.id] for e in chosen], _differ_of_windows(res, index))
    # the reason: settings.coverage, "recipe.rank" (a lone entry's [1, 1] too, as the note says, stats17), or
    # "recipe.rank_runs" for an entry of too few runs outside the core (__init__._board_notes, stats21)
    for e in chosen:
        if withheld or e.id in few:
            rows[e.id]["rank_interval"] = None
        elif placed[index[e.id]]:  # no longer the bootstrap's own
            rows[e.id]["rank_interval"]["widened"] = True
    return section


def _core_table(core: list[EntryRuns], shared: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray | None]:
    """The core's oriented test scores on the runs it shares, and the keys its Boo_n chooses by: each entry's
    validation scores, its test scores where it has none (Bajgar et al. 2018, eq. 5/7), None if none has any."""
    # shared ⊆ each core entry's runs: an entry with as many runs has exactly those
    keep = [slice(None) if e.run_index.size == shared.size else np.isin(e.run_index, shared) for e in core]
    # oriented once for the whole table (one multiply, not one per entry: the same products; issue 27)
    shape = (len(core), shared.size)  # each entry's shared runs: concatenated, not stacked (np.stack expands each)
    table = sign * np.concatenate([e.test[k] for e, k in zip(core, keep)]).reshape(shape)
    if not any(e.valid is not None for e in core):
        return table, None
    keys = [(e.test if e.valid is None else e.valid)[k] for e, k in zip(core, keep)]
    return table, sign * np.concatenate(keys).reshape(shape)


def _mixed_ranks(table, valid, core, alone, chosen: list[EntryRuns], s: ReportSettings, res, few: set[int]):
    """Rank intervals where some compared entries lack runs the core shares: the core resampled jointly on
    its shared runs (as :func:`_recipe_ranks`), every other entry alone on its own runs, from a seed of its
    own (so adding or reordering entries moves none of its resamples); one ranking of all of them per
    resample. Alone, an entry's seed effects are not paired with the others': its interval is the wider
    for it, never narrower. An entry of fewer runs than a rank interval needs (``few``, by id) has none, and
    the others place it as the pair verdicts do (:func:`_placed_ranks`: alone over 3 runs 0.6-0.8, the core's
    leader read [1, 1] beside an undecided pair with it). Returns the intervals and which were so placed."""
    sign = 1.0 if s.higher_is_better else -1.0
    code, purpose = SECTION_CODE["recipe"], PURPOSE["ranks"]
    rng = np.random.default_rng(derive_seed(s.master_seed, code, purpose))
    parts = {}
    if s.statistic == "boo_n":
        keys = table if valid is None else valid
        estimate, boot = resampled_boo_n(list(table), list(keys), True, s.boo_n, "paper", s.n_resamples, rng)
    else:
        estimate, boot = table.mean(axis=1), resampled_means(list(table), True, s.n_resamples, rng)
    for e, value, row in zip(core, estimate, boot):
        parts[e.id] = (value, row)
    for e in alone:
        own = np.random.default_rng(derive_seed(s.master_seed, code, purpose, e.id))
        x = sign * e.test
        if s.statistic == "boo_n":
            key = x if e.valid is None else sign * e.valid
            value, row = resampled_boo_n([x], [key], False, s.boo_n, "paper", s.n_resamples, own)
            parts[e.id] = (value[0], row[0])
        else:
            parts[e.id] = (x.mean(), resampled_means([x], False, s.n_resamples, own)[0])
    estimate = np.array([parts[e.id][0] for e in chosen])
    boot = np.stack([parts[e.id][1] for e in chosen])
    return _placed_ranks(estimate, boot, np.array([e.id in few for e in chosen]), res, 1 - s.alpha)


def ranks_withheld(s: ReportSettings, paired_runs: int) -> bool:
    """No rank interval on a board ranked by Boo_n with fewer than 10n paired runs (issue 23): like the
    entries' Boo_n intervals (:func:`evaluation.report.rows.boo_n_warning`), its resampled Boo_n is biased
    and the intervals cover far less than their level (74.5 % at k = 5, 88.2 % at k = 10 on a Boo_5 board,
    ``benchmarks/bench_coverage.py``); nor on a board ranked by the mean with fewer than
    :data:`MIN_RUNS_MEAN_RANK_INTERVAL` paired runs. The reason is
    :func:`evaluation.report.coverage.rank_withheld_reason`."""
    return paired_runs < rank_runs_needed(s)


def rank_runs_needed(s: ReportSettings) -> int:
    """The runs a rank interval needs (:func:`ranks_withheld`): 10n on a Boo_n board, else 16."""
    return runs_for_rank_interval(s.statistic, int(s.boo_n))


#: The paired runs from which a board ranked by the mean (or by Boo_1, the mean of the runs) shows rank intervals
#: (rank23): the fewest at which they cover at least 93 % on all three board shapes of ``benchmarks/bench_coverage.py``
#: (``--ranks-only --reps 1000 --seed 2026``: 5 entries / a ladder of 10 / 30 close entries 98.5 / 97.6 / 93.0 % at
#: 16; at 15 the close board 93.2 %, 92.8 % on another stream at R = 4000; at 10, Boo_n's 10n for n = 1, 90.5 %; at
#: 6, the mean's own first k, 85.0 %). Below it the close board's intervals claim a certainty the data lack.
MIN_RUNS_MEAN_RANK_INTERVAL = 16


def runs_for_rank_interval(statistic: str, n: int) -> int:
    """:func:`rank_runs_needed` of a board ranked by ``statistic`` ("boo_n" or "mean") with Boo_n's ``n``: 10n
    (:func:`evaluation.stats.boon.min_runs_for_interval`) on a Boo_n board, never fewer than a mean board's
    :data:`MIN_RUNS_MEAN_RANK_INTERVAL` (Boo_1 is the mean).

    >>> runs_for_rank_interval("mean", 5), runs_for_rank_interval("boo_n", 1), runs_for_rank_interval("boo_n", 5)
    (16, 16, 50)
    """
    boo_n = min_runs_for_interval(n) if statistic == "boo_n" else 0
    return max(boo_n, MIN_RUNS_MEAN_RANK_INTERVAL)


def rank_runs_rule(statistic: str, n: int) -> str:
    """:func:`runs_for_rank_interval` in words, for the page: "10n = 50" on a Boo_5 board, "16" on a mean board
    (and on a Boo_1 board).

    >>> rank_runs_rule("boo_n", 5), rank_runs_rule("mean", 5), rank_runs_rule("boo_n", 1)
    ('10n = 50', '16', '16')
    """
    need = runs_for_rank_interval(statistic, n)
    return min_runs_rule(n) if statistic == "boo_n" and need == min_runs_for_interval(n) else str(need)


def decided_rows(compared: list[dict], differ: dict[int, set[int]] | None = None) -> None:
    """No "needs more runs" hint on an entry the board already tells apart from every other (issue 23, row 12).

    The hint comes from the same verdicts as the letters: an entry that shares no letter with
    any other compared entry differs from each of them, so more runs cannot decide anything
    more for it; its ``runs_needed_for_decision`` is 0. So is the lone entry's of a section that
    compares one: it has no pair to decide (the page said "needs 38 more for a decision" beside
    "there are no pairs to compare yet", a new user's finding).

    Where the letters are runs of the order (``groups_note``, :func:`evaluation.stats.groups.compact_letters`)
    a pair that is not significantly different may share no letter, so the letters no longer say it: ``differ``
    (submission id -> the ids it differs from, :func:`_differ_of_windows`) decides instead. Read from the
    letters, A beating B and B beating C with A and C undecided on 3 common seeds gave A and C letters of their own and
    "0 more runs" beside no verdict between them.
    """
    if differ is not None:
        ids = {row["submission_id"] for row in compared}
        for row in compared:
            if len(compared) < 2 or ids - {row["submission_id"]} <= differ[row["submission_id"]]:
                row["runs_needed_for_decision"] = 0
        return
    holders: dict[str, int] = {}
    for row in compared:
        for letter in row["group_letters"]:
            holders[letter] = holders.get(letter, 0) + 1
    for row in compared:
        if len(compared) < 2 or all(holders[letter] == 1 for letter in row["group_letters"]):
            row["runs_needed_for_decision"] = 0


def _differ_of_windows(res, index: dict[int, int]) -> dict[int, set[int]] | None:
    """The entries each compared entry differs from (by submission id), where the section's letters are runs of the
    order (``res.groups_note``) and no longer tell; None where the letters do (a complete display: sharing no letter
    is differing). The relation the letters were drawn from (``res.beats``, :func:`evaluation.stats.sparse._verdict_relation`)."""
    if res is None or res.groups_note is None or res.beats is None:
        return None
    differ = res.beats | res.beats.T
    ids = {i: sid for sid, i in index.items()}
    return {ids[a]: {ids[int(b)] for b in np.flatnonzero(differ[a])} for a in range(len(index))}


def _pair_table(chosen: list[EntryRuns], sign: float) -> np.ndarray:
    """Oriented test scores over every run index of the compared entries, NaN where an entry lacks it.

    Each pair is decided on the seeds both entries have (Bouthillier et al. 2021, eq. 9 is
    defined per pair), not on the few all entries share: those are for the joint rank bootstrap.
    """
    index = np.concatenate([e.run_index for e in chosen])
    runs = np.unique(index)
    table = np.full((len(chosen), runs.size), np.nan)
    # every entry's runs at once (20,000 entries: one searchsorted, not one each; issue 27); run indices are distinct
    # within an entry (check_entries), so each cell is written once, as entry by entry
    owner = np.repeat(np.arange(len(chosen)), [e.run_index.size for e in chosen])
    table[owner, np.searchsorted(runs, index)] = sign * np.concatenate([e.test for e in chosen])
    return table


def _run_keys(entries) -> list[bytes]:
    """Each entry's seeds and scores as bytes, counted once in the state of the art's m when equal, compared or
    not: entries of the same seeds whose scores tie run by run under the board's pair rule are one
    (:func:`~evaluation.report.sota.twin_keys`)."""
    return twin_keys(
        [np.asarray(e.run_index) for e in entries], [np.asarray(e.test, dtype=np.float64) for e in entries]
    )


def _recipe_ranks(
    table, valid, chosen: list[EntryRuns], shared: np.ndarray, s: ReportSettings, prior: dict | None, slot=None
):
    """Rank intervals of the compared recipe entries: one joint bootstrap, or its exact update when the
    previous report had the same paired runs and a subset of these entries (docs/scale.md). ``slot``
    (a :class:`~evaluation.stats.rank_state.RankStateSlot`, the caller's) keeps the bootstrap's state between
    updates of a board ranked by the mean: the update then reads it (:func:`_ranks_from_slot`)."""
    kw = dict(
        n_resamples=s.n_resamples,
        confidence_level=1 - s.alpha,
        statistic=s.statistic,
        n=s.boo_n,
        rng=derive_seed(s.master_seed, SECTION_CODE["recipe"], PURPOSE["ranks"]),
        valid=valid if s.statistic == "boo_n" else None,
    )
    numpy_ranks = rank_intervals_backend(s.backend, s.device, table, True, s.statistic, s.n_resamples)[0] == "numpy"
    usable = (
        prior is not None
        and prior["paired_runs"] == shared.tolist()
        and numpy_ranks
        and prior["compared"] <= {e.id for e in chosen}
    )
    update = None
    if usable:
        assert prior is not None  # `usable` needs one
        new = np.array([e.id not in prior["compared"] for e in chosen])
        old = [prior["intervals"].get(e.id) for e in chosen]
        known = np.array([v is not None for v in old])
        low = np.array([v[0] if v else 0 for v in old], dtype=np.int64)
        high = np.array([v[1] if v else 0 for v in old], dtype=np.int64)
        update = (new, known, low, high)
    if slot is not None and numpy_ranks and s.statistic == "mean":
        return _ranks_from_slot(table, update, slot, kw)
    if update is None:
        return stats.rank_intervals(
            table, paired=True, backend=s.backend, device=s.device, keep_distribution=False, **kw
        )
    return stats.rank_intervals_update(table, *update, **kw)


def _ranks_from_slot(table, update, slot, kw: dict):
    """The rank intervals from the state in ``slot`` when it is this board's without the new entries
    (:func:`~evaluation.stats.rank_state.rank_intervals_from_state`), else by the full joint bootstrap, which fills
    the slot (:func:`~evaluation.stats.rank_state.rank_intervals_with_state`): equal either way."""
    state = slot.take()
    args = dict(n_resamples=kw["n_resamples"], confidence_level=kw["confidence_level"], rng=kw["rng"])
    if update is not None and state is not None:
        new, known, low, high = update
        out = rank_intervals_from_state(table, new, known, low, high, state, **args)
        if out is not None:
            result, slot.state = out
            return result
    del state  # the old board's θ* (hundreds of MB on a large board) goes before the new one is built
    result, slot.state = rank_intervals_with_state(table, **args)
    return result


def _joining_test_bootstrap(
    entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings
) -> tuple[list[EntryRuns], int | None]:
    """(the prediction entries the paired test bootstrap reads, by id; their examples): those with outcomes on the
    examples most entries have. The others are excluded, saying why; one of several files whose outcomes the board does not read
    (a rounded board's) shows its files' scores pooled (``s.metric_pool_files``), as its outcomes would pool."""
    lengths = [e.outcomes.shape[1] for e in entries if e.outcomes is not None]
    n_examples = max(set(lengths), key=lambda n: (lengths.count(n), n)) if lengths else None
    chosen = []
    for e in entries:
        if e.outcomes is None:
            exclude(rows[e.id], "no per-example outcomes stored: cannot join the paired test bootstrap", False)
            if e.test.size > 1 and s.metric_pool_files is not None:
                pooled = finite(s.metric_pool_files(e.test))
                rows[e.id]["mean"]["estimate"] = rows[e.id]["ranking_value"] = pooled
        elif e.outcomes.shape[1] != n_examples:
            exclude(
                rows[e.id],
                f"scored on {e.outcomes.shape[1]} test examples, not the {n_examples} of the other entries",
                False,
            )
        else:
            chosen.append(e)
    return sorted(chosen, key=lambda e: e.id), n_examples


def prediction_section(
    entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings, prior: dict | None = None
) -> dict:
    chosen, n_examples = _joining_test_bootstrap(entries, rows, s)
    index = {e.id: i for i, e in enumerate(chosen)}
    sign = 1.0 if s.higher_is_better else -1.0
    res = ranks = tb = None
    placed = np.zeros(len(chosen), dtype=bool)
    if chosen:
        code = SECTION_CODE["predictions"]
        for e in chosen:  # before the order: the score its interval, ranks and pairs are of
            assert e.outcomes is not None  # chosen above
            row = rows[e.id]
            pooled = score_over_files(
                s.metric_from_mean, float(e.outcomes.mean()), row["mean"]["estimate"], len(e.outcomes)
            )
            row["mean"]["estimate"] = row["ranking_value"] = pooled  # prediction sections rank by the mean (entry_row)
        priority = priority_order([rows[e.id] for e in chosen], index, sign)
        tb = stats.paired_test_bootstrap(
            files=[e.outcomes for e in chosen],
            n_resamples=s.n_resamples,
            confidence_level=1 - s.alpha,
            gamma=s.gamma,
            alpha=s.alpha,
            correction=s.correction,
            higher_is_better=s.higher_is_better,
            priority=priority,
            rng=derive_seed(s.master_seed, code, PURPOSE["pairs"]),
            backend=s.backend,
            device=s.device,
            proportions=outcomes_are_proportions(s.score_range),
        )
        for e in chosen:
            _prediction_mean(rows[e.id], tb, index[e.id], s)
        if len(chosen) >= 2:
            res = sparse_from_pairwise(tb.comparisons)
            ranks, placed = _prediction_ranks(tb, res, [e.test.size for e in chosen], n_examples, sign, s)
    all_rows = [rows[e.id] for e in entries]
    boo_1_as_the_mean(all_rows, s)  # the mean's interval from the test examples, whatever the files
    binomial_n = (s.n_test or n_examples) if s.accuracy_like else None
    sota = section_sota(
        all_rows,
        [rows[e.id] for e in chosen],
        s.m_total_predictions,
        s,
        binomial_n=binomial_n,
        outcomes=[e.outcomes for e in chosen if e.outcomes is not None],
        trials=_own_trials(chosen, tb, index, binomial_n / n_examples if binomial_n and n_examples else 1.0),
    )  # all of them
    section = assemble_section(
        "predictions",
        all_rows,
        [rows[e.id] for e in chosen],
        res,
        ranks,
        index,
        s,
        sota,
        methods=None if tb is None else tb.pair_method,
        design="paired comparisons over test examples",
        paired_runs=None,
        n_examples=n_examples,
        runs_needed=None,
    )
    for e in chosen:  # the reason: settings.coverage, "predictions.rank" (__init__._board_notes)
        if files_rank_withheld(e.test.size, n_examples):
            rows[e.id]["rank_interval"] = None
        elif placed[index[e.id]]:  # no longer the bootstrap's own
            rows[e.id]["rank_interval"]["widened"] = True
    return section


#: The test examples from which a prediction entry of one file shows a rank interval (predrule23): resampled over the
#: examples alone, on 30 close entries (0.001 apart) it covers 87.6 % on 100 examples, 90.3 % on 200, 91.6 % on 300,
#: 92.6 % on 400, 93.4 % on 500, 94.8 % on 1000 (``benchmarks/bench_coverage.py --prediction-ranks-only --files-ks 1
#: --rank-examples N --reps 1000 --seed 2026``; the 5-entry board and the ladder of 10 from 96.5 % and 92.7 %; with
#: seed 7, 93.2 % on 500 and 93.9 % on 600: the threshold holds, narrowly).
MIN_EXAMPLES_RANK_INTERVAL = 500


def files_rank_withheld(files: int, examples: int | None) -> bool:
    """No rank interval for a prediction entry where it was measured to cover less than 93 % (issue 23, one rule for
    both counts). One file is resampled over the test ``examples`` alone: below :data:`MIN_EXAMPLES_RANK_INTERVAL`
    (None: not known, as in a coverage note without a board). Several files are resampled over their files, as a mean
    board over its runs: fewer than a mean board's :data:`MIN_RUNS_MEAN_RANK_INTERVAL` (16) withheld, whatever the
    examples, as the files' spread dominates more the more examples there are (on 2000 examples the close board
    covers 91.9 % at 6 files, 93.8 % at 8, 94.0 % at 10, 95.1 % at 12, 96.3 % at 16; on 10000, 90.1 % at 8 and 94.2 % at
    16: k files tend to a mean board's k runs, 90.5 % at 10); 2 files showed [4, 4], "certainly 4th", beside pairs that told it from no entry (stats20). The reason
    is :func:`evaluation.report.coverage.files_rank_withheld_reason`."""
    if files == 1:
        return examples is not None and examples < MIN_EXAMPLES_RANK_INTERVAL
    return files < MIN_RUNS_MEAN_RANK_INTERVAL


def _prediction_ranks(tb, res, files: list[int], examples: int | None, sign: float, s: ReportSettings):
    """Rank intervals of the compared prediction entries (their mean resampled over test examples and files). An
    entry of too few files, or of one file on too few ``examples`` (:func:`files_rank_withheld`), gets none, and the others place it as the pair verdicts do
    (:func:`_placed_ranks`). Also returns which entries' intervals were so placed."""
    assert tb.bootstrap_distribution is not None  # paired_test_bootstrap always keeps it
    few = np.array([files_rank_withheld(f, examples) for f in files])
    return _placed_ranks(sign * tb.estimate, sign * tb.bootstrap_distribution, few, res, 1 - s.alpha)


def _placed_ranks(estimate: np.ndarray, boot: np.ndarray, few: np.ndarray, res, level: float):
    """Rank intervals from the oriented ``estimate`` and its resamples ``boot`` (entries x resamples) where the
    entries ``few`` show none (their resamples spread too little: a prediction entry of 2 to 15 files or of one file on
    too few examples (:func:`files_rank_withheld`), a recipe entry
    of fewer runs than a rank interval needs, resampled alone): every other entry's interval is its bootstrap
    interval among the other entries, plus one rank per ``few`` entry that beats it (low) or that it does not beat
    (high), by the relation the letters read (``res``: decided or inferred). Left among them, their narrow resamples
    gave the leader [1, 1] beside a pair with one of them that no verdict decides (stats20 on files, stats21 on
    runs: issue 23, a rank interval never certain of an order the pair verdicts leave open). The ``few`` entries'
    own intervals are every rank, so that the verdicts' carry reads their verdicts, never their narrow resamples.
    Returns the intervals and which entries' intervals so placed differ from the bootstrap's over all of them
    (marked ``widened``)."""
    ranks = stats.rank_intervals_from_distribution(estimate, boot, level)
    if not few.any() or few.all():
        return ranks, np.zeros(few.size, dtype=bool)
    keep, w = np.flatnonzero(~few), np.flatnonzero(few)
    own = stats.rank_intervals_from_distribution(estimate[keep], boot[keep], level)
    wins, losses = np.zeros((w.size, few.size), dtype=bool), np.zeros((w.size, few.size), dtype=bool)
    for t, e in enumerate(w.tolist()):
        wins[t, res.beats_of(e)] = True  # e beats x
        losses[t, res.beaten_by(e)] = True  # x beats e
    # Each kept interval holds the entry's place among the kept entries in the display order before the counts are
    # added: stretched later to its shown rank (ranking.rank_and_group), it absorbed them (stats22: shown 2nd, its
    # bootstrap rank 1 on the core's seeds, [1, 4] where three undecided withheld entries and one above allow 5th).
    position = np.empty(few.size, dtype=np.int64)
    position[np.asarray(res.order, dtype=np.int64)] = np.arange(few.size)
    place = 1 + np.searchsorted(np.sort(position[keep]), position[keep])
    low, high = ranks.low.copy(), ranks.high.copy()
    low[keep] = np.minimum(own.low, place) + wins[:, keep].sum(axis=0)
    high[keep] = np.maximum(own.high, place) + (~losses[:, keep]).sum(axis=0)
    # a withheld entry's own interval (never shown) came from its narrow resamples: left in, the verdicts' carry
    # (ranking.verdict_consistent_ranks) pushed the entries it beats past it, e [4, 4] beside an undecided pair
    low[w], high[w] = 1, few.size  # only the verdicts place it (stats22)
    return replace(ranks, low=low, high=high), (low != ranks.low) | (high != ranks.high)


def _own_trials(chosen, tb, index: dict[int, int], per_example: float) -> dict[int, float] | None:
    """The trials each compared entry's own interval reads (``TestBootstrapResult.effective_n``), by id, in the
    binomial form's examples (``per_example``: its n over the outcomes' examples; a host's ``n_test`` equal to them
    switched Kish's trials off: a reviewer's finding)."""
    if tb is None or tb.effective_n is None:
        return None
    return {e.id: float(tb.effective_n[index[e.id]]) * per_example for e in chosen}


def _prediction_mean(row: dict, tb, i: int, s: ReportSettings) -> None:
    """An entry's mean interval from the test set (and its files), in the metric's units, clipped to the
    metric's range: a linearized metric's outcomes (macro-F1's reach 1.05 and more) give a t interval past
    its bound near a perfect score, where the truth cannot lie (as :func:`~evaluation.report.rows.shown_limits` for runs)."""
    low, high = shown_limits(  # holding the files' score, which may round apart from the outcomes' mean by an ulp
        apply_map(s.metric_from_mean, tb.low[i]),
        apply_map(s.metric_from_mean, tb.high[i]),
        row["mean"]["estimate"],
        s.score_range,
    )
    row["mean"].update(
        low=finite(low),
        high=finite(high),
        se=finite(se_through(s.metric_from_mean, float(tb.estimate[i]), float(tb.standard_error[i]))),
        source="test examples" if tb.files[i] == 1 else "test examples and files",
        method=ENTRY_METHODS[str(tb.entry_method[i])],
    )
