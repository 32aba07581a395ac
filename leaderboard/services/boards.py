"""What a viewer may see of a challenge's scores: the one place that decides.

A challenge with ``public_fraction < 1`` has two boards. Until the hosts reveal the private
board (or a phase with ``auto_reveal`` closes), every number a contestant or reader can read is
computed on the public part of the hidden rows only, and passed through the host's feedback
mode (exact, rounded, or the Ladder of Blum & Hardt 2015); the private board and every private
score are for the hosts. Every read path (leaderboard JSON/CSV, compare, state of the art, runs,
submissions, pages, charts) asks :func:`board_scope` for a :class:`BoardScope` and takes its
numbers through it; the reports are built per board (:func:`board_publish` applies the feedback
to the public board's report once, when it is computed).
"""

from __future__ import annotations

import functools
import math
import secrets
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db.models import F, Q
from django.db.models.functions import Coalesce

from evaluation.boards import (
    ladder,
    ladder_anchor,
    pack_mask,
    public_part,
    publish_rounded,
    publish_shown_sota,
    shown_score,
    shown_submission_score,
    split_with_parts,
    unpack_mask,
)
from evaluation.metrics import get_metric
from evaluation.row_moves import UNBOUNDED_PER_ROW, ladder_margin_for
from evaluation.seeds import seed_record

from ..choices import SUBMISSION_ACTIVE, Board, Feedback, RunStatus, SplitScheme, SubmissionKind, SubmissionStatus
from ..models import Challenge, Dataset, ReportRow, Run, Submission
from ..selectors import board_has_private, private_board_revealed, submissions_moderated, user_is_host
from .dataset_files import dataset_hidden_labels, dataset_train_labels
from .entries import Version, entry_versions, published_version_numbers
from .errors import NotAllowed, ServiceError
from .metrics import challenge_metrics, primary_metric

PRIVATE_HIDDEN = "The private board is visible to the challenge's hosts until they reveal it."


class BoardNotFound(ServiceError):
    """The challenge has no private board (HTTP 404)."""

    status_code = 404


# ------------------------------------------------------------------ the two parts of the hidden rows
def board_fields(challenge: Challenge, board: str) -> tuple[str, str]:
    """The run fields holding ``board``'s (score, per-example outcomes).

    Without a private part every hidden row is public, so the public board reads the run's test
    score and outcomes (equal to its public ones by definition; runs stored before boards existed
    have only those).
    """
    if board == Board.PUBLIC and not board_has_private(challenge):
        return "test_score", "outcomes"
    return f"{board}_score", f"{board}_outcomes"


def board_private_revealed(*, challenge: Challenge, now=None) -> bool:
    """Whether the private board is revealed (:func:`selectors.private_board_revealed`)."""
    return private_board_revealed(challenge=challenge, now=now)


def board_public_mask(*, dataset: Dataset) -> np.ndarray:
    """Which hidden test rows (in test order) are on the public board."""
    return unpack_mask(dataset.public_mask, dataset.n_test)


def board_assign_parts(*, challenge: Challenge) -> None:
    """Cut the hidden rows into the public and private parts (master seed, stratified by class), and store the cut.

    The master seed is public (it gives recipe runs their seeds), so a server-side random salt is
    mixed in: otherwise a contestant could replay the stratified draw and learn, from which rows
    are private, how the hidden labels are grouped.
    """
    dataset = getattr(challenge, "dataset", None)
    if dataset is None or not dataset.n_test:
        return
    mask = None
    if board_has_private(challenge):
        labels = dataset_hidden_labels(dataset=dataset) if dataset.task != "regression" else None
        mask = board_draw_mask(
            n_test=dataset.n_test,
            public_fraction=challenge.public_fraction,
            master_seed=challenge.master_seed,
            labels=labels,
        )
    Dataset.objects.filter(pk=dataset.pk).update(public_mask=mask)
    dataset.public_mask = mask


def board_draw_mask(*, n_test: int, public_fraction: float, master_seed: int, labels=None) -> bytes | None:
    """The packed public mask of ``n_test`` hidden rows (None: every row public); ``labels`` stratify it.

    Pure: the child that prepares a new dataset computes it from the labels it holds (issue 22).
    """
    if not n_test or public_fraction >= 1.0:
        return None
    seed = [master_seed, secrets.randbits(63)]
    return pack_mask(public_part(n_test, public_fraction, seed, stratify=labels))


