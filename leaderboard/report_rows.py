"""A stored report in pieces: each entry's own row apart from the parts that move (issue 27).

A board of 20,000 entries is ~80 MB of JSON, and an update after one new submission changes
few entries' own figures (their runs did not change) but many ranks. The report is stored as

* its *skeleton* (``Report.data``): settings, sections, comparisons, and the ``row_table``: the
  entries' ids in display order and one column per :data:`MOVING_KEYS` key (rank, letters, rank
  interval, ...: what another entry's arrival moves);
* each entry's *own row* (``ReportRow``): the row without those keys (its runs, mean, Boo_n and
  their intervals, its curve), rewritten only when it differs from the stored one.

:func:`report_split` and :func:`report_join` are inverse (``report_join(*report_split(data)) ==
data``, keys aside from their order); plain dicts, no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter

#: Row keys that another entry's arrival may change (sections and publication fill them in); they live
#: in the skeleton's ``row_table``, one column each, so that such a change rewrites no row.
MOVING_KEYS = (
    "rank",
    "rank_display",
    "tied",
    "groups",
    "rank_interval",
    "too_few_runs",
    "compared",
    "excluded_reason",
    "runs_needed_for_decision",
    "version",
    "versions",
    "public_rank",
    "rank_change",
)

#: The skeleton's key holding the entries' order and their moving columns.
ROW_TABLE = "row_table"


def report_split(data: Mapping) -> tuple[dict, dict[int, dict]]:
    """(skeleton, own rows by submission id) of a whole report ``data`` (with ``entries``).

    A :data:`MOVING_KEYS` key that some row lacks stays in the own rows (nothing is lost).
    """
    skeleton = report_skeleton(data)
    moving = set(skeleton[ROW_TABLE]["columns"])
    return skeleton, {row["submission_id"]: own_row(row, moving) for row in data["entries"]}


def report_skeleton(data: Mapping) -> dict:
    """The skeleton of :func:`report_split` alone (its ``row_table`` columns name the moving keys)."""
    entries = data["entries"]
    skeleton = {key: value for key, value in data.items() if key != "entries"}
    skeleton[ROW_TABLE] = {
        "ids": list(map(itemgetter("submission_id"), entries)),
        "columns": {key: column for key in MOVING_KEYS if (column := _column(entries, key)) is not None},
    }
    return skeleton


def _column(entries: list, key: str) -> list | None:
    """``key`` of every row, or None when some row lacks it: one pass at C speed (a board of 20,000 rows: 13 columns
    checked and read row by row in Python cost ~0.1 s at each update, docs/scale.md)."""
    try:
        return list(map(itemgetter(key), entries))
    except KeyError:
        return None


def own_row(row: Mapping, moving: set[str]) -> dict:
    """An entry's own row: ``row`` without the ``moving`` keys."""
    return {key: value for key, value in row.items() if key not in moving}


def row_ids(skeleton: Mapping) -> list[int] | None:
    """The entries' ids of a skeleton in display order; None for a report stored whole (older layout)."""
    table = skeleton.get(ROW_TABLE)
    return None if table is None else list(table["ids"])


def report_join(skeleton: Mapping, own: Mapping[int, dict], *, in_place: bool = False) -> dict:
    """The whole report: the skeleton's ``row_table`` turned back into ``entries`` with the own rows.

    ``in_place``: the own rows are the caller's to give (just decoded): each becomes its entry, its moving keys
    added, instead of a copy (20,000 rows copied cost ~0.05 s at each update: docs/scale.md).

    Raises
    ------
    KeyError
        When ``own`` lacks the row of an entry the skeleton lists (read while a new report was written).
    """
    table = skeleton[ROW_TABLE]
    columns = table["columns"]
    keys = list(columns)
    data = {key: value for key, value in skeleton.items() if key != ROW_TABLE}
    entries = [own[sid] if in_place else dict(own[sid]) for sid in table["ids"]]
    for row, values in zip(entries, zip(*(columns[key] for key in keys))):
        row.update(zip(keys, values))
    data["entries"] = entries
    return data
