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
from evaluation.stats.sparse import sparse_inversions

__all__ = ["assign_ranks", "inversion_rows", "priority_order", "rank_and_group", "sort_key"]


def sort_key(row: dict, sign: float):
    value = row["ranking_value"]
    return (-sign * value if value is not None else math.inf, row["method_name"], row["team"],
            row["submission_id"])


def priority_order(rows: list[dict], index: dict[int, int], sign: float) -> np.ndarray:
    """Matrix indices of the compared rows, best first by :func:`sort_key`."""
    return np.array([index[r["submission_id"]] for r in sorted(rows, key=lambda r: sort_key(r, sign))],
                    dtype=np.int64)


def assign_ranks(rows: list[dict]) -> None:
    """Competition ranks in display order; equal statistic + a shared letter = a tie.

    Letters are compared as letters (:func:`evaluation.stats.split_letters`): "a1" and
    "b1" share no letter although both contain "1".
    """
    block: list[dict] = []
    for position, row in enumerate(rows):
        head = block[0] if block else None
        letters = set(stats.split_letters(row["groups"]))
        tie = (head is not None and row["ranking_value"] is not None and head["ranking_value"] is not None
               and math.isclose(row["ranking_value"], head["ranking_value"], rel_tol=1e-12, abs_tol=1e-12)
               and all(letters & set(stats.split_letters(other["groups"])) for other in block))
        if tie:
            row["rank"] = head["rank"]
            for member in (*block, row):
                member["tied"] = True
            block.append(row)
        else:
            row["rank"] = position + 1
            block = [row]
    for row in rows:
        row["rank_display"] = f"={row['rank']}" if row["tied"] else str(row["rank"])


def rank_and_group(rows: list[dict], res, ranks, index: dict[int, int], s: ReportSettings) -> list[dict]:
    """Order compared rows (verdict-consistent), give letters (in display order), ranks and rank intervals.

    ``res`` is a :class:`evaluation.stats.sparse.SparseComparisons` (or None).

    A rank interval that misses the rank shown (possible only where a verdict moved the
    entry against its statistic) is widened to include it and marked ``widened``.
    """
    sign = 1.0 if s.higher_is_better else -1.0
    by_id = {r["submission_id"]: r for r in rows}
    if res is None:
        rows = sorted(rows, key=lambda r: sort_key(r, sign))
        letters = {rows[0]["submission_id"]: "a"} if rows else {}
    else:
        ids = {i: sid for sid, i in index.items()}
        rows = [by_id[ids[int(i)]] for i in res.order]
        groups = res.groups
        letters = {r["submission_id"]: groups[index[r["submission_id"]]] for r in rows}
    for row in rows:
        row["groups"] = letters[row["submission_id"]]
        row["group_letters"] = stats.split_letters(row["groups"])
    assign_ranks(rows)
    for row in rows:
        i = index[row["submission_id"]]
        interval = ({"rank": 1, "low": 1, "high": 1} if ranks is None else
                    {"rank": int(ranks.rank[i]), "low": int(ranks.low[i]), "high": int(ranks.high[i])})
        interval["widened"] = not interval["low"] <= row["rank"] <= interval["high"]
        interval["low"], interval["high"] = min(interval["low"], row["rank"]), max(interval["high"], row["rank"])
        row["rank_interval"] = interval
    return rows


def inversion_rows(res, index: dict[int, int], rows: dict[int, dict]) -> list[dict]:
    """The inversions of the display order among the compared pairs (:func:`evaluation.stats.order_inversions`)."""
    if res is None:
        return []
    ids = {i: sid for sid, i in index.items()}
    out = []
    for above, below, kind in sparse_inversions(res):
        a, b = rows[ids[above]], rows[ids[below]]
        reason = (f"{a['method_name']} is shown above {b['method_name']} despite a worse ranking statistic: "
                  f"it beats it on P(A>B)" if kind == "statistic" else
                  f"{b['method_name']} beats {a['method_name']} but is shown below it: the verdicts form a cycle, "
                  f"so no order can respect them all")
        out.append({"above": ids[above], "below": ids[below], "kind": kind, "reason": reason})
    return out