# ------------------------------------------------------------------ the viewer's scope
@dataclass(frozen=True)
class BoardScope:
    """Which board a viewer reads and how its numbers are shown to them.

    ``feedback`` applies to public numbers; hosts read exact numbers. ``ladder`` holds the
    Ladder's release per submission when the viewer reads Ladder feedback.
    """

    board: str
    is_host: bool
    revealed: bool
    has_private: bool
    feedback: str = Feedback.EXACT
    digits: int = 3
    ladder: dict = field(default_factory=dict)
    pool_files: Callable | None = None  # a prediction entry's files as the board pools them (None: a program's)

    @property
    def sees_private(self) -> bool:
        return self.has_private and (self.is_host or self.revealed)

    def public(self, value: float | None) -> float | None:
        """A public score as this viewer may read it (per run: the Ladder releases none)."""
        if value is None or self.feedback == Feedback.EXACT:
            return value
        if self.feedback == Feedback.ROUNDED:
            return shown_score(value, self.digits)
        return None

    def run_scores(self, run: Run) -> dict:
        """``test_score`` (the score on this viewer's board), ``public_score`` and ``private_score``."""
        public = self.public(run.public_score if self.has_private else run.test_score)
        private = run.private_score if self.sees_private else None
        return {
            "test_score": private if self.board == Board.PRIVATE else public,
            "public_score": public,
            "private_score": private,
        }

    def run_secondary(self, run: Run) -> dict[str, float | None]:
        """The run's secondary metrics on this viewer's board, published as its primary score is
        (:meth:`public`: rounded, none under the Ladder; the private part only to who sees it)."""
        extra = run.extra_scores or {}
        if self.board == Board.PRIVATE:
            return dict(extra.get("private") or {}) if self.sees_private else {}
        scores = extra.get("public" if self.has_private else "test") or {}
        return {name: self.public(value) for name, value in scores.items()}

    def submission_score(self, submission_id: int, runs: list[Run], kind: str = "") -> float | None:
        """The submission's score as shown: its runs' exact scores combined as the report combines them (a
        prediction entry's files pooled: RMSE files of 1 and 3 show √5, as the board does, not 2), then rounded
        as the report rounds it (:func:`evaluation.boards.shown_submission_score`), or the Ladder's release."""
        if self.feedback == Feedback.LADDER and self.board == Board.PUBLIC:
            return self.ladder.get(submission_id)
        pool = self.pool_files if kind == SubmissionKind.PREDICTIONS else None
        if self.board == Board.PRIVATE:
            exact = [run.private_score for run in runs] if self.sees_private else []
            return shown_submission_score(exact, Feedback.EXACT, self.digits, pool)
        exact = [run.public_score if self.has_private else run.test_score for run in runs]
        return shown_submission_score(exact, self.feedback, self.digits, pool)


def board_scope(*, challenge: Challenge, user, board: str | None = None) -> BoardScope:
    """The scope of ``user`` on ``challenge``'s ``board`` (default public).

    Raises
    ------
    ServiceError
        ``board`` is neither ``public`` nor ``private`` (a bad parameter: 400).
    BoardNotFound
        The private board of a challenge that has none.
    NotAllowed
        The private board before the reveal, for anyone but the hosts.
    """
    board = board or Board.PUBLIC
    if board not in Board.values:
        raise ServiceError(f"Unknown board {board!r}; choose public or private.", field="board")
    is_host = user_is_host(user=user, challenge=challenge)
    has_private = board_has_private(challenge)
    revealed = has_private and board_private_revealed(challenge=challenge)
    if board == Board.PRIVATE and not has_private:
        raise BoardNotFound("This challenge has no private board (its public_fraction is 1).", field="board")
    if board == Board.PRIVATE and not (is_host or revealed):
        raise NotAllowed(PRIVATE_HIDDEN)
    feedback = Feedback.EXACT if is_host else challenge.feedback
    releases = board_ladder(challenge=challenge) if feedback == Feedback.LADDER else {}
    return BoardScope(
        board=board,
        is_host=is_host,
        revealed=revealed,
        has_private=has_private,
        feedback=feedback,
        digits=challenge.feedback_digits,
        ladder=releases,
        pool_files=board_pool_files(challenge),
    )


def board_pool_files(challenge: Challenge) -> Callable | None:
    """How a prediction entry's files combine into its score on ``challenge``'s board (None: a scoring program's
    runs, their mean)."""
    return None if challenge.scoring_program else get_metric(challenge.metric).pool_files


