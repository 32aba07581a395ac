"""Each entry's own row of the report: location, spread, Boo_n, its curve and intervals.

What an entry's runs say on their own, before any comparison: mean and Boo_n with
bootstrap intervals over runs (studentized, inside the bootstrap's support; Boo_n, Bajgar et
al. 2018, eq. 7, shown from 10n runs; the
unbiased order-statistic estimator next to it), the median and standard deviation, the
Boo_n curve for n = 1..``curve_max_n``. Sections later fill in ranks, letters, rank
intervals and the runs still needed for a decision, or mark the entry as left out of
comparisons (:func:`exclude`).
"""

from __future__ import annotations

import hashlib
import math
import operator
from typing import Any

import numpy as np

from evaluation import stats
from evaluation.report.entries import EntryRuns
from evaluation.report.settings import (
    PURPOSE,
    SECTION_CODE,
    ReportSettings,
    derive_seed,
)
from evaluation.report.values import finite, interval
from evaluation.stats._resample import tie_block_starts
from evaluation.stats.boon import _boo_weights, min_runs_for_interval, min_runs_rule
from evaluation.stats.bootstrap import MIN_RUNS_MEAN_INTERVAL, mean_interval_shown

__all__ = [
    "ROW_KEYS",
    "board_boo_n_picked_note",
    "board_boo_n_warning",
    "boo_n_picked_on",
    "boo_1_as_the_mean",
    "boo_n_curve",
    "boo_n_warning",
    "mean_warning",
    "entry_fingerprint",
    "entry_row",
    "entry_rows",
    "exclude",
    "own_moments",
    "own_statistics",
    "reused_row",
    "row_intervals",
    "shown_limits",
    "within_runs",
]

#: The keys :func:`entry_row` fills; sections and publication add others.
ROW_KEYS = (
    "submission_id",
    "method_name",
    "team",
    "kind",
    "created",
    "in_progress",
    "runs_succeeded",
    "runs_expected",
    "k_runs",
    "rank",
    "rank_display",
    "tied",
    "ranking_value",
    "mean",
    "boo_n",
    "boo_n_unbiased",
    "median",
    "std",
    "groups",
    "rank_interval",
    "runs_needed_for_decision",
    "too_few_runs",
    "compared",
    "excluded_reason",
    "boo_n_curve",
    "run_scores",
    "provenance",
    "runs_left_out",
    "secondary",
)


def boo_n_warning(k: int, n: int) -> str | None:
    """Why Boo_n has no interval when k runs are too few (k < 10n,
    :func:`~evaluation.stats.boon.min_runs_for_interval`), else None."""
    need = min_runs_for_interval(n)
    if k >= need:
        return None
    return (
        f"{k} run{'' if k == 1 else 's'} for Boo_{n}: no interval; at least {min_runs_rule(n)} are needed for an "
        f"interval that covers its level {_why_no_boo_n_interval(k, n)}"
    )


def _why_no_boo_n_interval(k: int, n: int) -> str:
    """The reason :func:`boo_n_warning` gives: Boo_n's measured coverage below 10n (n >= 2), the mean's bound for
    Boo_1, which is the mean of the runs (eq. 7 weighs every run alike; unbiased, and no 3n rule applies)."""
    if n == 1:
        return (
            f"(Boo_1 is the mean of the runs: with fewer, an interval inside the runs' range covers at most "
            f"1 - 2/2^k = {1 - 2 / 2**k:.1%} of true means)"
        )
    return (
        "(with fewer, a bootstrap interval of Boo_n covers far less: 82-90 % instead of 95 % at 3n runs, and below 3n "
        "the paper's estimator is biased low)"
    )


