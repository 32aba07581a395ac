"""Data model (docs/DESIGN.md §3): challenges, teams, submissions, runs and cached reports.

Every statistic shown anywhere is recomputable from ``Run`` rows (and their per-example
outcomes), so the report is a cache, never a source of truth.
"""

from __future__ import annotations

import io
from contextlib import nullcontext

import numpy as np
import orjson
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connections, models, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evaluation.metrics import METRICS
from evaluation.seeds import SOURCES
from evaluation.stats import check_gamma

from .choices import (
    RUN_ENDED,
    SUBMISSION_ENDED,
    Board,
    BoardVersion,
    Correction,
    Device,
    Feedback,
    HpoMethod,
    HpoMode,
    Moderation,
    ProgramStatus,
    RankingStatistic,
    RegistrationStatus,
    RunQueue,
    RunStatus,
    SplitScheme,
    SubmissionKind,
    SubmissionStatus,
    TestRows,
    Visibility,
)
from .jsoncodec import FastJSONDecoder, FastJSONEncoder
from .report_rows import ROW_TABLE, piece_keys, report_join, row_ids, skeleton_join
from .storage import hidden_labels_storage

METRIC_CHOICES = [(name, metric.label) for name, metric in METRICS.items()]


def validate_gamma(value: float) -> None:
    """γ of Bouthillier et al.'s decision rule: 0.5 < γ < 1, checked by ``evaluation``'s one rule."""
    try:
        check_gamma(value, "γ")
    except ValueError as error:
        raise ValidationError(str(error).replace("`", "")) from None


def validate_dates(opens_at, closes_at) -> None:
    """A phase closes after it opens (either date may be missing)."""
    if opens_at and closes_at and closes_at <= opens_at:
        raise ValidationError({"closes_at": "The closing date must come after the opening date."})


def validate_public_fraction(value: float) -> None:
    """The public part of the hidden test rows: 0 < f <= 1 (1: no private board)."""
    if not 0.0 < value <= 1.0:
        raise ValidationError(f"public_fraction must be greater than 0 and at most 1 (got {value}).")


def window_closed_reason(what: str, opens_at, closes_at, now=None) -> str | None:
    """Why ``what`` ("The challenge", "The final phase") takes no submission at ``now``, or None when open."""
    now = now or timezone.now()
    if opens_at and now < opens_at:
        return f"{what} opens at {opens_at:%Y-%m-%d %H:%M} UTC."
    if closes_at and now >= closes_at:
        return f"{what} closed at {closes_at:%Y-%m-%d %H:%M} UTC."
    return None


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


def scoring_program_path(instance: Challenge, filename: str) -> str:
    return f"challenges/{instance.slug}/scoring/{filename}"


