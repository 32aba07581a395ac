"""A challenge's metrics: the primary (ranking) and the secondary ones (shown with intervals), issue 26.

What a metric may be on a challenge is decided here, once, for the primary and the secondary
metrics alike (:func:`metric_fit_error`); what the report, the API and the exports know of each
secondary metric comes from :func:`challenge_metrics` (name, label, direction), not from a lookup
in ``evaluation.metrics.METRICS``, so a host's scoring program can declare its own.
"""

from __future__ import annotations

from evaluation.metrics import METRICS, Metric, get_metric
from evaluation.report import MetricInfo
from evaluation.scoring_programs import ProgramMetric

from ..models import Challenge
from .errors import ServiceError

__all__ = [
    "PROGRAM_LADDER_REFUSAL",
    "RECIPES_REFUSED",
    "MetricInfo",
    "challenge_metrics",
    "check_program_fits",
    "check_secondary_metrics",
    "metric_fit_error",
    "metric_info",
    "primary_metric",
    "program_metrics",
    "program_primary_error",
]

RECIPES_REFUSED = "scoring programs score prediction submissions; recipe challenges use the built-in metrics."
#: Why the Ladder and a scoring program exclude each other (``{choice}``: what the host may do where it is refused).
PROGRAM_LADDER_REFUSAL = (
    "The Ladder protects only metrics one row moves by a bounded amount (Blum & Hardt 2015); a scoring program's "
    "metric moves per row by an amount the platform cannot bound: {choice}"
)


def metric_info(metric: Metric) -> MetricInfo:
    """A built-in metric as the report describes it."""
    return MetricInfo(
        name=metric.name,
        label=metric.label,
        higher_is_better=metric.higher_is_better,
        from_mean=metric.from_mean,
        score_range=metric.score_range,
    )


def program_metrics(challenge: Challenge) -> list[ProgramMetric]:
    """The metrics the challenge's scoring program declared (empty: no program, or not read yet; they are
    cleared with the program)."""
    return [ProgramMetric(**raw) for raw in challenge.program_metrics or []]


def _program_info(metric: ProgramMetric) -> MetricInfo:
    """A program's metric as the report describes it: identity ``from_mean``, unbounded."""
    return MetricInfo(name=metric.name, label=metric.label, higher_is_better=metric.higher_is_better)


def primary_metric(challenge: Challenge) -> MetricInfo:
    """The metric that ranks the board: the scoring program's primary where it has one, else ``challenge.metric``.

    With a program, ``challenge.metric`` only fixes the prediction files' format.
    """
    primary = challenge.program_primary
    if primary is not None:
        return _program_info(ProgramMetric(**primary))
    return metric_info(get_metric(challenge.metric))


def challenge_metrics(challenge: Challenge) -> list[MetricInfo]:
    """The challenge's secondary metrics, in the host's order (the primary is :func:`primary_metric`).

    A scoring program's: the metrics it declared but the primary, in ``METRICS`` order. Else the built-in
    ``secondary_metrics``; names no longer known (a metric removed from the platform) are skipped rather
    than failing the board.
    """
    declared = program_metrics(challenge)
    if declared:
        return [_program_info(metric) for metric in declared if not metric.primary]
    return [metric_info(METRICS[name]) for name in challenge.secondary_metrics or [] if name in METRICS]


def check_program_fits(*, allow_recipes: bool, secondary_metrics) -> None:
    """A challenge may take a scoring program: prediction submissions only, no built-in secondary metrics.

    Raises
    ------
    ServiceError
        Field ``scoring_program``, saying why.
    """
    if allow_recipes:
        raise ServiceError(f"This challenge accepts recipes: {RECIPES_REFUSED}", field="scoring_program")
    if secondary_metrics:
        raise ServiceError(
            "A challenge takes either built-in secondary_metrics or a scoring program, not both: the program "
            "declares the board's metrics. Clear secondary_metrics first.",
            field="scoring_program",
        )


def program_primary_error(metrics: list[ProgramMetric], outcome_names) -> str | None:
    """Why a program's scores cannot rank a board, or None: its primary metric must give per-example outcomes.

    The board's paired statistics (the test bootstrap, McNemar, the Wilson and t intervals) are built on
    the primary's outcomes; a metric that does not decompose (a plain number, e.g. macro-F1) can only be
    a secondary one.
    """
    primary = next((metric for metric in metrics if metric.primary), None)
    if primary is None:
        return "the scoring program declares no primary metric."
    if primary.name not in set(outcome_names):
        return (
            f"the primary metric {primary.name!r} returned a plain number; the primary metric must return "
            '{"score": s, "outcomes": [...]} (one outcome per row) because the board\'s paired statistics are '
            'built on them. Mark a decomposable metric primary ("primary": True) and keep this one secondary.'
        )
    return None


def metric_fit_error(metric: Metric, *, task: str | None, classes) -> str | None:
    """Why ``metric`` cannot score a dataset of ``task`` ("classification" or "regression") with
    ``classes``, or None when it can (``task`` None: no dataset to check against)."""
    if task is None:
        return None
    if (metric.task == "regression") != (task == "regression"):
        kind = "numeric" if task == "regression" else "class"
        return f"{metric.label} does not fit this dataset's {kind} labels."
    if metric.task == "binary" and len(classes or []) != 2:
        return f"{metric.label} needs exactly 2 classes; the dataset has {len(classes or [])}."
    return None


def check_secondary_metrics(names, *, primary: str, task: str | None = None, classes=None) -> list[str]:
    """``names`` checked as a challenge's secondary metrics (returned as a list of names).

    Each must be a built-in metric, not the primary, listed once, take the primary's kind of
    predictions (one prediction file is scored by all of them) and fit the dataset.

    Raises
    ------
    ServiceError
        Naming the metric and the reason (field ``secondary_metrics``).
    """
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise ServiceError("secondary_metrics must be a list of metric names.", field="secondary_metrics")
    first = get_metric(primary)
    seen: list[str] = []
    for name in names:
        try:
            metric = get_metric(name)
        except ValueError as exc:
            raise ServiceError(f"secondary_metrics: {exc}", field="secondary_metrics") from None
        if name == first.name or name in seen:
            raise ServiceError(
                f"secondary_metrics: {name} is listed twice (or is the primary metric).", field="secondary_metrics"
            )
        if metric.prediction_kind != first.prediction_kind:
            raise ServiceError(
                f"secondary_metrics: {metric.label} scores {metric.prediction_kind} predictions, but the primary "
                f"metric {first.label} takes {first.prediction_kind} predictions.",
                field="secondary_metrics",
            )
        problem = metric_fit_error(metric, task=task, classes=classes)
        if problem:
            raise ServiceError(f"secondary_metrics: {problem}", field="secondary_metrics")
        seen.append(name)
    return seen