def boo_n_picked_on(e: EntryRuns, s: ReportSettings) -> str | None:
    """Which scores choose a recipe entry's best run for Boo_n (n >= 2): ``"validation"`` (Bajgar et al. 2018, eq. 7)
    or, for an entry without validation scores, ``"test"``: the expected best of n test scores, an optimistic
    selection beside entries picked on validation (the same 74 ResNet-32 runs read Boo_3 0.6899 without their
    validation scores and 0.6854 with them: ranks 1 and 2 apart, a statistician's finding on the real runs). None for
    Boo_1 (the mean: no choice) and prediction entries (not ranked by Boo_n)."""
    if e.kind != "recipe" or s.boo_n < 2:
        return None
    return "validation" if e.valid is not None else "test"


def board_boo_n_picked_note(rows: list[dict], s: ReportSettings) -> str | None:
    """The board's ``settings.boo_n_picked_note``: where a board ranked by Boo_n holds entries whose best run is picked
    on test scores (:func:`boo_n_picked_on`), how many, and why their Boo_n is not comparable with the others'."""
    if s.statistic != "boo_n":  # no row read (20,000 on a board ranked by the mean; issue 27)
        return None
    on_test = sum(row["boo_n"].get("picked_on") == "test" for row in rows)
    if not on_test:
        return None
    on_valid = sum(row["boo_n"].get("picked_on") == "validation" for row in rows)
    one = on_test == 1
    note = (
        f"{on_test} {'entry has' if one else 'entries have'} no validation scores: {'its' if one else 'their'} "
        f"Boo_{s.boo_n} picks the best run on the test scores themselves (the expected best of {s.boo_n} test scores), "
        f"which favours {'it' if one else 'them'}"
    )
    if on_valid:
        note += (
            f" against the {on_valid} {'entry' if on_valid == 1 else 'entries'} whose best run is picked on validation "
            "scores (Bajgar et al. 2018, eq. 7): ranks and verdicts between the two compare different statistics"
        )
    return note + "; marked on the rows."


def board_boo_n_warning(rows: list[dict], k: int, n: int) -> str | None:
    """The board's ``settings.boo_n_warning``: :func:`boo_n_warning` of the rows that give one (their ``boo_n``'s
    ``warning``, :func:`entry_row`; the challenge's ``k`` when there are no rows), never of ``k`` alone: a board of
    74-run entries at k = 30 read "30 runs for Boo_5: no interval" beside rows that show one (stats17), and a Boo_1
    board "3 runs for Boo_1: no interval" beside a prediction entry of 3 files showing its mean's interval for it
    (a new user's finding). None when no row of 2 runs or more warns; where some do and some do not, it says how many
    do and their runs."""
    counted = [r for r in rows if r["runs_succeeded"] >= 2] or rows
    if not counted:
        return boo_n_warning(k, n)
    counts = [int(r["runs_succeeded"]) for r in counted]
    below = sorted(int(r["runs_succeeded"]) for r in counted if r["boo_n"].get("warning"))
    if not below:
        return None
    if len(below) == len(counts):
        low, high = below[0], below[-1]
        warning = boo_n_warning(high, n)
        assert warning is not None  # high < need
        return warning if low == high else f"{low}-{warning}"
    spread = f"{below[0]}" if below[0] == below[-1] else f"{below[0]}-{below[-1]}"
    return (
        f"{len(below)} of {len(counts)} entries have {spread} runs for Boo_{n}: no interval for them; at least "
        f"{min_runs_rule(n)} are needed for an interval that covers its level {_why_no_boo_n_interval(below[-1], n)}"
    )


def mean_warning(k: int) -> str | None:
    """Why the mean of k runs has no interval (k < 6, :func:`~evaluation.stats.bootstrap.mean_interval_shown`),
    else None."""
    if mean_interval_shown(k):
        return None
    return (
        f"{k} run{'' if k == 1 else 's'}: no interval of the mean below {MIN_RUNS_MEAN_INTERVAL} runs (an interval "
        f"inside the runs' range covers at most 1 - 2/2^k = {1 - 2 / 2**k:.1%} of true means)"
    )