class Challenge(models.Model):
    #: Settings the leaderboard report depends on: the report's cache key, the version of its
    #: inputs and the API's one-query read of a cached report all derive from this one list.
    REPORT_SETTINGS = (
        "metric",
        "higher_is_better",
        "boo_n",
        "gamma",
        "alpha",
        "bootstrap_resamples",
        "ranking_statistic",
        "correction",
        "k_runs",
        "master_seed",
        "public_fraction",
        "final_entries",
        "board_version",
        "feedback",
        "feedback_digits",
        "ladder_margin",
        "secondary_metrics",
        "program_metrics",
    )

    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    hosts = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="hosted_challenges")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="created_challenges"
    )
    metric = models.CharField(max_length=40, choices=METRIC_CHOICES)
    higher_is_better = models.BooleanField(help_text="Direction of the metric.")
    secondary_metrics = models.JSONField(
        default=list,
        blank=True,
        help_text="Names of further built-in metrics shown on the board with their intervals (the primary "
        "metric alone ranks); each fits the dataset and takes the primary metric's kind of predictions.",
    )
    # A host's scoring program (docs/scoring-programs.md): private like the hidden labels, hosts only.
    scoring_program = models.FileField(upload_to=scoring_program_path, storage=hidden_labels_storage, blank=True)
    program_metrics = models.JSONField(
        default=list, blank=True, help_text="The metrics the scoring program declared (ProgramMetric.as_dict())."
    )
    program_status = models.CharField(max_length=10, choices=ProgramStatus.choices, default="", blank=True)
    program_error = models.TextField(blank=True, help_text="Why the scoring program's check failed (hosts only).")
    program_checked_at = models.DateTimeField(null=True, blank=True)
    program_check_key = models.CharField(
        max_length=64, blank=True, help_text="What the last check ran on (services.programs.program_check_key)."
    )
    program_check_sent_at = models.DateTimeField(null=True, blank=True)
    program_check_attempts = models.PositiveSmallIntegerField(default=0)
    program_team_failures = models.JSONField(
        default=dict, blank=True, help_text="Team id -> contestants' files the program failed on since its check."
    )
    allow_predictions = models.BooleanField(default=True)
    allow_recipes = models.BooleanField(default=False)

    # Statistics (docs/DESIGN.md §6)
    k_runs = models.PositiveIntegerField(default=30, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    boo_n = models.PositiveIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="n of Boo_n; its interval needs k >= 10n runs per entry (Boo_1, the mean of the runs: 6).",
    )
    gamma = models.FloatField(
        default=0.75,
        validators=[validate_gamma],
        help_text="γ of the P(A>B) decision rule, strictly between 0.5 and 1.",
    )
    alpha = models.FloatField(default=0.05, validators=[MinValueValidator(1e-6), MaxValueValidator(0.5)])
    bootstrap_resamples = models.PositiveIntegerField(
        default=2000, validators=[MinValueValidator(100), MaxValueValidator(100_000)]
    )
    ranking_statistic = models.CharField(max_length=10, choices=RankingStatistic.choices, default=RankingStatistic.MEAN)
    correction = models.CharField(max_length=12, choices=Correction.choices, default=Correction.HOLM)

    # Seeds, splits, HPO (docs/DESIGN.md §4)
    master_seed = models.PositiveBigIntegerField(default=0)
    randomize_sources = models.JSONField(default=default_sources, blank=True)
    split_scheme = models.CharField(max_length=10, choices=SplitScheme.choices, default=SplitScheme.OUT_OF_BOOTSTRAP)
    stratify = models.BooleanField(default=True)
    hpo_mode = models.CharField(max_length=10, choices=HpoMode.choices, default=HpoMode.FIXED)
    hpo_method = models.CharField(max_length=12, choices=HpoMethod.choices, default=HpoMethod.RANDOM)
    hpo_budget = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    device = models.CharField(max_length=4, choices=Device.choices, default=Device.CPU)
    run_time_limit_s = models.PositiveIntegerField(default=600, validators=[MinValueValidator(1)])
    run_memory_limit_mb = models.PositiveIntegerField(default=4096, validators=[MinValueValidator(256)])

    # Dates and quotas are the phases' (Phase; the one in force: selectors.phase_in_force).
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    created = models.DateTimeField(auto_now_add=True)

    # Competition integrity: public and private boards, final selection, feedback, accounts
    public_fraction = models.FloatField(
        default=1.0,
        validators=[validate_public_fraction],
        help_text="Fraction of the hidden test rows on the public board (drawn from the master seed, stratified); "
        "1: no private board.",
    )
    private_revealed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the hosts revealed the private board."
    )
    final_entries = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Entries a team may select for the private board (N).",
    )
    board_version = models.CharField(
        max_length=10,
        choices=BoardVersion.choices,
        default=BoardVersion.SELECTED,
        help_text="Which version of an entry the public board shows.",
    )
    feedback = models.CharField(
        max_length=10,
        choices=Feedback.choices,
        default=Feedback.EXACT,
        help_text="How the public board reports scores.",
    )
    feedback_digits = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(0), MaxValueValidator(12)],
        help_text="Digits shown with rounded feedback.",
    )
    ladder_margin = models.FloatField(
        default=0.01,
        validators=[MinValueValidator(1e-9)],
        help_text="η of the Ladder, in the metric's units: a person's shown score, across all their teams, moves "
        "only when their new submission beats it by more than η.",
    )
    rules = models.TextField(blank=True, help_text="Rules every contestant accepts before the first submission.")
    registration_required = models.BooleanField(
        default=False, help_text="Contestants register and wait for a host's approval before submitting."
    )

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(
                condition=Q(allow_predictions=True) | Q(allow_recipes=True),
                name="challenge_allows_some_kind",
                violation_error_message="Allow predictions, recipes, or both.",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("challenge-detail", kwargs={"slug": self.slug})

    def run_wall_time_s(self) -> int:
        """A recipe run's wall-time limit: the challenge's, under the operator's ceiling."""
        return min(self.run_time_limit_s, settings.VARBOARD["RUN_WALL_TIME_S"])

    def report_settings_values(self) -> tuple:
        """The values of :attr:`REPORT_SETTINGS`, in that order."""
        return tuple(getattr(self, name) for name in self.REPORT_SETTINGS)

    @property
    def metric_info(self):
        """The built-in metric: with a scoring program, only the prediction files' format (label, proba, …)."""
        return METRICS[self.metric]

    @property
    def program_failures(self) -> int:
        """Contestants' files the scoring program failed on since its last check, all teams together."""
        return sum((self.program_team_failures or {}).values())

    @property
    def program_primary(self) -> dict | None:
        """The scoring program's primary metric (``ProgramMetric.as_dict()``), which ranks the board; None
        without a program (or before its check has read its metrics: the metrics are cleared with the program).
        ``services.metrics.primary_metric`` builds on it; it reads ``program_metrics`` alone (a report setting,
        so the leaderboard API's one-query read has it)."""
        return next((metric for metric in self.program_metrics or [] if metric.get("primary")), None)

    @property
    def results_only(self) -> bool:
        """A challenge of imported results (``services.results_import.challenge_create_results_only``): it has no
        dataset, so it scores nothing, takes no submission and plans no runs. The one test of it."""
        return not hasattr(self, "dataset")

    @property
    def primary_label(self) -> str:
        """What the pages call the metric that ranks the board."""
        primary = self.program_primary
        return primary["label"] if primary else self.metric_info.label


def dataset_path(instance: Dataset, filename: str) -> str:
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
    # In a storage of their own (a private bucket or prefix): see leaderboard/storage.py.
    hidden_labels_file = models.FileField(upload_to=dataset_path, storage=hidden_labels_storage, blank=True)
    n_train = models.PositiveIntegerField(default=0)
    n_test = models.PositiveIntegerField(default=0)
    version = models.CharField(max_length=64, help_text="Hash of the data; runs are scored against one version.")
    # Which hidden test rows (in test order) are on the public board: packed bits; None: all of them.
    public_mask = models.BinaryField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"dataset of {self.challenge.slug} ({self.n_train} train, {self.n_test} test rows)"


class Phase(models.Model):
    """A period of a challenge with its own dates, quotas, kinds of submission and scored test rows.

    Quotas count submissions and files (a prediction file is one test-set evaluation; a recipe
    counts as one), per team and per user, per day and in total (0: unlimited).
    """

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=60)
    order = models.PositiveIntegerField(default=0)
    opens_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    daily_quota = models.PositiveIntegerField(default=5, help_text="Submissions per team per day (0: unlimited).")
    total_quota = models.PositiveIntegerField(default=100, help_text="Submissions per team in total (0: unlimited).")
    daily_file_quota = models.PositiveIntegerField(default=0, help_text="Files per team per day (0: unlimited).")
    total_file_quota = models.PositiveIntegerField(default=0, help_text="Files per team in total (0: unlimited).")
    allow_predictions = models.BooleanField(default=True)
    allow_recipes = models.BooleanField(default=True)
    test_rows = models.CharField(max_length=10, choices=TestRows.choices, default=TestRows.ALL)
    auto_reveal = models.BooleanField(default=False, help_text="Reveal the private board when this phase closes.")

    class Meta:
        ordering = ["challenge_id", "order", "opens_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["challenge", "name"], name="phase_unique_name"),
            models.CheckConstraint(
                condition=Q(opens_at__isnull=True) | Q(closes_at__isnull=True) | Q(closes_at__gt=models.F("opens_at")),
                name="phase_closes_after_opening",
                violation_error_message="A phase's closing date must come after its opening date.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.challenge.slug})" if self.challenge_id else self.name

    def closed_reason(self, now=None) -> str | None:
        """Why the phase takes no submission at ``now``, or None when it is open."""
        return window_closed_reason(f"The {self.name} phase", self.opens_at, self.closes_at, now)


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
    # When a host's correction (labels, metric) last asked for this submission to be scored again, until the
    # rescore has run (services.rescoring): the janitor resends a rescore the broker lost or never took.
    rescore_requested_at = models.DateTimeField(null=True, blank=True, db_index=True)
    phase = models.ForeignKey(Phase, on_delete=models.PROTECT, related_name="submissions", null=True, blank=True)
    # Files charged to the file quotas (prediction files; a recipe counts as one).
    n_files = models.PositiveIntegerField(default=1)
    # SHA-256 of the file set (or of the recipe and its hyperparameters): a team cannot submit it twice.
    content_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # Chosen by its team for the private board (at most Challenge.final_entries per team).
    selected_for_final = models.BooleanField(default=False)
    # A host's moderation (services.moderation): off both boards, the reason shown to its team.
    moderation = models.CharField(max_length=12, choices=Moderation.choices, blank=True, default="")
    moderation_reason = models.TextField(blank=True)
    moderated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    moderated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["challenge", "team", "created"])]

    def __str__(self) -> str:
        return f"{self.method_name} ({self.team})"

    def get_absolute_url(self) -> str:
        return reverse("submission-detail", kwargs={"pk": self.pk})

    @property
    def has_ended(self) -> bool:
        return self.status in SUBMISSION_ENDED