def board_submission_secondary(*, scope: BoardScope, submission: Submission, runs: list[Run]) -> list[dict]:
    """The submission's secondary metrics on the viewer's board: ``name``, ``label``, ``higher_is_better`` and
    ``mean`` (``estimate``, ``low``, ``high``). Its row of the board's stored report when the board shows it
    (published: rounded, or withheld under the Ladder); else the mean of its runs as :meth:`BoardScope.public`
    gives them, without an interval."""
    metrics = challenge_metrics(submission.challenge)
    if not metrics:
        return []
    stored = (
        ReportRow.objects.filter(challenge_id=submission.challenge_id, board=scope.board, submission_id=submission.pk)
        .values_list("data", flat=True)
        .first()
    )
    shown = {value["name"]: value for value in (stored or {}).get("secondary", ())}
    scored = [run for run in runs if run.status == RunStatus.SUCCEEDED]
    out = []
    for metric in metrics:
        value = shown.get(metric.name)
        if value is None:
            exact = [(run.extra_scores or {}).get(_board_part(scope), {}).get(metric.name) for run in scored]
            mean = _shown_mean(scope, [x for x in exact if x is not None])
            value = {"mean": {"estimate": mean, "low": None, "high": None}}
        out.append(
            {
                "name": metric.name,
                "label": metric.label,
                "higher_is_better": metric.higher_is_better,
                "mean": {key: value["mean"].get(key) for key in ("estimate", "low", "high")},
            }
        )
    return out


def _board_part(scope: BoardScope) -> str:
    if scope.board == Board.PRIVATE:
        return "private" if scope.sees_private else ""
    return "public" if scope.has_private else "test"


def _shown_mean(scope: BoardScope, exact: list[float]) -> float | None:
    if not exact or (scope.board == Board.PUBLIC and scope.feedback == Feedback.LADDER):
        return None
    return shown_submission_score(
        exact, scope.feedback if scope.board == Board.PUBLIC else Feedback.EXACT, scope.digits
    )


# ------------------------------------------------------------------ the Ladder
@dataclass(frozen=True)
class LadderMargin:
    """The η the Ladder releases and rounds with: the host's, raised to twice the largest move one public row's
    prediction makes to the board's metric (:func:`evaluation.row_moves.largest_row_move`); ``math.inf`` for a metric one row
    moves without bound (MAE, RMSE: each person's first score alone is released)."""

    value: float
    host: float
    metric: str = ""
    rows: int = 0
    resampled: bool = False
    program: bool = False

    @property
    def raised(self) -> bool:
        return self.value > self.host

    @property
    def shown(self) -> float | None:
        """The margin as the report's ``feedback.margin`` publishes it (None: infinite, no JSON number)."""
        return self.value if math.isfinite(self.value) else None

    def note(self) -> str:
        """The board's Ladder note: which η, and why where it is not the host's."""
        if math.isinf(self.value):
            return (LADDER_PROGRAM_NOTE if self.program else LADDER_UNBOUNDED_NOTE).format(metric=self.metric)
        why = (
            f", raised from the host's {self.host:g} to twice the largest move one of the {self.rows} public rows can "
            f"make to {self.metric}{RESAMPLED_NOTE if self.resampled else ''} (a release is rounded to η's grid, so a "
            "file may score up to η/2 past it)"
            if self.raised
            else ""
        )
        return LADDER_NOTE.format(margin=self.value, why=why)


def ladder_margin(challenge: Challenge) -> LadderMargin:
    """The Ladder's η on ``challenge``'s public board: max(host's η, 2 x the largest one-row move), the one place that computes
    it (releases, the board's note, the suites, the host's warning). Where recipe runs are scored on resamples of the
    public rows (:func:`board_recipe_draws`), a row counts as often as a run draws it
    (:func:`evaluation.row_moves.resampled_row_move`). Without public rows to read (a results-only
    challenge: imported models, no rows probed), the host's η. With a scoring program's metric, whose move per row is
    the host's code's (the Ladder is refused with one, ``services.challenges.check_ladder_metric``; a board stored
    before), ``math.inf``: each person's first score alone, as on MAE or RMSE."""
    host = challenge.ladder_margin
    dataset = getattr(challenge, "dataset", None)
    if challenge.results_only or dataset is None or not dataset.n_test:
        return LadderMargin(host, host)
    if challenge.program_primary is not None:  # refused since (services.challenges.check_ladder_metric): stored before
        return LadderMargin(math.inf, host, primary_metric(challenge).label, program=True)
    metric = get_metric(challenge.metric)
    labels = dataset_hidden_labels(dataset=dataset)[board_public_mask(dataset=dataset)]
    if not labels.size:
        return LadderMargin(host, host)
    draws = board_recipe_draws(challenge) if metric.name not in UNBOUNDED_PER_ROW else []
    value = ladder_margin_for(host, metric.name, labels, classes=dataset.classes or None, draws=draws)
    return LadderMargin(value, host, metric.name, int(labels.size), resampled=bool(draws))


