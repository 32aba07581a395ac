"""The reads behind the leaderboard page (``leaderboard.selectors``): which entries link to their
submission page, and the stored report's version without its data."""

from __future__ import annotations

import pytest

from leaderboard.choices import Board
from leaderboard.models import PrivateReport, Report
from leaderboard.selectors import report_stored_meta, submission_ids_open_to_all
from leaderboard.services.reports import report_current

from .factories import digits_challenge, make_user
from .test_leaderboard_pages import write_entry

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_the_board_links_the_entries_every_reader_may_open():
    host, alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(host)
    scored, running, other = (
        write_entry(challenge, alice, name, [0.9, 0.8], status=status)
        for name, status in (("A", "scored"), ("B", "running"), ("C", "scored"))
    )
    assert submission_ids_open_to_all(challenge=challenge, ids=[scored.pk, running.pk]) == {scored.pk}
    assert submission_ids_open_to_all(challenge=challenge, ids=[]) == set()
    report_current(challenge=challenge)  # the stored board shows the running entry's runs so far: linked now
    assert submission_ids_open_to_all(challenge=challenge, ids={scored.pk, other.pk, running.pk}) == {
        scored.pk,
        other.pk,
        running.pk,
    }
    running.status = "cancelled"  # off every board at once, though the stored board keeps its row a while
    running.save(update_fields=["status"])
    assert submission_ids_open_to_all(challenge=challenge, ids={scored.pk, running.pk}) == {scored.pk}


def test_report_stored_meta_is_the_boards_report_without_its_data():
    host, alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(host)
    write_entry(challenge, alice, "A", [0.9, 0.8])
    assert report_stored_meta(challenge=challenge, board=Board.PRIVATE) is None
    stored = report_current(challenge=challenge, board=Board.PUBLIC)
    meta = report_stored_meta(challenge=challenge, board=Board.PUBLIC)
    assert type(meta) is Report and (meta.pk, meta.computed_at) == (stored.pk, stored.computed_at)
    assert "data" in meta.get_deferred_fields()
    with pytest.raises(ValueError, match="is not a valid Board"):
        report_stored_meta(challenge=challenge, board="secret")
    private = PrivateReport.objects.create(challenge=challenge)
    assert type(report_stored_meta(challenge=challenge, board=Board.PRIVATE)) is PrivateReport
    assert report_stored_meta(challenge=challenge, board=Board.PRIVATE).pk == private.pk
