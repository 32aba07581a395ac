"""The leaderboard report: a pure, seeded function of a challenge's stored runs.

:func:`build_report` turns every entry's runs (:class:`EntryRuns`) and the challenge's
statistical settings (:class:`ReportSettings`) into one JSON-serialisable dict. It uses
numpy and :mod:`evaluation.stats` only (no Django, no I/O), so the report can be
recomputed from an export of the runs.

Decisions
---------
Two sections.
    Recipe runs are scored on out-of-bootstrap test splits, prediction files on the
    hidden test set: different test data. Each kind is a *section* with its own
    comparisons, significance groups, rank intervals and state of the art; entries of
    different sections are never compared.
Recipe entries: seed-paired runs.
    Run i of every recipe shares its seeds and split (docs/DESIGN.md §4), so comparisons are
    paired by run index (Bouthillier et al. 2021, eq. 9): each pair is decided on the run
    indices both entries have. The joint rank bootstrap uses the run indices that all
    compared entries share (``paired_runs``). They are chosen greedily: start from the
    entry with most runs, add the entry that keeps most of the shared indices, and keep
    the prefix that maximises the paired observations of all its comparisons,
    (entries choose 2) × shared runs. An entry with fewer than 2 runs, or lacking
    shared runs (still running, failed runs), is shown with what it has, flagged
    ``too_few_runs`` and left out of comparisons, groups and rank intervals, with
    ``excluded_reason``.
Prediction entries: paired bootstrap over test examples.
    The one source of variation left is the test sample (docs/DESIGN.md §6): intervals,
    P(A>B), groups and standard errors come from
    :func:`evaluation.stats.paired_test_bootstrap` on the per-example outcomes (one
    resample index set shared by all entries). An entry with k files is k runs: its
    outcomes are averaged per example for the test bootstrap, while its mean, Boo_n,
    median and std are taken over its k run scores. The mean's interval is the test
    bootstrap's, mapped through ``metric_from_mean`` (e.g. √ for RMSE; monotone).
    Rank intervals resample the same test examples. Noether's N counts runs, so
    ``runs_needed_for_decision`` is ``None`` for prediction entries.
Which pairs.
    Recipe sections compare each entry with its ``neighbours`` nearest entries in the
    order, with the leader and with the first entry it beats (its frontier), decided in
    closed form over the family of all pairs; the groups of the pairs not compared are
    inferred by monotonicity (:mod:`evaluation.stats.sparse`; docs/scale.md says where
    they equal the all-pairs groups). A board of at most ``2 neighbours + 1`` entries
    compares every pair; :func:`compare` decides any other pair on demand. Prediction
    sections compare every pair.
Incremental.
    ``reuse`` gives the rows of unchanged recipe entries from a previous report: their
    own intervals are seeded by the entry, so the report equals a full recomputation.
Orientation.
    Comparisons, ranks and the state of the art work on scores oriented so that
    higher is better (losses negated, docs/DESIGN.md §6); everything displayed is in the
    metric's own units. Runs are sorted by the oriented value before resampling, so a
    board of losses is the accuracy board of the negated runs mirrored, number for number.
Validation scores.
    Boo_n chooses each entry's best run by its validation scores, by its test scores
    where it has none; its rank interval resamples that same statistic. A run without a
    finite validation score in an entry whose other runs have one is left out of the
    entry (every statistic: Boo_n is eq. 7 on the complete pairs), and the row names it
    in ``runs_left_out`` (:func:`~evaluation.report.entries.complete_pairs`).
Order and ties.
    Compared entries come first, ordered by the ranking statistic (``mean`` or
    ``boo_n``), then method name, then team; the submission id (creation order) only
    makes the order total and never decides a rank: entries whose statistic is equal
    (to 1e-12 relative) *and* that share a significance letter get the same rank,
    displayed ``"=2"``. Entries left out of comparisons follow, unranked. Letters are
    assigned in display order, so the leader's first letter is "a".
Noether.
    ``runs_needed_for_decision = max(0, N - runs)`` with N from
    :func:`evaluation.stats.noether_sample_size` (γ, α, β) (Noether 1987).
State of the art (Møllersen & Holsbø).
    Per section: the best entry's mean (``raw``), the multiplicity-adjusted estimate
    and a conservative bound for ``m`` entries, ``m`` being every entry ever scored on
    that test data (``m_total_*``, counted by the caller, at least the entries shown).
    Accuracy-like prediction entries use the exact binomial form with ``n_test``;
    otherwise the normal approximation with the best entry's bootstrap standard error
    (recipes: the ideal bootstrap SE of the mean, σ̂/√k with the plug-in σ̂). For a
    loss the bound is an upper bound on the loss (``bound_side``).
Seeds.
    Every random computation is seeded by :func:`derive_seed` from the challenge's
    master seed, the section, the purpose and (per entry) the entry id, so an entry's
    own intervals do not move when other entries arrive, and the report is a
    deterministic function of its inputs.
Secondary metrics.
    ``settings.secondary`` lists metrics shown next to the primary (:mod:`evaluation.report.secondary`):
    each row's ``secondary`` holds, per metric, the mean of its runs' scores with the interval the
    board uses for the primary's mean (the test-set interval of a prediction entry's outcomes, else
    the studentized bootstrap over runs). They never rank, group or enter the state of the art.
Levels.
    The challenge's ``alpha`` is a significance level: of the γ decision rule (whose
    test is the P(A>B) interval at level ``1 - alpha``), of the adjusted p-values, of
    Noether's N and of the state of the art's bound. Every interval shown has
    ``confidence_level = 1 - alpha`` (the report's ``settings.confidence``).

References
----------
Bajgar, O., Kadlec, R. & Kleindienst, J. (2018). A Boo(n) for Evaluating Architecture
Performance. ICML.
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys.
Møllersen, K. & Holsbø, E. Accounting for multiplicity in machine learning benchmark
performance.
Noether, G. E. (1987). Sample size determination for some common nonparametric tests.
JASA 82, 645–647.
Piepho, H.-P. (2004). An algorithm for a letter-based representation of all-pairwise
comparisons. J. Comput. Graph. Statist. 13, 456–466.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence

from evaluation import stats
from evaluation.report.comparisons import SECTION_PAIRS, compare, flip_comparison, section_pairs
from evaluation.report.coverage import board_coverage_notes, files_rank_note, runs_rank_note
from evaluation.report.entries import EntryRuns, check_entries
from evaluation.report.rows import (
    board_boo_n_picked_note,
    board_boo_n_warning,
    entry_fingerprint,
    entry_rows,
    reused_row,
    row_intervals,
)
from evaluation.report.secondary import MetricInfo, secondary_rows
from evaluation.report.sections import files_rank_withheld, prediction_section, ranks_withheld, recipe_section
from evaluation.report.settings import ReportSettings, check_settings, derive_seed
from evaluation.stats.rank_state import RankStateSlot
from evaluation.stats.torch_backend import describe_device

__all__ = [
    "REPORT_FORMAT",
    "SECTION_PAIRS",
    "EntryRuns",
    "MetricInfo",
    "ReportSettings",
    "build_report",
    "compare",
    "derive_seed",
    "collector_paused",
    "entry_fingerprint",
    "flip_comparison",
    "section_pairs",
]

#: Version of the report's JSON layout (2: one decision rule, studentized and score intervals,
#: verdict-consistent order with inversions, both Boo_n estimators, runs needed per board size;
#: 3: rows name ``runs_left_out``, Boo_n rank intervals by each entry's own key, loss boards mirrored:
#: a stored report of format 2 is recomputed, never reused row by row; 4: ``settings.computed_on`` says
#: where the resampling ran, numpy or torch on a named device; 5: rows carry ``secondary``, the settings
#: ``secondary_metrics``: the secondary metrics with their intervals, evaluation.report.secondary; 6: a rounded
#: public board computed from its shown per-run scores, evaluation.boards.shown_entries: every stored report is
#: recomputed, so no board keeps serving numbers computed from exact scores; 7: a recipe section's state of the
#: art counts identical entries (same seeds, same scores) once in m, and its intervals judge a resampled spread
#: on the centred runs' scale: stored reports are recomputed with them; 8: identical recipe entries count once in
#: m compared or not, a rounded board's pairs keep their digits and its ties their own letters, and a board whose
#: metric is not accuracy-like quotes no accuracy coverage, runs needed past the power's saw-tooth, a suite's IQM
#: weighing tasks alike: stored reports are recomputed with them; 9: a prediction entry of several files shows the
#: score of its files pooled, what its interval, ranks and pairs are of: for RMSE √(mean of the files' MSEs), not
#: the mean of their RMSEs, values.score_over_files; 10: a prediction pair's P(A>B) and its interval from the
#: symmetrised bootstrap distribution, so the interval holds ½ exactly when the adjusted p-value is not below
#: alpha, and values equal to rounding tie in order, ranks and the state of the art's choice; 11: ties relative
#: only, the state of the art on each entry's own trials, each multi-file entry's files from a stream of its own;
#: 12: the runs the decision rule needs never rise as alpha is relaxed, a lone compared entry needs none, and
#: Boo_1, the mean of the runs, needs the mean's 6 runs for an interval; 13: a recipe pair's runs within the tie rule
#: (1e-12 relative) tie in P(A>B), and an entry's validation scores within it share Boo_n's weight as equal ones do,
#: so rounding decides no pair, letter, order or Boo_n, as it decides no rank; 14: the state of the art counts
#: entries equal under the tie rule once in m; 15: a secondary metric's interval holds the mean shown beside it, as
#: the primary's do, rows.shown_limits, and recipe entries count once in m when their runs tie pairwise, as the
#: board's pairs tie them, not by chains of the section's scores, sota.twin_keys; a suite's P(improvement) ties
#: runs within the tie rule, stats.suites; 16: runs that all tie have a standard deviation of 0, rows.runs_std, a
#: zero-spread resample tying the estimate has t* = 0, bootstrap.t_from_se, and the state of the art's P(max >= x) is
#: computed at x, never interpolated on its grid, stats.sota._normal_max; 17: a loss's per-example outcomes of 0 and 1
#: are no proportions, values.outcomes_are_proportions, constant prediction outcomes have no standard error, letters
#: past 8 per entry are a greedy cover, stats.groups, and tied best entries' standard errors tie to rounding; 18: the
#: incremental update of the rank intervals ties resampled statistics by the tie rule, as the full computation does,
#: stats.bootstrap.rank_intervals_update: a stored report updated incrementally may hold, and carry to every later
#: update, an interval no full computation gives, so stored reports are rebuilt; a full report's numbers are unchanged;
#: a rounded board's rank intervals are carried along its published verdicts, evaluation.boards, as a tie block's
#: hull let a loser's interval reach above its winner's, a section whose letters are runs of the order reads
#: runs_needed_for_decision from the verdicts, sections.decided_rows, and the Ladder sends a half-way score to
#: the worse multiple of η, evaluation.boards.ladder); 19: a rounded board rounds every value half-way (to 9 decimals
#: of the scaled value) to the even multiple, evaluation.boards.shown_score, so a loss board publishes its accuracy
#: mirror's ties and order: a stored rounded report computed from runs shown by Python's ``round`` is rebuilt; the
#: state of the art's estimate and bound clipped to the metric's range, report.sota._in_range, its contenders' edge
#: and a mean correlation of 0 read to rounding, stats.sota._contending and outcome_dependence, so that a loss board
#: mirrors its accuracy board there too; other exact reports' numbers are unchanged); 20: on boards of up to 300
#: compared entries the leader group is every entry no verdict beats, decided or inferred, as the letters say
#: (stats.sparse._leader_group): it ended at the first entry any verdict beats, leaving out unbeaten entries that share
#: the leader's letter; a stored report's leader group may change, its numbers do not; 21: the state of the art says
#: which entries beat its own, decided or inferred (sota.beaten_by, report.sections.sota_beaten_by), and a pair sharing
#: fewer than 2 seeds, which no test decides, is never inferred to differ on boards of up to 300 compared entries
#: (stats.sparse._verdict_relation): a stored report's letters, leader group and runs_needed_for_decision may change,
#: its other numbers do not; 22: a prediction entry of several files whose outcomes the board does not read
#: (a rounded board's) shows its files pooled (settings.metric_pool_files: RMSE files of 1 and 3 show √5, not their mean 2,
#: and rank as the exact board ranks them); 23: a rounded board's leader group and sota.beaten_by read the relation its
#: letters show (evaluation.boards._PublishedRelation: its published verdicts and the inferred differences its letters
#: keep), not its published verdicts alone: a stored rounded report's leader group and beaten_by may change; and
#: above 300 compared entries sota.beaten_by names the entries that beat the state of the art's entry, not those it
#: beats (stats.sparse.SparseComparisons.beaten_by read each verdict the wrong way round); 24: on boards of up to 300
#: compared entries no difference is inferred against the pair's own P(W>L) < 1/2 (stats.sparse._verdict_relation): a
#: stored report's letters, leader group, runs_needed_for_decision and sota.beaten_by may change, its numbers do not;
#: 25: Boo_n's interval, and a Boo_n board's rank intervals, from 10n runs (evaluation.stats.boon.RUNS_PER_N; 3n
#: before, where the interval covered 82-90 %): a stored report's Boo_n intervals and rank intervals of fewer runs
#: become null with the reason, and settings.coverage quotes the figures measured at the board's k and n; a rounded
#: board's tie block gives no rank interval to an entry the exact board withholds one (evaluation.boards._tie_block);
#: Boo_1, the mean of the runs, shows the mean's interval (rows._boo_1_as_the_mean), not a second one.
#: 26: settings.coverage and settings.boo_n_warning describe the runs the board's entries have (each note's ``runs``;
#: the rank note at the recipe section's paired runs), not the challenge's k alone, which rows of more or fewer runs
#: contradicted (coverage.board_coverage_notes, rows.board_boo_n_warning), and a lone compared recipe entry shows no rank
#: interval where the note withholds one (its [1, 1] beside "k = 12 < 10n = 50: no rank interval"): stored reports are
#: recomputed with them. 27: a row's estimates (mean, Boo_n, unbiased Boo_n, the Boo_n curve) and limits lie inside
#: its runs' hull, rows.within_runs: 21 runs of accuracy 1.0 showed Boo_2 = 1.0000000000000002, past the metric's
#: range, as the weights' rounding had it; runs all equal show their value; other numbers move by an ulp at most.
#: 28: a prediction entry's Boo_1 shows its mean's interval (limits, method, source; rows.boo_1_as_the_mean, as a
#: recipe's does), not "k < 6" and none beside the mean's from the test examples, nor from 6 files a bootstrap over
#: the files; Boo_1's ``source`` is the mean's, and settings.boo_n_warning counts the rows that warn
#: (rows.board_boo_n_warning): a stored Boo_1 report with prediction entries changes; other reports' numbers do not; Boo_1's
#: warning below 6 runs gives the mean's reason (1 - 2/2^k), not Boo_n's 3n rule. 29: a recipe row's Boo_n (n >= 2) says
#: which scores picked its best run (``picked_on``: "validation", or "test" for an entry without validation scores, an
#: optimistic selection beside the others), and settings.boo_n_picked_note counts those entries on a Boo_n board
#: (rows.boo_n_picked_on; stats19 on the real runs): the numbers do not change; settings.coverage holds the notes of the
#: kinds of entries the board has (a board of predictions read the recipes' "no interval below 6 runs"). 30: a prediction
#: entry of 2 to 5 files shows no rank interval (sections.files_rank_withheld; the reason in settings.coverage,
#: "predictions.rank"): resampled over so few files its rank read "4" (certainly 4th) beside pairs that told it from no
#: entry, and the other entries' intervals place it only where the pair verdicts do (sections._prediction_ranks, marked
#: ``widened``): a stored report's prediction rank intervals and coverage notes may change, its other numbers do not
#: (stats20).
#: 31: on a board whose metric is not accuracy-like, the prediction coverage notes say plainly what was measured
#: (coverage.OTHER_METRIC_LABELS, OTHER_METRIC_REASON: "The score (one file) interval has no measured coverage: the
#: simulation measured it on accuracy only, not on this board's metric"); their label and reason only, no number moves
#: (newuser9).
#: 32: a recipe entry of fewer runs than a rank interval needs (6, or 10n on a Boo_n board), outside the
#: core, had its own interval withheld but the core's intervals still read its narrow resamples (the leader [1, 1]
#: beside an undecided pair with it) and no reason anywhere: the others now place it as the pair verdicts do
#: (sections._placed_ranks, shared with the prediction entries', marked ``widened``) and settings.coverage says why
#: ("recipe.rank_runs"): a stored report's recipe rank intervals and coverage notes may change (stats21).
#: 33: an entry shown below its bootstrap rank keeps the withheld entries' counts in its rank interval (its kept-only
#: interval holds its place among the kept entries before they are added: sections._placed_ranks; stats22's X read
#: [1, 4] for [1, 5]).
#: 34: a board ranked by the mean (or Boo_1) shows rank intervals from 16 paired runs, not 6 (sections.runs_for_rank_interval:
#: 30 close entries covered 85.0-93.2 % below it; rank23): a stored report's rank intervals and coverage notes may change.
#: 35: settings.coverage quotes a prediction board's rank intervals where shown ("predictions.rank", shown: one file or
#: 6 and more; coverage.RANK_RANGE flags the range over the shapes, 87.6-99.4 % at one file; predrank23): notes only.
#: 36: a prediction entry shows no rank interval where it was measured to cover less than 93 %: one file on fewer than
#: 500 test examples, 2 to 15 files (was 2 to 5; sections.files_rank_withheld, the reason in settings.coverage,
#: "predictions.rank"; predrule23): a stored report's prediction rank intervals and coverage notes may change.
REPORT_FORMAT = 36

#: Board sizes for which the settings list the runs the decision rule needs.
RUNS_NEEDED_SIZES = (2, 5, 10, 20, 50)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: a 5,000-entry report allocates ~10^5 acyclic dicts and
    lists, and each collection they trigger walks every object the caller holds (the stored report
    of an incremental update: millions), 0.15 s of a 0.7 s update (docs/scale.md). Nests: the
    service pauses it around the whole update too (decoding the stored report allocates millions)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _prior_ranks(previous: Mapping | None, kind: str, reuse: Mapping[int, dict]) -> dict | None:
    """What the previous report's recipe section says about rank intervals: paired runs, compared
    entries and each one's interval (None when widened to its rank: not the bootstrap's own)."""
    sections = [x for x in (previous or {}).get("sections", ()) if x.get("kind") == kind == "recipe"]
    if not sections or any(i not in reuse for i in sections[0]["compared"]):
        return None
    intervals = {i: reuse[i].get("rank_interval") for i in sections[0]["compared"]}
    return {
        "paired_runs": sections[0]["paired_runs"],
        "compared": set(sections[0]["compared"]),
        "intervals": {i: None if not v or v.get("widened") else (v["low"], v["high"]) for i, v in intervals.items()},
    }


def _board_notes(rows: list[dict], sections: list[dict], s: ReportSettings) -> dict:
    """``boo_n_warning`` and ``coverage`` of the board, from the runs its entries have (their ``runs_succeeded``) and
    the runs its recipe section's rank bootstrap pairs, not from the challenge's k alone (stats17): an imported board,
    a lowered k or entries of other run counts read notes their rows contradicted."""
    runs: dict[str, list[int]] = {"recipe": [], "predictions": []}
    for row in rows:
        runs[row["kind"]].append(int(row["runs_succeeded"]))
    # The notes of the kinds the board holds (a board of predictions read "no interval of the mean below 6 runs" of
    # recipes it has none of); a board without entries describes both at the challenge's k.
    runs = {kind: counts for kind, counts in runs.items() if counts} or runs
    recipe = [x for x in sections if x["kind"] == "recipe" and x["compared"]]
    paired = len(recipe[0]["paired_runs"]) if recipe else None
    k, n = int(s.k_runs), int(s.boo_n)
    examples = next((x.get("n_examples") for x in sections if x["kind"] == "predictions"), None)
    return {
        "boo_n_warning": board_boo_n_warning(rows, k, n),
        "boo_n_picked_note": board_boo_n_picked_note(rows, s),
        "coverage": board_coverage_notes(
            k, runs, paired, n=n, statistic=s.statistic, accuracy_like=bool(s.accuracy_like), examples=examples
        )
        + _files_rank_notes(rows, examples)
        + _runs_rank_notes(rows, paired, s),
    }


def _files_rank_notes(rows: list[dict], examples: int | None) -> list[dict]:
    """The ``predictions.rank`` note where a compared prediction entry's rank interval is withheld (its files, or one
    file on too few test ``examples``)."""
    files = [
        int(r["runs_succeeded"])
        for r in rows
        if r["kind"] == "predictions" and r.get("compared") and files_rank_withheld(int(r["runs_succeeded"]), examples)
    ]
    note = files_rank_note(files, examples)
    return [] if note is None else [note]


def _runs_rank_notes(rows: list[dict], paired: int | None, s: ReportSettings) -> list[dict]:
    """The ``recipe.rank_runs`` note where the recipe section shows rank intervals (its core pairs the runs they
    need) but a compared entry's is withheld: fewer runs than that, so outside the core (sections.recipe_section)."""
    if paired is None or ranks_withheld(s, paired):
        return []  # none shown: the board's "recipe.rank" note says why
    counts = [int(r["runs_succeeded"]) for r in rows if r["kind"] == "recipe" and r.get("compared")]
    withheld = {count: ranks_withheld(s, count) for count in set(counts)}  # once per run count, not per row
    runs = [count for count in counts if withheld[count]]
    note = runs_rank_note(runs, s.statistic, int(s.boo_n))
    return [] if note is None else [note]