def board_recipe_draws(challenge: Challenge) -> list[np.ndarray]:
    """Each recipe run's resample of the public rows, as positions among them (a row drawn c times, c times), drawn as
    the worker draws run i's split (``leaderboard.worker.run_data.run_split``: from its published split seed, within
    classes where stratified); none where no recipe run is scored on a resample (a fixed split, or a challenge that
    neither takes recipes nor holds one)."""
    if challenge.split_scheme != SplitScheme.OUT_OF_BOOTSTRAP:
        return []
    if not challenge.allow_recipes and not challenge.submissions.filter(kind=SubmissionKind.RECIPE).exists():
        return []
    dataset = challenge.dataset
    key = (dataset.pk, dataset.version, bytes(dataset.public_mask or b""), challenge.master_seed, challenge.k_runs)
    stratify = bool(challenge.stratify and dataset.task != "regression")
    return list(_recipe_draws(*key, tuple(challenge.randomize_sources), stratify))


@functools.lru_cache(maxsize=16)
def _recipe_draws(
    dataset_id: int, version: str, mask: bytes, master_seed: int, k_runs: int, sources: tuple, stratify: bool
) -> tuple[np.ndarray, ...]:
    dataset = Dataset.objects.get(pk=dataset_id)
    train = dataset_train_labels(dataset=dataset)
    on_public = board_public_mask(dataset=dataset)
    hidden = np.arange(train.size, train.size + on_public.size)
    labels = np.concatenate([train, dataset_hidden_labels(dataset=dataset).astype(str)]) if stratify else None
    public, parts = hidden[on_public], [hidden[on_public], hidden[~on_public]]
    draws = []
    for index in range(k_runs):
        seed = seed_record(master_seed, index, sources)["split"]
        test = split_with_parts(np.arange(train.size), parts, seed, stratify=labels).test
        draws.append(np.searchsorted(public, test[np.isin(test, public)]))
    return tuple(draws)


def ladder_releases(challenge: Challenge, versions: dict[int, Version]) -> dict[int, float | None]:
    """The Ladder's release after each submission, per *person* in the order their submissions ended (Blum & Hardt
    2015, who release each submission as it is evaluated).

    Releases are keyed by the submitting user (``Submission.submitted_by``) across all their teams, so a
    fresh team does not start a fresh Ladder (issue 21): each person adds at most one η-grid value per
    improvement, whatever the number of teams they make. A submission is released once it has ended: while its
    runs go on its mean moves, and a probe read after its first run could be undone by the next, the best release
    never moving. One cancelled after a run was scored stays in its submitter's sequence (:func:`_ladder_cancelled`):
    taking it out would undo its step. A submission ending joins the end of its submitter's sequence, never its
    middle: in submission order, probes submitted in a row and ending in reverse (recipes that wait) were each
    released against nothing before them, rounded to η, one grid value per probe, and an earlier release moved
    when an earlier submission ended. See docs/integrity.md for the bound. On a results-only challenge every
    imported model is released alone (``[score]_η``): the host who imports them is no contestant probing a board.
    """
    pool = board_pool_files(challenge)
    # A submission a host hid or disqualified is on no board and in no sequence: counted, its score came back as the
    # release of its submitter's next entry, ranked by it (tests/platform/test_leaks_v7.py).
    scores = {
        sid: board_entry_score(version.public[0], version.kind, pool)
        for sid, version in versions.items()
        if not version.moderated
    }
    scores.update(_ladder_cancelled(challenge, exclude=set(versions), pool=pool))
    by_person: dict[tuple, list[int]] = defaultdict(list)
    ended = (
        Submission.objects.filter(pk__in=list(scores))
        .exclude(status__in=SUBMISSION_ACTIVE)
        .order_by(Coalesce("finished_at", "created"), "pk")  # as they ended (stored without an end: as made)
    )
    for sid, person, team in ended.values_list("pk", "submitted_by_id", "team_id"):
        if challenge.results_only:
            # each imported model is its own entry, not a step of the importing host's sequence: one sequence
            # released a model of 0.60 imported after one of 0.90 as 0.90, the other model's score
            by_person[("import", sid)].append(sid)
        else:
            by_person[("user", person) if person is not None else ("team", team)].append(sid)
    out: dict[int, float | None] = {}
    anchor = ladder_anchor(primary_metric(challenge).score_range, higher_is_better=challenge.higher_is_better)
    margin = ladder_margin(challenge).value
    for members in by_person.values():
        releases = ladder(
            [scores[sid] for sid in members],
            margin,
            higher_is_better=challenge.higher_is_better,
            anchor=anchor,
        )
        out.update(zip(members, releases))
    return out


