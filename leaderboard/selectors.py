"""Reads from the database: which challenges, submissions and runs a user may see.

Selectors query the database and nothing else; stored files are read by
``services.dataset_files``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter

from django.db import connections
from django.db.models import CharField, Count, Exists, F, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Cast, Coalesce, Concat, NullIf
from django.utils import timezone

from .choices import Board, RunStatus, SubmissionStatus, Visibility
from .models import (
    Challenge,
    EntryProvenance,
    Phase,
    PrivateReport,
    Report,
    ReportRow,
    Run,
    Submission,
    Suite,
    Team,
    TeamInvitation,
    TeamModeration,
)
from .report_rows import ROW_TABLE


def challenge_list_visible(*, user) -> QuerySet[Challenge]:
    """Public challenges, plus private ones the user hosts."""
    qs = Challenge.objects.all()
    if user is not None and user.is_authenticated:
        if user.is_superuser:
            return qs
        return qs.filter(Q(visibility=Visibility.PUBLIC) | Q(hosts=user)).distinct()
    return qs.filter(visibility=Visibility.PUBLIC)


def challenges_with_phase_span(challenges: QuerySet[Challenge]) -> QuerySet[Challenge]:
    """Annotate ``opens_at`` (its first phase's opening, None: open from the start) and ``closes_at``
    (its last phase's closing, None: open-ended): a challenge's dates are its phases' span."""
    phases = Phase.objects.filter(challenge=OuterRef("pk"))
    return challenges.annotate(
        opens_at=Subquery(phases.order_by(F("opens_at").asc(nulls_first=True)).values("opens_at")[:1]),
        closes_at=Subquery(phases.order_by(F("closes_at").desc(nulls_first=True)).values("closes_at")[:1]),
    )


def challenges_with_entry_count(challenges: QuerySet[Challenge]) -> QuerySet[Challenge]:
    """Annotate ``entries``: the challenge's entries as its board counts them (``services.entries.entry_versions``):
    a team's method once, over the submissions not cancelled that have a succeeded run (the home page said 7
    where the board said 6, counting every scored version), and that no host moderated (on no board: the home page
    counted an entry a host hid, and so told that there was one)."""
    succeeded = Run.objects.filter(submission=OuterRef("pk"), status=RunStatus.SUCCEEDED)
    entries = (
        Submission.objects.filter(challenge=OuterRef("pk"))
        .exclude(status=SubmissionStatus.CANCELLED)
        .filter(Exists(succeeded))
        .annotate(moderated=moderation_in_force())
        .filter(moderated__isnull=True)
        .order_by()
        .values("challenge")
        .annotate(n=Count(Concat(Cast("team_id", CharField()), Value(":"), "method_name"), distinct=True))
        .values("n")
    )
    return challenges.annotate(entries=Coalesce(Subquery(entries), 0))


def challenge_provenance(*, challenge: Challenge, user) -> list[EntryProvenance]:
    """Where the challenge's imported entries that ``user`` may open come from (entries varboard did not produce), by
    entry name: one a host hid or disqualified is on neither board, and the page's card named it, with its team,
    citation and link, to everyone (:func:`submissions_readable`)."""
    return list(
        EntryProvenance.objects.filter(
            submission__challenge=challenge,
            submission__in=submissions_readable(user=user, challenge=challenge).values("pk"),
        )
        .select_related("submission", "submission__team")
        .order_by("submission__method_name")
    )


def user_is_host(*, user, challenge: Challenge) -> bool:
    if user is None or not user.is_authenticated:
        return False
    return user.is_superuser or challenge.hosts.filter(pk=user.pk).exists()


def user_teams(*, user) -> QuerySet[Team]:
    if user is None or not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(membership__user=user)


def user_teams_counted(*, user) -> QuerySet[Team]:
    """The user's teams, each with ``n_submissions``: its submissions on the challenges the user may see. A private
    challenge a host's baseline entered with a team a contestant shares is no business of hers (its title, its mails:
    :func:`submission_list_for`), nor how many tries it took and when."""
    visible = challenge_list_visible(user=user).values("pk")
    return user_teams(user=user).annotate(
        n_submissions=Count("submissions", filter=Q(submissions__challenge__in=visible), distinct=True)
    )


def invitations_pending_for(*, user) -> QuerySet[TeamInvitation]:
    """Invitations the user has not answered yet, newest first."""
    return (
        TeamInvitation.objects.filter(invitee=user, status=TeamInvitation.Status.PENDING)
        .select_related("team", "invited_by")
        .order_by("-created")
    )


def team_invitations_visible(*, user) -> QuerySet[TeamInvitation]:
    """Invitations the user may read: those sent to them and those of their teams."""
    return (
        TeamInvitation.objects.filter(Q(invitee=user) | Q(team__membership__user=user))
        .distinct()
        .select_related("team", "invitee", "invited_by")
    )


def challenges_hosted_by(*, user) -> QuerySet[Challenge]:
    return Challenge.objects.filter(hosts=user).order_by("title")


def submission_can_see_details(*, user, submission: Submission) -> bool:
    """Logs, files and errors: the submitting team and the challenge's hosts only."""
    if user is None or not user.is_authenticated:
        return False
    if user_is_host(user=user, challenge=submission.challenge):
        return True
    return submission.team.membership_set.filter(user=user).exists()


def board_has_private(challenge: Challenge) -> bool:
    """Whether some hidden rows are on the private board (``public_fraction`` below 1)."""
    return challenge.public_fraction < 1.0


def private_board_revealed(*, challenge: Challenge, now=None) -> bool:
    """Revealed by the hosts (which closes the competition), or a phase with automatic reveal has closed
    and no phase takes submissions any more: a reveal never leaves a phase open (issue 21)."""
    return private_board_revealed_at(challenge=challenge, now=now) is not None


def private_board_revealed_at(*, challenge: Challenge, now=None) -> datetime | None:
    """When the private board was revealed (:func:`private_board_revealed`): the hosts' reveal, or the close of the
    last phase when a phase with automatic reveal has closed; None while it is not."""
    if challenge.private_revealed_at is not None:
        return challenge.private_revealed_at
    now = now or timezone.now()
    phases = challenge.phases.all()
    if not phases.filter(auto_reveal=True, closes_at__isnull=False, closes_at__lte=now).exists():
        return None
    if phases.filter(Q(closes_at__isnull=True) | Q(closes_at__gt=now)).exists():
        return None
    return phases.aggregate(last=Max("closes_at"))["last"]


def submissions_readable(*, user, challenge: Challenge) -> QuerySet[Submission]:
    """The challenge's submissions ``user`` may open at all: its hosts every one, a team its own, others those
    scored or on a board they may read as stored (the public one, and the private one once revealed: an entry still
    running, with its runs so far), unless cancelled or a host moderated them (:func:`submissions_moderated`).
    Their pages and links, their runs in the exports (enough to recompute the board), the versions listed beside
    them, compare, history and variance studies follow this one rule."""
    submissions = Submission.objects.filter(challenge=challenge)
    if user_is_host(user=user, challenge=challenge):
        return submissions
    boards = [Board.PUBLIC, Board.PRIVATE] if private_board_revealed(challenge=challenge) else [Board.PUBLIC]
    shown = ReportRow.objects.filter(challenge=challenge, board__in=boards).values("submission_id")
    others = (
        submissions.filter(Q(status=SubmissionStatus.SCORED) | Q(pk__in=shown))
        .exclude(status=SubmissionStatus.CANCELLED)  # on no board, even before the report drops its row
        .exclude(pk__in=submissions_moderated(challenge=challenge).values("pk"))
    )
    return submissions.filter(Q(pk__in=others.values("pk")) | Q(team__in=user_teams(user=user).values("pk")))


def variance_studies_readable(*, user, challenge: Challenge):
    """The challenge's variance studies of submissions ``user`` may open (:func:`submissions_readable`)."""
    return challenge.variance_studies.filter(
        submission__in=submissions_readable(user=user, challenge=challenge).values("pk")
    ).select_related("challenge", "submission")


def submission_readable(*, user, submission: Submission) -> bool:
    """Whether ``user`` may open the submission at all (:func:`submissions_readable`)."""
    return submission_id_readable(user=user, challenge=submission.challenge, submission_id=submission.pk)


def submission_readable_get(*, user, pk: int, related: tuple[str, ...] = ("challenge",)) -> Submission | None:
    """The submission ``pk`` of a challenge ``user`` may see, if they may open it (:func:`submission_readable`), else
    None, whether it does not exist or is another team's hidden entry: every form that acts on a submission (cancel,
    final choice, download, moderation) answers both alike, so no answer counts the others' unscored entries."""
    visible = challenge_list_visible(user=user).values("pk")
    submission = Submission.objects.filter(challenge__in=visible, pk=pk).select_related(*related).first()
    return submission if submission is not None and submission_readable(user=user, submission=submission) else None


def submission_id_readable(*, user, challenge: Challenge, submission_id: int) -> bool:
    """:func:`submission_readable` by id: what a stored board's row (a host hid it, or it was cancelled, since the
    board was computed) may no longer show this reader."""
    return submissions_readable(user=user, challenge=challenge).filter(pk=submission_id).exists()


def submission_list_for(*, user, challenge: Challenge | None = None) -> QuerySet[Submission]:
    """Submissions whose details the user may see: their teams', and all of the challenges they host; on challenges
    they may see only (a team's entry to a private challenge, a host's baseline say, is no member's business)."""
    qs = Submission.objects.select_related("challenge", "team", "submitted_by")
    if challenge is not None:
        qs = qs.filter(challenge=challenge)
    if user is None or not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    mine = Q(team__membership__user=user) | Q(challenge__hosts=user)
    return qs.filter(mine, challenge__in=challenge_list_visible(user=user).values("pk")).distinct()


@dataclass(frozen=True)
class PhaseInForce:
    """Whether a challenge takes submissions at a moment, and under which phase's dates and quotas.

    ``phase``: the phase taking submissions when ``open``; otherwise the next phase to open
    (``upcoming``), else the phase that closed last; None only for a challenge without phases.
    ``reason``: why no submission is taken (None when open), in the words the page, the API and
    the upload service all use.
    """

    open: bool
    phase: Phase | None
    upcoming: bool = False
    reason: str | None = None

    def as_dict(self) -> dict:
        """The API's ``in_force`` object: open, the phase's name, dates and quotas, and the reason."""
        phase = self.phase
        return {
            "open": self.open,
            "reason": self.reason,
            "upcoming": self.upcoming,
            "phase": phase.name if phase else None,
            **{name: getattr(phase, name) if phase else None for name in PHASE_IN_FORCE_FIELDS},
        }


#: The settings of the phase in force that the page and the API show.
PHASE_IN_FORCE_FIELDS = ("opens_at", "closes_at", "daily_quota", "total_quota", "daily_file_quota", "total_file_quota")


def phase_in_force(*, challenge: Challenge, now=None) -> PhaseInForce:
    """The one rule for "is the challenge open, under which phase, with which quotas" (issue 24).

    A challenge is open exactly when one of its phases is (the first in phase order); between
    two phases it is closed and the next phase to open is the one in force, labelled upcoming.
    Reads ``challenge.phases.all()`` (prefetched phases are used as they are).
    """
    now = now or timezone.now()
    phases = list(challenge.phases.all())  # in Phase.Meta.ordering
    for phase in phases:
        if phase.closed_reason(now) is None:
            return PhaseInForce(open=True, phase=phase)
    upcoming = [p for p in phases if p.opens_at and p.opens_at > now]
    if upcoming:
        phase = min(upcoming, key=lambda p: p.opens_at)
        return PhaseInForce(open=False, phase=phase, upcoming=True, reason=phase.closed_reason(now))
    if phases:
        phase = max(phases, key=lambda p: (p.closes_at is not None, p.closes_at))
        return PhaseInForce(open=False, phase=phase, reason=phase.closed_reason(now))
    return PhaseInForce(open=False, phase=None, reason="This challenge has no phase taking submissions.")


@dataclass(frozen=True)
class QuotaUsage:
    """Submissions and files charged to a team's (or a user's) quotas of a phase."""

    submissions_today: int
    submissions_total: int
    files_today: int
    files_total: int
    oldest_today: object = None  # when the oldest submission of the last 24 h was made (its slot frees 24 h later)

    def seconds_until_a_daily_slot(self) -> float:
        if self.oldest_today is None:
            return 0.0
        return max(0.0, (self.oldest_today + timezone.timedelta(days=1) - timezone.now()).total_seconds())


def phase_quota_usage(*, phase: Phase, team: Team | None = None, user=None) -> QuotaUsage:
    """What the team (or the user, across all their teams) has used of the phase's quotas: the last 24 h, in total."""
    counted = Submission.objects.filter(phase=phase, counts_toward_quota=True)
    counted = counted.filter(team=team) if team is not None else counted.filter(submitted_by=user)
    since = timezone.now() - timezone.timedelta(days=1)
    today = Q(created__gte=since)
    agg = counted.aggregate(
        total=Count("id"),
        today=Count("id", filter=today),
        files=Sum("n_files"),
        files_today=Sum("n_files", filter=today),
        oldest=Min("created", filter=today),
    )
    return QuotaUsage(agg["today"], agg["total"], agg["files_today"] or 0, agg["files"] or 0, agg["oldest"])


def rows_as_stored(rows: QuerySet) -> list[tuple]:
    """A ``values_list`` query's rows as the database returns them, without Django's per-row converters
    (a report reads 50,000 runs three times: docs/scale.md). Only for columns whose stored value is
    the Python one (ints, floats, strings, bytes, None; booleans are 0/1 in SQLite)."""
    sql, params = rows.query.sql_with_params()
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


#: The columns of :class:`ChallengeRuns`: every run, and every submission (cancelled ones too).
SNAPSHOT_RUN_COLUMNS = (
    "submission_id",
    "index",
    "status",
    "test_score",
    "valid_score",
    "public_score",
    "private_score",
    "extra_scores",
    "result_revision",
)
SNAPSHOT_SUBMISSION_COLUMNS = (
    "id",
    "team_id",
    "kind",
    "status",
    "method_name",
    "team__name",
    "runs_expected",
    "created",
    "selected_for_final",
    "phase__test_rows",
    "provenance__source",
    "provenance__link",
    "moderated",
)


@dataclass(frozen=True)
class ChallengeRuns:
    """Every run and submission of a challenge as stored, read once by a report update (docs/scale.md).

    ``runs``: rows of :data:`SNAPSHOT_RUN_COLUMNS` by submission and index; ``submissions``: rows of
    :data:`SNAPSHOT_SUBMISSION_COLUMNS` by creation (then id), ``created`` in ISO 8601 and
    ``selected_for_final`` a bool whatever the database.

    ``memos``: what was worked out per submission from its row and runs, kept from one read of the challenge to the
    next (:func:`challenge_runs`, issue 27): ``{name: {submission id: (its row, its runs, value)}}``, a value reused
    only where the row and the runs are the very objects it was worked out from (:meth:`per_submission`).
    """

    runs: list[tuple]
    submissions: list[tuple]
    _scored: dict = field(default_factory=dict, repr=False, compare=False)  # by column (and "read"), built once
    _groups: dict | None = field(default=None, repr=False, compare=False)  # each submission's runs, when known
    memos: dict = field(default_factory=dict, repr=False, compare=False)
    #: Whether the rows and runs are the worker's kept read (``reuse``), held between updates anyway: only then may a
    #: reader keep them by reference (``services.reports._entries_reused``).
    kept: bool = field(default=False, compare=False)

    @property
    def groups(self) -> dict[int, list[tuple]]:
        """Each submission's runs (a list per submission, by id), submissions without any absent."""
        if self._groups is None:
            object.__setattr__(self, "_groups", {sid: list(g) for sid, g in groupby(self.runs, key=itemgetter(0))})
        return self._groups  # type: ignore[return-value]

    def per_submission(self, name: str, items, work) -> dict:
        """``{id: work(row, runs)}`` for each ``(id, row, runs)`` of ``items``, in their order, taking the value kept
        under ``name`` where ``row`` and ``runs`` are the objects it was worked out from (unchanged submissions keep
        their objects from one read to the next: :func:`challenge_runs`)."""
        before, after, out = self.memos.get(name, {}), {}, {}
        for sid, row, runs in items:
            old = before.get(sid)
            if old is not None and old[0] is row and old[1] is runs:
                value = old[2]
            else:
                value = work(row, runs)
            after[sid] = (row, runs, value)
            out[sid] = value
        self.memos[name] = after
        return out

    def _succeeded_runs(self, name: str, scores: tuple[int, ...]) -> dict[int, list[tuple]]:
        """Each submission's runs that succeeded with a score in one of the ``scores`` columns (by index), in index
        order (the submission's own list where all did: no copy), worked out again only for the submissions whose
        runs changed (:meth:`per_submission` under ``name``, issue 27)."""
        status, succeeded = SNAPSHOT_RUN_COLUMNS.index("status"), RunStatus.SUCCEEDED
        a, b, c = (scores * 3)[:3]  # one test per column, unrolled: 200,000 runs in a full read

        def succeeded_runs(_, group):
            rows = [
                row
                for row in group
                if row[status] == succeeded and (row[a] is not None or row[b] is not None or row[c] is not None)
            ]
            return group if len(rows) == len(group) else rows

        return self.per_submission(name, ((sid, None, g) for sid, g in self.groups.items()), succeeded_runs)

    def scored(self, column: str) -> dict[int, list[tuple]]:
        """Each submission's runs that succeeded with a score in ``column`` (a column of
        :data:`SNAPSHOT_RUN_COLUMNS`), in index order; submissions without any are absent."""
        if column not in self._scored:
            each = self._succeeded_runs(f"scored:{column}", (SNAPSHOT_RUN_COLUMNS.index(column),))
            self._scored[column] = {sid: group for sid, group in each.items() if group}
        return self._scored[column]

    def read_by_reports(self) -> ChallengeRuns:
        """The runs and submissions a board can read: submissions with a run scored on some part (test, public or
        private rows), with all their runs (a cancelled one with its scored runs only). A submission queued, failed or cancelled before any score is on no
        board, counted in no ``m`` and numbered in no row (:func:`services.entries.published_version_numbers`):
        its changes must not move a board's inputs version, else a board re-stamped at a rival's failed try (its
        ``computed_at``, its ETag) told when others' submissions failed (tests/platform/test_leaks_v4.py)."""
        if "read" not in self._scored:
            scores = tuple(SNAPSHOT_RUN_COLUMNS.index(c) for c in ("test_score", "public_score", "private_score"))
            scored = self._succeeded_runs("read", scores)
            read = {sid for sid, rows in scored.items() if rows}
            # A cancelled submission is on no board: its scored runs are counted (m, a Ladder step) and nothing else
            # of it is read; a run it left running that failed moved the version, and told when it ended
            # (tests/platform/test_leaks_v6.py).
            state, cancelled_ = SNAPSHOT_SUBMISSION_COLUMNS.index("status"), SubmissionStatus.CANCELLED
            cancelled = {row[0] for row in self.submissions if row[state] == cancelled_ and row[0] in read}
            if len(read) == len(self.submissions) and not cancelled:  # every run is read (most boards): no copy
                # None stands for the snapshot itself: kept as itself, the snapshot referred to itself, and its
                # 320,000 run tuples of a 20,000-entry board were freed by the cyclic collector only (0.2 s of an
                # update when it ran: tests/platform/test_report_collector.py)
                self._scored["read"] = None
            else:
                groups = {
                    sid: scored[sid] if sid in cancelled else group for sid, group in self.groups.items() if sid in read
                }
                self._scored["read"] = ChallengeRuns(
                    [row for group in groups.values() for row in group],
                    [row for row in self.submissions if row[0] in read],
                    _groups=groups,
                    memos=self.memos,
                    kept=self.kept,
                )
        read = self._scored["read"]
        return self if read is None else read


#: How many changed submissions an update reads by id at most: more, and it reads every run (one query either way).
SNAPSHOT_MAX_CHANGED = 500
#: How many challenges' reads a process keeps (a worker updates the board it updated last most often): each holds
#: its runs and what was worked out of them (~150 MB for 20,000 entries x 16 runs).
SNAPSHOT_KEPT_CHALLENGES = 1


@dataclass(frozen=True)
class _KeptRead:
    """A challenge's runs as :func:`challenge_runs` read them: each submission's ``(created, runs stamp)`` when its
    runs were read, and those runs (by submission, in index order; none: absent). Never changed in place."""

    stamps: dict[int, tuple]
    runs: dict[int, list[tuple]]
    rows: dict[int, tuple]  # each submission's row as read, and as ChallengeRuns.submissions has it
    memos: dict  # ChallengeRuns.memos


#: The triggers that keep the runs stamps (``RunsStamp``, migrations 0035 and 0036), by database vendor.
RUN_STAMP_TRIGGERS = {
    "sqlite": (
        "leaderboard_run_stamp_insert",
        "leaderboard_run_stamp_delete",
        "leaderboard_run_stamp_update",
    ),
    "postgresql": ("leaderboard_run_stamp",),
}
#: The last reads, by (database, challenge id, challenge created): :func:`challenge_runs` reads again only the runs of
#: submissions new or whose stamp moved (issue 27, docs/scale.md).
_KEPT_READS: dict[tuple, _KeptRead] = {}
_KEPT_LOCK = threading.Lock()
#: What the last :func:`challenge_runs` of a whole challenge read: ("full", None) or ("incremental", the ids whose runs
#: it read) (tests).
snapshot_last_read: tuple = ("none", None)


def run_stamps_in_force(connection) -> bool:
    """Whether the database keeps the runs stamps (``RunsStamp``, the triggers of migrations 0035 and 0036 all there): a later
    migration that rebuilds ``leaderboard_run`` on SQLite drops its triggers, and then every read is a full one."""
    names = RUN_STAMP_TRIGGERS.get(connection.vendor)
    if not names:
        return False
    if connection.vendor == "sqlite":
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s)"
    else:
        sql = "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgenabled <> 'D' AND tgname IN (%s)"
    with connection.cursor() as cursor:
        cursor.execute(sql % ", ".join(["%s"] * len(names)), list(names))
        return cursor.fetchone()[0] == len(names)


def _runs_read(challenge: Challenge, submission_ids=None) -> list[tuple]:
    """The runs of ``challenge`` (of ``submission_ids`` only) by submission and index, as stored."""
    if submission_ids is None:
        # The challenge's submissions as a subquery, not a join: SQLite then reads each one's runs by the (submission,
        # index) unique index, already in the order asked for, instead of sorting 200,000 runs in a temporary B-tree
        # (20,000 entries: 0.24 -> 0.20 s). The same rows in the same order.
        runs = Run.objects.filter(submission_id__in=Submission.objects.filter(challenge=challenge).values("pk"))
    else:
        runs = Run.objects.filter(submission_id__in=submission_ids)
    return rows_as_stored(runs.order_by("submission_id", "index").values_list(*SNAPSHOT_RUN_COLUMNS))


def _submissions_read(
    challenge: Challenge, submission_ids=None, kept: dict[int, tuple] | None = None
) -> tuple[list[tuple], dict[int, tuple], dict[int, tuple]]:
    """:attr:`ChallengeRuns.submissions`, each one's ``(created, runs stamp)``, and each one's row as read with its
    row as returned: taken from ``kept`` (the previous read's) where the row read is the same, the very tuple."""
    only = {} if submission_ids is None else {"id__in": submission_ids}
    subs = rows_as_stored(
        Submission.objects.filter(challenge=challenge, **only)
        .order_by("created", "id")
        .annotate(moderated=moderation_in_force())
        .annotate(stamp=Coalesce("runs_stamp__stamp", 0))  # a LEFT JOIN: no row (no run yet) reads 0
        .values_list(*SNAPSHOT_SUBMISSION_COLUMNS, "stamp")
    )
    created, selected = (
        SNAPSHOT_SUBMISSION_COLUMNS.index("created"),
        SNAPSHOT_SUBMISSION_COLUMNS.index("selected_for_final"),
    )
    kept = kept or {}
    rows, stamps, raws = [], {}, {}
    for raw in subs:
        sid, row = raw[0], raw[:-1]  # without the stamp
        old = kept.get(sid)
        if old is None or old[0] != row:
            old = (row, (*row[:created], stored_datetime_iso(row[created]), bool(row[selected]), *row[selected + 1 :]))
        rows.append(old[1])
        stamps[sid] = (row[created], raw[-1])
        raws[sid] = old
    return rows, stamps, raws


def challenge_runs(
    *, challenge: Challenge, submission_ids: set[int] | None = None, reuse: bool = False
) -> ChallengeRuns:
    """The challenge's runs and submissions for :class:`ChallengeRuns` (no per-row converters); ``submission_ids``:
    only these submissions.

    ``reuse`` (the report worker's update only, ``services.reports``): a whole challenge's read keeps its runs
    (:data:`_KEPT_READS`, ~140 MB on 20,000 entries x 16 runs) and the next reads again only the runs of the
    submissions new or whose runs stamp moved (``RunsStamp``: the database moves it with any change of a run's column
    read here), merged with the kept ones: the same rows in the same order as a full read, which it does on any doubt
    (another database or challenge, the triggers missing). Without ``reuse`` (the default: web processes, pages,
    exports) a full read that neither takes nor keeps anything. The submissions and their stamps are read first, then
    the runs: a run changed in between is read with the older stamp, and read again next time (read the other way, a
    run changed in between would be kept with the new stamp, its change missed for good)."""
    if submission_ids is not None:
        subs, _, _ = _submissions_read(challenge, submission_ids)
        return ChallengeRuns(_runs_read(challenge, submission_ids), subs)
    global snapshot_last_read
    connection = connections[Submission.objects.db]
    key = (connection.alias, str(connection.settings_dict.get("NAME")), challenge.pk, challenge.created.isoformat())
    kept = _KEPT_READS.get(key) if reuse and run_stamps_in_force(connection) else None
    subs, stamps, raw = _submissions_read(challenge, None, None if kept is None else kept.rows)
    changed = None if kept is None else {sid for sid, stamp in stamps.items() if kept.stamps.get(sid) != stamp}
    if changed is None or len(changed) > SNAPSHOT_MAX_CHANGED:
        read, changed = _runs_read(challenge), None
        by_submission = {sid: list(group) for sid, group in groupby(read, key=itemgetter(0))}
        runs = read
        if not stamps.keys() >= by_submission.keys():  # a submission created after its stamp was read: not yet
            by_submission = {sid: group for sid, group in by_submission.items() if sid in stamps}
            runs = _flat(by_submission)
        # A submission whose stamp was read but none of its runs (the runs are read by the challenge's submissions at
        # that time: one moved to another challenge in between, and back after, unchanged) is kept without its stamp,
        # its runs read by id at the next update; its runs are created with it, so that is one update's few at most.
        stamps = {sid: stamp for sid, stamp in stamps.items() if sid in by_submission}
    else:
        fresh = {
            sid: list(group)
            for sid, group in groupby(_runs_read(challenge, changed) if changed else [], key=itemgetter(0))
        }
        by_submission = {}
        for sid in sorted(stamps):
            group = fresh.get(sid) if sid in changed else kept.runs.get(sid)  # type: ignore[union-attr]
            if group:
                by_submission[sid] = group
        runs = _flat(by_submission)
    memos = {} if changed is None else kept.memos  # type: ignore[union-attr]
    snapshot_last_read = ("full", None) if changed is None else ("incremental", changed)
    if not reuse:  # a full read, nothing kept: a web process must not hold a board's runs
        return ChallengeRuns(runs, subs, _groups=by_submission, memos=memos)
    with _KEPT_LOCK:  # a web process's threads read boards too
        _KEPT_READS.pop(key, None)
        while len(_KEPT_READS) >= SNAPSHOT_KEPT_CHALLENGES:
            del _KEPT_READS[next(iter(_KEPT_READS))]  # the oldest read
        _KEPT_READS[key] = _KeptRead(stamps, by_submission, raw, memos)
    return ChallengeRuns(runs, subs, _groups=by_submission, memos=memos, kept=True)


def _flat(by_submission: dict[int, list[tuple]]) -> list[tuple]:
    """The runs of ``by_submission`` (by submission id) in one list."""
    return [row for group in by_submission.values() for row in group]


def submission_read_by_reports(submission: Submission) -> bool:
    """Whether some board can read ``submission`` (:meth:`ChallengeRuns.read_by_reports`: a run scored on some
    part)."""
    return submissions_read_by_reports(challenge=submission.challenge, submission_ids={submission.pk})


def submissions_read_by_reports(*, challenge: Challenge, submission_ids: set[int]) -> bool:
    """Whether some board can read one of ``submission_ids`` (:meth:`ChallengeRuns.read_by_reports`)."""
    if not submission_ids:
        return False
    snapshot = challenge_runs(challenge=challenge, submission_ids=submission_ids)
    return bool(snapshot.read_by_reports().submissions)


def moderation_in_force():
    """For ``annotate``: a submission's own moderation, else its team's on its challenge (None: none)."""
    team = TeamModeration.objects.filter(challenge_id=OuterRef("challenge_id"), team_id=OuterRef("team_id"))
    return Coalesce(NullIf(F("moderation"), Value("")), Subquery(team.values("state")[:1]))


def submissions_moderated(*, challenge: Challenge) -> QuerySet[Submission]:
    """The challenge's submissions a host moderated, themselves or as their team's: on no board."""
    teams = TeamModeration.objects.filter(challenge=challenge).values("team_id")
    return Submission.objects.filter(Q(challenge=challenge) & (~Q(moderation="") | Q(team_id__in=teams)))


def submission_moderation(*, submission: Submission) -> dict | None:
    """The moderation in force on ``submission`` (its own, else its team's): ``state``, ``reason``, ``scope``
    (``entry`` or ``team``) and ``moderated_at``; None when it has none."""
    if submission.moderation:
        return {
            "state": submission.moderation,
            "reason": submission.moderation_reason,
            "scope": "entry",
            "moderated_at": submission.moderated_at,
        }
    team = TeamModeration.objects.filter(challenge_id=submission.challenge_id, team_id=submission.team_id).first()
    if team is None:
        return None
    return {"state": team.state, "reason": team.reason, "scope": "team", "moderated_at": team.moderated_at}


#: SQLite's text of a naive UTC datetime (``str(datetime)``), which ``isoformat()`` writes with a "T" and the offset.
_SQLITE_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{6})?")