class RunsStamp(models.Model):
    """A submission's runs stamp: moves whenever one of its runs is inserted, deleted or changed in a column a report
    reads (the database's triggers on leaderboard_run, migration 0034: every writer, raw .update() calls too; never a
    heartbeat). A report update reads the runs of the submissions whose stamp moved only (selectors.challenge_runs,
    docs/scale.md, issue 27).

    A table of its own, written by the triggers only (Django never saves one; the collector deletes it with its
    submission), not a column of the submission: a run's writer then never locks the submission's row, which other
    paths lock before its runs (a lock-order inversion on PostgreSQL), nor contends with the submission's writers.
    No row (a submission without runs yet): stamp 0. No foreign key constraint: the INSERT trigger upserts it inside
    the run writer's statement, and the submission's deletion removes it in whatever order with the runs."""

    submission = models.OneToOneField(
        Submission, primary_key=True, on_delete=models.CASCADE, db_constraint=False, related_name="runs_stamp"
    )
    stamp = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"runs stamp {self.stamp} of submission {self.submission_id}"


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
    queue = models.CharField(
        max_length=8,
        choices=RunQueue.choices,
        default=RunQueue.CPU,
        help_text="Where the run is dispatched, fixed at creation: scoring for prediction "
        "files, cpu or gpu for recipes (the challenge's device, NEEDS_GPU).",
    )
    # Scores on the public and the private part of the test rows (services.boards decides who sees which).
    public_score = models.FloatField(null=True, blank=True)
    private_score = models.FloatField(null=True, blank=True)
    # Per-example outcomes of prediction files on each part, computed on that part alone (see ``outcomes``).
    public_outcomes = models.BinaryField(null=True, blank=True)
    private_outcomes = models.BinaryField(null=True, blank=True)
    # Per-example outcomes on the test rows, float32 little-endian bytes (see ``outcomes_array``).
    outcomes = models.BinaryField(null=True, blank=True)
    # How many times the result was rescored (services.lifecycle.run_store_rescored): the reports' inputs version
    # reads it, since a rescore may move the outcomes the comparisons read and no score.
    result_revision = models.PositiveIntegerField(default=0)
    # The secondary metrics' scores by part of the test rows: {"test": {name: score}, "public": {...},
    # "private": {...}}, the parts as for the primary (services.scoring; a host's scoring program fills it too).
    extra_scores = models.JSONField(default=dict, blank=True)
    # Their per-example outcomes where the metric decomposes (prediction files), keyed "part/name"
    # (see ``pack_extra_outcomes``); a metric without outcomes is shown with an interval over runs only.
    extra_outcomes = models.BinaryField(null=True, blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    hpo_trials = models.JSONField(default=list, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    device = models.CharField(max_length=60, blank=True)
    fingerprint = models.JSONField(default=dict, blank=True)
    log = models.TextField(blank=True)
    error_message = models.TextField(blank=True)
    # The confinement the run executed under (e.g. ["bubblewrap 0.8.0", "seccomp", ...]), or
    # ["unsandboxed"] when the operator allowed runs without isolation (VARBOARD_ALLOW_UNSANDBOXED).
    isolation = models.JSONField(default=list, blank=True)
    # How many times the run was claimed: first delivery, redeliveries and retries together. The
    # attempt that holds the run is its lease token: only that attempt may renew or store it.
    attempts = models.PositiveIntegerField(default=0)
    # When the run's task was last published (set at creation, bumped by the janitor's resends).
    enqueued_at = models.DateTimeField(default=timezone.now)
    # A running run's lease, renewed by its worker's heartbeat; once it expires the janitor queues
    # the run again. ``lease_owner`` is the Celery delivery (task id) that holds it.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True)
    # Why the previous attempt did not finish (a lost worker, a transient error): the true cause
    # given when the run is finally failed for the platform's reasons.
    last_error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["submission_id", "index"]
        constraints = [models.UniqueConstraint(fields=["submission", "index"], name="run_unique_index")]
        indexes = [
            models.Index(fields=["status", "started_at"]),
            models.Index(fields=["status", "enqueued_at"], name="run_status_enqueued"),
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
        ]

    def __str__(self) -> str:
        return f"run {self.index} of submission {self.submission_id}"

    @property
    def has_ended(self) -> bool:
        return self.status in RUN_ENDED

    @property
    def unsandboxed(self) -> bool:
        """True when the run executed without isolation (a developer's override)."""
        return "unsandboxed" in (self.isolation or [])

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

    @staticmethod
    def pack_extra_outcomes(arrays: dict) -> bytes | None:
        """Per-example outcomes keyed ``"part/name"`` as one blob (float32 arrays in an uncompressed npz)."""
        if not arrays:
            return None
        buffer = io.BytesIO()
        np.savez(buffer, **{key: np.asarray(value, dtype="<f4") for key, value in arrays.items()})
        return buffer.getvalue()

    @staticmethod
    def unpack_extra_outcomes(blob) -> dict[str, np.ndarray]:
        """The arrays :meth:`pack_extra_outcomes` packed ({} for none)."""
        if not blob:
            return {}
        with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as packed:
            return {key: packed[key] for key in packed.files}


class ReportBase(models.Model):
    """A cached leaderboard report, tagged with the version of its inputs."""

    inputs_version = models.CharField(max_length=64, blank=True)
    # orjson: a 5,000-entry report is ~21 MB of JSON, decoded and written at each update (docs/scale.md).
    data = models.JSONField(default=dict, encoder=FastJSONEncoder, decoder=FastJSONDecoder)
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    # Set when runs changed and a recomputation is queued; bursts of run results flip it once.
    recompute_pending = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
    # How many times the report was rebuilt (exported as a Prometheus counter).
    recompute_count = models.PositiveBigIntegerField(default=0)
    # Why the latest recomputation failed, and when ("": the stored report is the latest); the stored report
    # is kept and served, marked with this.
    recompute_failure = models.TextField(blank=True, default="")
    failed_at = models.DateTimeField(null=True, blank=True)
    failed_settings_key = models.CharField(max_length=64, blank=True, default="")

    #: The board whose report this is (its own rows are ``ReportRow``s of this board).
    BOARD: str = Board.PUBLIC

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db, field_names, values):
        """The stored report, whole: a report stored in pieces (``leaderboard.report_rows``) gets its entries'
        own rows and its comparison tables' blocks put back, and ``row_ids`` says which rows are stored (None:
        stored whole)."""
        report = super().from_db(db, field_names, values)
        report.row_ids = None
        data = report.__dict__.get("data")
        if isinstance(data, dict) and ROW_TABLE in data:
            skeleton, own, pieces = report_stored_parts(cls, db, report, data)
            report.row_ids = row_ids(skeleton)
            report.data = report_join(skeleton_join(skeleton, pieces), own, in_place=True)
        return report


def report_stored_parts(model, db: str, report: ReportBase, skeleton: dict) -> tuple[dict, dict[int, dict], dict]:
    """(the skeleton, the own rows of the entries it lists, the pieces it lists), of one board: read again, skeleton
    first, when a newer report was stored between the reads.

    Each save moves ``recompute_count`` with the skeleton, in the transaction that writes its rows and pieces: the
    count read after the rows and pieces equal to the one read with the skeleton says that no save was committed
    between (a row rewritten in place, an entry's mean rescored, was read with the older skeleton before). The first
    read takes no lock (most reads); the next ones read inside a transaction that holds the board's row (PostgreSQL:
    ``FOR UPDATE``, which a save's first statement waits for; SQLite: the read transaction's shared lock, which a save's
    commit waits for), so that a board updated faster than a reader reads it is still read, whole."""
    stored = model._base_manager.using(db).filter(pk=report.pk)
    count = report.__dict__.get("recompute_count")
    for attempt in range(3):
        with transaction.atomic(using=db) if attempt else nullcontext():
            if count is None:
                held = stored.select_for_update() if attempt else stored
                skeleton, count = held.values_list("data", "recompute_count").get()
            own = report_stored_own_rows(model, db, report)
            keys = piece_keys(skeleton)
            pieces = report_stored_pieces(model, db, report, keys) if keys else {}
            whole = all(sid in own for sid in skeleton[ROW_TABLE]["ids"]) and all(key in pieces for key in keys)
            if whole and stored.values_list("recompute_count", flat=True).get() == count:
                return skeleton, own, pieces
        count = None
    raise RuntimeError(f"The {model.BOARD} report of challenge {report.challenge_id} lists parts it does not store.")


def report_stored_own_rows(model, db: str, report: ReportBase) -> dict[int, dict]:
    """The stored own rows of a board (``ReportRow``), by submission id."""
    rows = ReportRow.objects.using(db).filter(challenge_id=report.challenge_id, board=model.BOARD)
    sql, params = rows.values_list("submission_id", "data").query.sql_with_params()
    with connections[db].cursor() as cursor:  # as stored, decoded by orjson at once: no per-row converter
        cursor.execute(sql, params)
        return {
            sid: orjson.loads(value) if isinstance(value, (str, bytes)) else value for sid, value in cursor.fetchall()
        }


def report_stored_pieces(model, db: str, report: ReportBase, keys: list[str]) -> dict[str, dict]:
    """The stored pieces of a board (``ReportPiece``) among ``keys``, by key."""
    rows = ReportPiece.objects.using(db).filter(challenge_id=report.challenge_id, board=model.BOARD)
    sql, params = rows.values_list("key", "data").query.sql_with_params()
    wanted = set(keys)
    with connections[db].cursor() as cursor:
        cursor.execute(sql, params)
        return {
            key: orjson.loads(value) if isinstance(value, (str, bytes)) else value
            for key, value in cursor.fetchall()
            if key in wanted
        }


class Report(ReportBase):
    """Cached report of the public board (what contestants and readers see)."""

    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, related_name="report")
    # Recomputations given up in a row (their task's retries spent), and when the janitor sends the next one
    # (``reports.report_recompute_gave_up``): an interval that doubles with each, reset by a board stored.
    recompute_give_ups = models.PositiveIntegerField(default=0)
    recompute_retry_at = models.DateTimeField(null=True, blank=True)


