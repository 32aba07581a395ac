"""Leaderboard reports: gather the stored runs, build the report (a pure function), cache it.

Coalescing: ``report_request`` flips ``Report.recompute_pending`` from False to True with
one conditional UPDATE and enqueues only when it did the flip. Fifty runs finishing in a
second flip it once; the task clears the flag before it reads the runs, so a run landing
during a recomputation triggers exactly one more.

The report is :func:`evaluation.report.build_report` of every scored run, read with one
query (``values_list``: no model instances, no N+1). What it depends on is listed once:
``Challenge.REPORT_SETTINGS`` (and the runs); the cache key, the inputs version and the
API's one-query read all derive from it.
"""

from __future__ import annotations

import hashlib
import marshal
import time
from collections import defaultdict
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import BinaryField, Case, F, Value, When
from django.utils import timezone

from evaluation.report import (REPORT_FORMAT, EntryRuns, ReportSettings, build_report, collector_paused, compare,
                               entry_fingerprint, flip_comparison)

from ..choices import SUBMISSION_ACTIVE, Board, Feedback, RunStatus, SubmissionKind, SubmissionStatus
from ..models import Challenge, PrivateReport, Report, Run, Submission
from ..selectors import rows_as_stored, runs_for_challenge
from .boards import board_fields, board_has_private, board_publish
from .dispatch import RECOMPUTE_REPORT, enqueue_on_commit
from .entries import Version, entry_versions, final_selection_ids, public_board_ids
from .errors import ServiceError

#: Query parameters that may override a challenge's report settings, and the Challenge field each
#: overrides (its model validators are the override's validators).
OVERRIDABLE = {"n": "boo_n", "gamma": "gamma", "alpha": "alpha", "statistic": "ranking_statistic"}

#: Read once per run, and once per submission (not repeated on each of its runs: Django's row
#: converters, a datetime's above all, cost more than the query on a board of 50,000 runs).
_RUN_COLUMNS = ("submission_id", "index", "board_score", "valid_score", "prediction_outcomes")
_SUBMISSION_COLUMNS = ("id", "kind", "status", "method_name", "team__name", "runs_expected", "created",
                       "provenance__source", "provenance__link")
#: The cached report of each board.
REPORT_MODELS = {Board.PUBLIC: Report, Board.PRIVATE: PrivateReport}
MULTIPLICITY_NOTE = ("m counts every test-set evaluation of this kind in the challenge (in the prediction-file "
                     "section every scored prediction file, in the recipe section every recipe submission), in every "
                     "phase, not only the entries shown: picking the best of many adaptive tries inflates the maximum "
                     "(Møllersen & Holsbø), and each try is one more draw.")


# ------------------------------------------------------------------ requesting and caching
def report_request(*, challenge_id: int) -> bool:
    """Ask for a recomputation; returns True when this call queued one."""
    Report.objects.get_or_create(challenge_id=challenge_id)
    flipped = Report.objects.filter(challenge_id=challenge_id, recompute_pending=False).update(
        recompute_pending=True, requested_at=timezone.now())
    if flipped:
        enqueue_on_commit(RECOMPUTE_REPORT, challenge_id, countdown=settings.VARBOARD["REPORT_DEBOUNCE_S"])
    return bool(flipped)


def report_settings_key(challenge: Challenge) -> str:
    """A digest of the challenge settings the report depends on (cheap: no query)."""
    return hashlib.sha256(repr((*challenge.report_settings_values(), REPORT_FORMAT)).encode()).hexdigest()[:32]


def report_inputs_version(*, challenge: Challenge) -> str:
    """A hash of everything the reports depend on: settings, the dataset and every run's state."""
    digest = hashlib.sha256(report_settings_key(challenge).encode())
    dataset = getattr(challenge, "dataset", None)
    digest.update(repr((getattr(dataset, "version", None), getattr(dataset, "public_mask", None))).encode())
    rows = runs_for_challenge(challenge=challenge).values_list(
        "submission_id", "index", "status", "test_score", "valid_score", "public_score", "private_score",
        "submission__status", "submission__method_name", "submission__selected_for_final")
    # The database's own values (ints, floats, strings, None, booleans), serialised at once by value
    # (marshal version 2 keeps no references): Django's converters and repr() would cost ten times more.
    digest.update(marshal.dumps(rows_as_stored(rows), 2))
    return digest.hexdigest()



def report_recompute(*, challenge_id: int, force: bool = False) -> Report:
    """Recompute and cache the reports (public board, and private board when there is one) unless
    the cached ones have the same inputs version. Returns the public board's report.

    Python's cyclic collector is paused meanwhile: decoding the stored report allocates millions of
    acyclic objects, and each collection they trigger walks all of them (docs/scale.md)."""
    with collector_paused():
        return _recompute(challenge_id=challenge_id, force=force)


