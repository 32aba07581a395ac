"""The report stored in pieces (issue 27): each entry's own row apart, written only when it changes."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.models import Challenge, Report, ReportRow, Submission
from leaderboard.report_rows import MOVING_KEYS, ROW_TABLE, report_join, report_split
from leaderboard.selectors import report_stored_ranks
from leaderboard.services.reports import build_report_data, report_recompute

from .factories import digits_challenge, make_user
from .test_report_api import add_entry
from .test_report_incremental import _comparable, _same

pytestmark = pytest.mark.django_db


def _board(n: int = 6, spread: float = 0.01, name: str = "host"):
    host = make_user(name)
    challenge, _ = digits_challenge(
        host, title=f"Digits of {name}", k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7
    )
    rng = np.random.default_rng(3)
    for i in range(n):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - spread * i + 0.01 * rng.standard_normal(6))
    return challenge, host


def _stored_skeleton(challenge) -> dict:
    return Report.objects.filter(challenge=challenge).values_list("data", flat=True).get()


def _own_rows(challenge) -> dict[int, tuple]:
    return {row.submission_id: (row.pk, row.data) for row in ReportRow.objects.filter(challenge=challenge)}


def test_split_and_join_are_inverse():
    data = {
        "format": 4,
        "sections": [],
        "entries": [
            {"submission_id": 1, "method_name": "a", "rank": 1, "groups": "a", "mean": {"estimate": 0.5}},
            {"submission_id": 2, "method_name": "b", "rank": 2, "groups": "b", "mean": {"estimate": 0.4}},
        ],
    }
    skeleton, own = report_split(data)
    assert "entries" not in skeleton and skeleton[ROW_TABLE]["ids"] == [1, 2]
    assert set(skeleton[ROW_TABLE]["columns"]) == {"rank", "groups"}  # moving keys every row has
    assert own[1] == {"submission_id": 1, "method_name": "a", "mean": {"estimate": 0.5}}
    assert report_join(skeleton, own) == data
    with pytest.raises(KeyError):
        report_join(skeleton, {1: own[1]})
    copied = report_join(skeleton, own)
    assert "rank" not in own[1]  # the caller's own rows left as they were
    whole = report_join(skeleton, own, in_place=True)  # a reader's own rows, just decoded, become the entries
    assert whole == data and whole["entries"][0] is own[1]
    assert [list(row) for row in whole["entries"]] == [list(row) for row in copied["entries"]]  # keys in one order


def test_the_report_is_stored_as_a_skeleton_and_one_row_per_entry():
    challenge, _ = _board()
    report = report_recompute(challenge_id=challenge.pk, force=True)
    skeleton = _stored_skeleton(challenge)
    assert "entries" not in skeleton
    assert skeleton[ROW_TABLE]["ids"] == [row["submission_id"] for row in report.data["entries"]]
    own = _own_rows(challenge)
    assert set(own) == set(skeleton[ROW_TABLE]["ids"]) and report.written_rows == 6
    assert not any(key in data for _, data in own.values() for key in ("rank", "groups", "rank_interval"))
    assert _same(Report.objects.get(challenge=challenge).data, report.data)  # read back whole
    assert report_stored_ranks(challenge=challenge) == {
        row["submission_id"]: row["rank_display"] for row in report.data["entries"]
    }


def test_an_update_writes_the_rows_that_changed_only():
    challenge, host = _board()
    report_recompute(challenge_id=challenge.pk, force=True)
    before = _own_rows(challenge)
    newcomer = add_entry(challenge, host, "newcomer", "recipe", 0.785 + 0.001 * np.arange(6))
    report = report_recompute(challenge_id=challenge.pk)
    assert report.data["reused_rows"] == 6 and report.written_rows == 1  # the ranks moved, no own row did
    after = _own_rows(challenge)
    assert set(after) == set(before) | {newcomer.pk}
    assert all(after[sid] == before[sid] for sid in before)  # the same database rows, untouched
    full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
    assert _same(_comparable(Report.objects.get(challenge=challenge).data), _comparable(full))


def test_a_withdrawn_entry_loses_its_row():
    challenge, _ = _board()
    report_recompute(challenge_id=challenge.pk, force=True)
    gone = Submission.objects.get(challenge=challenge, method_name="m2")
    Submission.objects.filter(pk=gone.pk).update(status="cancelled")
    report = report_recompute(challenge_id=challenge.pk)
    assert gone.pk not in _own_rows(challenge) and len(_own_rows(challenge)) == 5
    assert gone.pk not in {row["submission_id"] for row in Report.objects.get(pk=report.pk).data["entries"]}


def test_a_report_stored_whole_is_read_and_stored_in_pieces_at_its_next_update():
    challenge, host = _board()
    whole = build_report_data(challenge=challenge)
    Report.objects.update_or_create(challenge=challenge, defaults={"data": whole, "inputs_version": "old"})
    ReportRow.objects.create(challenge=challenge, board="public", submission_id=999999, data={"stale": True})
    stored = Report.objects.get(challenge=challenge)
    assert stored.row_ids is None and _same(stored.data, whole)  # the older layout, read as it is
    add_entry(challenge, host, "newcomer", "recipe", 0.785 + 0.001 * np.arange(6))
    report = report_recompute(challenge_id=challenge.pk)
    assert report.written_rows == 7 and set(_own_rows(challenge)) == set(report.row_ids)  # the stale row is gone
    assert ROW_TABLE in _stored_skeleton(challenge)


def test_moving_keys_are_not_stored_in_the_rows():
    challenge, _ = _board()
    report_recompute(challenge_id=challenge.pk, force=True)
    skeleton = _stored_skeleton(challenge)
    assert {"rank", "rank_display", "groups", "rank_interval", "version"} <= set(skeleton[ROW_TABLE]["columns"])
    assert set(skeleton[ROW_TABLE]["columns"]) <= set(MOVING_KEYS)


def test_the_page_names_a_few_of_a_large_leader_group_and_counts_the_others():
    challenge, _ = _board(n=30, spread=0.0)  # 30 entries that no comparison tells apart
    report = report_recompute(challenge_id=challenge.pk, force=True)
    section = report.data["sections"][0]
    assert len(section["leader_group"]) == 30
    html = Client().get(f"/c/{challenge.slug}/").content.decode()
    leaders = html[html.index('class="muted leaders"') :].split("</p>")[0]
    assert "and 9 more." in leaders  # the leader, 20 names, 9 counted
    assert leaders.split(": ", 1)[1].count(",") == 19


def _writes_of_one_new_entry(n: int) -> tuple[int, list[str]]:
    """(rows written, the write statements) of the update after one new entry on a board of ``n`` entries."""
    challenge, host = _board(n=n, spread=0.002, name=f"host{n}")
    report_recompute(challenge_id=challenge.pk, force=True)
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    with CaptureQueriesContext(connection) as queries:
        report = report_recompute(challenge_id=challenge.pk)
    assert report.data["reused_rows"] == n
    writes = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    return report.written_rows, [w for w in writes if w in {"INSERT", "UPDATE", "DELETE"}]


def test_an_update_writes_as_much_on_a_board_of_hundreds_as_on_a_small_one():
    small, large = _writes_of_one_new_entry(8), _writes_of_one_new_entry(240)
    assert small[0] == large[0] == 1  # the newcomer's own row only
    assert small[1] == large[1]  # the same statements: no write grows with the board


def test_every_reader_of_a_stored_board_decodes_it_once_per_version_and_none_changes_it(monkeypatch):
    """``/sota/``, ``/compare/``, the history page and the compare page read the stored report whole at every request
    (Report.from_db: the skeleton and every own row decoded; 1.2 s for ``/sota/`` on 20,000 entries, where the page,
    which kept the decoded report, took 0.14 s). They now share ``services.reports.report_data``: one decode per
    report version and process, a new decode once the board is recomputed; and no reader changes the shared data."""
    import copy

    from leaderboard.models import Report as StoredReport
    from leaderboard.services import reports

    challenge, host = _board(n=5)
    report_recompute(challenge_id=challenge.pk, force=True)
    reports._DECODED.clear()
    decoded = []
    original = StoredReport.from_db.__func__

    def counting(cls, db, field_names, values):
        instance = original(cls, db, field_names, values)
        if "data" in field_names:
            decoded.append(cls.__name__)
        return instance

    monkeypatch.setattr(StoredReport, "from_db", classmethod(counting))
    slug = challenge.slug
    rows = Client().get(f"/api/challenges/{slug}/leaderboard/").json()["entries"]
    a, b = rows[0]["submission_id"], rows[1]["submission_id"]
    challenge = Challenge.objects.get(pk=challenge.pk)  # as a request reads it
    _, shared = reports.report_data(challenge=challenge)
    before = copy.deepcopy(shared)
    paths = [
        f"/api/challenges/{slug}/sota/",
        f"/api/challenges/{slug}/compare/?a={a}&b={b}",
        f"/api/challenges/{slug}/leaderboard/?format=csv",
        f"/api/challenges/{slug}/leaderboard/?limit=2",
        f"/c/{slug}/",
        f"/c/{slug}/compare/?a={a}&b={b}",
        f"/c/{slug}/history/",
    ]
    for _ in range(3):
        for path in paths:
            assert Client().get(path).status_code == 200, path
    assert decoded == ["Report"], decoded  # one decode for every reader of this version
    assert reports.report_data(challenge=challenge)[1] == before  # read, never changed

    add_entry(challenge, host, "newcomer", "recipe", np.full(6, 0.9))
    report_recompute(challenge_id=challenge.pk)
    decoded.clear()
    for _ in range(3):
        sota = Client().get(f"/api/challenges/{slug}/sota/").json()["sota"][0]
        assert sota["raw"] == pytest.approx(0.9)  # the new version is read, not the kept one
    assert decoded == ["Report"], decoded