class ReportLease(models.Model):
    """The lease of a board's running recomputation (``reports.recompute_lease``), renewed by its heartbeat: the
    janitor does not send the recomputation again while it is alive, and does once it expired (the worker was lost).
    A row of its own, not columns of ``Report``: SQLite rewrites a whole row at each UPDATE, and the report's holds
    its skeleton (21 MB on a board of 20,000 entries), rewritten for the lease's take, each renewal and the release
    (docs/scale.md). A row is a lease held (released: deleted); one left by a failed recomputation expires."""

    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, primary_key=True, related_name="report_lease")
    owner = models.CharField(max_length=32)
    expires_at = models.DateTimeField()


class PrivateReport(ReportBase):
    """Cached report of the private board (hosts until the reveal; recomputed with the public one)."""

    BOARD = Board.PRIVATE
    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, related_name="private_report")


class ReportRow(models.Model):
    """One entry's own row of a board's stored report (``leaderboard.report_rows``): its runs, mean, Boo_n and
    their intervals, without the parts another entry's arrival moves (ranks, letters, rank interval), which
    the report's ``row_table`` holds. An update rewrites the rows that changed only."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="report_rows")
    board = models.CharField(max_length=10, choices=Board.choices)
    submission_id = models.BigIntegerField()
    data = models.JSONField(encoder=FastJSONEncoder, decoder=FastJSONDecoder)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["challenge", "board", "submission_id"], name="report_row_unique")
        ]


class ReportPiece(models.Model):
    """A piece of a board's stored skeleton (``leaderboard.report_rows.skeleton_pieces``): a block of pairs of a
    comparison table, without the columns an update moves for every pair. Keyed by a digest of its content: an update
    writes the blocks that are new and deletes those its skeleton no longer lists, in the save's transaction."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="report_pieces")
    board = models.CharField(max_length=10, choices=Board.choices)
    key = models.CharField(max_length=32)
    data = models.JSONField(encoder=FastJSONEncoder, decoder=FastJSONDecoder)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["challenge", "board", "key"], name="report_piece_unique")]


