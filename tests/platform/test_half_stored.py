"""A request that fails between two writes (the database gone between a file stored and the rows that name it)
leaves no file that no row names."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from django.db import OperationalError

from leaderboard.models import AuditEntry, Challenge
from leaderboard.services import rescoring
from leaderboard.services.challenges import challenge_reveal, challenge_update
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.storage import hidden_storage

from .factories import csv_bytes, digits_challenge

pytestmark = pytest.mark.django_db


def _files(root) -> set[Path]:
    return {path for path in Path(root).rglob("*") if path.is_file()}


def test_a_label_correction_that_fails_after_the_labels_are_stored_leaves_no_labels_file(
    settings, tmp_path, host, monkeypatch
):
    settings.MEDIA_ROOT = tmp_path / "media"
    challenge, frame = digits_challenge(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    before = _files(hidden_storage.location)
    corrected = [str((int(label) + 1) % 10) for label in truth]
    labels = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "label": corrected}))

    def database_gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(rescoring, "_archive_reports", database_gone)  # after the labels are stored
    with pytest.raises(OperationalError):
        rescoring.challenge_rescore(challenge=challenge, user=host, hidden_labels=("labels.csv", labels))

    challenge.dataset.refresh_from_db()
    assert list(dataset_hidden_labels(dataset=challenge.dataset)) == list(truth)  # the rows name the old labels
    assert not AuditEntry.objects.filter(action="hidden_labels_replaced").exists()
    assert _files(hidden_storage.location) == before  # and no file holds the new ones


def test_a_scoring_program_upload_that_fails_after_the_program_is_stored_leaves_no_program_file(
    settings, tmp_path, host, monkeypatch
):
    from leaderboard.services import programs

    from .test_scoring_programs import PROGRAM, animals_challenge

    settings.MEDIA_ROOT = tmp_path / "media"
    challenge = animals_challenge(host)
    before = _files(settings.MEDIA_ROOT)

    def database_gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(programs, "audit_record", database_gone)  # after the program is stored
    with pytest.raises(OperationalError):
        programs.program_upload(challenge=challenge, user=host, data=PROGRAM)

    challenge.refresh_from_db()
    assert not challenge.scoring_program
    assert _files(settings.MEDIA_ROOT) == before


@contextmanager
def report_writes_fail():
    """The database goes away at the first write to the public board's report row (asking for a recomputation)."""
    from django.db import connection

    def wrapper(execute, sql, params, many, context):
        if sql.lstrip().startswith(("INSERT", "UPDATE")) and '"leaderboard_report"' in sql:
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), pytest.raises(OperationalError):
        yield


def test_a_label_correction_whose_report_request_fails_stores_nothing(settings, tmp_path, host):
    """The correction's last write, the request for the board's recomputation, came after its transaction: a database
    gone there answered 503 ("try again") for a correction that was stored (new labels, audit entries, rescores), and
    the board was never asked to be recomputed. Now it is part of the correction: all of it is stored, or nothing."""
    settings.MEDIA_ROOT = tmp_path / "media"
    challenge, frame = digits_challenge(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    version = challenge.dataset.version
    before = _files(hidden_storage.location)
    corrected = [str((int(label) + 1) % 10) for label in truth]
    labels = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "label": corrected}))

    with report_writes_fail():
        rescoring.challenge_rescore(challenge=challenge, user=host, hidden_labels=("labels.csv", labels))

    challenge.dataset.refresh_from_db()
    assert challenge.dataset.version == version
    assert list(dataset_hidden_labels(dataset=challenge.dataset)) == list(truth)  # the rows name the old labels
    assert not AuditEntry.objects.filter(action__in=["hidden_labels_replaced", "rescore"]).exists()
    assert _files(hidden_storage.location) == before  # and no file holds the new ones


def test_a_settings_change_or_a_reveal_whose_report_request_fails_stores_nothing(host):
    """As for a label correction: a γ changed (or the private board revealed) with the request for the board's
    recomputation lost answered 503 for a change that was stored, and the board kept its old γ until another change
    asked for a recomputation."""
    challenge, _ = digits_challenge(host, public_fraction=0.5)
    with report_writes_fail():
        challenge_update(challenge=Challenge.objects.get(pk=challenge.pk), user=host, gamma=0.6)
    with report_writes_fail():
        challenge_reveal(challenge=Challenge.objects.get(pk=challenge.pk), user=host)
    stored = Challenge.objects.get(pk=challenge.pk)
    assert (stored.gamma, stored.private_revealed_at) == (challenge.gamma, None)
    assert not AuditEntry.objects.filter(action__in=["settings_changed", "private_board_revealed"]).exists()