def entry_rows(entries: list[EntryRuns], s: ReportSettings, noether_n: int | None) -> dict[int, dict]:
    """:func:`entry_row` of many entries, without intervals (:func:`row_intervals` adds them).

    Entries of one run count and validation layout whose ordering key has no ties share one
    sort and one set of Boo_n weights (:func:`own_statistics`); the figures are those of
    :func:`evaluation.stats.boo_n` and :func:`boo_n_curve` entry by entry (the same products).
    """
    own = own_statistics(entries, s)
    moments = own_moments(entries)
    return {
        e.id: entry_row(e, s, noether_n, intervals=False, own=own.get(e.id), moments=moments[e.id]) for e in entries
    }


def own_moments(entries: list[EntryRuns]) -> dict[int, tuple[float, float, float | None]]:
    """(mean, median, ddof=1 standard deviation or None below 2 runs) of each entry's runs, by id.

    One reduction along the runs per run count: each row is reduced as the entry's own array
    would be (the same summation, the same partition), so the figures equal entry by entry's.
    Runs that all tie under the board's tie rule (one block of :func:`~evaluation.stats._resample.tie_block_starts`)
    have a standard deviation of 0: three runs of 0.78 gave 1.4e-16 (their mean rounds to 0.7799999999999999),
    three of 0.22 exactly 0, and the state of the art adjusted the accuracy board's leader by that rounding
    (bound 0.779934) where the error board of the same runs kept 0.22 (a property hunt's finding).
    """
    groups: dict[int, list[EntryRuns]] = {}
    for e in entries:
        groups.setdefault(e.test.size, []).append(e)
    out: dict[int, tuple[float, float, float | None]] = {}
    for k, members in groups.items():
        test = np.stack([e.test for e in members])
        means, medians = test.mean(axis=1), np.median(test, axis=1)
        stds = runs_std(test) if k >= 2 else [None] * len(members)
        for e, mean, median, std in zip(members, means.tolist(), medians.tolist(), list(stds)):
            out[e.id] = (mean, median, None if std is None else float(std))
    return out


def within_runs(test: np.ndarray, *values):
    """``values`` (floats, arrays or None) clipped to ``[min(test), max(test)]``: the mean, Boo_n (both estimators),
    its curve and their limits are averages of the runs with weights summing to 1 (Bajgar et al. 2018, eq. 7), inside
    the runs' hull but for the rounding of the weights and sums: 21 runs of 1.0 gave Boo_2 = 1.0000000000000002, an
    accuracy above 1 past the metric's range, and ten runs of 0.8 the mean's interval [0.8, 0.8000000000000002]
    (stats18's finding). Clipping moves a value by that rounding only; runs that are all equal give their value."""
    lo, hi = float(np.min(test)), float(np.max(test))
    return tuple(
        v if v is None else (np.clip(v, lo, hi) if isinstance(v, np.ndarray) else min(max(v, lo), hi)) for v in values
    )


def runs_std(test: np.ndarray) -> np.ndarray:
    """The ddof=1 standard deviation of each row's runs (``test``: rows x runs, at least 2), 0 where the runs all
    tie under the board's tie rule (one block of :func:`~evaluation.stats._resample.tie_block_starts`): the spread
    of a row and of a secondary metric, and the standard error the state of the art adjusts by. Computed, three
    runs of 0.78 have 1.4e-16 (their mean rounds to 0.7799999999999999) where three of 0.22 have exactly 0."""
    test = np.atleast_2d(np.asarray(test, dtype=np.float64))
    constant = ~tie_block_starts(np.sort(test, axis=1))[:, 1:].any(axis=1)
    return np.where(constant, 0.0, test.std(axis=1, ddof=1))