class ReportVersion(models.Model):
    """An earlier report kept when a host rescored the challenge (labels or metric corrected)."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="report_versions")
    board = models.CharField(max_length=10, choices=Board.choices)
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-archived_at", "-id"]


class AuditEntry(models.Model):
    """One host action on a challenge: who changed which setting or file, when, from what to what."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_entries"
    )
    action = models.CharField(max_length=40)
    # e.g. {"changes": {"gamma": [0.75, 0.8]}} or {"file": "hidden_labels", "old_version": ..., "new_version": ...}
    details = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["challenge", "created"])]

    def __str__(self) -> str:
        return f"{self.action} on {self.challenge_id} by {self.actor_id}"

    @property
    def action_words(self) -> str:
        """The action as the audit page says it (``private_board_revealed``: "private board revealed")."""
        return self.action.replace("_", " ")

    @property
    def detail_lines(self) -> list[tuple[str, str]]:
        """Each detail as (name, words) for the audit page: lists joined, mappings as "key value" pairs (the page
        showed Python's ``{'phases_ended': ['final']}``)."""

        def words(value) -> str:
            if isinstance(value, dict):
                return ", ".join(f"{key} {words(item)}" for key, item in value.items())
            if isinstance(value, list | tuple):
                return ", ".join(words(item) for item in value)
            return str(value)

        return [(name, words(value)) for name, value in (self.details or {}).items()]


