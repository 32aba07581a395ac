"""Data model (DESIGN.md §3): challenges, teams, submissions, runs and cached reports.

Every statistic shown anywhere is recomputable from ``Run`` rows (and their per-example
outcomes), so the report is a cache, never a source of truth.
"""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from evaluation.metrics import METRICS
from evaluation.seeds import SOURCES

from .choices import (
    Correction,
    Device,
    HpoMethod,
    HpoMode,
    RankingStatistic,
    RunStatus,
    SplitScheme,
    SubmissionKind,
    SubmissionStatus,
    Visibility,
)

METRIC_CHOICES = [(name, metric.label) for name, metric in METRICS.items()]


def validate_gamma(value: float) -> None:
    """γ of Bouthillier et al.'s decision rule: P(A>B) must exceed it, so 0.5 < γ < 1."""
    if not 0.5 < value < 1.0:
        raise ValidationError(f"γ must be strictly between 0.5 and 1 (got {value}).")


def default_sources() -> list[str]:
    return list(SOURCES)


class Team(models.Model):
    """A group of users that submits together; every user has a personal team of one."""

    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    is_personal = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique")]


class Challenge(models.Model):
    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    hosts = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="hosted_challenges")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="created_challenges"
    )
    metric = models.CharField(max_length=40, choices=METRIC_CHOICES)
    higher_is_better = models.BooleanField(help_text="Direction of the metric.")
    allow_predictions = models.BooleanField(default=True)
    allow_recipes = models.BooleanField(default=False)

    # Statistics (DESIGN.md §6)
    k_runs = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    boo_n = models.PositiveIntegerField(default=5, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    gamma = models.FloatField(default=0.75, validators=[validate_gamma],
                              help_text="γ of the P(A>B) decision rule, strictly between 0.5 and 1.")
    alpha = models.FloatField(default=0.05, validators=[MinValueValidator(1e-6), MaxValueValidator(0.5)])
    bootstrap_resamples = models.PositiveIntegerField(
        default=2000, validators=[MinValueValidator(100), MaxValueValidator(100_000)]
    )
    ranking_statistic = models.CharField(max_length=10, choices=RankingStatistic.choices, default=RankingStatistic.MEAN)
    correction = models.CharField(max_length=12, choices=Correction.choices, default=Correction.HOLM)

    # Seeds, splits, HPO (DESIGN.md §4)
    master_seed = models.PositiveBigIntegerField(default=0)
    randomize_sources = models.JSONField(default=default_sources, blank=True)
    split_scheme = models.CharField(max_length=10, choices=SplitScheme.choices, default=SplitScheme.OUT_OF_BOOTSTRAP)
    stratify = models.BooleanField(default=True)
    test_fraction = models.FloatField(default=0.5, validators=[MinValueValidator(0.05), MaxValueValidator(0.95)])
    hpo_mode = models.CharField(max_length=10, choices=HpoMode.choices, default=HpoMode.FIXED)
    hpo_method = models.CharField(max_length=12, choices=HpoMethod.choices, default=HpoMethod.RANDOM)
    hpo_budget = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    device = models.CharField(max_length=4, choices=Device.choices, default=Device.CPU)
    run_time_limit_s = models.PositiveIntegerField(default=600, validators=[MinValueValidator(1)])
    run_memory_limit_mb = models.PositiveIntegerField(default=4096, validators=[MinValueValidator(256)])

    # Quotas and dates
    daily_quota = models.PositiveIntegerField(default=5, help_text="Submissions per team per day (0: unlimited).")
    total_quota = models.PositiveIntegerField(default=100, help_text="Submissions per team in total (0: unlimited).")
    opens_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(
                condition=Q(allow_predictions=True) | Q(allow_recipes=True), name="challenge_allows_some_kind",
                violation_error_message="Allow predictions, recipes, or both.",
            ),
            models.CheckConstraint(
                condition=Q(opens_at__isnull=True) | Q(closes_at__isnull=True) | Q(closes_at__gt=models.F("opens_at")),
                name="challenge_closes_after_opening",
                violation_error_message="The closing date must come after the opening date.",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("challenge-detail", kwargs={"slug": self.slug})

    @property
    def metric_info(self):
        return METRICS[self.metric]


def dataset_path(instance: "Dataset", filename: str) -> str:
    return f"challenges/{instance.challenge.slug}/{filename}"


class Dataset(models.Model):
    """A challenge's data: public training rows, public test inputs, hidden test labels.

    ``hidden_labels_file`` is readable by hosts only and never enters a recipe's sandbox.
    For recipe challenges the pool (``train_file``) is what the out-of-bootstrap splits
    draw from; for prediction challenges ``test_inputs_file`` and ``hidden_labels_file``
    hold the scored test set.
    """

    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, related_name="dataset")
    id_column = models.CharField(max_length=100)
    label_column = models.CharField(max_length=100)
    feature_columns = models.JSONField(default=list)
    task = models.CharField(max_length=20)
    classes = models.JSONField(default=list, blank=True)
    original_name = models.CharField(max_length=255, blank=True)
    train_file = models.FileField(upload_to=dataset_path)
    test_inputs_file = models.FileField(upload_to=dataset_path, blank=True)
    hidden_labels_file = models.FileField(upload_to=dataset_path, blank=True)
    n_train = models.PositiveIntegerField(default=0)
    n_test = models.PositiveIntegerField(default=0)
    version = models.CharField(max_length=64, help_text="Hash of the data; runs are scored against one version.")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"dataset of {self.challenge.slug} ({self.n_train} train, {self.n_test} test rows)"


class Submission(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="submissions")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="submissions")
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    kind = models.CharField(max_length=12, choices=SubmissionKind.choices)
    method_name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=SubmissionStatus.choices, default=SubmissionStatus.QUEUED)
    runs_expected = models.PositiveIntegerField(default=1)
    error_message = models.TextField(blank=True)
    # False when the submission failed for the platform's own reasons: quotas skip it.
    counts_toward_quota = models.BooleanField(default=True)
    recipe_file = models.FileField(upload_to="submissions/%Y/%m/", blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["challenge", "team", "created"])]

    def __str__(self) -> str:
        return f"{self.method_name} ({self.team})"

    def get_absolute_url(self) -> str:
        return reverse("submission-detail", kwargs={"pk": self.pk})