def own_statistics(entries: list[EntryRuns], s: ReportSettings) -> dict[int, tuple]:
    """(Boo_n, unbiased Boo_n or None, Boo_n curve) of the entries whose key has no ties, by id.

    Grouped by run count and validation layout; each group is ordered as
    :func:`evaluation.stats.boo_n` orders one entry (by key, then oriented test) in one
    ``lexsort``, and every row takes the tie-free weights of its run count (Bajgar et al.
    2018, eq. 7). Rows with tied keys are left to :func:`entry_row`.
    """
    groups: dict[tuple, list[EntryRuns]] = {}
    for e in entries:
        groups.setdefault((e.test.size, e.valid is None), []).append(e)
    out: dict[int, tuple] = {}
    sign = 1.0 if s.higher_is_better else -1.0
    for (k, no_valid), members in groups.items():
        test = np.stack([e.test for e in members])
        key = sign * (test if no_valid else np.stack([e.valid for e in members if e.valid is not None]))
        order = np.lexsort((sign * test, key), axis=1)
        key, test = np.take_along_axis(key, order, axis=1), np.take_along_axis(test, order, axis=1)
        tie_free = ~np.any(key[:, 1:] == key[:, :-1], axis=1)
        ranks = np.arange(k, dtype=np.float64)
        paper = _boo_weights(ranks, s.boo_n, "paper")
        unbiased = _boo_weights(ranks, s.boo_n, "unbiased") if s.boo_n <= k else None
        curve = _curve_weights(k, min(s.curve_max_n, k))
        for e, row, free in zip(members, test, tie_free):
            if free:
                out[e.id] = (float(paper @ row), None if unbiased is None else float(unbiased @ row), curve @ row)
    return out


def _curve_weights(m: int, n_max: int) -> np.ndarray:
    """:func:`boo_n_curve`'s weights (n_max, m) for m runs without ties, worst first."""
    upper = np.arange(1, m + 1) / m
    lower = np.arange(m) / m
    n = np.arange(1, n_max + 1, dtype=np.float64)[:, None]
    return upper[None, :] ** n - lower[None, :] ** n


def entry_row(
    e: EntryRuns,
    s: ReportSettings,
    noether_n: int | None,
    intervals: bool = True,
    own: tuple | None = None,
    moments: tuple | None = None,
) -> dict:
    """What an entry's own runs say: location, spread, Boo_n (both estimators) and its curve.

    ``intervals=False`` leaves the bootstrap intervals to :func:`row_intervals` (many rows at once);
    ``own``: its (Boo_n, unbiased Boo_n, curve) from :func:`own_statistics`, ``moments`` its (mean,
    median, std) from :func:`own_moments`; else computed here.
    """
    k = e.test.size
    mean, median, std = moments or own_moments([e])[e.id]
    if own is None:
        boo = stats.boo_n(e.test, s.boo_n, valid=e.valid, higher_is_better=s.higher_is_better)
        unbiased = (
            stats.boo_n(e.test, s.boo_n, valid=e.valid, higher_is_better=s.higher_is_better, estimator="unbiased")
            if s.boo_n <= k
            else None
        )
        curve = boo_n_curve(e, min(s.curve_max_n, k), s.higher_is_better)
    else:
        boo, unbiased, curve = own
    mean, boo, unbiased, curve = within_runs(e.test, mean, boo, unbiased, np.asarray(curve, dtype=np.float64))
    mean_said = mean_warning(k) if e.kind == "recipe" else None
    boo_said = s.boo_n > 1 or mean_said is not None
    row: dict[str, Any] = {
        "submission_id": int(e.id),
        "method_name": e.name,
        "team": e.team,
        "kind": e.kind,
        "created": e.created,
        "in_progress": bool(e.in_progress),
        "runs_succeeded": int(k),
        "runs_expected": int(e.runs_expected),
        "k_runs": int(s.k_runs),
        "rank": None,
        "rank_display": None,
        "tied": False,
        "ranking_value": None,
        "mean": interval(mean, se=None, source="runs", method=None, warning=mean_said),
        # Boo_1 is the mean (boo_1_as_the_mean): warned where the mean is, never a prediction entry (test examples)
        "boo_n": interval(
            boo,
            n=int(s.boo_n),
            estimator="paper",
            method=None,
            warning=boo_n_warning(k, s.boo_n) if boo_said else None,
            picked_on=boo_n_picked_on(e, s),
        ),
        "boo_n_unbiased": interval(unbiased, n=int(s.boo_n), estimator="unbiased", method=None),
        "median": finite(median),
        "std": None if std is None else finite(std),
        "groups": "",
        "rank_interval": None,
        "runs_needed_for_decision": (max(0, noether_n - k) if noether_n is not None and e.kind == "recipe" else None),
        "too_few_runs": False,
        "compared": False,
        "excluded_reason": None,
        "boo_n_curve": [finite(v) for v in curve],
        "run_scores": [finite(x) for x in e.test],
        "provenance": None if e.provenance is None else dict(e.provenance),
        # Runs without a finite validation score, left out of every statistic above (check_entries).
        "runs_left_out": [{"run_index": int(i), "reason": reason} for i, reason in e.left_out],
        # The secondary metrics (evaluation.report.secondary), filled by build_report.
        "secondary": [],
    }
    if k >= 2 and intervals:
        row_intervals([e], {e.id: row}, s)
    # Prediction sections rank by the mean over test examples: Boo_n of a few files is not a ranking.
    boo_ranks = s.statistic == "boo_n" and e.kind == "recipe"
    row["ranking_value"] = row["boo_n"]["estimate"] if boo_ranks else row["mean"]["estimate"]
    return row


