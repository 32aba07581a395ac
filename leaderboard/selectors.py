"""Reads: which challenges, submissions and runs a user may see, and the data they need."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from .choices import SubmissionStatus, Visibility
from .models import Challenge, Dataset, Run, Submission, Team


def challenge_list_visible(*, user) -> QuerySet[Challenge]:
    """Public challenges, plus private ones the user hosts."""
    qs = Challenge.objects.all()
    if user is not None and user.is_authenticated:
        if user.is_superuser:
            return qs
        return qs.filter(Q(visibility=Visibility.PUBLIC) | Q(hosts=user)).distinct()
    return qs.filter(visibility=Visibility.PUBLIC)


def user_is_host(*, user, challenge: Challenge) -> bool:
    if user is None or not user.is_authenticated:
        return False
    return user.is_superuser or challenge.hosts.filter(pk=user.pk).exists()


def user_teams(*, user) -> QuerySet[Team]:
    if user is None or not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(membership__user=user)


def submission_can_see_details(*, user, submission: Submission) -> bool:
    """Logs, files and errors: the submitting team and the challenge's hosts only."""
    if user is None or not user.is_authenticated:
        return False
    if user_is_host(user=user, challenge=submission.challenge):
        return True
    return submission.team.membership_set.filter(user=user).exists()


def submission_list_for(*, user, challenge: Challenge | None = None) -> QuerySet[Submission]:
    """Submissions whose details the user may see: their teams', and all of the challenges they host."""
    qs = Submission.objects.select_related("challenge", "team", "submitted_by")
    if challenge is not None:
        qs = qs.filter(challenge=challenge)
    if user is None or not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    return qs.filter(Q(team__membership__user=user) | Q(challenge__hosts=user)).distinct()


def submission_quota_usage(*, challenge: Challenge, team: Team | None = None, user=None) -> tuple[int, int]:
    """(submissions in the last 24 h, in total) that count toward the team's (or the user's) quota."""
    counted = Submission.objects.filter(challenge=challenge, counts_toward_quota=True)
    counted = counted.filter(team=team) if team is not None else counted.filter(submitted_by=user)
    since = timezone.now() - timezone.timedelta(days=1)
    agg = counted.aggregate(total=Count("id"), today=Count("id", filter=Q(created__gte=since)))
    return agg["today"], agg["total"]


def runs_for_challenge(*, challenge: Challenge) -> QuerySet[Run]:
    """Every run of the challenge's submissions (public columns), for exports and reports."""
    return (Run.objects.filter(submission__challenge=challenge)
            .exclude(submission__status=SubmissionStatus.CANCELLED)
            .select_related("submission", "submission__team")
            .order_by("submission_id", "index"))


@functools.lru_cache(maxsize=32)
def _read_csv(path: str, version: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def dataset_frame(*, dataset: Dataset, part: str) -> pd.DataFrame:
    """One stored part of a dataset (``train``, ``test_inputs`` or ``hidden_labels``) as strings."""
    field = {"train": dataset.train_file, "test_inputs": dataset.test_inputs_file,
             "hidden_labels": dataset.hidden_labels_file}[part]
    if not field:
        return pd.DataFrame()
    return _read_csv(field.path, dataset.version).copy()


def dataset_test_ids(*, dataset: Dataset) -> list[str]:
    frame = dataset_frame(dataset=dataset, part="test_inputs")
    return frame[dataset.id_column].tolist() if len(frame) else []


def dataset_hidden_labels(*, dataset: Dataset) -> np.ndarray:
    """Hidden test labels in test-input order. Callers: scoring only; never serialised."""
    ids = dataset_test_ids(dataset=dataset)
    hidden = dataset_frame(dataset=dataset, part="hidden_labels").set_index(dataset.id_column)
    labels = hidden.loc[ids, dataset.label_column].to_numpy()
    if dataset.task == "regression":
        return labels.astype(float)
    return labels.astype(str)
