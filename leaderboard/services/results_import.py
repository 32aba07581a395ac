"""Results-only challenges: per-instance results produced elsewhere, imported as prediction entries.

A model run outside varboard (a submission to a public LLM leaderboard, a paper's released
predictions) becomes one prediction entry whose single run holds its per-instance outcomes,
so the report compares pairs instance by instance (exact McNemar for 0/1 outcomes), gives
accuracies Wilson intervals, groups, rank intervals and the adjusted state of the art,
exactly as for prediction files. Each entry carries its provenance (self-reported or
published, with a link). The first import fixes the challenge's instances; later ones must
cover them. Parsing is :mod:`evaluation.imports`; this module stores, all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.imports import FORMATS, ResultsImportError, combine, read_results
from evaluation.imports.formats import MAX_INSTANCES
from evaluation.io.guarded import ChildLimitExceeded, limit_exceeded_message, run_guarded
from evaluation.metrics import METRICS, get_metric

from ..choices import RunQueue, RunStatus, SplitScheme, SubmissionKind, SubmissionStatus, Visibility
from ..limits import upload_child_limits
from ..models import Challenge, EntryProvenance, ResultsImport, Run, Submission, Team, TeamInvitation
from ..selectors import user_is_host
from .challenges import check_direction
from .errors import NotAllowed, ServiceError
from .phases import phase_default
from .reports import report_request

MAX_MODELS_PER_IMPORT = 500


@dataclass(frozen=True)
class ImportFile:
    """One uploaded file and, for per-model formats, the model it belongs to."""

    name: str
    data: bytes | Path  # the file's bytes, or the temporary file a large upload was spooled to (read in the child)
    model: str | None = None


def challenge_create_results_only(
    *,
    created_by: User,
    title: str,
    slug: str | None = None,
    description: str = "",
    metric: str = "accuracy",
    higher_is_better: bool | None = None,
    visibility: str = Visibility.PUBLIC,
) -> Challenge:
    """A challenge that takes no submissions: its entries are imported results, ranked in ``metric``'s direction
    (``higher_is_better`` None; one that contradicts it is refused, as for every challenge)."""
    slug = slugify(slug or title)[:60]
    if not slug:
        raise ServiceError("Give the challenge a title or a slug.", field="title")
    if metric not in METRICS:  # the board reads its label and range: an unknown name made every page showing it 500
        raise ServiceError(f"`metric` must be one of {', '.join(METRICS)} (got {metric!r}).", field="metric")
    higher_is_better = check_direction(get_metric(metric), higher_is_better)
    if Challenge.objects.filter(slug=slug).exists():
        raise ServiceError(f"A challenge with the slug {slug!r} exists already.", field="slug")
    with transaction.atomic():
        challenge = Challenge.objects.create(
            slug=slug,
            title=title,
            description=description,
            created_by=created_by,
            metric=metric,
            higher_is_better=higher_is_better,
            allow_predictions=True,
            allow_recipes=False,
            k_runs=1,
            split_scheme=SplitScheme.FIXED,
            randomize_sources=[],
            visibility=visibility,
        )
        challenge.hosts.add(created_by)
        phase_default(challenge=challenge, daily_quota=0, total_quota=0, closes_at=timezone.now())
    return challenge


def _read_table(files: list[ImportFile], format: str, metric: str | None, instances, known):
    """Every file read and aligned on the instances (``known``: an earlier import's order): in the child."""
    parts = [
        read_results(
            f.data.read_bytes() if isinstance(f.data, Path) else f.data,
            format=format,
            filename=f.name,
            model=f.model,
            metric=metric,
            instances=instances,
        )
        for f in files
    ]
    return combine(parts, instances=known)


def results_import_files(uploads, models: list[str | None]) -> list[ImportFile]:
    """The uploaded files of an import (``read_prediction_uploads``: counted and size-checked), each with its
    model. One spooled to disk stays there: only the child that reads the import opens it (100 files of 20 MB
    were read into the web process at once)."""
    return [ImportFile(u.name, u.path if u.path is not None else u.data, m) for u, m in zip(uploads, models)]


def results_instance_list(data: bytes) -> list[str]:
    """The instance ids of an uploaded list, one per line ending in ``\\n`` (``\\r\\n`` too; blank lines
    skipped), counted before they are split: exactly as many lines as the split makes."""
    lines = data.count(b"\n") + 1
    if lines > MAX_INSTANCES:
        raise ServiceError(
            f"The instance list has {lines:,} lines; an import holds at most {MAX_INSTANCES:,} instances.",
            field="instances",
        )
    return [line.strip() for line in data.decode("utf-8", "replace").split("\n") if line.strip()]


def _parse(challenge: Challenge, files: list[ImportFile], format: str, metric: str | None, instances: list[str] | None):
    """The uploaded files as one models x instances table aligned on the challenge's instances."""
    if format not in FORMATS:
        raise ServiceError(f"`format` must be one of {', '.join(FORMATS)} (got {format!r}).", field="format")
    if not files:
        raise ServiceError("Upload at least one file of results.", field="files")
    earlier = ResultsImport.objects.filter(challenge=challenge).order_by("created").first()
    known = earlier.instance_ids if earlier is not None else None
    try:
        table = run_guarded(  # parsed outside the web process: only the (bounded) table comes back
            _read_table,
            files,
            format,
            metric,
            instances or known,
            known,
            **upload_child_limits(),
        )
    except ResultsImportError as exc:
        raise ServiceError(str(exc), field="files") from None
    except ChildLimitExceeded as exc:
        names = ", ".join(f.name for f in files) if len(files) <= 3 else f"{len(files)} files"
        raise ServiceError(limit_exceeded_message(exc, names, "to read"), field="files") from None
    if len(table.models) > MAX_MODELS_PER_IMPORT:
        raise ServiceError(
            f"{len(table.models)} models in one import; the limit is {MAX_MODELS_PER_IMPORT}.", field="files"
        )
    taken = set(
        Submission.objects.filter(challenge=challenge, method_name__in=table.models).values_list(
            "method_name", flat=True
        )
    )
    if taken:
        raise ServiceError(f"Already on this leaderboard: {', '.join(sorted(taken))}.", field="files")
    return table


def _import_team(team_name: str) -> Team:
    """The team imported entries are shown as: one of their own, without members (an earlier import's is reused).

    A team with members is refused: its members would read, cancel and choose the imported entries as their own
    team's, private challenges' included (a contestant who created a team of the default name got every import).
    So is one with a pending invitation: a member who invited a second account, then left (a cancelled entry keeps
    the team), had the invitee join the imports' team once they were stored.
    """
    name = (team_name or "Imported results")[:100]
    team, _ = Team.objects.get_or_create(name=name)
    if team.membership_set.exists():
        raise ServiceError(
            f"A team named {name!r} exists and has members: imported entries are shown as a team of their own; "
            "choose another `team` name.",
            field="team",
        )
    if TeamInvitation.objects.filter(team=team, status=TeamInvitation.Status.PENDING).exists():
        raise ServiceError(
            f"A team named {name!r} exists and has pending invitations: imported entries are shown as a team of "
            "their own; choose another `team` name.",
            field="team",
        )
    return team


IMPORTS_HOSTS_ONLY = "Only the challenge's hosts can read its imports."


def results_import_list(*, challenge: Challenge, user):
    """The challenge's imports, newest last, for its hosts (``NotAllowed`` otherwise). The log names every model and
    file imported, those a host has since hidden or disqualified too (on neither board): it was listed to anyone
    over the API while the site's import page answered others 403."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed(IMPORTS_HOSTS_ONLY)
    return challenge.results_imports.all()


# long because it validates, then stores the import, the entries, their runs and provenance at once
def results_import_create(
    *,
    challenge: Challenge,
    user: User,
    files: list[ImportFile],
    format: str,
    metric: str | None = None,
    instances: list[str] | None = None,
    team_name: str = "Imported results",
    source: str = EntryProvenance.Source.SELF_REPORTED,
    link: str = "",
    note: str = "",
) -> ResultsImport:
    """Import per-instance results: one scored prediction entry per model, all or nothing.

    Parameters
    ----------
    challenge, user
        A challenge the user hosts, without a dataset of its own (results only).
    files : list of ImportFile
        In ``format`` (``"csv"``: many models in one file; ``"lm-eval-jsonl"`` and
        ``"solved-ids"``: one model per file, named in ``ImportFile.model``).
    metric : str, optional
        The lm-evaluation-harness metric to read (default: the first known one).
    instances : list of str, optional
        Every instance id, for solved-id lists (default: the challenge's, once known).
    team_name, source, link, note
        Who the entries are shown as, and where the results come from.

    Raises
    ------
    NotAllowed
        Unless the user hosts the challenge.
    ServiceError
        If the challenge has a dataset (its entries are scored here), a file is
        malformed (the message names the file, line and field), a model is already on
        the board, or instances are missing.
    """
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can import results.")
    if not challenge.results_only:
        raise ServiceError("This challenge scores its own entries; results are imported into results-only challenges.")
    if source not in EntryProvenance.Source.values:
        raise ServiceError(f"`source` must be one of {', '.join(EntryProvenance.Source.values)}.", field="source")
    table = _parse(challenge, files, format, metric, instances)
    now = timezone.now()
    with transaction.atomic():
        batch = ResultsImport.objects.create(
            challenge=challenge,
            created_by=user,
            format=format,
            original_names=[f.name[:255] for f in files],
            metric=table.metric,
            binary=table.binary,
            model_names=list(table.models),
            instance_ids=list(table.instances),
        )
        team = _import_team(team_name)
        for model, outcomes in zip(table.models, table.outcomes):
            submission = Submission.objects.create(
                challenge=challenge,
                team=team,
                submitted_by=user,
                kind=SubmissionKind.PREDICTIONS,
                method_name=model[:120],
                status=SubmissionStatus.SCORED,
                runs_expected=1,
                counts_toward_quota=False,
                started_at=now,
                finished_at=now,
                description=f"Imported {format} results ({table.metric}).",
            )
            Run.objects.create(
                submission=submission,
                index=0,
                seeds={"imported": batch.pk},
                split_id="imported",
                queue=RunQueue.SCORING,
                status=RunStatus.SUCCEEDED,
                test_score=float(np.mean(outcomes)),
                outcomes=Run.pack_outcomes(outcomes),
                device="imported",
                started_at=now,
                finished_at=now,
            )
            EntryProvenance.objects.create(
                submission=submission, source=source, link=link, note=note[:300], results_import=batch
            )
        report_request(challenge_id=challenge.pk)
    return batch
