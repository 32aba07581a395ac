"""Paging a board of thousands of entries to the reader: top N, search, "around my entry".

A report holds every entry; a reader sees a page of them. :func:`entries_page` picks the
page from the report's display order (ranked entries first, then those left out of
comparisons), by one of three rules: a search (team or method name, case-insensitive),
the entries around one submission, or a plain page (offset and limit). It is pure: the
API and the page call it on the cached report data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ServiceError

#: Entries per page when the reader does not say.
PAGE_SIZE = 50
#: Most entries one page may hold.
PAGE_MAX = 500
#: Entries of the heat map: the top ones, and this many on each side of the reader's entry.
HEAT_TOP = 6
HEAT_AROUND = 3


class EntryNotOnBoard(ServiceError):
    """``around`` names a submission the board (or the search) does not list (HTTP 404, ``field``: around)."""

    status_code = 404


def around_missing(around: int, *, query: str = "", on_board: bool = False) -> str:
    """Why the page around submission ``around`` cannot be shown, naming ``around`` and the id."""
    where = f"among the entries matching q={query!r}" if on_board else "on this board"
    return (
        f"`around`: submission {around} is not {where}; give the id of an entry the board lists "
        "(its `submission_id`), or leave `around` out for the first page."
    )


@dataclass(frozen=True)
class EntriesPage:
    """One page: the submission ids shown (display order) and where they sit among ``total``."""

    ids: list
    total: int
    matched: int
    offset: int
    limit: int
    query: str
    around: int | None

    def as_dict(self) -> dict:
        return {
            "total": self.total,
            "matched": self.matched,
            "offset": self.offset,
            "limit": self.limit,
            "count": len(self.ids),
            "q": self.query or None,
            "around": self.around,
            "has_previous": self.offset > 0,
            "has_next": self.offset + len(self.ids) < self.matched,
            "previous_offset": max(0, self.offset - self.limit),
            "next_offset": self.offset + len(self.ids),
        }


#: The largest whole-number query parameter taken (18 digits): :func:`whole_number`, and the schema's maximum.
WHOLE_NUMBER_MAX = 10**18 - 1
_WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")


def whole_number(text) -> int | None:
    """``text`` as a non-negative integer when it is 1 to 18 ASCII digits, else None: ``str.isdigit`` also takes
    "²" and other Unicode digits, which ``int`` refuses (a 500 where a 400 was meant), and a number of thousands
    of digits, which ``int`` refuses too (found by a reviewer)."""
    return int(text) if isinstance(text, str) and _WHOLE_NUMBER.fullmatch(text) else None


def page_offset(name: str, value) -> int | None:
    """A non-negative integer query parameter (``offset``, ``around``): None when absent; the ValueError names it."""
    if value in (None, ""):
        return None
    number = whole_number(value)
    if number is None:
        raise ValueError(f"`{name}` must be a non-negative integer (got {value!r}).")
    return number


def page_limit(value, default: int = PAGE_SIZE) -> int:
    """A page size from a query parameter: an integer in [1, PAGE_MAX]; the ValueError names it."""
    if value in (None, ""):
        return default
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"`limit` must be an integer between 1 and {PAGE_MAX} (got {value!r}).") from None
    if not 1 <= limit <= PAGE_MAX:
        raise ValueError(f"`limit` must be an integer between 1 and {PAGE_MAX} (got {value!r}).")
    return limit


def entries_page(
    entries: list[dict], *, query: str = "", around: int | None = None, offset: int = 0, limit: int = PAGE_SIZE
) -> EntriesPage:
    """The page of ``entries`` (report rows in display order) a reader asked for.

    ``around``: the ``limit`` entries centred on that submission (``offset`` ignored);
    ``query``: the entries whose method or team contains it, paged; else
    ``entries[offset:offset + limit]``. An ``around`` that is not among them raises :class:`EntryNotOnBoard`.
    """
    ids = [row["submission_id"] for row in entries]
    query = (query or "").strip()
    if query:
        needle = query.casefold()
        ids = [
            row["submission_id"]
            for row in entries
            if needle in row["method_name"].casefold() or needle in row["team"].casefold()
        ]
    if around is not None and around not in ids:
        on_board = any(row["submission_id"] == around for row in entries)
        raise EntryNotOnBoard(around_missing(around, query=query, on_board=on_board), field="around")
    if around is not None:
        position = ids.index(around)
        offset = max(0, min(position - limit // 2, len(ids) - limit))
    else:
        offset = max(0, min(int(offset), max(0, len(ids) - 1)))
    return EntriesPage(ids[offset : offset + limit], len(entries), len(ids), offset, limit, query, around)


def heatmap_ids(compared: list[int], focus: int | None) -> list[int]:
    """Entries of the heat map: the top :data:`HEAT_TOP` and the neighbourhood of ``focus``, in order."""
    chosen = set(compared[:HEAT_TOP])
    if focus in compared:
        position = compared.index(focus)
        chosen.update(compared[max(0, position - HEAT_AROUND) : position + HEAT_AROUND + 1])
    return [sid for sid in compared if sid in chosen]
