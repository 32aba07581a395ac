"""Order, ranks, significance letters and inversions of a section's compared entries.

Compared entries are ordered by the ranking statistic, then method name, then team (the
submission id only makes the order total), except where a verdict forces a winner above
the entry it beats (:func:`evaluation.stats.verdict_order`); every such move, and every
verdict a cycle leaves broken, is reported as an *inversion*. Letters are a compact
letter display (Piepho 2004) assigned in display order; entries with an equal statistic
(to 1e-12 relative) that share a letter share a rank, displayed ``"=2"``.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation import stats
from evaluation.report.settings import ReportSettings
from evaluation.stats._resample import TIE_RELATIVE
from evaluation.stats.ordering import verdict_rank_bounds
from evaluation.stats.sparse import sparse_inversions

__all__ = ["assign_ranks", "by_merit", "by_name", "inversion_rows", "priority_order", "rank_and_group", "same_value"]


def same_value(a: float | None, b: float | None) -> bool:
    """Two ranking statistics equal to ``TIE_RELATIVE`` (1e-12) of the larger: a tie, whatever rounding left
    (three files of 19, 20 and 21 correct of 25 average to 0.7999999999999999, one file of 20 to 0.8). Relative
    only, as the resampled ranks tie them (``evaluation.stats._resample.competition_rank``): a board reads the
    same in every unit."""
    return a is not None and b is not None and math.isclose(a, b, rel_tol=TIE_RELATIVE, abs_tol=0.0)


def by_name(row: dict):
    """The order of equal entries: method name, team, then submission id (only to make it total)."""
    return (row["method_name"], row["team"], row["submission_id"])


def by_merit(rows, sign: float) -> list[dict]:
    """Rows best first by the ranking statistic, equal ones (:func:`same_value` with the first of their block) by
    method name, then team (the submission id only makes the order total); entries without one last."""
    rows = list(rows)
    values = [r["ranking_value"] for r in rows]  # each row read once (20,000 rows: issue 27)
    ordered = sorted(range(len(rows)), key=lambda k: -sign * values[k] if values[k] is not None else math.inf)
    out: list[dict] = []
    block: list[int] = []
    for k in ordered:
        head = values[block[0]] if block else None
        if block and not (same_value(values[k], head) or values[k] is head is None):
            out += [rows[block[0]]] if len(block) == 1 else sorted((rows[b] for b in block), key=by_name)
            block = []
        block.append(k)
    return out + sorted((rows[b] for b in block), key=by_name)


def priority_order(rows: list[dict], index: dict[int, int], sign: float) -> np.ndarray:
    """Matrix indices of the compared rows, best first (:func:`by_merit`)."""
    return np.array([index[r["submission_id"]] for r in by_merit(rows, sign)], dtype=np.int64)


def assign_ranks(rows: list[dict]) -> None:
    """Competition ranks in display order; equal statistic + a shared letter = a tie.

    Letters are compared as letters (:func:`evaluation.stats.split_letters`): "a1" and
    "b1" share no letter although both contain "1".
    """
    block: list[dict] = []
    for position, row in enumerate(rows):
        head = block[0] if block else None
        tie = head is not None and same_value(row["ranking_value"], head["ranking_value"])
        if tie:  # the letters only where the statistic ties (20,000 rows: issue 27)
            letters = set(stats.split_letters(row["groups"]))
            tie = all(letters & set(stats.split_letters(other["groups"])) for other in block)
        if tie and head is not None:  # a tie needs a head
            row["rank"] = head["rank"]
            for member in (*block, row):
                member["tied"] = True
            block.append(row)
        else:
            _show_ranks(block)
            row["rank"] = position + 1
            block = [row]
    _show_ranks(block)


def _show_ranks(block: list[dict]) -> None:
    """The rank displays of a block :func:`assign_ranks` closed (in the same pass: 20,000 rows, issue 27)."""
    for row in block:
        row["rank_display"] = f"={row['rank']}" if row["tied"] else str(row["rank"])


def rank_and_group(rows: list[dict], res, ranks, index: dict[int, int], s: ReportSettings) -> list[dict]:
    """Order compared rows (verdict-consistent), give letters (in display order), ranks and rank intervals.

    ``res`` is a :class:`evaluation.stats.sparse.SparseComparisons` (or None).

    A rank interval that misses the rank shown (possible only where a verdict moved the
    entry against its statistic) is widened to include it and marked ``widened``.
    """
    sign = 1.0 if s.higher_is_better else -1.0
    if res is None:
        rows = by_merit(rows, sign)
        at = [index[r["submission_id"]] for r in rows]
        groups = {at[0]: "a"} if rows else {}
    else:  # each row's matrix index read once, the display order's indices kept (20,000 rows: issue 27)
        by_index = dict(zip([index[r["submission_id"]] for r in rows], rows))
        at = np.asarray(res.order).tolist()
        rows = [by_index[i] for i in at]
        groups = res.groups
    split: dict[str, list[str]] = {}  # each distinct display's letters found once, a list of its own per row
    for i, row in zip(at, rows):
        row["groups"] = display = groups[i]
        letters = split.get(display)
        if letters is None:
            letters = split[display] = stats.split_letters(display)
        row["group_letters"] = list(letters)
    assign_ranks(rows)
    _rank_intervals(rows, at, ranks, res, len(index))
    return rows


def _rank_intervals(rows: list[dict], at: list[int], ranks, res, n: int) -> None:
    """Each row's ``rank_interval`` (``at``: the rows' matrix indices): the bootstrap's interval (verdict-consistent),
    widened to hold the rank shown."""
    low, high = (
        (np.ones(n, dtype=np.int64), np.ones(n, dtype=np.int64))
        if ranks is None
        else (np.asarray(ranks.low, dtype=np.int64), np.asarray(ranks.high, dtype=np.int64))
    )
    narrowed = np.zeros(n, dtype=bool)
    if res is not None and ranks is not None:
        low, high, narrowed = verdict_consistent_ranks(res, low, high)
    # every row's numbers at once, as Python ints and bools, in display order (20,000 rows: issue 27)
    at_ = np.asarray(at, dtype=np.int64)
    shown = np.array([row["rank"] for row in rows], dtype=np.int64)
    rank = np.ones(len(rows), dtype=np.int64) if ranks is None else np.asarray(ranks.rank).astype(np.int64)[at_]
    lo, hi = np.asarray(low).astype(np.int64)[at_], np.asarray(high).astype(np.int64)[at_]
    widened = np.asarray(narrowed).astype(bool)[at_] | (lo > shown) | (shown > hi)
    columns = rank.tolist(), np.minimum(lo, shown).tolist(), np.maximum(hi, shown).tolist(), widened.tolist()
    for row, r, low_, high_, wide in zip(rows, *columns, strict=True):
        row["rank_interval"] = {"rank": r, "low": low_, "high": high_, "widened": wide}


def verdict_consistent_ranks(res, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank intervals that never place a winner below the entry it beats (issue 23, rows 5 and 12).

    Each bootstrap interval is intersected with the ranks the verdicts allow
    (:func:`evaluation.stats.ordering.verdict_rank_bounds`), then the verdicts are carried
    along (a loser's lower limit is below its winner's, a winner's upper limit above its
    loser's). Where the bootstrap and the verdicts leave no common rank, the verdicts' bounds
    are shown. Returns ``(low, high, changed)``; a changed interval is marked ``widened``
    (it is no longer the bootstrap's own).
    """
    better = res.better
    winners = np.concatenate([res.i[better[0]], res.j[better[1]]])
    losers = np.concatenate([res.j[better[0]], res.i[better[1]]])
    lb, ub = verdict_rank_bounds(winners, losers, res.order)
    shown = np.empty(res.order.size, dtype=np.int64)
    shown[res.order] = np.arange(res.order.size)
    down = shown[winners] < shown[losers]
    w, l = winners[down], losers[down]
    by_loser, by_winner = np.argsort(shown[l], kind="stable"), np.argsort(-shown[w], kind="stable")
    out_low, out_high = np.maximum(low, lb), np.minimum(high, ub)
    for _ in range(res.order.size + 1):
        out_low, out_high = np.where(out_low > out_high, lb, out_low), np.where(out_low > out_high, ub, out_high)
        for a, b in zip(w[by_loser].tolist(), l[by_loser].tolist()):  # display order: winners settled first
            out_low[b] = max(out_low[b], out_low[a] + 1)
        for a, b in zip(w[by_winner].tolist(), l[by_winner].tolist()):  # reverse display order
            out_high[a] = min(out_high[a], out_high[b] - 1)
        if (out_low <= out_high).all():
            break
    else:  # the bootstrap and the verdicts never met: the verdicts' bounds alone
        out_low, out_high = lb.copy(), ub.copy()
    return out_low, out_high, (out_low != low) | (out_high != high)


def inversion_rows(res, index: dict[int, int], rows: dict[int, dict]) -> list[dict]:
    """The inversions of the display order among the compared pairs (:func:`evaluation.stats.order_inversions`)."""
    if res is None:
        return []
    ids = {i: sid for sid, i in index.items()}
    out = []
    for above, below, kind in sparse_inversions(res):
        reason = inversion_reason(rows[ids[above]]["method_name"], rows[ids[below]]["method_name"], kind)
        out.append({"above": ids[above], "below": ids[below], "kind": kind, "reason": reason})
    return out


def inversion_reason(above: str, below: str, kind: str) -> str:
    """Why the entry named ``above`` is shown above ``below`` against the statistic or against a verdict."""
    if kind == "statistic":
        return f"{above} is shown above {below} despite a worse ranking statistic: it beats it on P(A>B)"
    return f"{below} beats {above} but is shown below it: the verdicts form a cycle, so no order can respect them all"
