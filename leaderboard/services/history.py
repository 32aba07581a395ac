"""The boards over time (issue 26): each entry's rank and ranking value after each recomputation that
moved it, and the public-to-private shake-up once the private board is revealed.

A recomputed report is compared with the one it replaces (``record_moves``, called when a report is
saved): every entry it first shows, or whose rank or ranking value changed, gets one ``BoardHistory``
row. On a board where one new entry moves thousands of others by one place, at most
:data:`MAX_ROWS_PER_UPDATE` rows are written, best ranks first (the rest keep their last row until they
move again within it). Values are read through the viewer's :class:`~leaderboard.services.boards.BoardScope`,
so a rounded or Ladder board's history shows no more than the board does.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from ..choices import Board, Feedback
from ..models import BoardHistory, Challenge
from ..selectors import private_board_revealed_at
from .boards import BoardScope

#: Rows one recomputation writes at most (the best-ranked moves first).
MAX_ROWS_PER_UPDATE = 2000
#: Entries drawn on a board's history chart: the current best.
BOARD_CHART_ENTRIES = 10


def _position(row: dict) -> tuple:
    return row.get("rank"), row.get("ranking_value")


def record_moves(*, challenge_id: int, board: str, before: dict | None, after: dict, at: datetime) -> int:
    """One row per entry that ``after`` shows first or moves against ``before``; returns how many."""
    previous = {row["submission_id"]: _position(row) for row in (before or {}).get("entries", ())}
    moved = [row for row in after.get("entries", ()) if previous.get(row["submission_id"]) != _position(row)]
    moved.sort(key=lambda row: (row.get("rank") is None, row.get("rank") or 0))
    rows = [
        BoardHistory(
            challenge_id=challenge_id,
            board=board,
            submission_id=row["submission_id"],
            at=at,
            rank=row.get("rank"),
            value=row.get("ranking_value"),
        )
        for row in moved[:MAX_ROWS_PER_UPDATE]
    ]
    BoardHistory.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def _shown(scope: BoardScope, board: str, value: float | None) -> float | None:
    """A stored ranking value as the viewer's board shows it. It was read from the published report: under the
    Ladder it is already the entry's release, which the board shows (``scope.public`` withholds a *run's* score
    under the Ladder, and gave None where the board read 0.49); rounded, rounding it again moves nothing."""
    if board != Board.PUBLIC or scope.feedback == Feedback.LADDER:
        return value
    return scope.public(value)


def _rows(challenge: Challenge, board: str, scope: BoardScope, **only) -> list[BoardHistory]:
    """``board``'s history rows as the viewer may read them. The private board's, for anyone but its hosts, start at
    the reveal: the rows recorded before it (one at each private recomputation, a team's final choice among them)
    are read as one row at the reveal, the board as it stood then; published whole, they dated each team's choice
    and showed the private board before the reveal (tests/platform/test_leaks_v6.py)."""
    rows = list(BoardHistory.objects.filter(challenge=challenge, board=board, **only).order_by("at", "pk"))
    if board != Board.PRIVATE or scope.is_host:
        return rows
    revealed_at = private_board_revealed_at(challenge=challenge)
    if revealed_at is None:
        return []
    before: dict[int, BoardHistory] = {}  # each entry's last row before the reveal
    after = []
    for row in rows:
        if row.at < revealed_at:
            before[row.submission_id] = row
        else:
            after.append(row)
    for row in before.values():
        row.at = revealed_at
    return [*before.values(), *after]


def history_entry(*, challenge: Challenge, submission_id: int, scope: BoardScope) -> dict[str, list[dict]]:
    """An entry's history on each board the viewer reads: {board: [{"at", "rank", "value"}, ...]}."""
    boards = [Board.PUBLIC] + ([Board.PRIVATE] if scope.sees_private else [])
    out: dict[str, list[dict]] = {}
    for board in boards:
        rows = _rows(challenge, board, scope, submission_id=submission_id)
        out[str(board)] = [{"at": row.at, "rank": row.rank, "value": _shown(scope, board, row.value)} for row in rows]
    return out


def history_board(*, challenge: Challenge, board: str, scope: BoardScope, entries: list[int]) -> dict[int, list[dict]]:
    """The history of the given entries on ``board`` (the current best, say): {submission id: rows}."""
    out: dict[int, list[dict]] = defaultdict(list)
    for row in _rows(challenge, board, scope, submission_id__in=entries):
        out[row.submission_id].append({"at": row.at, "rank": row.rank, "value": _shown(scope, board, row.value)})
    return {sid: out[sid] for sid in entries if sid in out}


def shakeup(*, public: dict, private: dict) -> list[dict]:
    """Each entry ranked on both boards: {"submission_id", "method_name", "public_rank", "private_rank"}."""
    ranks = {row["submission_id"]: row.get("rank") for row in public.get("entries", ())}
    return [
        {
            "submission_id": row["submission_id"],
            "method_name": row.get("method_name"),
            "public_rank": ranks[row["submission_id"]],
            "private_rank": row.get("rank"),
        }
        for row in private.get("entries", ())
        if row.get("rank") is not None and ranks.get(row["submission_id"]) is not None
    ]
