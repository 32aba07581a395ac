"""The comparison tables stored apart from the skeleton, in blocks of pairs written only when they change (issue 27).

On the 20,000-entry board the skeleton (``Report.data``) was 21.7 MB, 18.6 MB of it the recipe section's comparison
table (119,979 pairs), rewritten whole at every update; an update after one new submission adds ~10 pairs and changes
four columns of every pair (``level``, ``low``, ``high``, ``pvalue``: the family size moved), no other column of any
pair. Those four stay in the skeleton; the others are stored in blocks of pairs (``ReportPiece``), keyed by their
content, so an update writes the blocks its new pairs fall in.
"""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from leaderboard import report_rows
from leaderboard.models import Challenge, Report, ReportPiece, ReportRow
from leaderboard.report_rows import PAIR_BLOCKS, TABLE_MOVING, skeleton_join, skeleton_pieces
from leaderboard.services import reports
from leaderboard.services.reports import build_report_data, report_recompute

from .test_report_api import add_entry
from .test_report_incremental import _comparable, _same
from .test_report_pieces import _board, _stored_skeleton

pytestmark = pytest.mark.django_db


def _table(pairs: list[tuple[int, int]]) -> dict:
    n = len(pairs)
    return {
        "section": "recipe",
        "size": n,
        "a": [a for a, _ in pairs],
        "b": [b for _, b in pairs],
        "p": [0.5 + 0.01 * a + 0.0001 * b for a, b in pairs],  # a function of the pair
        "low": [0.1] * n,
        "high": [0.9] * n,
        "pvalue": [1.0] * n,
        "verdict": ["not_significant"] * n,
        "level": [0.99] * n,
    }


def test_a_skeleton_split_into_pair_blocks_joins_back_whole(monkeypatch):
    monkeypatch.setattr(report_rows, "PAIR_BLOCK", 4)
    pairs = [(a, b) for a in range(1, 12) for b in range(a + 1, 12)]
    skeleton = {"format": 1, "sections": [{"kind": "recipe", "comparison_table": _table(pairs)}, {"kind": "x"}]}
    stored, pieces = skeleton_pieces(skeleton)
    table = stored["sections"][0]["comparison_table"]
    assert set(table) == {"section", "size", *TABLE_MOVING, PAIR_BLOCKS}  # the pairs' other columns are apart
    assert 1 < len(pieces) < len(pairs) and set(table[PAIR_BLOCKS]["keys"]) == set(pieces)
    assert skeleton_join(stored, pieces) == skeleton
    assert list(skeleton_join(stored, pieces)["sections"][0]["comparison_table"]) == list(_table(pairs))  # key order
    # One pair more: the blocks around it change, the others keep their keys.
    _, more = skeleton_pieces({"sections": [{"comparison_table": _table([*pairs[:30], (1, 99), *pairs[30:]])}]})
    assert 0 < len(set(more) - set(pieces)) <= 2 and len(set(pieces) & set(more)) >= len(pieces) - 2
    with pytest.raises(KeyError):
        skeleton_join(stored, dict(list(pieces.items())[1:]))
    odd = {"sections": [{"comparison_table": _table([(0, 1), (-2, 3), *pairs])}]}  # ids no hash takes (negative)
    odd["sections"][0]["comparison_table"]["a"][0] = None
    assert skeleton_join(*skeleton_pieces(odd)) == odd


def _pieces(challenge) -> dict[str, tuple]:
    return {p.key: (p.pk, p.data) for p in ReportPiece.objects.filter(challenge=challenge, board="public")}


