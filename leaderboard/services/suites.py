"""Benchmark suites: one board across several challenges (tasks).

An entry of a suite is a (team, method name) pair scored on every task; its runs on each
task are its leaderboard runs there (the version of the entry that task's public board shows:
``services.entries.public_board_ids``, the team's selected one or the latest, by ``board_version``). Scores are
put on one scale (min-max per task by default, losses turned around) and aggregated with
``evaluation.stats.suites``: the interquartile mean with a stratified-bootstrap interval,
performance profiles, the probability of improvement (Agarwal et al. 2021), Friedman's
test with Nemenyi's critical difference (Demšar 2006) and the Bayesian signed-rank test
with a region of practical equivalence (Benavoli et al. 2017). Computed on request: a
suite board is small (entries x tasks).
"""

from __future__ import annotations

import hashlib
from itertools import combinations

import numpy as np
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils.text import slugify

from evaluation.report import derive_seed
from evaluation.stats import suites as su

from ..choices import Feedback, RunStatus, SubmissionKind, TestRows
from ..models import Challenge, Run, Submission, Suite
from ..selectors import submissions_readable
from .boards import board_entry_score, board_scope, ladder_margin
from .entries import public_board_ids
from .errors import ServiceError

PROFILE_TAUS = 21
SUITE_RESAMPLES = 2_000


def suite_create(
    *,
    created_by: User,
    title: str,
    challenges: list[Challenge],
    slug: str | None = None,
    description: str = "",
    normalization: str = Suite.Normalization.MINMAX,
    rope: float = 0.01,
) -> Suite:
    """A suite of at least two challenges."""
    slug = slugify(slug or title)[:60]
    if not slug:
        raise ServiceError("Give the suite a title or a slug.", field="title")
    if Suite.objects.filter(slug=slug).exists():
        raise ServiceError(f"A suite with the slug {slug!r} exists already.", field="slug")
    if len({c.pk for c in challenges}) < 2:
        raise ServiceError("A suite groups at least two challenges.", field="challenges")
    if normalization not in Suite.Normalization.values:
        raise ServiceError(
            f"normalization must be one of {', '.join(Suite.Normalization.values)}.", field="normalization"
        )
    if not 0 <= rope <= 0.5:
        raise ServiceError("rope must be between 0 and 0.5 (on the normalised scale).", field="rope")
    with transaction.atomic():
        suite = Suite.objects.create(
            slug=slug,
            title=title,
            description=description,
            created_by=created_by,
            normalization=normalization,
            rope=rope,
        )
        suite.challenges.set(challenges)
    return suite


def _shown_scores(task: Challenge) -> tuple[str, dict[int, list[float]]]:
    """What the task's public board shows, per submission: (how, {submission id: run scores}).

    Until the private board is revealed a suite reads only what a reader of the task's board
    reads: scores on the public part of the hidden rows, passed through the task's feedback
    (rounded per run, or the Ladder's one release per submission). After the reveal every
    hidden row is public and the exact scores on all of them are used (none for a run of a phase that scores the
    public rows only: its test score is its public rows').
    """
    scope = board_scope(challenge=task, user=AnonymousUser())
    revealed = scope.has_private and scope.revealed
    field = "test_score" if revealed or not scope.has_private else "public_score"
    # what every reader may open (selectors.submissions_readable): scored or on the stored board, neither
    # cancelled nor moderated by a host; a newer version still running, on no board, is not read (nor linked);
    # of an entry's versions, the one the task's public board shows (its team's selected one under board_version
    # "selected", else the latest), not merely the latest
    readable = submissions_readable(user=None, challenge=task).filter(pk__in=public_board_ids(challenge=task))
    rows = Run.objects.filter(
        submission__in=readable.values("pk"), status=RunStatus.SUCCEEDED, **{f"{field}__isnull": False}
    )
    if revealed:  # a phase of the public rows only has its public rows' score as its test score: none on all rows
        rows = rows.exclude(submission__phase__test_rows=TestRows.PUBLIC)
    rows = rows.order_by("submission_id", "index").values_list("submission_id", field)
    shown: dict[int, list[float]] = {}
    part = "public part" if scope.has_private else "all hidden rows"  # a task without a private part has no public one
    if not revealed and scope.feedback == Feedback.LADDER:
        for submission_id in {sid for sid, _ in rows}:
            release = scope.ladder.get(submission_id)
            if release is not None:
                shown[submission_id] = [release]
        return f"{part}, Ladder releases (η = {ladder_margin(task).value:g})", shown
    for submission_id, score in rows:
        shown.setdefault(submission_id, []).append(score if revealed else scope.public(score))
    # A prediction entry's files are one score, pooled as its board pools them (a rounded board the shown files'
    # scores, evaluation.boards.shown_entries): read as runs, RMSE files of 1 and 3 averaged 2.0 where the board
    # pools them to √5 and ranks the entry second.
    predictions = set(readable.filter(kind=SubmissionKind.PREDICTIONS).values_list("pk", flat=True))
    for submission_id in predictions & set(shown):
        files = shown[submission_id]
        if len(files) > 1:
            shown[submission_id] = [board_entry_score(files, SubmissionKind.PREDICTIONS, scope.pool_files)]
    if revealed:
        return "all hidden rows (private board revealed)", shown
    return part + (f", rounded to {task.feedback_digits} digits" if scope.feedback == Feedback.ROUNDED else ""), shown


