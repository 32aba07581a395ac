"""The report's inputs: the challenge's settings, their checks, and the seed of each purpose.

:class:`ReportSettings` holds the statistical settings of a challenge (docs/DESIGN.md §3,
§6); :func:`check_settings` refuses invalid ones naming the field. :func:`derive_seed`
gives every random computation of the report its own seed from the master seed, the
section (:data:`SECTION_CODE`) and the purpose (:data:`PURPOSE`), so an entry's own
intervals do not move when other entries arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..stats._validation import check_gamma

__all__ = [
    "CORRECTIONS",
    "KINDS",
    "PURPOSE",
    "SECTION_CODE",
    "ROUNDED_PREDICTIONS_LABEL",
    "SECTION_LABELS",
    "STATISTICS",
    "ReportSettings",
    "check_settings",
    "derive_seed",
]

KINDS = ("recipe", "predictions")
STATISTICS = ("mean", "boo_n")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
SECTION_LABELS = {
    "recipe": "Training recipes (seed-paired runs on out-of-bootstrap splits)",
    "predictions": "Predictions (paired bootstrap over the hidden test set)",
}
#: A prediction section under rounded feedback resamples nothing: it is ranked by the shown score alone.
ROUNDED_PREDICTIONS_LABEL = "Predictions (ranked by their shown score: feedback is rounded)"
SECTION_CODE = {"recipe": 1, "predictions": 2}
PURPOSE = {"mean": 1, "boo_n": 2, "pairs": 3, "ranks": 4, "boo_n_unbiased": 5, "secondary": 6}


@dataclass(frozen=True)
class ReportSettings:
    """The challenge's statistical settings (docs/DESIGN.md §3, §6).

    ``alpha``: the challenge's significance level α, of the γ decision rule, the
    adjusted p-values, Noether's N and the state of the art's bound; every interval
    is shown at ``confidence_level = 1 - alpha``. ``master_seed``: the challenge's
    master seed, from which :func:`derive_seed` derives the ``rng`` of each random
    computation. ``m_total_predictions``/``m_total_recipes``: entries ever scored on that test data
    (``None``: the entries given). ``n_test``: test examples (binomial SOTA; ``None``:
    the outcomes' length). ``accuracy_like``: the metric is a proportion of correct
    examples. ``metric_from_mean``: maps a mean outcome to the score (monotone). ``metric_pool_files``: a prediction
    entry's score from its files' scores (:meth:`evaluation.metrics.Metric.pool_files`; None: their mean), for an entry
    whose outcomes the board does not read (a rounded board's, :func:`evaluation.boards.shown_entries`).
    ``neighbours``: recipe entries compared on each side in the order
    (:func:`evaluation.stats.sparse.sparse_comparisons`; docs/scale.md). ``backend``/``device``:
    where the resampling runs (:mod:`evaluation.stats.torch_backend`). ``score_range``: the
    values the metric can take (None: unbounded); the runs' intervals are clipped to it.
    ``comparison_table``: each section holds its comparisons as one table of columns
    (``comparison_table``, :func:`evaluation.report.comparisons.comparison_table`) instead of a
    list of rows (``comparisons``): the form the service stores (docs/scale.md); the values are
    the same. ``secondary``: the secondary metrics shown next to the primary, each a
    :class:`evaluation.report.secondary.MetricInfo` (never ranked on).
    """

    higher_is_better: bool = True
    boo_n: int = 3  # k_runs >= 10n (evaluation.stats.boon.min_runs_for_interval)
    gamma: float = 0.75
    alpha: float = 0.05
    n_resamples: int = 2000
    master_seed: int = 0
    statistic: str = "mean"
    correction: str = "holm"
    k_runs: int = 30
    m_total_predictions: int | None = None
    m_total_recipes: int | None = None
    n_test: int | None = None
    accuracy_like: bool = False
    metric_from_mean: Callable | None = None
    metric_pool_files: Callable | None = None
    beta: float = 0.05
    curve_max_n: int = 20
    neighbours: int = 5
    backend: str = "auto"
    device: str = "auto"
    score_range: tuple[float | None, float | None] = (None, None)
    comparison_table: bool = False
    secondary: tuple = ()


def derive_seed(master_seed: int, *keys: int) -> int:
    """A 64-bit seed for one purpose: ``SeedSequence([master_seed, *keys])``'s first word.

    Passed as the ``rng`` of one computation; ``keys`` are the section
    (:data:`SECTION_CODE`), the purpose (:data:`PURPOSE`) and, per entry, its id.

    Examples
    --------
    >>> derive_seed(7, 1, 3) == derive_seed(7, 1, 3) != derive_seed(7, 1, 4)
    True
    """
    state = np.random.SeedSequence([int(master_seed), *(int(k) for k in keys)]).generate_state(1, np.uint64)
    return int(state[0])


def check_settings(settings: ReportSettings) -> ReportSettings:
    """Return ``settings`` if every field is valid; the ValueError names the field."""
    if not isinstance(settings, ReportSettings):
        raise ValueError("`settings` must be a ReportSettings.")
    if settings.statistic not in STATISTICS:
        raise ValueError(f"`statistic` must be one of {', '.join(STATISTICS)} (got {settings.statistic!r}).")
    if settings.correction not in CORRECTIONS:
        raise ValueError(f"`correction` must be one of {', '.join(CORRECTIONS)} (got {settings.correction!r}).")
    check_gamma(settings.gamma)
    if not 0 < settings.alpha < 1:
        raise ValueError(f"`alpha` must be in (0, 1) (got {settings.alpha!r}).")
    if settings.backend not in ("numpy", "torch", "auto"):
        raise ValueError(f"`backend` must be numpy, torch or auto (got {settings.backend!r}).")
    for name in ("boo_n", "n_resamples", "k_runs", "curve_max_n", "neighbours"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be an integer >= 1 (got {value!r}).")
    return settings