class PredictionFile(models.Model):
    """One uploaded predictions file; file i becomes run i."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="prediction_files")
    index = models.PositiveIntegerField()
    file = models.FileField(upload_to="submissions/%Y/%m/")
    original_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["submission", "index"], name="prediction_file_unique_index")]


class Run(models.Model):
    """One training or scoring run of a submission. Written once: unique on (submission, index)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="runs")
    index = models.PositiveIntegerField()
    seeds = models.JSONField(default=dict, blank=True)
    split_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    test_score = models.FloatField(null=True, blank=True)
    valid_score = models.FloatField(null=True, blank=True)
    # Per-example outcomes on the test rows, float32 little-endian bytes (see ``outcomes_array``).
    outcomes = models.BinaryField(null=True, blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    hpo_trials = models.JSONField(default=list, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    device = models.CharField(max_length=60, blank=True)
    fingerprint = models.JSONField(default=dict, blank=True)
    log = models.TextField(blank=True)
    error_message = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["submission_id", "index"]
        constraints = [models.UniqueConstraint(fields=["submission", "index"], name="run_unique_index")]
        indexes = [models.Index(fields=["status", "started_at"])]

    def __str__(self) -> str:
        return f"run {self.index} of submission {self.submission_id}"

    @property
    def outcomes_array(self) -> np.ndarray | None:
        if self.outcomes is None:
            return None
        return np.frombuffer(bytes(self.outcomes), dtype="<f4")

    @staticmethod
    def pack_outcomes(values) -> bytes | None:
        if values is None:
            return None
        return np.asarray(values, dtype="<f4").tobytes()


class Report(models.Model):
    """Cached leaderboard report of a challenge, tagged with the version of its inputs."""

    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, related_name="report")
    inputs_version = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    # Set when runs changed and a recomputation is queued; bursts of run results flip it once.
    recompute_pending = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