class TeamModeration(models.Model):
    """A host's moderation of a whole team on one challenge: every submission of the team leaves its boards."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="team_moderations")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="moderations")
    state = models.CharField(max_length=12, choices=Moderation.choices)
    reason = models.TextField()
    moderated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    moderated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["challenge", "team"], name="team_moderation_unique")]

    def __str__(self) -> str:
        return f"{self.team} {self.state} on {self.challenge_id}"


class Registration(models.Model):
    """A user's participation in a challenge: the rules they accepted and, where required, the hosts' approval."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="registrations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="registrations")
    status = models.CharField(max_length=10, choices=RegistrationStatus.choices, default=RegistrationStatus.PENDING)
    rules_accepted_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["challenge_id", "created"]
        constraints = [models.UniqueConstraint(fields=["challenge", "user"], name="registration_unique")]


# --------------------------------------------------------------------------- beyond one leaderboard
# Variance by source, results produced elsewhere, and benchmark suites (docs/statistics.md).


class ResultsImport(models.Model):
    """One upload of per-instance results produced elsewhere (a results-only challenge).

    The first import fixes the challenge's instances (``instance_ids``, in order); later
    imports must give every model a result on each of them, so entries stay paired.
    """

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="results_imports")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    format = models.CharField(max_length=20)
    original_names = models.JSONField(default=list)
    metric = models.CharField(max_length=60)
    binary = models.BooleanField(default=False)
    model_names = models.JSONField(default=list, help_text="Names of the models this import added.")
    instance_ids = models.JSONField(default=list)

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return f"import of {len(self.model_names)} model(s) into {self.challenge.slug}"