def stored_datetime_iso(value) -> str:
    """A DateTimeField's raw value (SQLite's UTC text, or PostgreSQL's aware datetime) in ISO 8601, as
    Django's converter and ``isoformat()`` give it: ``2026-11-24T03:58:12.345678+00:00``. SQLite's own form
    (``str(datetime)``: ``YYYY-MM-DD HH:MM:SS[.ffffff]``) is rewritten as text: parsing 20,000 at each update cost
    ~0.1 s (docs/scale.md)."""
    if isinstance(value, str) and _SQLITE_DATETIME.fullmatch(value) and not value.endswith(".000000"):
        return f"{value[:10]}T{value[11:]}+00:00"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:  # SQLite stores UTC without an offset (USE_TZ)
        value = value.replace(tzinfo=UTC)
    return value.isoformat()


def runs_for_challenge(*, challenge: Challenge, user) -> QuerySet[Run]:
    """The runs of the challenge's submissions ``user`` may open (:func:`submissions_readable`; public columns), for
    exports (reports read :func:`challenge_runs`); moderated entries, on no board, are left out."""
    return (
        Run.objects.filter(submission__in=submissions_readable(user=user, challenge=challenge).values("pk"))
        .exclude(submission__status=SubmissionStatus.CANCELLED)
        .exclude(submission__in=submissions_moderated(challenge=challenge))
        .select_related("submission", "submission__team")
        .order_by("submission_id", "index")
    )


