"""Issue 26: the board over time. Each recomputation that first shows or moves an entry records its rank and
ranking value; the history page draws the best entries' ranks and one entry's rows; once the private board is
readable, the public-to-private shake-up. A rounded board's history shows no more than the board does."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.models import BoardHistory
from leaderboard.services.boards import board_scope
from leaderboard.services.history import history_entry

from .factories import make_user
from .test_boards import submit, two_boards  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def test_recomputations_record_the_entries_they_show_or_move(two_boards):  # noqa: F811
    challenge, a, b, truth, public = two_boards
    first = {(row.board, row.submission_id): row.rank for row in BoardHistory.objects.filter(challenge=challenge)}
    assert first[("public", a.pk)] is not None and ("private", b.pk) in first
    before = BoardHistory.objects.filter(challenge=challenge, board="public").count()
    best = submit(challenge, make_user("carol"), truth, "perfect")  # takes rank 1: the others move down
    rows = BoardHistory.objects.filter(challenge=challenge, board="public").order_by("id")[before:]
    moved = {row.submission_id: row.rank for row in rows}
    assert moved[best.pk] == 1 and set(moved) <= {a.pk, b.pk, best.pk} and len(moved) >= 2
    again = BoardHistory.objects.filter(challenge=challenge, board="public").count()
    from leaderboard.services.reports import report_recompute

    report_recompute(challenge_id=challenge.pk, force=True)  # nothing moved: nothing written
    assert BoardHistory.objects.filter(challenge=challenge, board="public").count() == again


def test_the_history_page_and_the_shakeup_after_the_reveal(client, two_boards, host):  # noqa: F811
    challenge, a, b, truth, public = two_boards
    page = client.get(f"/c/{challenge.slug}/history/")
    assert page.status_code == 200 and b"data-history-board" in page.content
    assert b'class="history"' in page.content and b"data-shakeup" not in page.content  # not revealed
    assert client.get(f"/c/{challenge.slug}/history/?board=private").status_code == 403
    entry = client.get(f"/c/{challenge.slug}/history/?entry={a.pk}").content.decode()
    assert "data-history-rows" in entry and ("alice&#x27;s model" in entry or "alice's model" in entry)
    assert client.get(f"/c/{challenge.slug}/history/?entry=999999").status_code == 404
    client.force_login(host)
    hosted = client.get(f"/c/{challenge.slug}/history/").content.decode()
    assert "data-shakeup" in hosted and hosted.count('class="shake"') == 2
    assert f"/c/{challenge.slug}/history/" in client.get(f"/c/{challenge.slug}/").content.decode()


def test_a_rounded_boards_history_shows_rounded_values(two_boards, alice, host):  # noqa: F811
    challenge, a, b, truth, public = two_boards
    challenge.feedback, challenge.feedback_digits = "rounded", 1
    challenge.save()
    exact = history_entry(challenge=challenge, submission_id=a.pk, scope=board_scope(challenge=challenge, user=host))
    shown = history_entry(challenge=challenge, submission_id=a.pk, scope=board_scope(challenge=challenge, user=alice))
    assert "private" in exact and "private" not in shown  # the host reads the private board before the reveal
    value = exact["public"][0]["value"]
    assert value is not None and not np.isclose(value, round(value, 1))
    assert shown["public"][0]["value"] == round(value, 1)