@pytest.fixture
def commit_answer_lost(monkeypatch):
    """``arm()``: the next COMMIT is stored, then the connection fails before its answer (a network cut, a crash
    just after the commit record), so the client sees an error at COMMIT although the transaction is stored.
    Returns the list that says whether it happened."""
    from django.db import connection

    real, cut = connection.commit, []

    def commit_then_fail():
        real()
        if not cut:
            cut.append(True)
            raise OperationalError("server closed the connection unexpectedly")

    def arm() -> list:
        monkeypatch.setattr(connection, "commit", commit_then_fail)
        return cut

    return arm


@pytest.mark.django_db(transaction=True)
def test_a_label_correction_whose_commit_answer_is_lost_keeps_the_labels_its_row_names(
    settings, tmp_path, host, commit_answer_lost
):
    settings.MEDIA_ROOT = tmp_path / "media"
    challenge, frame = digits_challenge(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    corrected = [str((int(label) + 1) % 10) for label in truth]
    labels = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "label": corrected}))
    cut = commit_answer_lost()
    with pytest.raises(OperationalError):
        rescoring.challenge_rescore(challenge=challenge, user=host, hidden_labels=("labels.csv", labels))
    assert cut
    challenge.dataset.refresh_from_db()
    assert challenge.dataset.hidden_labels_file.storage.exists(challenge.dataset.hidden_labels_file.name)
    assert list(dataset_hidden_labels(dataset=challenge.dataset)) == corrected  # stored, and readable


@pytest.mark.django_db(transaction=True)
def test_a_scoring_program_upload_whose_commit_answer_is_lost_keeps_the_program_its_row_names(
    settings, tmp_path, host, commit_answer_lost
):
    from leaderboard.services import programs

    from .test_scoring_programs import PROGRAM, animals_challenge

    settings.MEDIA_ROOT = tmp_path / "media"
    challenge = animals_challenge(host)
    cut = commit_answer_lost()
    with pytest.raises(OperationalError):
        programs.program_upload(challenge=challenge, user=host, data=PROGRAM)
    assert cut
    challenge.refresh_from_db()
    assert challenge.scoring_program
    assert challenge.scoring_program.storage.exists(challenge.scoring_program.name)


@pytest.mark.django_db(transaction=True)
def test_a_bundle_import_whose_commit_answer_is_lost_keeps_the_dataset_its_rows_name(
    settings, tmp_path, host, commit_answer_lost
):
    from leaderboard.models import Challenge
    from leaderboard.services.bundles import bundle_export, bundle_import
    from leaderboard.services.dataset_files import dataset_frame

    settings.MEDIA_ROOT = tmp_path / "media"
    original, _ = digits_challenge(host)
    data = bundle_export(challenge=original, user=host)
    cut = commit_answer_lost()
    with pytest.raises(OperationalError):
        bundle_import(data=data, user=host, slug="bundled-copy")
    assert cut
    copy = Challenge.objects.get(slug="bundled-copy")  # the commit was stored
    for part in ("train_file", "test_inputs_file", "hidden_labels_file"):
        field = getattr(copy.dataset, part)
        assert field.storage.exists(field.name), f"{part} is named by the stored challenge but was deleted"
    assert len(dataset_frame(dataset=copy.dataset, part="test_inputs")) == copy.dataset.n_test


def test_a_program_check_whose_report_request_fails_is_recorded_by_its_retry(host, django_capture_on_commit_callbacks):
    """The worker recorded a passed check, then asked for the board's recomputation after the transaction: the
    database gone there failed the task, and its retry, finding the check no longer waited for, dropped it. The board
    was never asked to be recomputed on the program's metric. Now the request is part of the record: rolled back
    with it, the retry records both."""
    from leaderboard.models import Report
    from leaderboard.services.programs import program_upload

    from .test_scoring_programs import PROGRAM, animals_challenge, check_in_process

    challenge = animals_challenge(host)
    with django_capture_on_commit_callbacks(execute=False):
        program_upload(challenge=challenge, user=host, data=PROGRAM)
    Report.objects.filter(challenge=challenge).update(recompute_pending=False)
    with report_writes_fail():
        check_in_process(challenge)
    assert Challenge.objects.get(pk=challenge.pk).program_status == "checking"  # still waited for
    assert check_in_process(challenge).program_status == "ok"  # the task's retry
    assert Report.objects.get(challenge=challenge).recompute_pending