#: The bootstrap intervals of a row: (row key, statistic, Boo_n estimator, seed purpose).
_INTERVALS = (
    ("mean", "mean", "paper", "mean"),
    ("boo_n", "boo_n", "paper", "boo_n"),
    ("boo_n_unbiased", "boo_n", "unbiased", "boo_n_unbiased"),
)


def row_intervals(entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings) -> None:
    """Fill the bootstrap intervals of the rows of ``entries`` (those with >= 2 runs).

    Mean of recipes (studentized, from :func:`~evaluation.stats.bootstrap.mean_interval_shown` runs; its
    standard error always), Boo_n and unbiased Boo_n (Bajgar et al. 2018, eq. 7; studentized,
    only from :func:`~evaluation.stats.boon.min_runs_for_interval` runs), each seeded by the
    entry alone (:func:`derive_seed`), computed for all entries of one section, run count and
    validation layout at once (:func:`evaluation.stats.bootstrap.seeded_intervals`: the same
    resamples as one :func:`~evaluation.stats.bootstrap_interval` per entry, to rounding).
    """
    groups: dict[tuple, list[EntryRuns]] = {}
    for e in entries:
        if e.test.size >= 2:
            groups.setdefault((e.kind, e.test.size, e.valid is None), []).append(e)
    conf = 1 - s.alpha
    for (kind, k, no_valid), members in groups.items():
        section = SECTION_CODE[kind]
        for key, statistic, estimator, purpose in _INTERVALS:
            todo = [
                e
                for e in members
                if rows[e.id][key]["estimate"] is not None
                and (kind == "recipe" if statistic == "mean" else k >= min_runs_for_interval(s.boo_n))
            ]
            if statistic == "mean":
                for e in todo:  # its standard error whether or not the interval is shown (the state of the art's)
                    std = rows[e.id]["std"]  # None when not finite: so is its standard error
                    rows[e.id][key]["se"] = None if std is None else finite(std / math.sqrt(k))
                todo = todo if mean_interval_shown(k) else []
            if not todo or (statistic == "boo_n" and s.boo_n == 1):  # Boo_1: the mean's, below
                continue
            seeds = [derive_seed(s.master_seed, section, PURPOSE[purpose], e.id) for e in todo]
            runs = np.stack([e.test for e in todo])
            low, high = stats.seeded_intervals(
                runs,
                seeds,
                statistic,
                n=s.boo_n,
                valid=None
                if no_valid or statistic != "boo_n"
                else np.stack([e.valid for e in todo if e.valid is not None]),  # all of them: not no_valid
                n_resamples=s.n_resamples,
                confidence_level=conf,
                higher_is_better=s.higher_is_better,
                estimator=estimator,
            )
            method = "studentized bootstrap"
            floor, ceiling = runs.min(axis=1), runs.max(axis=1)  # each row's limits inside its runs' hull (within_runs)
            low, high = np.clip(low, floor, ceiling), np.clip(high, floor, ceiling)
            low, high = shown_limits(low, high, [rows[e.id][key]["estimate"] for e in todo], s.score_range)
            for e, lo, hi in zip(todo, low, high):
                rows[e.id][key].update(low=finite(lo), high=finite(hi), method=method)
    boo_1_as_the_mean([rows[e.id] for e in entries if e.kind == "recipe"], s)  # a prediction's: prediction_section