def board_entry_score(scores, kind: str, pool: Callable | None) -> float:
    """A submission's exact score as the board combines its runs: a prediction entry's files pooled (RMSE files of 1
    and 3 score √5, not 2: :meth:`evaluation.metrics.Metric.pool_files`), a program's runs averaged."""
    if kind == SubmissionKind.PREDICTIONS and pool is not None:
        return float(pool(list(scores)))
    return float(np.mean(scores))


def _ladder_cancelled(challenge: Challenge, exclude: set[int], pool: Callable | None = None) -> dict[int, float]:
    """The mean public score of each cancelled submission with a run scored on the public board by its end (its
    Ladder step). A run it left running goes on and stores its score; counted, a bad one undid the step read at the
    cancel (the probe read, then the best release back where it was)."""
    column = board_fields(challenge, Board.PUBLIC)[0]
    by_the_end = Q(finished_at__isnull=True) | Q(submission__finished_at__isnull=True)
    runs = Run.objects.filter(
        by_the_end | Q(finished_at__lte=F("submission__finished_at")),
        submission__challenge=challenge,
        submission__status=SubmissionStatus.CANCELLED,
        status=RunStatus.SUCCEEDED,
        **{f"{column}__isnull": False},
    ).exclude(submission_id__in=exclude)
    runs = runs.exclude(submission__in=submissions_moderated(challenge=challenge).values("pk"))
    scores: dict[int, list[float]] = defaultdict(list)
    kinds: dict[int, str] = {}
    for sid, kind, score in runs.order_by("submission_id", "index").values_list(
        "submission_id", "submission__kind", column
    ):
        scores[sid].append(score)
        kinds[sid] = kind
    return {sid: board_entry_score(values, kinds[sid], pool) for sid, values in scores.items()}


def board_ladder(*, challenge: Challenge) -> dict[int, float | None]:
    return ladder_releases(challenge, entry_versions(challenge=challenge))


# ------------------------------------------------------------------ publishing a board's report
LADDER_NOTE = (
    "Ladder feedback (Blum & Hardt 2015): a submitter's shown score changes only when a new submission "
    "beats their best release, across all their teams, by more than η = {margin:g}{why}; intervals, "
    "comparisons and the adjusted state of the art are not published."
)
RESAMPLED_NOTE = ", counted as often as a recipe run's resample draws it (a run scored alone releases alone)"
LADDER_PROGRAM_NOTE = (
    "Ladder feedback (Blum & Hardt 2015) protects only metrics one row moves by a bounded amount; this board is ranked "
    "by the hosts' scoring program ({metric}), whose move per row the platform cannot bound, so each submitter's first "
    "score alone is released, across all their teams; intervals, comparisons and the adjusted state of the art are "
    "not published."
)
LADDER_UNBOUNDED_NOTE = (
    "Ladder feedback (Blum & Hardt 2015) protects only metrics one row moves by a bounded amount; {metric} is "
    "unbounded per row, so each submitter's first score alone is released, across all their teams; intervals, "
    "comparisons and the adjusted state of the art are not published."
)