def build_report(
    entries: Sequence[EntryRuns],
    settings: ReportSettings,
    reuse: Mapping[int, dict] | None = None,
    previous: Mapping | None = None,
    rank_slot: RankStateSlot | None = None,
) -> dict:
    """Build the leaderboard report of a challenge.

    Parameters
    ----------
    entries : sequence of EntryRuns
        Every entry with at least one succeeded run (any order).
    settings : ReportSettings
        The challenge's statistical settings.
    reuse : mapping of int to dict, optional
        Incremental update: rows of a previous report, by submission id, of recipe
        entries whose :func:`entry_fingerprint` and settings are unchanged; their own
        intervals are taken from there (:func:`~evaluation.report.rows.reused_row`),
        everything that depends on the other entries is recomputed.
    previous : dict, optional
        The report ``reuse`` comes from. When the recipe section's paired runs are unchanged
        and its compared entries are all still there, unchanged, the rank intervals of the
        entries a new entry cannot move are taken from it, shifted
        (:func:`evaluation.stats.bootstrap.rank_intervals_update`; exact).
    rank_slot : RankStateSlot, optional
        The caller's holder of the recipe section's rank bootstrap state between updates of this board
        (:mod:`evaluation.stats.rank_state`): read when it is this board's without the new entries, refilled
        either way (the same report; docs/scale.md).

    Returns
    -------
    dict
        JSON-serialisable (floats finite or None): ``format``, ``settings`` (with
        ``noether_n`` and ``confidence``), ``entries`` (every entry, section by section
        in display order), ``sections`` (per kind: ``kind``, ``label``, ``design``,
        ``entries``, ``compared``, ``leader_group``, ``paired_runs``, ``n_examples``,
        ``sota``, ``comparisons``). See the module docstring for the decisions.

    Raises
    ------
    ValueError
        For invalid settings (naming the field) or malformed entries.

    Notes
    -----
    Boo_n: Bajgar et al. (2018), eq. 7; P(A>B) and the γ rule: Bouthillier et al.
    (2021), eq. 9 and App. C; letters: Piepho (2004); state of the art: Møllersen &
    Holsbø; N: Noether (1987).

    Examples
    --------
    >>> import numpy as np
    >>> e = [EntryRuns(i, f"m{i}", "t", "recipe", 5, np.arange(5), 0.7 + 0.01 * i + 0.001 * np.arange(5))
    ...      for i in (1, 2)]
    >>> r = build_report(e, ReportSettings(n_resamples=200, k_runs=5))
    >>> [(x["method_name"], x["rank_display"]) for x in r["entries"]]
    [('m2', '1'), ('m1', '2')]
    """
    with collector_paused():
        return _build_report(entries, settings, reuse or {}, previous, rank_slot)


