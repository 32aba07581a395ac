"""A new submission's recomputation reuses the rows of unchanged entries and equals a full recomputation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from leaderboard.models import Challenge, Report
from leaderboard.services.reports import build_report_data, report_recompute

from .factories import digits_challenge, make_user
from .test_report_api import add_entry

pytestmark = pytest.mark.django_db


def _same(a, b) -> bool:
    """Equal, numbers to 1e-12 (jsonb gives a float such as -4.4e295 back as an int)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def _comparable(data: dict) -> dict:
    return {key: value for key, value in data.items() if key != "reused_rows"}


def test_new_entry_reuses_unchanged_rows_and_matches_the_full_report():
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    rng = np.random.default_rng(2)
    for i in range(12):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.003 * i + 0.01 * rng.standard_normal(6))
    first = report_recompute(challenge_id=challenge.pk, force=True).data
    assert first["reused_rows"] == 0
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.01 * rng.standard_normal(6))
    report = report_recompute(challenge_id=challenge.pk)
    assert report.data["reused_rows"] == 12
    full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))  # no previous report: all rows
    assert full["reused_rows"] == 0
    stored = Report.objects.get(pk=report.pk).data
    assert _same(_comparable(stored), json.loads(json.dumps(_comparable(full))))


def test_changed_settings_recompute_every_row():
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(4):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    report_recompute(challenge_id=challenge.pk, force=True)
    challenge.bootstrap_resamples = 300
    challenge.save()
    assert report_recompute(challenge_id=challenge.pk).data["reused_rows"] == 0


def test_a_large_board_whose_settings_changed_is_served_while_its_recomputation_is_queued(monkeypatch):
    from leaderboard.services import reports

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(4):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    first = report_recompute(challenge_id=challenge.pk, force=True)
    challenge.gamma = 0.8
    challenge.save()
    Report.objects.filter(pk=first.pk).update(recompute_pending=True)  # as report_request leaves it
    monkeypatch.setattr(reports, "SYNC_MAX_ENTRIES", 3)
    served = reports.report_current(challenge=Challenge.objects.get(pk=challenge.pk))
    assert served.computed_at == first.computed_at and served.recompute_pending
    monkeypatch.setattr(reports, "SYNC_MAX_ENTRIES", 500)  # a small board: recomputed in the request
    assert reports.report_current(challenge=Challenge.objects.get(pk=challenge.pk)).computed_at > first.computed_at


def test_the_runs_are_read_once_and_entries_keep_djangos_values(django_assert_max_num_queries):
    """A recomputation reads the runs and the submissions once for the inputs version, the versions and the
    entries (docs/scale.md); the raw rows give what Django's converters give (created in ISO 8601)."""
    from leaderboard.models import Run, Submission
    from leaderboard.selectors import challenge_runs, stored_datetime_iso
    from leaderboard.services.reports import report_entries

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(3):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    entries, _ = report_entries(challenge=challenge)
    for e in entries:
        assert e.created == Submission.objects.get(pk=e.id).created.isoformat()
    assert stored_datetime_iso("2026-11-24 03:58:12") == "2026-11-24T03:58:12+00:00"
    report_recompute(challenge_id=challenge.pk, force=True, reuse=True)  # the worker's, kept
    add_entry(challenge, host, "m3", "recipe", 0.7 + 0.001 * np.arange(6))
    snapshot = challenge_runs(challenge=challenge)
    assert len(snapshot.runs) == Run.objects.filter(submission__challenge=challenge).count() == 24
    add_entry(challenge, host, "m4", "recipe", 0.6 + 0.001 * np.arange(6))  # its runs alone are read (issue 27)
    # 17: the board's history rows (one bulk insert), the recomputation's lease taken (is there a board, the lease,
    # the request cleared) and released (the give-ups ended, the lease): a row of its own (docs/scale.md); 20: the
    # skeleton's blocks of pairs (the stored keys read, the blocks no longer listed deleted, the new ones written);
    # 21: whether the runs stamp triggers are there (issue 27)
    with django_assert_max_num_queries(21) as queries:
        report_recompute(challenge_id=challenge.pk, reuse=True)
    runs_read = [
        q["sql"]
        for q in queries.captured_queries
        if 'FROM "leaderboard_run"' in q["sql"] and q["sql"].lstrip().upper().startswith("SELECT")
    ]
    assert len(runs_read) == 1, runs_read


