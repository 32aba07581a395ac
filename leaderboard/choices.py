"""Enumerations shared by models, forms and the API."""

from django.db import models


class Visibility(models.TextChoices):
    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private (hosts only)"


class ProgramStatus(models.TextChoices):
    """Where a challenge's scoring program stands (issue 26): checked on the sample submission before publishing."""

    NONE = "", "No scoring program"
    CHECKING = "checking", "Being checked"
    OK = "ok", "Checked"
    FAILED = "failed", "Check failed"
    SUSPENDED = "suspended", "Suspended after failures"


class SubmissionKind(models.TextChoices):
    PREDICTIONS = "predictions", "Predictions"
    RECIPE = "recipe", "Training recipe"


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SCORED = "scored", "Scored"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


#: A submission in one of these states changes no more.
SUBMISSION_ENDED = (SubmissionStatus.SCORED, SubmissionStatus.FAILED, SubmissionStatus.CANCELLED)
#: A submission in one of these states is still being worked on.
SUBMISSION_ACTIVE = (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING)


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


#: A run in one of these states has its result and is written once.
RUN_ENDED = (RunStatus.SUCCEEDED, RunStatus.FAILED)


class SplitScheme(models.TextChoices):
    OUT_OF_BOOTSTRAP = "oob", "Out-of-bootstrap (Bouthillier et al. 2021, App. B)"
    FIXED = "fixed", "Fixed train/test; only model-side seeds vary"


class HpoMode(models.TextChoices):
    FIXED = "fixed", "Fixed hyperparameters (FixHOptEst)"
    SEARCH = "search", "Search inside every run (IdealEst)"


class HpoMethod(models.TextChoices):
    RANDOM = "random", "Random search"
    NOISY_GRID = "noisy_grid", "Noisy grid search"


class Device(models.TextChoices):
    CPU = "cpu", "CPU"
    GPU = "gpu", "GPU"


class RunQueue(models.TextChoices):
    """The task queue a run is dispatched on, fixed when the run is created (``Run.queue``)."""

    SCORING = "scoring", "scoring (prediction files)"
    CPU = "cpu", "CPU"
    GPU = "gpu", "GPU"


class RankingStatistic(models.TextChoices):
    MEAN = "mean", "Mean"
    BOO_N = "boo_n", "Boo_n"


class Correction(models.TextChoices):
    HOLM = "holm", "Holm"
    BONFERRONI = "bonferroni", "Bonferroni"
    BH = "bh", "Benjamini–Hochberg"
    NONE = "none", "None"


class Board(models.TextChoices):
    """The two leaderboards of a challenge: scored on the public or on the private part of the hidden rows."""

    PUBLIC = "public", "Public board"
    PRIVATE = "private", "Private board"


class TestRows(models.TextChoices):
    """Which hidden test rows a phase scores on."""

    ALL = "all", "Public and private parts (both boards)"
    PUBLIC = "public", "Public part only (no private board)"


class Feedback(models.TextChoices):
    """How the public board reports scores (Blum & Hardt 2015 for the Ladder)."""

    EXACT = "exact", "Exact"
    ROUNDED = "rounded", "Rounded to d digits"
    LADDER = (
        "ladder",
        ("Ladder (a person's shown score, across all their teams, changes only on a significant improvement)"),
    )


class BoardVersion(models.TextChoices):
    """Which version of an entry (a team's method) the public board shows."""

    SELECTED = "selected", "The latest version; after the reveal, the one the team chose for the private board"
    LATEST = "latest", "The latest version"


class RegistrationStatus(models.TextChoices):
    PENDING = "pending", "Waiting for the hosts"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class Moderation(models.TextChoices):
    """A host's moderation of an entry or of a whole team on a challenge (blank: none)."""

    DISQUALIFIED = "disqualified", "Disqualified"
    HIDDEN = "hidden", "Hidden"
