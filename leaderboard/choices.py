"""Enumerations shared by models, forms and the API."""

from django.db import models


class Visibility(models.TextChoices):
    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private (hosts only)"


class SubmissionKind(models.TextChoices):
    PREDICTIONS = "predictions", "Predictions"
    RECIPE = "recipe", "Training recipe"


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SCORED = "scored", "Scored"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


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


class RankingStatistic(models.TextChoices):
    MEAN = "mean", "Mean"
    BOO_N = "boo_n", "Boo_n"


class Correction(models.TextChoices):
    HOLM = "holm", "Holm"
    BONFERRONI = "bonferroni", "Bonferroni"
    BH = "bh", "Benjamini–Hochberg"
    NONE = "none", "None"