def test_renaming_a_team_changes_the_inputs_version_and_reaches_the_board():
    from leaderboard.models import Team
    from leaderboard.services.reports import report_inputs_version

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(2):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    before = report_recompute(challenge_id=challenge.pk, force=True).inputs_version
    challenge = Challenge.objects.get(pk=challenge.pk)
    assert report_inputs_version(challenge=challenge) == before
    Team.objects.filter(name="team-m0").update(name="The Renamed")
    assert report_inputs_version(challenge=challenge) != before
    data = report_recompute(challenge_id=challenge.pk).data
    assert "The Renamed" in {row["team"] for row in data["entries"]}


def test_a_rescore_that_moves_outcomes_but_no_score_reaches_the_board():
    """A host's label correction rescores every prediction file; a file whose accuracy is unchanged (one row now
    right, another now wrong) keeps its score but not its outcomes, which the paired comparisons read. The inputs
    version hashed the scores only: the recomputation after the rescore found it unchanged and kept P(A>B) of the
    old outcomes. A rescore now moves the run's ``result_revision``, which the version reads."""
    from leaderboard.models import Run
    from leaderboard.services.lifecycle import run_store_rescored

    host = make_user("host")
    challenge, _ = digits_challenge(host, title="Rescored outcomes", bootstrap_resamples=200)
    rng = np.random.default_rng(5)
    a_outcomes = (rng.random(60) < 0.7).astype(np.float32)
    b_outcomes = a_outcomes.copy()
    b_outcomes[:6] = 1 - b_outcomes[:6]  # B differs from A on six rows
    a = add_entry(challenge, host, "a", "predictions", [float(a_outcomes.mean())], outcomes=[a_outcomes])
    add_entry(challenge, host, "b", "predictions", [float(b_outcomes.mean())], outcomes=[b_outcomes])
    report_recompute(challenge_id=challenge.pk, force=True)

    moved = a_outcomes.copy()
    right, wrong = np.flatnonzero(moved == 1)[-1], np.flatnonzero(moved == 0)[-1]
    moved[right], moved[wrong] = 0, 1  # the same accuracy, other rows right
    run = Run.objects.get(submission=a)
    assert run_store_rescored(run_id=run.pk, test_score=float(moved.mean()), outcomes=Run.pack_outcomes(moved))
    updated = report_recompute(challenge_id=challenge.pk).data
    fresh = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
    assert updated["sections"][0]["comparison_table"] == fresh["sections"][0]["comparison_table"]


def test_an_update_rewrites_the_report_s_row_twice_the_request_cleared_and_the_new_board():
    """SQLite rewrites a whole row at each UPDATE, the report's with its skeleton (21 MB on a board of 20,000
    entries): the recomputation's lease, taken with the request and released in that row, rewrote it once more per
    update, and each heartbeat's renewal again (docs/scale.md). The lease has a row of its own: an update rewrites
    the report's row where it clears the request and where it stores the new board, no more."""
    from django.db import connection

    from leaderboard.models import ReportLease
    from leaderboard.services.reports import report_request

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(3):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    report_recompute(challenge_id=challenge.pk, force=True, reuse=True)  # the worker's, kept
    add_entry(challenge, host, "m3", "recipe", 0.7 + 0.001 * np.arange(6))
    report_request(challenge_id=challenge.pk)
    rewritten = []

    def count_rewrites(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith('UPDATE "LEADERBOARD_REPORT" ') and context["cursor"].rowcount:
            rewritten.append(sql)
        return result

    with connection.execute_wrapper(count_rewrites):
        report = report_recompute(challenge_id=challenge.pk)
    assert len(report.data["entries"]) == 4 and not report.recompute_pending
    assert len(rewritten) == 2, rewritten
    assert not ReportLease.objects.exists()  # released


def test_the_worker_keeps_the_rank_bootstrap_between_updates_and_publishes_the_same_report():
    """report_recompute fills the board's slot (services.rank_states); the next update reads it and refills it; a
    slot emptied (another process, a restart) takes the full path: the stored reports equal a full build each time."""
    from leaderboard.services import rank_states

    rank_states.clear()  # 16 runs: a board ranked by the mean shows rank intervals from 16 (rank23)
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=16, bootstrap_resamples=200, master_seed=7)
    rng = np.random.default_rng(3)
    for i in range(10):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.003 * i + 0.01 * rng.standard_normal(16))
    report_recompute(challenge_id=challenge.pk, force=True)
    slot = rank_states.rank_slot(challenge.pk, "public")
    assert slot.state is not None and slot.state.size == 10
    for i, emptied in ((0, False), (1, True)):
        if emptied:
            rank_states.clear()
        add_entry(challenge, host, f"new{i}", "recipe", 0.79 + 0.01 * rng.standard_normal(16))
        report = report_recompute(challenge_id=challenge.pk)
        slot = rank_states.rank_slot(challenge.pk, "public")
        assert slot.state is not None and slot.state.size == 11 + i
        full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
        stored = Report.objects.get(pk=report.pk).data
        assert _same(_comparable(stored), json.loads(json.dumps(_comparable(full))))
    rank_states.clear()