class EntryProvenance(models.Model):
    """Where an entry's results come from when varboard did not produce them itself."""

    class Source(models.TextChoices):
        SELF_REPORTED = "self_reported", "Self-reported by its authors"
        PUBLISHED = "published", "Taken from a publication or public leaderboard"

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="provenance")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.SELF_REPORTED)
    link = models.URLField(blank=True, max_length=500)
    note = models.CharField(max_length=300, blank=True)
    results_import = models.ForeignKey(
        ResultsImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="entries"
    )

    def __str__(self) -> str:
        return f"{self.get_source_display()}: {self.submission}"


class VarianceStudy(models.Model):
    """A host's study of one recipe entry: each source of variation alone, then all jointly.

    Run i of the block of source s varies only s (the others at run 0's seeds, from
    ``evaluation.seeds.seed_record``); block ``"all"`` varies every studied source and,
    when the recipe declares a search space, searches hyperparameters in every run
    (IdealEst); ``"all_fixed_hpo"`` keeps them fixed (FixHOptEst).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="variance_studies")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="variance_studies")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    k_runs = models.PositiveIntegerField(validators=[MinValueValidator(2), MaxValueValidator(100)])
    sources = models.JSONField(default=list)
    master_seed = models.PositiveBigIntegerField()
    searches_hyperparameters = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    result = models.JSONField(default=dict, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "variance studies"

    def __str__(self) -> str:
        return f"variance study of {self.submission}"


class StudyRun(models.Model):
    """One run of a variance study; written once, like ``Run`` (unique on study, block, index)."""

    study = models.ForeignKey(VarianceStudy, on_delete=models.CASCADE, related_name="runs")
    block = models.CharField(max_length=20, help_text="The source varied alone, 'all' or 'all_fixed_hpo'.")
    index = models.PositiveIntegerField()
    seeds = models.JSONField(default=dict)
    search_hyperparameters = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    queue = models.CharField(
        max_length=8,
        choices=RunQueue.choices,
        default=RunQueue.CPU,
        help_text="cpu or gpu: the queue of the entry's runs, fixed at creation.",
    )
    test_score = models.FloatField(null=True, blank=True)
    public_score = models.FloatField(
        null=True,
        blank=True,
        help_text="Score on the public part of the hidden rows (what non-hosts "
        "read before the reveal); test_score is on all of them.",
    )
    valid_score = models.FloatField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    log = models.TextField(blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    device = models.CharField(max_length=60, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study_id", "block", "index"]
        constraints = [models.UniqueConstraint(fields=["study", "block", "index"], name="study_run_unique")]

    def __str__(self) -> str:
        return f"run {self.index} of block {self.block} of study {self.study_id}"


class Suite(models.Model):
    """A benchmark suite: challenges (tasks) whose entries are aggregated on one board."""

    class Normalization(models.TextChoices):
        MINMAX = "minmax", "Min-max per task (0 = worst run, 1 = best run)"
        NONE = "none", "None (the tasks share one scale)"

    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    challenges = models.ManyToManyField(Challenge, related_name="suites")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    normalization = models.CharField(max_length=10, choices=Normalization.choices, default=Normalization.MINMAX)
    rope = models.FloatField(
        default=0.01,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="Region of practical equivalence of the Bayesian test, on the normalised scale.",
    )
    master_seed = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("suite-detail", kwargs={"slug": self.slug})


# --------------------------------------------------------------------------- accounts, notifications, webhooks
class Profile(models.Model):
    """A user's settings: which e-mail notifications they want (each can be turned off)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    notify_scored = models.BooleanField(default=True, help_text="Mail me when a submission of my team is scored.")
    notify_failed = models.BooleanField(default=True, help_text="Mail me when a submission of my team fails.")
    notify_revealed = models.BooleanField(
        default=True, help_text="Mail me when a challenge I took part in reveals its private board."
    )
    notify_invited = models.BooleanField(default=True, help_text="Mail me when someone invites me to a team.")

    def __str__(self) -> str:
        return f"profile of {self.user}"