def _build_report(
    entries: Sequence[EntryRuns],
    settings: ReportSettings,
    reuse: Mapping[int, dict],
    previous: Mapping | None,
    rank_slot: RankStateSlot | None = None,
) -> dict:
    s = check_settings(settings)
    entries = check_entries(list(entries))
    try:
        noether_n = stats.noether_sample_size(s.gamma, s.alpha, s.beta)
        needed = [stats.runs_needed(size, gamma=s.gamma, alpha=s.alpha, beta=s.beta) for size in RUNS_NEEDED_SIZES]
    except ValueError:
        noether_n, needed = None, []
    fresh = [e for e in entries if not (e.id in reuse and e.kind == "recipe")]
    rows = entry_rows(fresh, s, noether_n)
    row_intervals(fresh, rows, s)  # all fresh rows at once
    secondary_rows(fresh, rows, s)
    rows = {e.id: rows[e.id] if e.id in rows else reused_row(reuse[e.id], e, s, noether_n) for e in entries}
    sections = []
    for kind, builder in (("recipe", recipe_section), ("predictions", prediction_section)):
        members = [e for e in entries if e.kind == kind]
        if members:
            prior = _prior_ranks(previous, kind, reuse)
            slot = {"rank_slot": rank_slot} if kind == "recipe" else {}
            sections.append(builder(members, rows, s, prior=prior, **slot))
    ordered = [row for section in sections for row in section.pop("_rows")]
    return {
        "format": REPORT_FORMAT,
        "settings": {
            "statistic": s.statistic,
            "boo_n": int(s.boo_n),
            "gamma": s.gamma,
            "alpha": s.alpha,
            "confidence": 1 - s.alpha,
            "correction": s.correction,
            "n_resamples": int(s.n_resamples),
            "seed": int(s.master_seed),
            "k_runs": int(s.k_runs),
            "beta": s.beta,
            "noether_n": noether_n,
            "higher_is_better": bool(s.higher_is_better),
            "runs_needed": [
                {
                    "entries": r.n_entries,
                    "comparisons": r.comparisons,
                    "any_verdict": r.any_verdict,
                    "for_power": r.for_power,
                }
                for r in needed
            ],
            **_board_notes(ordered, sections, s),
            "computed_on": describe_device(s.backend, s.device),
            "secondary_metrics": [
                {"name": m.name, "label": m.label, "higher_is_better": bool(m.higher_is_better)} for m in s.secondary
            ],
        },
        "entries": ordered,
        "sections": sections,
    }