def _recompute(*, challenge_id: int, force: bool) -> Report:
    # Only where set: SQLite rewrites the whole row, the report's megabytes, at each UPDATE.
    Report.objects.filter(challenge_id=challenge_id, recompute_pending=True).update(recompute_pending=False)
    challenge = Challenge.objects.get(pk=challenge_id)
    report, _ = Report.objects.get_or_create(challenge=challenge)
    version = report_inputs_version(challenge=challenge)
    private = PrivateReport.objects.filter(challenge=challenge).first()
    stale_private = board_has_private(challenge) and (private is None or private.inputs_version != version)
    if not force and report.inputs_version == version and report.data and not stale_private:
        return report
    versions = entry_versions(challenge=challenge)
    previous = report.data
    _save(report, version, lambda: build_report_data(challenge=challenge, versions=versions, previous=previous))
    if board_has_private(challenge):
        private = private or PrivateReport.objects.create(challenge=challenge)
        previous_private = private.data
        _save(private, version, lambda: build_report_data(challenge=challenge, board=Board.PRIVATE,
                                                          versions=versions, public_data=report.data,
                                                          previous=previous_private))
    return report


def _save(report, version: str, build) -> None:
    started = time.perf_counter()
    report.data = build()
    report.inputs_version = version
    report.computed_at = timezone.now()
    report.duration_s = time.perf_counter() - started
    # One UPDATE, the count with it: SQLite rewrites the whole row, the report's megabytes, at each.
    type(report).objects.filter(pk=report.pk).update(
        data=report.data, inputs_version=version, computed_at=report.computed_at, duration_s=report.duration_s,
        recompute_count=F("recompute_count") + 1)


#: Largest public board recomputed in the reader's request after a settings change; a larger one is
#: recomputed in the background (``report_request`` queued it) and served meanwhile, marked pending.
SYNC_MAX_ENTRIES = 500


def report_current(*, challenge: Challenge, board: str = Board.PUBLIC):
    """The cached report of ``board``, recomputed synchronously when missing or made with other settings.

    When runs changed, ``report_request`` has already queued a recomputation: the cached
    report is served meanwhile (``recompute_pending`` says so). So is a public board of more
    than :data:`SYNC_MAX_ENTRIES` entries whose settings changed, while its recomputation is
    queued (docs/scale.md): a full recomputation of thousands of entries takes seconds.
    """
    model = REPORT_MODELS[Board(board)]
    report = model.objects.filter(challenge=challenge).first()
    missing = report is None or not report.data or report.computed_at is None
    if not missing and report.data.get("settings_key") != report_settings_key(challenge):
        queued = board == Board.PUBLIC and report.recompute_pending
        missing = not (queued and len(report.data.get("entries", ())) > SYNC_MAX_ENTRIES)
    if missing:
        report_recompute(challenge_id=challenge.pk, force=True)
        report = model.objects.get(challenge=challenge)
    return report


# ------------------------------------------------------------------ building
def report_settings(*, challenge: Challenge, overrides: dict[str, Any] | None = None,
                    m_total_predictions: int | None = None, m_total_recipes: int | None = None) -> ReportSettings:
    """The challenge's statistical settings, with the :data:`OVERRIDABLE` parameters overridden."""
    values = {field: getattr(challenge, field) for field in OVERRIDABLE.values()}
    for key, value in (overrides or {}).items():
        values[OVERRIDABLE[key]] = value
    metric = challenge.metric_info
    return ReportSettings(
        higher_is_better=challenge.higher_is_better, n_resamples=challenge.bootstrap_resamples,
        master_seed=challenge.master_seed, correction=challenge.correction, k_runs=challenge.k_runs,
        m_total_predictions=m_total_predictions, m_total_recipes=m_total_recipes,
        accuracy_like=metric.name == "accuracy", metric_from_mean=metric.from_mean, score_range=metric.score_range,
        boo_n=values["boo_n"], gamma=values["gamma"], alpha=values["alpha"], statistic=values["ranking_statistic"],
        backend=settings.VARBOARD.get("STATS_BACKEND", "numpy"), device=settings.VARBOARD.get("STATS_DEVICE", "auto"))


