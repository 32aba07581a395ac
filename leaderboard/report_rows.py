"""A stored report in pieces: each entry's own row apart from the parts that move (issue 27).

A board of 20,000 entries is ~80 MB of JSON, and an update after one new submission changes
few entries' own figures (their runs did not change) but many ranks. The report is stored as

* its *skeleton* (``Report.data``): settings, sections, comparisons, and the ``row_table``: the
  entries' ids in display order and one column per :data:`MOVING_KEYS` key (rank, letters, rank
  interval, ...: what another entry's arrival moves);
* each entry's *own row* (``ReportRow``): the row without those keys (its runs, mean, Boo_n and
  their intervals, its curve), rewritten only when it differs from the stored one;
* each section's comparison table apart (:func:`skeleton_pieces`): the skeleton keeps the columns an update moves
  for every pair (:data:`TABLE_MOVING`), the other columns are stored in blocks of pairs (``ReportPiece``) keyed by
  their content, so that an update writes the blocks its new or changed pairs fall in (18.6 of the skeleton's
  21.7 MB on a board of 20,000 entries, docs/scale.md).

:func:`report_split` and :func:`report_join` are inverse (``report_join(*report_split(data)) ==
data``, keys aside from their order); plain dicts, no Django.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from itertools import chain
from operator import itemgetter

import numpy as np
import orjson

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


#: Columns of a comparison table that an update after one new entry moves for every pair (the family size moved: the
#: adjusted level and p-value, the interval at that level): they stay in the skeleton, whole, as binary float64 where
#: they are all finite floats (:func:`_pack`).
TABLE_MOVING = ("low", "high", "pvalue", "level")

#: The key of a stored comparison table that lists its blocks (``keys``, in order), its keys' order (``order``) and its
#: :data:`TABLE_MOVING` columns stored packed (``packed``, :func:`_pack`).
PAIR_BLOCKS = "pair_blocks"

#: Codes of a packed column by how many distinct values it takes (more than a quarter of its length: float64 as is).
_CODES = ((256, "<u1"), (65_536, "<u2"), (2**32, "<u4"))

#: Pairs per block on average: a block ends after each pair whose (A, B) hashes to 0 modulo this, so that a block is a
#: function of its pairs only (a pair added or removed changes its own block, not the blocks after it).
PAIR_BLOCK = 512


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


def skeleton_pieces(skeleton: Mapping) -> tuple[dict, dict[str, dict]]:
    """(the skeleton as stored, its pieces by key): each section's comparison table without its columns other than
    :data:`TABLE_MOVING`, which go to blocks of pairs (``{column: values}``), keyed by a digest of their content.
    ``skeleton`` is left as it is (its sections are the report's)."""
    pieces: dict[str, dict] = {}
    sections = [
        {**section, "comparison_table": _table_blocks(section["comparison_table"], pieces)}
        if isinstance(section, dict) and _blockable(section.get("comparison_table"))
        else section
        for section in skeleton.get("sections", ())
    ]
    return ({**skeleton, "sections": sections} if pieces else dict(skeleton)), pieces


def _blockable(table) -> bool:
    """Whether ``table`` is a comparison table of pairs (a table of none stays whole)."""
    if not isinstance(table, dict) or PAIR_BLOCKS in table or not isinstance(table.get("size"), int):
        return False
    a, b = table.get("a"), table.get("b")
    return bool(table["size"]) and isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == table["size"]


def _block_ends(a: list, b: list) -> list[int]:
    """Where the blocks of the pairs (``a``, ``b``) end: after each pair whose ids hash to 0 modulo
    :data:`PAIR_BLOCK` (ids that are no integers of 64 bits: every :data:`PAIR_BLOCK` pairs). Only which pairs share
    a block depends on it, never a value stored."""
    try:
        with np.errstate(over="ignore"):
            mixed = np.array(a, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) ^ np.array(
                b, dtype=np.uint64
            ) * np.uint64(0xC2B2AE3D27D4EB4F)
    except (TypeError, ValueError, OverflowError):
        return list(range(PAIR_BLOCK, len(a), PAIR_BLOCK))
    mixed ^= mixed >> np.uint64(31)
    return [end for end in (np.flatnonzero(mixed % np.uint64(PAIR_BLOCK) == 0) + 1).tolist() if end < len(a)]


def _table_blocks(table: dict, pieces: dict[str, dict]) -> dict:
    """``table`` with its columns other than :data:`TABLE_MOVING` moved into blocks added to ``pieces``."""
    n = table["size"]
    columns = [
        key for key, value in table.items() if key not in TABLE_MOVING and isinstance(value, list) and len(value) == n
    ]
    bounds = [0, *_block_ends(table["a"], table["b"]), n]
    keys = []
    for start, stop in zip(bounds, bounds[1:]):
        block = {key: table[key][start:stop] for key in columns}
        key = hashlib.blake2b(orjson.dumps(block, option=orjson.OPT_NON_STR_KEYS), digest_size=16).hexdigest()
        pieces[key] = block
        keys.append(key)
    stub = {key: value for key, value in table.items() if key not in columns}
    packed = {key: value for key in TABLE_MOVING if key in stub and (value := _pack(stub[key], n)) is not None}
    stub.update(packed)
    stub[PAIR_BLOCKS] = {"keys": keys, "order": list(table), "packed": list(packed)}
    return stub


def _pack(values, n: int) -> dict | None:
    """A column of ``n`` finite floats as binary float64 (``{"f8": base64}``), or its distinct values and one code per
    value (``{"values": base64 of float64, "codes": base64, "code": dtype}``) where they are few (the level and
    p-value); None for any other column (an int, a None, a NaN: stored as JSON, as before). Little-endian; the bits
    themselves are compared, so -0.0 stays -0.0 (:func:`_unpack` gives back the very floats, 6.5 of the 10.3 MB
    skeleton's JSON text on the 20,000-entry board, docs/scale.md)."""
    if not isinstance(values, list) or len(values) != n or not n or set(map(type, values)) != {float}:
        return None
    array = np.array(values, dtype="<f8")
    if not np.isfinite(array).all():
        return None
    distinct, codes = np.unique(array.view("<u8"), return_inverse=True)
    code = next((dtype for most, dtype in _CODES if len(distinct) <= most), None)
    if code is None or len(distinct) > n // 4:
        return {"f8": base64.b64encode(array.tobytes()).decode()}
    return {
        "values": base64.b64encode(distinct.tobytes()).decode(),
        "codes": base64.b64encode(codes.reshape(-1).astype(code).tobytes()).decode(),
        "code": code,
    }


def _unpack(packed: Mapping) -> list[float]:
    """The floats :func:`_pack` packed."""
    if "f8" in packed:
        return np.frombuffer(base64.b64decode(packed["f8"]), dtype="<f8").tolist()
    values = np.frombuffer(base64.b64decode(packed["values"]), dtype="<f8")
    return values[np.frombuffer(base64.b64decode(packed["codes"]), dtype=packed["code"])].tolist()


def piece_keys(skeleton: Mapping) -> list[str]:
    """The keys of the pieces a stored skeleton lists (none for one stored before the pieces)."""
    return [key for table in _stored_tables(skeleton) for key in table[PAIR_BLOCKS]["keys"]]


def _stored_table(section) -> bool:
    """Whether ``section`` holds a comparison table stored in blocks (:func:`skeleton_pieces`)."""
    return (
        isinstance(section, dict)
        and isinstance(section.get("comparison_table"), dict)
        and PAIR_BLOCKS in section["comparison_table"]
    )


def _stored_tables(skeleton: Mapping) -> list[dict]:
    return [section["comparison_table"] for section in skeleton.get("sections", ()) if _stored_table(section)]


def skeleton_join(skeleton: Mapping, pieces: Mapping[str, dict]) -> dict:
    """The skeleton as :func:`report_skeleton` made it, from the stored one and its pieces (the inverse of
    :func:`skeleton_pieces`, each table's keys in their order).

    Raises
    ------
    KeyError
        When ``pieces`` lacks a block the skeleton lists (read while a newer report was written).
    """
    if not _stored_tables(skeleton):
        return dict(skeleton)
    sections = [
        {**section, "comparison_table": _table_join(section["comparison_table"], pieces)}
        if _stored_table(section)
        else section
        for section in skeleton["sections"]
    ]
    return {**skeleton, "sections": sections}


def _table_join(stub: Mapping, pieces: Mapping[str, dict]) -> dict:
    blocks = [pieces[key] for key in stub[PAIR_BLOCKS]["keys"]]
    packed = set(stub[PAIR_BLOCKS].get("packed", ()))  # none in a skeleton stored before the packing
    return {
        key: (_unpack(stub[key]) if key in packed else stub[key])
        if key in stub
        else list(chain.from_iterable(block[key] for block in blocks))
        for key in stub[PAIR_BLOCKS]["order"]
    }