def test_an_update_writes_the_pair_blocks_that_changed_only(monkeypatch):
    monkeypatch.setattr(report_rows, "PAIR_BLOCK", 8)
    challenge, host = _board(n=24, spread=0.002, name="blocks")
    report_recompute(challenge_id=challenge.pk, force=True)
    before = _pieces(challenge)
    table = _stored_skeleton(challenge)["sections"][0]["comparison_table"]
    assert "a" not in table and "verdict" not in table and len(before) > 4
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    report_recompute(challenge_id=challenge.pk)
    after = _pieces(challenge)
    assert set(after) == set(_stored_skeleton(challenge)["sections"][0]["comparison_table"][PAIR_BLOCKS]["keys"])
    kept = set(before) & set(after)
    assert kept and all(after[key] == before[key] for key in kept)  # rows untouched

    # Where the blocks end depends on the pairs' ids alone: a block the update leaves as it was keeps its row, and
    # only blocks whose pairs changed are written (which ones depends on the ids the database gave: a newcomer's pair,
    # a pair no longer compared, a pair whose order turned).
    changed = {key: after[key][1] for key in set(after) - set(before)}
    assert len(changed) < len(after) and Report.objects.get(challenge=challenge).recompute_count == 2
    assert all(not any(block == old for _, old in before.values()) for block in changed.values())
    full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
    assert _same(_comparable(Report.objects.get(challenge=challenge).data), _comparable(full))


def test_a_save_that_fails_after_its_writes_leaves_the_board_it_replaced_whole(monkeypatch):
    challenge, host = _board(n=10, name="crash")
    first = report_recompute(challenge_id=challenge.pk, force=True).data
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))

    def crash(**_):
        raise RuntimeError("the worker is lost after the skeleton, rows and blocks were written")

    monkeypatch.setattr(reports, "record_moves", crash)
    with pytest.raises(RuntimeError):
        report_recompute(challenge_id=challenge.pk)
    stored = Report.objects.get(challenge=challenge)
    assert _same(_comparable(stored.data), _comparable(first))  # the board before, whole
    assert set(_pieces(challenge)) == set(
        _stored_skeleton(challenge)["sections"][0]["comparison_table"][PAIR_BLOCKS]["keys"]
    )


def test_a_reader_between_two_saves_reads_one_board_whole(monkeypatch):
    """A reader that read the skeleton of a board, then its blocks after a newer board was stored (its blocks written,
    the older ones deleted) reads the newer board again, whole: never the older skeleton with blocks of the newer."""
    monkeypatch.setattr(report_rows, "PAIR_BLOCK", 8)
    challenge, host = _board(n=16, spread=0.002, name="reader")
    report_recompute(challenge_id=challenge.pk, force=True)
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    from leaderboard import models

    read = models.report_stored_pieces
    saved, reads = [], []

    def save_meanwhile(*args, **kwargs):
        reads.append(1)
        if not saved:  # the skeleton is read: another process stores the newer board before the blocks are read
            saved.append(None)
            saved[0] = report_recompute(challenge_id=challenge.pk).data
        return read(*args, **kwargs)

    monkeypatch.setattr(models, "report_stored_pieces", save_meanwhile)
    reader = Report.objects.get(challenge=challenge)
    assert saved and _same(_comparable(reader.data), _comparable(saved[0]))
    assert len(reader.data["entries"]) == 17 and len(reads) >= 2  # the older board's blocks missing: read again


def test_an_overtaken_save_leaves_every_block_its_skeleton_lists_and_no_other(monkeypatch):
    monkeypatch.setattr(report_rows, "PAIR_BLOCK", 8)
    challenge, host = _board(n=12, spread=0.002, name="overtaken")
    report_recompute(challenge_id=challenge.pk, force=True)
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    build = reports.build_report_data
    overtaken = []

    def build_then_overtaken(**kwargs):
        if not overtaken:
            overtaken.append(True)
            add_entry(challenge, host, "second", "recipe", 0.70 + 0.001 * np.arange(6))
            report_recompute(challenge_id=challenge.pk)  # stored first, with the second entry
        return build(**kwargs)

    monkeypatch.setattr(reports, "build_report_data", build_then_overtaken)
    report_recompute(challenge_id=challenge.pk)
    monkeypatch.setattr(reports, "build_report_data", build)
    keys = _stored_skeleton(challenge)["sections"][0]["comparison_table"][PAIR_BLOCKS]["keys"]
    assert set(_pieces(challenge)) == set(keys)
    stored = Report.objects.get(challenge=challenge)  # whole
    assert stored.recompute_pending and len(ReportRow.objects.filter(challenge=challenge)) >= 13
    report_recompute(challenge_id=challenge.pk)
    full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
    assert _same(_comparable(Report.objects.get(challenge=challenge).data), _comparable(full))