class TeamInvitation(models.Model):
    """An invitation to join a team: the invitee becomes a member only by accepting it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        CANCELLED = "cancelled", "Cancelled"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_invitations")
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "invitee"], condition=Q(status="pending"), name="invitation_one_pending"
            )
        ]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.team} ({self.status})"


class Event(models.Model):
    """Something users and hosts are told about (the outbox): mails and webhooks are sent from it by a task.

    ``key`` makes an event happen once (``submission.scored:12``), however often its cause is seen.
    """

    class Kind(models.TextChoices):
        SUBMISSION_SCORED = "submission.scored", "Submission scored"
        SUBMISSION_FAILED = "submission.failed", "Submission failed"
        BOARD_REVEALED = "board.revealed", "Private board revealed"
        TEAM_INVITED = "team.invited", "Invited to a team"

    key = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    # None for a team's events (an invitation): they are mailed, never sent to a challenge's webhooks.
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, null=True, blank=True, related_name="events")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    invitation = models.ForeignKey("TeamInvitation", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    created = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True, help_text="When its mails and deliveries were made.")

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["processed_at", "created"], name="event_unprocessed")]

    def __str__(self) -> str:
        return self.key


class Webhook(models.Model):
    """A URL a challenge's host registered: every event of the challenge is POSTed to it, signed."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100, help_text="Key of the HMAC-SHA256 signature of every delivery.")
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event for one webhook: attempted until the receiver answers 2xx or the attempts run out."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(fields=["webhook", "event"], name="delivery_once")]

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook} ({self.status})"


class BoardHistory(models.Model):
    """An entry's rank and ranking value on one board from ``at`` until its next row (issue 26).

    Written when a recomputed report first shows the entry or moves it (``services.history``); the
    private board's rows are read only once that board is (hosts, or everyone after the reveal).
    """

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="board_history")
    board = models.CharField(max_length=10, choices=Board.choices)
    submission_id = models.BigIntegerField()
    at = models.DateTimeField()
    rank = models.PositiveIntegerField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["challenge", "board", "submission_id", "at"], name="history_entry_at")]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.submission_id} on the {self.board} board at {self.at:%Y-%m-%d %H:%M}: {self.rank}"


class JanitorState(models.Model):
    """The janitor's one row (``pk`` :data:`JANITOR_STATE_PK`): when its last pass ended.

    In the database rather than a cache so that every process (a prefork worker's children, other
    workers, beat's health check, /metrics) reads the same time (``services.janitor``).
    """

    id = models.PositiveSmallIntegerField(primary_key=True)
    last_pass_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"janitor: last pass ended at {self.last_pass_at:%Y-%m-%d %H:%M:%S}"


#: The primary key of the one ``JanitorState`` row.
JANITOR_STATE_PK = 1


class StorageOrphan(models.Model):
    """A stored file that no row names and whose delete failed: a rolled-back creation's file, its clean-up
    delete refused by a store that was down (``storage.atomic_deleting_on_failure``), or the file a committed
    change replaced or removed (``storage.discard_replaced``: a scoring program), or a used upload kept between
    two posts (``web.upload_stash``).

    Written once the rolled-back transaction has ended, so the rollback cannot take the record along; the janitor
    deletes the file once the store answers, never one that a row names (``services.orphans``).
    """

    storage = models.CharField(max_length=32)  # its alias in ``settings.STORAGES``: "default" or "hidden"
    path = models.CharField(max_length=1024)  # the name in that storage (an S3 key is at most 1,024 bytes)
    reason = models.TextField()  # the error that rolled the creation back, or the change that replaced the file
    last_error = models.TextField()  # the latest failed delete's
    created = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=1)  # deletes tried and failed
    next_attempt_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["storage", "path"], name="storage_orphan_unique_path")]
        indexes = [models.Index(fields=["next_attempt_at"], name="storage_orphan_due")]

    def __str__(self) -> str:
        return f"{self.storage}:{self.path} (orphan, {self.attempts} failed delete(s))"