def board_publish(
    *, challenge: Challenge, data: dict, board: str, versions: dict[int, Version], public_data: dict | None = None
) -> dict:
    """A board's report as published: versions, feedback (public board), rank changes (private board)."""
    data["board"] = board
    ladder_public = board == Board.PUBLIC and challenge.feedback == Feedback.LADDER
    data["feedback"] = {
        "mode": challenge.feedback if board == Board.PUBLIC else Feedback.EXACT,
        "digits": challenge.feedback_digits,
        "margin": ladder_margin(challenge).shown if ladder_public else challenge.ladder_margin,
    }
    numbers = published_version_numbers(versions)
    for row in data["entries"]:
        row["version"], row["versions"] = numbers.get(row["submission_id"], (1, 1))
    if board == Board.PRIVATE:
        _rank_changes(data, public_data or {"entries": []})
        return data
    if challenge.feedback == Feedback.ROUNDED:
        publish_rounded(data, challenge.feedback_digits, higher_is_better=challenge.higher_is_better)
    elif ladder_public:
        _ladder_report(challenge, data, ladder_releases(challenge, versions))
    return data


def _rank_changes(data: dict, public_data: dict) -> None:
    """Each private row's rank on the public board: that submission's (None when the public board shows another
    version of its entry, or none), as the shake-up (``services.history.shakeup``) reads it."""
    public_rank = {row["submission_id"]: row.get("rank") for row in public_data["entries"]}
    for row in data["entries"]:
        before = public_rank.get(row["submission_id"])
        row["public_rank"] = before
        row["rank_change"] = before - row["rank"] if before is not None and row.get("rank") is not None else None


def _ladder_row(row: dict, shown: float | None, note: str) -> dict:
    return {
        **row,
        "ranking_value": shown,
        "median": None,
        "std": None,
        "groups": "",
        "rank_interval": None,
        "runs_needed_for_decision": None,
        "too_few_runs": False,
        "compared": False,
        "excluded_reason": note,
        "boo_n_curve": [],
        "run_scores": [],
        "mean": {"estimate": shown, "low": None, "high": None, "se": None, "source": "ladder"},
        "boo_n": {"estimate": None, "low": None, "high": None, "n": row["boo_n"].get("n")},
        "group_letters": [],
        "boo_n_unbiased": (  # its numbers withheld, its description (n, estimator, method) kept
            {key: None if isinstance(value, float) else value for key, value in row["boo_n_unbiased"].items()}
            if isinstance(row.get("boo_n_unbiased"), dict)
            else row.get("boo_n_unbiased")
        ),
        # The Ladder releases one number per submission: the secondary metrics publish none.
        "secondary": [
            {
                **value,
                "runs": None,
                "mean": {"estimate": None, "low": None, "high": None, "se": None, "source": "ladder"},
            }
            for value in row.get("secondary", ())
        ],
    }


def _ladder_report(challenge: Challenge, data: dict, releases: dict[int, float | None]) -> None:
    """Replace every published number by the Ladder's release (ranks follow it; ties share a rank)."""
    sign = 1.0 if challenge.higher_is_better else -1.0
    note = ladder_margin(challenge).note()
    rows = {row["submission_id"]: _ladder_row(row, releases.get(row["submission_id"]), note) for row in data["entries"]}

    def key(sid):
        value = rows[sid]["ranking_value"]
        return (-sign * value if value is not None else math.inf, rows[sid]["method_name"], sid)

    for section in data["sections"]:
        order = sorted(section["entries"], key=key)
        rank, previous = 0, object()
        for position, sid in enumerate(order, start=1):
            row = rows[sid]
            if row["ranking_value"] != previous:
                rank, previous = position, row["ranking_value"]
            row["rank"] = rank
        for sid in order:
            row = rows[sid]
            row["tied"] = sum(rows[o]["rank"] == row["rank"] for o in order) > 1
            row["rank_display"] = f"={row['rank']}" if row["tied"] else str(row["rank"])
        section.pop("comparison_table", None)  # no comparison is published: rows or table alike
        section.pop("groups_note", None)  # nor any letter: no note on how the exact board's letters were drawn
        section.update(
            entries=order,
            compared=[],
            comparisons=[],
            inversions=[],  # each names a verdict between two entries
            leader_group=[sid for sid in order if rows[sid]["rank"] == 1],
        )
        publish_shown_sota(section, rows, higher_is_better=challenge.higher_is_better, note=note)
    data["entries"] = [rows[sid] for section in data["sections"] for sid in section["entries"]]
    # No interval, Boo_n or mark is published: no note about them either (a Ladder board ranked by Boo_n read "ranks
    # and verdicts between the two compare different statistics; marked on the rows" and Boo_n's coverage as shown).
    data["settings"] = {**data["settings"], "boo_n_picked_note": None, "boo_n_warning": None, "coverage": []}
