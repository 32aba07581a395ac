"""A board read whole while another process keeps storing newer boards of it (issue 27: the report stored in pieces,
the skeleton, the own rows and the blocks of pairs read by separate statements), on the real PostgreSQL.

A reader that found a save committed between its reads read again, three times at most, then answered an error (500):
a board updated faster than a web process decodes it (~1.2 s an update, ~0.5 s a read at 20,000 entries) could not be
read at all. The reads after the first hold the board's row (``FOR UPDATE``), which a save's first statement waits for.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import connections

from leaderboard import models
from leaderboard.models import Report
from leaderboard.services.reports import report_recompute
from tests.platform.test_report_api import add_entry
from tests.platform.test_report_pieces import _board

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_board_saved_between_every_unlocked_read_is_still_read_whole(monkeypatch):
    challenge, host = _board(n=6, spread=0.002, name="busy")
    report_recompute(challenge_id=challenge.pk, force=True)
    read_rows = models.report_stored_own_rows
    saves: list[threading.Thread] = []

    def save(i: int) -> None:
        try:
            add_entry(challenge, host, f"late{i}", "recipe", 0.70 + 0.001 * i + 0.001 * np.arange(6))
            report_recompute(challenge_id=challenge.pk)
        finally:
            connections.close_all()

    def a_save_meanwhile(*args, **kwargs):
        """Another process stores a newer board after the skeleton was read: it finishes unless the reader holds the
        board's row, and then it waits for the reader."""
        saver = threading.Thread(target=save, args=(len(saves),))
        saves.append(saver)
        saver.start()
        saver.join(timeout=2)
        return read_rows(*args, **kwargs)

    monkeypatch.setattr(models, "report_stored_own_rows", a_save_meanwhile)
    try:
        reader = Report.objects.get(challenge=challenge)  # every unlocked read overtaken by a save
    finally:
        monkeypatch.setattr(models, "report_stored_own_rows", read_rows)
        for saver in saves:
            saver.join(timeout=60)
    assert not any(saver.is_alive() for saver in saves)
    assert len(saves) == 2  # the first read was overtaken; the second, holding the row, was not
    stored = Report.objects.get(challenge=challenge)
    assert stored.recompute_count > reader.recompute_count  # the save it held back was stored after it
    # what it read is one board, whole: the one stored by the first save (6 entries and late0)
    names = sorted(row["method_name"] for row in reader.data["entries"])
    assert "late0" in names and "late1" not in names and len(names) == 7
    assert {row["submission_id"] for row in reader.data["entries"]} == set(reader.row_ids)
