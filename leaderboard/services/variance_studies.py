"""Variance studies: how much each source of randomness moves a recipe entry's score.

A host picks a recipe entry and k. The study runs the recipe through the same machinery as
its leaderboard runs (run i's seed record from ``evaluation.seeds.seed_record``, its split
from ``run_split``, the sandboxed ``execute_recipe_run``), in blocks: for each studied
source, k runs in which only that source's seed varies (the others held at run 0's); block
``"all"``, every studied source varying and, when the recipe declares a search space,
hyperparameters searched anew in every run (Bouthillier et al.'s IdealEst); block
``"all_fixed_hpo"``, everything but the search (FixHOptEst). The result (each source's
standard deviation with its interval and its share of the total, and how much FixHOptEst
underestimates IdealEst) is ``evaluation.stats.variance_study.variance_study`` of the runs.
Runs are executed by the worker (``worker.study_execution``); this module plans, stores
and reads.

A study respects the boards (issue 21): the stored result is on all hidden rows, and only the
challenge's hosts read it before the reveal. Anyone else reads the study recomputed from what
the public board shows (``variance_study_shown``): each run's score on the public part, under
the challenge's feedback (rounded per run; withheld under the Ladder, which releases one
score per submission and none per run).
"""

from __future__ import annotations

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evaluation.report.values import finite
from evaluation.seeds import SOURCES, seed_record
from evaluation.stats.variance_study import JOINT, JOINT_FIXED_HPO, variance_study

from ..choices import RUN_ENDED, Feedback, RunQueue, RunStatus, SubmissionKind, SubmissionStatus
from ..models import StudyRun, Submission, VarianceStudy
from ..selectors import user_is_host
from .boards import board_scope
from .dispatch import EXECUTE_STUDY_RUN, enqueue_on_commit
from .errors import NotAllowed, ServiceError
from .submissions import recipe_inspect

#: The Celery task that executes one study run (see ``tasks.variance_studies``).
MAX_STUDY_RUNS = 5_000


def _study_seed(challenge_seed: int, submission_id: int) -> int:
    """The study's master seed: its own, so the joint block is not the leaderboard's runs again."""
    return int(np.random.SeedSequence([int(challenge_seed), int(submission_id), 0x5EED]).generate_state(1)[0])


def variance_study_plan(*, master_seed: int, sources: list[str], k_runs: int, search: bool) -> list[dict]:
    """Every run of a study: its block, index, seed record and whether it searches hyperparameters.

    Source s's run i varies only s: ``seed_record(master_seed, i, {s})`` holds every other
    source at run 0's seed. The joint blocks vary all studied sources; ``"all"`` searches
    hyperparameters when ``search``, and then ``"all_fixed_hpo"`` is the same runs without.
    """
    plan = []
    studied = [s for s in SOURCES if s in sources]
    for source in studied:
        for i in range(k_runs):
            plan.append(
                {
                    "block": source,
                    "index": i,
                    "seeds": seed_record(master_seed, i, {source}),
                    "search": source == "hpo" and search,
                }
            )
    for i in range(k_runs):
        plan.append({"block": JOINT, "index": i, "seeds": seed_record(master_seed, i, set(studied)), "search": search})
        if search:
            plan.append(
                {
                    "block": JOINT_FIXED_HPO,
                    "index": i,
                    "seeds": seed_record(master_seed, i, set(studied) - {"hpo"}),
                    "search": False,
                }
            )
    return plan