def test_a_reader_whose_rows_were_rewritten_between_its_reads_reads_the_newer_board_whole(monkeypatch):
    """A save rewrites an own row in place (a run rescored: the same entries, no block of pairs): a reader that read
    the skeleton before that save and the rows after it read the older skeleton with the newer row (half-old,
    half-new: the row's mean moved, the skeleton's state of the art did not). It reads the board again, whole."""
    from leaderboard import models
    from leaderboard.models import Run

    challenge, _ = _board(n=1, name="inplace")  # one entry: no pair, no block
    report_recompute(challenge_id=challenge.pk, force=True)
    read = models.report_stored_own_rows
    saved = []

    def rescored_meanwhile(*args, **kwargs):
        if not saved:  # the skeleton is read: a run is rescored and another process stores the board
            saved.append(None)
            Run.objects.filter(submission__challenge=challenge, index=0).update(test_score=0.95)
            saved[0] = report_recompute(challenge_id=challenge.pk).data
        return read(*args, **kwargs)

    monkeypatch.setattr(models, "report_stored_own_rows", rescored_meanwhile)
    reader = Report.objects.get(challenge=challenge)
    assert _same(_comparable(reader.data), _comparable(saved[0]))


def test_the_moving_columns_are_stored_packed_and_read_back_bit_for_bit():
    """The four columns the skeleton keeps for every pair (7.1 of its 10.3 MB on the 20,000-entry board, as JSON
    text) are stored as binary float64, dictionary-coded where they take few values (``level`` takes 9 of 119,979,
    ``pvalue`` one): a reader gets back the very floats (signed zeros, subnormals, the last bit), through JSON as
    stored; a column that is not all finite floats (an int, a None, a NaN, which JSON stores as null) stays as it was."""
    rng = np.random.default_rng(7)
    pairs = [(a, b) for a in range(1, 60) for b in range(a + 1, 60)]
    n = len(pairs)
    table = _table(pairs)
    odd = [0.0, -0.0, 5e-324, 0.1 + 0.2, 1 / 3, -1.7976931348623157e308]
    table["low"] = [odd[i % len(odd)] for i in range(n)]  # few distinct: coded
    table["high"] = rng.random(n).tolist()  # all distinct: float64
    table["level"] = [1 - 0.05 / (k % 9 + 1) for k in range(n)]
    table["pvalue"] = [1.0] * n
    skeleton = {"sections": [{"comparison_table": table}]}
    as_json = len(orjson.dumps([table[key] for key in TABLE_MOVING]))  # ~53 bytes a pair
    stored, pieces = skeleton_pieces(skeleton)
    text = orjson.dumps(stored)
    assert len(text) < 16 * n + 2_000 < as_json  # high 10.7 bytes a pair (base64 of float64), the others 1.3
    joined = skeleton_join(orjson.loads(text), {key: orjson.loads(orjson.dumps(p)) for key, p in pieces.items()})
    assert orjson.dumps(joined) == orjson.dumps(skeleton)  # the same floats and signs, in the same order
    back = joined["sections"][0]["comparison_table"]
    assert all(type(v) is float for k in TABLE_MOVING for v in back[k])
    assert np.array_equal(np.array(back["low"]).view(np.uint64), np.array(table["low"]).view(np.uint64))
    older = orjson.loads(text)  # as 0034 stored it: the columns as JSON, no "packed"
    stub = older["sections"][0]["comparison_table"]
    stub.update({key: table[key] for key in TABLE_MOVING})
    del stub[PAIR_BLOCKS]["packed"]
    assert orjson.dumps(skeleton_join(older, pieces)) == orjson.dumps(skeleton)
    for mixed in ([0.5] * (n - 1) + [1], [0.5] * (n - 1) + [None], [0.5] * (n - 1) + [float("nan")]):
        other = {"sections": [{"comparison_table": {**table, "low": mixed}}]}
        kept, parts = skeleton_pieces(other)
        assert kept["sections"][0]["comparison_table"]["low"] == mixed  # stored as JSON, as before
        assert orjson.dumps(skeleton_join(kept, parts)) == orjson.dumps(other)