def boo_1_as_the_mean(rows: list[dict], s: ReportSettings) -> None:
    """On a Boo_1 board (else nothing), each row's Boo_1 (both estimators) shows its mean's interval: limits, method
    and source. Boo_1 is the mean of the runs (Bajgar et al. 2018, eq. 7 weighs every run alike): not a second
    interval of the same number (Boo_n's bootstrap-t with a jackknife standard error, other resamples and support:
    limits up to 1.4 apart on a width of 1.8 at k = 8, a statistician's finding), nor none beside the mean's (a
    prediction entry of 3 files, whose mean has the test examples' interval, showed Boo_1 flagged "k < 6" beside its
    mean in [0.8911, 0.9987], a new user's finding). Call it once the rows' mean intervals are final (a prediction
    entry's: :func:`~evaluation.report.sections.prediction_section`). The limits hold Boo_1's own estimate
    (:func:`shown_limits`): a prediction entry's mean is its files pooled (RMSE: √ of their mean MSE), Boo_1 their
    scores' mean."""
    if s.boo_n != 1 or not rows:
        return
    for key in ("boo_n", "boo_n_unbiased"):
        low, high = shown_limits(
            [row["mean"]["low"] for row in rows],
            [row["mean"]["high"] for row in rows],
            [row[key]["estimate"] for row in rows],
            s.score_range,
        )
        for row, lo, hi in zip(rows, low, high):  # no mean interval (None): none (NaN)
            row[key].update(
                low=finite(lo), high=finite(hi), method=row["mean"].get("method"), source=row["mean"]["source"]
            )


def shown_limits(low, high, estimate, score_range) -> tuple[np.ndarray, np.ndarray]:
    """Interval limits as the report shows them: clipped to the values the score can take, then holding the
    estimate shown beside them (the one rule of every interval of a row: the primary's, over runs or test
    examples, and each secondary metric's).

    With a few runs near a bound (an accuracy near 1), the studentized bootstrap's interval
    (Bajgar et al. 2018, eq. 7) can reach past the bound; the truth cannot lie there, so
    clipping drops only impossible values and never lowers coverage (``score_range`` ``(None, None)``:
    unbounded). The limits are then widened to the estimate where it lies an ulp outside them: constant
    runs of 0.8 gave [0.8000000000000002, 0.8000000000000002] beside the mean 0.8 (the mean's and the
    bootstrap's sums round apart), and a secondary metric's did until it took this rule too (a property hunt).
    ``estimate`` None or not finite leaves the limits as clipped.
    """
    lower, upper = score_range
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    if lower is not None:
        low, high = np.maximum(low, lower), np.maximum(high, lower)
    if upper is not None:
        low, high = np.minimum(low, upper), np.minimum(high, upper)
    shown = np.asarray(
        [np.nan if v is None else v for v in np.atleast_1d(np.asarray(estimate, dtype=object))], dtype=np.float64
    ).reshape(np.shape(low))
    held = np.isfinite(shown)
    return np.where(held, np.minimum(low, shown), low), np.where(held, np.maximum(high, shown), high)