def suite_list_visible(*, user) -> QuerySet[Suite]:
    """Suites every challenge of which the user may see."""
    hidden = Challenge.objects.exclude(pk__in=challenge_list_visible(user=user).values("pk"))
    return Suite.objects.exclude(challenges__in=hidden)


#: The stored report of each board.
REPORT_MODELS = {Board.PUBLIC: Report, Board.PRIVATE: PrivateReport}


def report_stored_meta(*, challenge: Challenge, board: str) -> Report | PrivateReport | None:
    """The board's stored report without its ``data`` (megabytes of JSON on a board of thousands): its id and
    ``computed_at`` say which version it is; None before the first computation."""
    return REPORT_MODELS[Board(board)].objects.filter(challenge=challenge).defer("data").first()


def submission_ids_open_to_all(*, challenge: Challenge, ids) -> set[int]:
    """Those of ``ids`` every reader may open (:func:`submissions_readable` of an anonymous reader): a board links
    them, the same for every viewer (the page is cached across them)."""
    return set(
        submissions_readable(user=None, challenge=challenge).filter(pk__in=list(ids)).values_list("pk", flat=True)
    )


def report_stored_ranks(*, challenge: Challenge, board: str = Board.PUBLIC) -> dict[int, str]:
    """Each ranked entry's rank as the stored report of ``board`` publishes it (``rank_display``: "=3" when tied).

    Read from the stored report as it is (never recomputed here), so the rank shown next to a submission is the
    one its board shows; submissions not on the board (older versions, unscored) are absent.
    """
    data = REPORT_MODELS[Board(board)].objects.filter(challenge=challenge).values_list("data", flat=True).first()
    table = (data or {}).get(ROW_TABLE)
    if table is not None:  # stored in pieces: the ranks are columns of the skeleton, no row is read
        columns = table["columns"]
        displays = columns.get("rank_display") or [None] * len(table["ids"])
        return {
            sid: display or str(rank)
            for sid, rank, display in zip(table["ids"], columns["rank"], displays)
            if rank is not None
        }
    return {
        row["submission_id"]: row.get("rank_display") or str(row["rank"])
        for row in (data or {}).get("entries", ())
        if row.get("rank") is not None
    }


def user_team_in_challenge(*, user, challenge: Challenge) -> Team | None:
    """The team ``user`` takes part in ``challenge`` with (one per person, as on Kaggle): that of their latest
    submission there that is not cancelled; None before their first."""
    latest = (
        Submission.objects.filter(challenge=challenge, team__in=user_teams(user=user))
        .exclude(status=SubmissionStatus.CANCELLED)
        .select_related("team")
        .order_by("-created", "-pk")
        .first()
    )
    return latest.team if latest is not None else None