def test_the_rank_states_kept_fit_their_budget(settings):
    """The least recently used boards' states go first; the board in use keeps its own even when larger; a budget of 0
    (``VARBOARD_RANK_STATE_MB``) keeps none, and the update takes the path that needs no state."""
    from evaluation.stats.rank_state import rank_intervals_with_state
    from leaderboard.services import rank_states

    rank_states.clear()
    _, state = rank_intervals_with_state(
        np.random.default_rng(0).random((20, 4)), n_resamples=50, confidence_level=0.9, rng=1
    )
    settings.VARBOARD = {**settings.VARBOARD, "RANK_STATE_MB": 1}
    kept = int(2**20 / state.nbytes)  # states that fit 1 MB
    for challenge_id in range(1, kept + 2):
        rank_states.rank_slot(challenge_id, "public").state = state
    rank_states.rank_slot(kept + 2, "public")  # one state more than fits: the oldest goes
    assert list(rank_states._slots) == [(i, "public") for i in range(2, kept + 3)]
    settings.VARBOARD = {**settings.VARBOARD, "RANK_STATE_MB": 0}
    assert rank_states.rank_slot(3, "public") is None and not rank_states._slots
    rank_states.clear()


def test_stored_datetime_iso_reads_sqlite_text_as_djangos_converter():
    """SQLite's UTC text turned into ISO 8601 by string where its form allows it (20,000 submissions at each update:
    docs/scale.md), as ``datetime.fromisoformat(...).replace(tzinfo=UTC).isoformat()`` gives it, on every form."""
    from datetime import UTC, datetime

    from leaderboard.selectors import stored_datetime_iso

    values = [
        "2026-11-24 03:58:12",
        "2026-11-24 03:58:12.345678",
        "2026-11-24 03:58:12.000000",
        "2026-11-24 03:58:12.5",
        "2026-11-24T03:58:12.345678",
        "2026-11-24 03:58:12+00:00",
        "2026-11-24 03:58:12.345678+02:00",
        "2026-11-24 03:58",
    ]
    for value in values:
        as_django = datetime.fromisoformat(value)
        as_django = (as_django if as_django.tzinfo else as_django.replace(tzinfo=UTC)).isoformat()
        assert stored_datetime_iso(value) == as_django, value
    aware = datetime(2026, 11, 24, 3, 58, 12, tzinfo=UTC)
    assert stored_datetime_iso(aware) == aware.isoformat()


def _as_decoded(kept, stored, path="") -> list[str]:
    """Where a board kept in memory is not what decoding the stored board gives (the next update reads one in place
    of the other): another type (a tuple for a list, a float for an int, a NaN for None), another value."""
    if isinstance(stored, str):
        return [] if isinstance(kept, str) and kept == stored else [path]  # a StrEnum is its string
    if type(kept) is not type(stored):
        return [path]
    if isinstance(stored, dict):
        if kept.keys() != stored.keys():  # in any order (the stored board's entries come last)
            return [path]
        return [where for key in stored for where in _as_decoded(kept[key], stored[key], f"{path}/{key}")]
    if isinstance(stored, list):
        if len(kept) != len(stored):
            return [path]
        return [where for a, b in zip(kept, stored) for where in _as_decoded(a, b, f"{path}[]")]
    return [] if kept == stored else [path]