def variance_study_allowed(*, challenge, user: User) -> None:
    """Only the challenge's hosts start a study: asked before the submission is looked up, so a contestant reads
    the same refusal for an id that is none of the challenge's submissions and for a hidden one."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can run a variance study.")


def variance_study_candidates(*, challenge):
    """The entries a host may study (the form's choices and :func:`variance_study_create`'s rule): recipe entries with
    their recipe, not cancelled. A cancelled entry was withdrawn by its team, and the form offered it all the same."""
    return (
        challenge.submissions.filter(kind=SubmissionKind.RECIPE)
        .exclude(recipe_file="")
        .exclude(status=SubmissionStatus.CANCELLED)
    )


def _check_study(submission: Submission, user: User, k_runs: int, sources) -> tuple[list[str], bool]:
    variance_study_allowed(challenge=submission.challenge, user=user)
    if not variance_study_candidates(challenge=submission.challenge).filter(pk=submission.pk).exists():
        if submission.status == SubmissionStatus.CANCELLED:
            raise ServiceError(
                "This entry was cancelled by its team: a variance study reruns entries that stand.", field="submission"
            )
        raise ServiceError("A variance study reruns a training recipe: choose a recipe entry.", field="submission")
    if isinstance(k_runs, bool) or not isinstance(k_runs, int) or not 2 <= k_runs <= 100:
        raise ServiceError("k_runs must be an integer from 2 to 100.", field="k_runs")
    with submission.recipe_file.open("rb") as handle:
        search = recipe_inspect("recipe.py", handle.read().decode("utf-8")).search_space is not None
    if sources is None:
        sources = [s for s in SOURCES if s != "hpo" or search]
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown or not sources:
        raise ServiceError(
            f"sources must be some of {', '.join(SOURCES)} (got {', '.join(unknown) or 'none'}).", field="sources"
        )
    if "hpo" in sources and not search:
        raise ServiceError(
            "The recipe declares no SEARCH_SPACE, so its hyperparameter search cannot vary.", field="sources"
        )
    return [s for s in SOURCES if s in sources], search


def variance_study_create(
    *, submission: Submission, user: User, k_runs: int = 5, sources: list[str] | None = None
) -> VarianceStudy:
    """Plan a study of a recipe entry, store its runs and queue them (cpu or gpu, as the entry's runs).

    Raises
    ------
    NotAllowed
        Unless the user hosts the entry's challenge.
    ServiceError
        For an entry that is not a recipe, k outside 2..100, unknown sources, or a
        hyperparameter source for a recipe without a search space.
    """
    sources, search = _check_study(submission, user, k_runs, sources)
    challenge = submission.challenge
    master = _study_seed(challenge.master_seed, submission.pk)
    plan = variance_study_plan(master_seed=master, sources=sources, k_runs=k_runs, search=search)
    if len(plan) > MAX_STUDY_RUNS:
        raise ServiceError(f"{len(plan)} runs; a study may have {MAX_STUDY_RUNS}.", field="k_runs")
    queue = submission.runs.values_list("queue", flat=True).first() or RunQueue.CPU  # stored with the entry's runs
    with transaction.atomic():
        study = VarianceStudy.objects.create(
            challenge=challenge,
            submission=submission,
            created_by=user,
            k_runs=k_runs,
            sources=sources,
            master_seed=master,
            searches_hyperparameters=search,
        )
        runs = StudyRun.objects.bulk_create(
            [
                StudyRun(
                    study=study,
                    block=p["block"],
                    index=p["index"],
                    seeds=p["seeds"],
                    queue=queue,
                    search_hyperparameters=p["search"],
                )
                for p in plan
            ]
        )
        for run in runs:
            enqueue_on_commit(EXECUTE_STUDY_RUN, run.pk, queue=queue)  # refused by the broker: the janitor resends
    return study


def study_run_fail(*, study_run_id: int, reason: str) -> None:
    """Give up on a study run (the platform's fault); the study's status follows."""
    with transaction.atomic():
        run = StudyRun.objects.select_for_update().get(pk=study_run_id)
        if run.status in RUN_ENDED:
            return
        run.status, run.error_message, run.finished_at = RunStatus.FAILED, f"platform error: {reason}", timezone.now()
        run.save(update_fields=["status", "error_message", "finished_at"])
    variance_study_refresh(study_id=run.study_id)


def variance_study_result(*, study: VarianceStudy, field: str = "test_score", shown=None) -> dict:
    """The study's statistics from its succeeded runs (blocks with fewer than 2 are left out).

    ``field`` is the run score read (``test_score``: all hidden rows; ``public_score``: the
    public part) and ``shown`` what is applied to each (e.g. the board's rounding).
    """
    scores: dict[str, list[float]] = {}
    for block, score in study.runs.filter(status=RunStatus.SUCCEEDED, **{f"{field}__isnull": False}).values_list(
        "block", field
    ):
        scores.setdefault(block, []).append(score if shown is None else shown(score))
    order = [*SOURCES, JOINT, JOINT_FIXED_HPO]
    usable = {block: scores[block] for block in order if len(scores.get(block, [])) >= 2}
    if JOINT not in usable:
        return {"available": False, "note": "the joint block needs at least 2 succeeded runs"}
    r = variance_study(usable, confidence_level=1 - study.challenge.alpha)
    rows = [
        {
            "source": s,
            "runs": int(k),
            "sd": finite(sd),
            "low": finite(lo),
            "high": finite(hi),
            "share": finite(sh),
            "share_low": finite(sl),
            "share_high": finite(su),
        }
        for s, k, sd, lo, hi, sh, sl, su in zip(
            r.sources, r.runs, r.sd, r.sd_low, r.sd_high, r.share, r.share_low, r.share_high
        )
    ]
    fixed = (
        None
        if r.fixed_hpo_ratio is None or not np.isfinite(r.fixed_hpo_ratio)
        else {
            "ratio": r.fixed_hpo_ratio,
            "low": finite(r.fixed_hpo_low),
            "high": finite(r.fixed_hpo_high),
            "underestimate": 1 - r.fixed_hpo_ratio,
        }
    )
    return {
        "available": True,
        "confidence": r.confidence_level,
        "sources": rows,
        "total": {"runs": len(usable[JOINT]), "sd": r.total_sd, "low": r.total_low, "high": r.total_high},
        "fixed_hpo": fixed,
        "left_out": sorted(set(scores) - set(usable)),
    }


def variance_study_refresh(*, study_id: int) -> VarianceStudy:
    """Derive the study's status from its runs; when all have ended, compute and store the result."""
    with transaction.atomic():
        study = VarianceStudy.objects.select_for_update().select_related("challenge").get(pk=study_id)
        statuses = list(study.runs.values_list("status", flat=True))
        if statuses and all(s in RUN_ENDED for s in statuses):
            study.result = variance_study_result(study=study)
            study.status = VarianceStudy.Status.DONE if study.result["available"] else VarianceStudy.Status.FAILED
            study.finished_at = study.finished_at or timezone.now()
        elif any(s != RunStatus.QUEUED for s in statuses):
            study.status = VarianceStudy.Status.RUNNING
        study.save(update_fields=["status", "result", "finished_at"])
    return study


LADDER_WITHHELD = (
    "The challenge's feedback is the Ladder, which releases one score per submission and none per "
    "run: a study's figures would show more, so they are withheld until the private board is revealed."
)


def variance_study_shown(*, study: VarianceStudy, user) -> dict:
    """The study's result as ``user`` may read it: ``{"result", "scores", "result_withheld"}``.

    The challenge's hosts and, after the reveal, everyone read the stored result (all hidden
    rows, exact). Before the reveal anyone else reads it recomputed from the public board:
    the public part's scores, rounded as the board rounds them; under the Ladder the result
    is withheld (``result`` None) and ``result_withheld`` says why. Who sees what is
    ``services.boards.board_scope``'s rule, not restated here.
    """
    stored = study.result or None
    scope = board_scope(challenge=study.challenge, user=user)
    if scope.is_host or (scope.has_private and scope.revealed):
        return {"result": stored, "scores": "all hidden rows", "result_withheld": None}
    how = "public part" if scope.has_private else "all hidden rows"
    if scope.feedback == Feedback.LADDER:
        return {"result": None, "scores": how, "result_withheld": LADDER_WITHHELD}
    if scope.feedback == Feedback.ROUNDED:
        how += f", rounded to {study.challenge.feedback_digits} digits"
    if stored is None:
        return {"result": None, "scores": how, "result_withheld": None}
    field = "public_score" if scope.has_private else "test_score"
    return {
        "result": variance_study_result(study=study, field=field, shown=scope.public),
        "scores": how,
        "result_withheld": None,
    }