def suite_runs(*, suite: Suite) -> tuple[list[Challenge], list[dict], list[list[np.ndarray]], list[str], list[dict]]:
    """(tasks, entries, runs[e][t], read[t], left_out): the entries scored on every task, their run scores as the
    boards show them, which scores were read on each task (see :func:`_shown_scores`), and the entries left out
    for want of a score on some task, with the tasks they miss."""
    tasks = list(suite.challenges.order_by("title", "slug"))
    scores: dict[int, list[float]] = {}
    read = []
    for task in tasks:
        how, shown = _shown_scores(task)
        read.append(how)
        scores.update(shown)
    rows = (
        Submission.objects.filter(pk__in=list(scores))
        .order_by("created", "pk")
        .values_list("challenge_id", "team__name", "method_name", "pk")
    )
    latest: dict[tuple, dict[int, int]] = {}
    for challenge_id, team, method, submission_id in rows:
        latest.setdefault((team, method), {})[challenge_id] = submission_id  # later submissions win
    entries, runs, left_out = [], [], []
    for (team, method), by_task in sorted(latest.items()):
        ids = [by_task.get(t.pk) for t in tasks]
        missing = [t.slug for t, i in zip(tasks, ids) if i is None or not scores[i]]
        if missing:  # never scored on fewer tasks: left out, and said so
            left_out.append({"team": team, "method_name": method, "missing": missing})
        else:
            entries.append(
                {
                    "team": team,
                    "method_name": method,
                    "submissions": {t.slug: i for t, i in zip(tasks, ids)},
                    "runs": {t.slug: len(scores[i]) for t, i in zip(tasks, ids)},
                }
            )
            runs.append([np.asarray(scores[i], dtype=float) for i in ids])
    return tasks, entries, runs, read, left_out


def _entry_key(entry: dict) -> int:
    """A stable 63-bit identity of a suite entry (team, method name): seeds its resamples."""
    digest = hashlib.sha256(f"{entry['team']}\x00{entry['method_name']}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _interval(ci, e: int) -> dict:
    return {"estimate": float(ci.estimate[e]), "low": float(ci.low[e]), "high": float(ci.high[e])}


def suite_board(*, suite: Suite) -> dict:
    """The suite's board as JSON-ready data (see the module docstring)."""
    tasks, entries, runs, read, left_out = suite_runs(suite=suite)
    out = {
        "suite": suite.slug,
        "title": suite.title,
        "normalization": suite.normalization,
        "rope": suite.rope,
        "tasks": [
            {
                "slug": t.slug,
                "title": t.title,
                "metric": t.metric,
                "higher_is_better": t.higher_is_better,
                "scores": how,
            }
            for t, how in zip(tasks, read)
        ],
        "entries": entries,
        "left_out": left_out,
        "profile": None,
        "probability_of_improvement": None,
        "critical_difference": None,
        "bayesian": [],
        "note": None,
    }
    if not entries:
        out["note"] = "no entry (team and method name) is scored on every task yet"
        return out
    scaled = su.normalize_runs(runs, method=suite.normalization, higher_is_better=[t.higher_is_better for t in tasks])
    seed = derive_seed(suite.master_seed, suite.pk)
    # each entry's resamples on each task seeded by the entry and the task: order-free (issue 23)
    keys = {"keys": [_entry_key(entry) for entry in entries], "task_keys": [t.pk for t in tasks]}
    iqm = su.aggregate_interval(scaled, "iqm", n_resamples=SUITE_RESAMPLES, rng=seed, **keys)
    mean = su.aggregate_interval(scaled, "mean", n_resamples=SUITE_RESAMPLES, rng=seed + 1, **keys)
    for e, entry in enumerate(entries):
        entry["iqm"], entry["mean"] = _interval(iqm, e), _interval(mean, e)
    order = np.argsort(-iqm.estimate, kind="stable")
    out["entries"] = [entries[e] for e in order]
    scaled = [scaled[e] for e in order]
    keys["keys"] = [keys["keys"][e] for e in order]
    pooled = np.concatenate([np.concatenate(entry) for entry in scaled])
    taus = np.linspace(pooled.min(), pooled.max(), PROFILE_TAUS)
    profile = su.performance_profile(scaled, taus, n_resamples=SUITE_RESAMPLES, rng=seed + 2, **keys)
    out["profile"] = {
        "taus": taus.tolist(),
        "estimate": profile.estimate.tolist(),
        "low": profile.low.tolist(),
        "high": profile.high.tolist(),
    }
    if len(entries) >= 2:
        poi = su.probability_of_improvement(scaled, n_resamples=SUITE_RESAMPLES, rng=seed + 3, **keys)
        out["probability_of_improvement"] = {"p": _matrix(poi.p), "low": _matrix(poi.low), "high": _matrix(poi.high)}
    if len(entries) >= 2 and len(tasks) >= 2:
        task_means = np.array([[task.mean() for task in entry] for entry in scaled])
        if len(entries) >= 3:  # Friedman's test needs three; two are the signed-rank test's
            out["critical_difference"] = _critical_difference(task_means, suite)
        out["bayesian"] = [
            _bayesian(task_means, a, b, suite, seed + 4) for a, b in combinations(range(len(entries)), 2)
        ]
    return out


def _matrix(m: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(v) else float(v) for v in row] for row in m]


def _critical_difference(task_means: np.ndarray, suite: Suite) -> dict:
    cd = su.critical_difference(task_means, alpha=0.05)
    return {
        "average_rank": cd.average_rank.tolist(),
        "cd": cd.cd,
        "statistic": cd.statistic,
        "pvalue": cd.pvalue,
        "pairwise_pvalue": _matrix(cd.pairwise_pvalue),
        "cliques": cd.cliques,
        "alpha": cd.alpha,
    }


def _bayesian(task_means: np.ndarray, a: int, b: int, suite: Suite, seed: int) -> dict:
    r = su.bayesian_signed_rank(task_means[a], task_means[b], rope=suite.rope, n_samples=20_000, rng=seed)
    return {"a": a, "b": b, "p_a_better": r.p_a_better, "p_rope": r.p_rope, "p_b_better": r.p_b_better}