@pytest.mark.parametrize("fields", [{}, {"public_fraction": 0.5}, {"feedback": "rounded"}, {"feedback": "ladder"}])
def test_an_update_reads_the_board_this_process_stored_without_decoding_it_again(monkeypatch, fields):
    """The worker that stored a board keeps it (docs/scale.md): its next update reads that board, not the database's
    copy (a 20,000-entry board took ~0.4 s to read and decode), which it equals to the type; the board it stores is
    the one a full recomputation gives. A board stored since by another process is read from the database."""
    from leaderboard import models
    from leaderboard.models import PrivateReport
    from leaderboard.services import reports

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7, **fields)
    rng = np.random.default_rng(4)
    for i in range(5):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.004 * i + 0.01 * rng.standard_normal(6))
    add_entry(challenge, host, "m1", "recipe", 0.8 + 0.01 * rng.standard_normal(3))  # a second version
    add_entry(challenge, host, "p", "predictions", [0.7], outcomes=[(rng.random(50) < 0.7).astype(np.float32)])
    report_recompute(challenge_id=challenge.pk, force=True)
    reads = []
    decode = models.report_stored_parts
    monkeypatch.setattr(models, "report_stored_parts", lambda *args: reads.append(1) or decode(*args))
    add_entry(challenge, host, "newcomer", "recipe", 0.79 + 0.001 * np.arange(6))
    report = report_recompute(challenge_id=challenge.pk)
    assert reads == []  # the stored boards read from this process's copy
    for model in (Report, PrivateReport)[: 1 + ("public_fraction" in fields)]:
        kept = reports._STORED[model.__name__]
        stored = model.objects.get(challenge=challenge)
        assert kept[0] == reports._stored_key(stored) and kept[2] == stored.row_ids
        assert _as_decoded(kept[1], stored.data) == []
    full = build_report_data(challenge=Challenge.objects.get(pk=challenge.pk))
    assert _same(_comparable(Report.objects.get(pk=report.pk).data), json.loads(json.dumps(_comparable(full))))
    reads.clear()
    Report.objects.filter(pk=report.pk).update(recompute_count=report.recompute_count + 1)  # another process stored it
    add_entry(challenge, host, "third", "recipe", 0.78 + 0.001 * np.arange(6))
    report_recompute(challenge_id=challenge.pk)
    assert len(reads) == 1  # the public board read (not the one this process stored); the private one kept
    reports._STORED.clear()


def test_an_update_builds_only_the_entries_whose_rows_moved():
    """A worker keeps the entries it built (services.reports._BUILT): an entry whose submission row and runs are
    unchanged is the very one built before, with its fingerprint; one whose run was rescored, or whose team was
    renamed, is built again, equal to a build from nothing (docs/scale.md)."""
    from django.db.models import F

    from evaluation.report import entry_fingerprint
    from leaderboard.models import Run, Team
    from leaderboard.services import reports

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(4):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    first, _ = reports.report_entries(challenge=challenge)
    again, _ = reports.report_entries(challenge=challenge)
    assert all(a is b for a, b in zip(first, again, strict=True))
    with pytest.raises(ValueError):
        again[0].test[0] = 0.0  # shared between updates: read-only
    rescored, renamed = first[1].id, first[2].id
    Run.objects.filter(submission_id=rescored, index=0).update(test_score=F("test_score") + 1e-9)
    Team.objects.filter(submissions__id=renamed).update(name="The Renamed")
    moved, _ = reports.report_entries(challenge=challenge)
    assert [a is b for a, b in zip(first, moved, strict=True)] == [True, False, False, True]
    assert moved[1].test[0] == first[1].test[0] + 1e-9 and moved[2].team == "The Renamed"
    reused = reports.reusable_rows(challenge=challenge, board="public", entries=moved, previous=None)[1]
    reports._BUILT.clear()
    reports._PRINTS.clear()
    fresh, _ = reports.report_entries(challenge=challenge)
    assert reused == {str(e.id): entry_fingerprint(e) for e in fresh}
    for a, b in zip(moved, fresh, strict=True):
        assert a is not b and entry_fingerprint(a) == entry_fingerprint(b)