def entry_fingerprint(e: EntryRuns) -> str:
    """A digest of everything :func:`entry_row` reads from an entry (its runs, names, state)."""
    digest = hashlib.sha256(
        repr(
            (int(e.id), e.name, e.team, e.kind, int(e.runs_expected), e.created, bool(e.in_progress), e.provenance)
        ).encode()
    )
    for array in (e.run_index, e.test, e.valid):
        digest.update(b"-" if array is None else np.ascontiguousarray(array).tobytes())
    for name, (scores, outcomes) in sorted((e.secondary or {}).items()):  # absent: the digest as before
        digest.update(name.encode())
        for array in (scores, outcomes):
            digest.update(b"-" if array is None else np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return digest.hexdigest()[:24]


#: What the sections fill in, reset in a reused row (:func:`reused_row`).
_REUSED_RESET = {
    "rank": None,
    "rank_display": None,
    "tied": False,
    "groups": "",
    "rank_interval": None,
    "too_few_runs": False,
    "compared": False,
    "excluded_reason": None,
}
#: The keys of :data:`ROW_KEYS` a reused row takes from the previous one, and their values at once (:func:`reused_row`).
_REUSED_KEYS = tuple(key for key in ROW_KEYS if key not in _REUSED_RESET and key != "runs_needed_for_decision")
_REUSED_VALUES = operator.itemgetter(*_REUSED_KEYS)
#: A reused row before its values: every key of :data:`ROW_KEYS` in order, the reset ones set (copied, then filled in
#: place: no table grown key by key, 20,000 rows per update, issue 27).
_REUSED_TEMPLATE: dict[str, Any] = {key: _REUSED_RESET.get(key) for key in ROW_KEYS}


def reused_row(previous: dict, e: EntryRuns, s: ReportSettings, noether_n: int | None) -> dict:
    """An entry's own row from the previous report of the same entry and settings (incremental update).

    The caller has checked that the entry (:func:`entry_fingerprint`) and the settings
    are unchanged; the seeds of an entry's intervals depend on the entry only
    (:func:`~evaluation.report.settings.derive_seed`), so its row is what
    :func:`entry_row` would compute. What the sections fill in is reset.
    """
    if "secondary" not in previous:  # a row stored before secondary metrics
        previous = {**previous, "secondary": []}
    row = _REUSED_TEMPLATE.copy()
    row.update(zip(_REUSED_KEYS, _REUSED_VALUES(previous)))
    if row["secondary"]:
        row["secondary"] = [{**value, "mean": dict(value["mean"])} for value in row["secondary"]]
    else:
        row["secondary"] = []
    row["mean"], row["boo_n"], row["boo_n_unbiased"] = (  # the nested intervals sections may update
        dict(row["mean"]),
        dict(row["boo_n"]),
        dict(row["boo_n_unbiased"]),
    )
    row["runs_needed_for_decision"] = (
        max(0, noether_n - e.test.size) if noether_n is not None and e.kind == "recipe" else None
    )
    return row


def boo_n_curve(e: EntryRuns, n_max: int, higher_is_better: bool) -> np.ndarray:
    """Boo_n for n = 1..n_max at once (Bajgar et al. 2018, eq. 7, ties sharing weight).

    The same weights as :func:`evaluation.stats.boo_n`, for every n in one array
    operation: a tie block of validation (else test) scores spanning the sorted ranks
    ``(lower, upper]`` out of m gets ``(upper/m)^n - (lower/m)^n``, shared equally.
    """
    key = e.test if e.valid is None else e.valid
    key = key if higher_is_better else -key
    order = np.argsort(key, kind="stable")
    sorted_key, sorted_test = key[order], e.test[order]
    m = key.size
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    sizes = np.diff(np.r_[starts, m])
    upper = (starts + sizes) / m
    lower = starts / m
    n = np.arange(1, n_max + 1, dtype=np.float64)[:, None]
    weights = upper[None, :] ** n - lower[None, :] ** n  # (n_max, blocks)
    block_mean = np.add.reduceat(sorted_test, starts) / sizes
    return weights @ block_mean


def exclude(row: dict, reason: str, too_few: bool = True) -> None:
    row["too_few_runs"] = row["too_few_runs"] or too_few
    row["excluded_reason"] = reason