def report_entries(*, challenge: Challenge, board: str = Board.PUBLIC, versions: dict[int, Version] | None = None,
                   submission_ids: set[int] | None = None) -> tuple[list[EntryRuns], dict[str, int]]:
    """Entries shown on ``board``, and how many test-set evaluations of each kind were ever made on it.

    Shown on the public board: one version per entry (``services.entries.public_board_ids``), on
    the private board: each team's final selection; every run with its score on that board's
    rows. Counted (``m`` of the multiplicity-adjusted state of the art): every scored prediction
    file and every recipe submission with a scored run, of every version, failed and cancelled
    ones included (see :data:`MULTIPLICITY_NOTE`). ``submission_ids``: only these entries' runs
    are read (the counts then cover them only).
    """
    versions = entry_versions(challenge=challenge) if versions is None else versions
    shown = (public_board_ids(challenge=challenge, versions=versions) if board == Board.PUBLIC
             else final_selection_ids(challenge=challenge, versions=versions))
    score, outcomes = board_fields(challenge, board)
    rows = (Run.objects.filter(submission__challenge=challenge, status=RunStatus.SUCCEEDED,
                               **{f"{score}__isnull": False})
            .annotate(board_score=F(score),
                      prediction_outcomes=Case(When(submission__kind=SubmissionKind.PREDICTIONS, then=F(outcomes)),
                                               default=Value(None), output_field=BinaryField()))
            .filter(**({"submission_id__in": submission_ids} if submission_ids is not None else {}))
            .order_by("submission_id", "index").values_list(*_RUN_COLUMNS))
    rows = rows_as_stored(rows)  # ints, floats, None and bytes (the outcomes) as they are
    submissions = Submission.objects.filter(challenge=challenge,
                                            **({"id__in": submission_ids} if submission_ids is not None else {}))
    about = {row[0]: row for row in submissions.values_list(*_SUBMISSION_COLUMNS)}
    runs: dict[int, list[tuple]] = defaultdict(list)
    files = 0
    recipes: set[int] = set()
    for row in rows:
        submission = about[row[0]]
        if submission[1] == SubmissionKind.PREDICTIONS:
            files += 1
        else:
            recipes.add(row[0])
        if submission[2] != SubmissionStatus.CANCELLED and row[0] in shown:
            runs[row[0]].append(row)
    entries = [_entry(about[sid], group) for sid, group in runs.items()]
    return entries, {SubmissionKind.PREDICTIONS: files, SubmissionKind.RECIPE: len(recipes)}


def _entry(submission: tuple, group: list[tuple]) -> EntryRuns:
    """One entry's runs (rows of :data:`_RUN_COLUMNS`) and its submission (a row of :data:`_SUBMISSION_COLUMNS`)."""
    sid, kind, status, name, team, runs_expected, created, source, link = submission
    valid = np.array([np.nan if r[3] is None else r[3] for r in group], dtype=np.float64)
    blobs = [r[4] for r in group]
    outcomes = None
    if all(b is not None for b in blobs):
        arrays = [np.frombuffer(bytes(b), dtype="<f4") for b in blobs]
        if len({a.size for a in arrays}) == 1 and arrays[0].size:
            outcomes = np.stack(arrays).astype(np.float64)
    return EntryRuns(
        id=sid, name=name, team=team, kind=kind, runs_expected=runs_expected,
        run_index=np.array([r[1] for r in group], dtype=np.int64),
        test=np.array([r[2] for r in group], dtype=np.float64),
        valid=None if np.isnan(valid).any() else valid, outcomes=outcomes,
        created=created.isoformat(), in_progress=status in SUBMISSION_ACTIVE,
        provenance=None if source is None else {"source": source, "link": link or ""})


def reusable_rows(*, challenge: Challenge, board: str, entries: list[EntryRuns], previous: dict | None
                  ) -> tuple[dict[int, dict], dict[str, str]]:
    """Rows of ``previous`` (the board's stored report) an incremental update may keep, and every entry's fingerprint.

    A row is kept when the report was made with the same settings, is published exactly
    (rounded and Ladder boards alter rows) and its entry's fingerprint is unchanged: a new
    or finished submission then recomputes its own intervals and what depends on the
    other entries (comparisons, groups, ranks, rank intervals, state of the art), not
    every entry's bootstrap intervals (docs/scale.md).
    """
    prints = {str(e.id): entry_fingerprint(e) for e in entries}
    exact = board != Board.PUBLIC or challenge.feedback == Feedback.EXACT
    if (not previous or not exact or previous.get("settings_key") != report_settings_key(challenge)
            or previous.get("format") != REPORT_FORMAT):
        return {}, prints
    before = previous.get("fingerprints") or {}
    return {row["submission_id"]: row for row in previous.get("entries", ())
            if before.get(str(row["submission_id"])) == prints.get(str(row["submission_id"]))}, prints