def test_a_kept_read_reuses_unchanged_entries_by_identity_and_never_a_changed_one(monkeypatch):
    """With the worker's kept read (challenge_runs(reuse=True)) an unchanged submission's row and runs are the very
    objects of the last update: its entry is reused without marshalling anything; a submission whose run was rescored,
    renamed or whose run was deleted is built again, equal to a build from nothing; rows and runs that are new objects
    (a full read) are compared byte for byte: 0.0 -> -0.0 is built again (issue 27)."""
    import marshal

    from django.db.models import F

    from evaluation.report import entry_fingerprint
    from leaderboard.models import Run, Team
    from leaderboard.selectors import SNAPSHOT_RUN_COLUMNS, challenge_runs
    from leaderboard.services import reports

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    for i in range(4):
        add_entry(challenge, host, f"m{i}", "recipe", 0.8 - 0.01 * i + 0.001 * np.arange(6))
    reports._BUILT.clear()

    def entries():
        return reports.report_entries(challenge=challenge, snapshot=challenge_runs(challenge=challenge, reuse=True))[0]

    first = entries()
    dumps: list = []
    counted = type("Marshal", (), {"dumps": staticmethod(lambda *a: dumps.append(a) or marshal.dumps(*a))})
    monkeypatch.setattr(reports, "marshal", counted)
    again = entries()
    assert all(a is b for a, b in zip(first, again, strict=True)) and dumps == []
    rescored, renamed, deleted = first[0].id, first[1].id, first[2].id
    Run.objects.filter(submission_id=rescored, index=0).update(test_score=F("test_score") + 1e-9)
    Team.objects.filter(submissions__id=renamed).update(name="The Renamed")
    Run.objects.filter(submission_id=deleted, index=5).delete()
    moved = entries()
    assert [a is b for a, b in zip(first, moved, strict=True)] == [False, False, False, True]
    reports._BUILT.clear()
    fresh = entries()
    for a, b in zip(moved, fresh, strict=True):
        assert a is not b and entry_fingerprint(a) == entry_fingerprint(b)
    # a plain read (a web process's) is equal, not the same objects: compared by bytes, and kept as bytes only (its
    # 20,000 submissions' runs are not held by reference between requests)
    (built,) = reports._BUILT.values()
    assert all(isinstance(row, tuple) and isinstance(runs, list) for row, runs, _ in built.values())
    plain, _ = reports.report_entries(challenge=challenge)
    assert all(a is b for a, b in zip(fresh, plain, strict=True))
    (built,) = reports._BUILT.values()
    assert all(isinstance(raw, bytes) and runs is None for raw, runs, _ in built.values())
    assert all(a is b for a, b in zip(fresh, entries(), strict=True))

    # new objects, equal as numbers, not as bytes (SQLite stores -0.0 as 0.0: made here by hand)
    snapshot = challenge_runs(challenge=challenge)
    about = {row[0]: row for row in snapshot.submissions}
    score = SNAPSHOT_RUN_COLUMNS.index("test_score")
    key = ("test", "public", score)

    def runs_with(value):
        runs = {sid: [tuple(r) for r in group] for sid, group in snapshot.groups.items()}
        sid = next(iter(runs))
        runs[sid][0] = (*runs[sid][0][:score], value, *runs[sid][0][score + 1 :])
        return sid, runs

    sid, zero = runs_with(0.0)
    built = reports._entries_reused(key, dict(about), zero, score, {}, {})
    same = reports._entries_reused(key, {k: tuple(v) for k, v in about.items()}, runs_with(0.0)[1], score, {}, {})
    assert all(a is b for a, b in zip(built, same, strict=True))
    negative = reports._entries_reused(key, dict(about), runs_with(-0.0)[1], score, {}, {})
    assert [e.id == sid for e in negative] == [a is not b for a, b in zip(same, negative, strict=True)]
    assert math.copysign(1.0, negative[0].test[0]) == -1.0
    reports._BUILT.clear()


def test_a_worker_keeps_the_entries_of_the_board_it_updated_last_only():
    """_BUILT and _PRINTS kept every board a worker ever updated (one board's entries each); now the last of each
    kind, as _STORED: a second challenge's update drops the first's."""
    from leaderboard.services import reports

    host = make_user("host")
    first, _ = digits_challenge(host, k_runs=6, bootstrap_resamples=100, master_seed=7)
    second, _ = digits_challenge(host, k_runs=6, bootstrap_resamples=100, master_seed=8)
    for challenge in (first, second):
        add_entry(challenge, host, "m0", "recipe", 0.8 + 0.001 * np.arange(6))
        report_recompute(challenge_id=challenge.pk, force=True)
    public = [(key[0], key[1]) for key in reports._BUILT if key[1] == "public"]
    assert public == [(second.pk, "public")]
    assert [key for key in reports._PRINTS if key[1] == "public"] == [(second.pk, "public")]