def build_report_data(*, challenge: Challenge, overrides: dict[str, Any] | None = None, board: str = Board.PUBLIC,
                      versions: dict[int, Version] | None = None, public_data: dict | None = None,
                      previous: dict | None = None) -> dict:
    """The report of ``challenge``'s ``board`` as published (see :func:`evaluation.report.build_report`
    and :func:`services.boards.board_publish`).

    Parameters
    ----------
    challenge : Challenge
    overrides : dict, optional
        Keys of :data:`OVERRIDABLE` (``n``, ``gamma``, ``alpha``, ``statistic``),
        already validated: the report is computed with them instead of the challenge's.
    board : {"public", "private"}
        Whose rows the scores are computed on; the caller has checked that the viewer may see it.
    versions, public_data : optional
        The entries' versions and the public board's data (for the private board's rank changes),
        when the caller has them already.
    previous : dict, optional
        The board's stored report: rows of unchanged entries are reused (:func:`reusable_rows`).

    Raises
    ------
    ServiceError
        When the challenge's settings cannot produce a report (the message says why).
    """
    versions = entry_versions(challenge=challenge) if versions is None else versions
    entries, ever = report_entries(challenge=challenge, board=board, versions=versions)
    settings_ = report_settings(challenge=challenge, overrides=overrides,
                                m_total_predictions=ever[SubmissionKind.PREDICTIONS],
                                m_total_recipes=ever[SubmissionKind.RECIPE])
    reuse, prints = reusable_rows(challenge=challenge, board=board, entries=entries,
                                  previous=None if overrides else previous)
    try:
        data = build_report(entries, settings_, reuse=reuse, previous=previous if reuse else None)
    except ValueError as exc:  # e.g. a challenge saved with gamma = 1, which the decision rule cannot use
        raise ServiceError(f"The report of {challenge.slug!r} cannot be computed: {exc}") from exc
    data["challenge"] = {"slug": challenge.slug, "metric": challenge.metric,
                         "higher_is_better": challenge.higher_is_better}
    data["settings"]["m_total"] = {str(kind): count for kind, count in ever.items()}
    data["settings"]["m_note"] = MULTIPLICITY_NOTE
    data["overrides"] = dict(overrides or {})
    data["fingerprints"] = prints
    data["reused_rows"] = len(reuse)
    data["settings_key"] = None if overrides else report_settings_key(challenge)
    if board == Board.PRIVATE and public_data is None:
        public_data = report_current(challenge=challenge).data
    return board_publish(challenge=challenge, data=data, board=board, versions=versions, public_data=public_data)


def report_with_overrides_key(*, challenge: Challenge, overrides: dict, board: str = Board.PUBLIC) -> str:
    """Cache key of a board's report recomputed with ``overrides``, tied to the current inputs' version."""
    version = report_current(challenge=challenge).inputs_version
    digest = hashlib.sha256(f"{version}:{board}:{sorted(overrides.items())}".encode()).hexdigest()[:32]
    return f"varboard:override:{challenge.pk}:{digest}"



def pair_compare(*, challenge: Challenge, section: dict, a_id: int, b_id: int, overrides: dict[str, Any] | None = None,
                 board: str = Board.PUBLIC) -> dict:
    """The comparison of two compared recipe entries the report did not store (a large board's far pair).

    Reads the two entries' runs only and decides the pair as one of the section's pairs
    (:func:`evaluation.report.compare`).

    Raises
    ------
    ServiceError
        When the pair cannot be compared (the message says why).
    """
    entries, _ = report_entries(challenge=challenge, board=board, submission_ids={a_id, b_id})
    by_id = {e.id: e for e in entries}
    if a_id not in by_id or b_id not in by_id:
        raise ServiceError("Both entries need scored runs on this board to be compared.")
    n = len(section["compared"])
    try:
        return compare(by_id[a_id], by_id[b_id], report_settings(challenge=challenge, overrides=overrides),
                       paired_runs=section["paired_runs"] or [], family_size=n * (n - 1) // 2)
    except ValueError as exc:
        raise ServiceError(f"These entries cannot be compared: {exc}") from exc


def section_pair(*, challenge: Challenge, section: dict, a_id: int, b_id: int, overrides: dict[str, Any] | None = None,
                 board: str = Board.PUBLIC) -> tuple[dict | None, str | None]:
    """(the comparison of A and B seen from A, None), or (None, why not): stored, else computed on demand.

    A large board stores each entry's comparisons with its neighbours, the leader and its frontier;
    any other pair of compared recipe entries is decided by :func:`pair_compare`.
    """
    for pair in section["comparisons"]:
        if {pair["a"], pair["b"]} == {a_id, b_id}:
            return (pair if pair["a"] == a_id else flip_comparison(pair)), None
    compared = set(section["compared"])
    if a_id != b_id and a_id in compared and b_id in compared and section["kind"] == SubmissionKind.RECIPE:
        try:
            return pair_compare(challenge=challenge, section=section, a_id=a_id, b_id=b_id, overrides=overrides,
                                board=board), None
        except ServiceError as exc:
            return None, exc.message
    return None, None
