"""Scoring metrics for prediction entries, with per-example outcomes.

Every metric returns, besides its score, one *outcome* per test example such that
``metric.from_mean(outcomes.mean())`` is the score on the full sample. The outcomes feed
the paired bootstrap over test examples (docs/DESIGN.md §6, "Prediction entries"): one
resample index set, shared by all entries, is applied to every entry's outcomes, and
``from_mean`` of each resampled mean is that entry's resampled score.

For accuracy, log loss, MAE and RMSE (through the MSE) the decomposition is exact: the
score of any resample is the metric recomputed on that resample. For balanced accuracy,
macro F1 and ROC AUC it is a first-order linearization: class weights, F1 denominators
and the positive/negative counts are held at their full-sample values, so a resample's
"score" is a linear statistic rather than the metric recomputed on the resample (it can
even fall slightly outside [0, 1]). On the full sample it equals the metric exactly.

scikit-learn's implementations are the reference (``tests/evaluation/test_metrics.py``
compares every score to ``sklearn.metrics`` within 1e-12); this module itself uses
numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "METRICS",
    "PROBA_TOLERANCE",
    "Metric",
    "MetricResult",
    "get_metric",
    "score_predictions",
    "sorted_classes",
]

Task = Literal["classification", "binary", "regression"]
PredictionKind = Literal["label", "proba", "score", "value"]

#: Rows of probabilities must sum to 1 within this absolute tolerance.
PROBA_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Metric:
    """A scoring metric and the shape of the predictions it scores.

    Attributes
    ----------
    name : str
        Identifier used in URLs, the API and :data:`METRICS` (``"macro_f1"``).
    label : str
        Human-readable name (``"Macro F1"``).
    higher_is_better : bool
        False for losses and errors (log loss, RMSE, MAE).
    task : {"classification", "binary", "regression"}
        ``"binary"`` metrics need exactly two classes.
    prediction_kind : {"label", "proba", "score", "value"}
        ``"label"``: one predicted class per example; ``"proba"``: one probability per
        class, shape (n, K), rows summing to 1; ``"score"``: one real score per example
        for the positive class (higher means more likely positive); ``"value"``: one real
        number per example.
    aggregate : {"mean", "sqrt_mean"}
        How the mean of the per-example outcomes maps to the score (``"sqrt_mean"`` for
        RMSE, whose outcomes are squared errors).
    score_range : (float or None, float or None)
        The values the score can take (None: unbounded on that side). Intervals are clipped
        to it: a bootstrap-t interval of a few runs near a bound can reach past it.
    """

    name: str
    label: str
    higher_is_better: bool
    task: Task
    prediction_kind: PredictionKind
    aggregate: Literal["mean", "sqrt_mean"] = "mean"
    score_range: tuple[float | None, float | None] = (0.0, 1.0)

    def from_mean(self, mean: float | np.ndarray) -> float | np.ndarray:
        """Map the mean of per-example outcomes to the metric's score.

        Parameters
        ----------
        mean : float or array_like
            Mean outcome(s), e.g. one per bootstrap resample (any shape).

        Returns
        -------
        float or numpy.ndarray
            The score(s): a float for scalar input, else an array of the input's shape.
        """
        m = np.asarray(mean, dtype=np.float64)
        out = np.sqrt(m) if self.aggregate == "sqrt_mean" else m
        return float(out) if out.ndim == 0 else out

    def pool_files(self, scores) -> float:
        """The score of an entry of several prediction files, each scored on the same test rows: the metric
        of their outcomes pooled, as the board shows it (:func:`evaluation.report.values.score_over_files`):
        the mean of the files' scores, or for RMSE the square root of the mean of their MSEs.

        >>> get_metric("rmse").pool_files([1.0, 3.0]) == 5**0.5, get_metric("accuracy").pool_files([0.5, 0.7])
        (True, 0.6)
        """
        s = np.asarray(scores, dtype=np.float64)
        return float(self.from_mean(float(np.mean(s**2)))) if self.aggregate == "sqrt_mean" else float(np.mean(s))

    def within_range(self, score: float | np.ndarray) -> float:
        """``score`` clipped to :attr:`score_range` (rounding only: a perfect macro F1's outcomes can average to
        1.0000000000000002)."""
        low, high = self.score_range
        return float(np.clip(score, -np.inf if low is None else low, np.inf if high is None else high))

    def orient(self, score: float | np.ndarray) -> float | np.ndarray:
        """Return the score(s) oriented so that higher is better (losses negated)."""
        s = np.asarray(score, dtype=np.float64)
        out = s if self.higher_is_better else -s
        return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, eq=False)
class MetricResult:
    """Result of :func:`score_predictions`.

    Attributes
    ----------
    score : float
        The metric on the full sample, ``metric.from_mean(outcomes.mean())``.
    outcomes : numpy.ndarray, shape (n,)
        Per-example outcomes (float64, read-only); see the module docstring.
    """

    score: float
    outcomes: np.ndarray


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("accuracy", "Accuracy", True, "classification", "label"),
        Metric("balanced_accuracy", "Balanced accuracy", True, "classification", "label"),
        Metric("macro_f1", "Macro F1", True, "classification", "label"),
        Metric("roc_auc", "ROC AUC", True, "binary", "score"),
        Metric("log_loss", "Log loss", False, "classification", "proba", score_range=(0.0, None)),
        Metric("rmse", "RMSE", False, "regression", "value", aggregate="sqrt_mean", score_range=(0.0, None)),
        Metric("mae", "MAE", False, "regression", "value", score_range=(0.0, None)),
    )
}


def get_metric(name: str) -> Metric:
    """Return the metric called `name`.

    Raises
    ------
    ValueError
        If `name` is not a key of :data:`METRICS`; the message lists the valid names.
    """
    try:
        return METRICS[name]
    except (KeyError, TypeError):
        valid = ", ".join(sorted(METRICS))
        raise ValueError(f"unknown metric {name!r}; the metrics are: {valid}") from None


# --------------------------------------------------------------------------- outcomes


def _accuracy_outcomes(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Correctness, 0 or 1. Exact: the mean is the accuracy."""
    return (y_true == y_pred).astype(np.float64)


def _balanced_accuracy_outcomes(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``correct_i * n / (K * n_{y_i})``, K = classes present in `y_true`.

    The mean is (1/K) Σ_k TP_k / n_k, the mean per-class recall (sklearn's
    ``balanced_accuracy_score``, ``adjusted=False``).
    """
    n = y_true.size
    _, inverse, counts = np.unique(y_true, return_inverse=True, return_counts=True)
    weight = n / (counts.size * counts[inverse])
    return (y_true == y_pred) * weight


def _macro_f1_outcomes(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``correct_i * 2n / (K * D_{y_i})``, D_k = 2TP_k + FP_k + FN_k.

    K counts the labels present in `y_true` or `y_pred` (sklearn's default ``labels``).
    D_k = n_true_k + n_pred_k, so the mean is (1/K) Σ_k 2TP_k / D_k, the macro F1.
    Classes with D_k = 0 cannot occur among the labels counted; they would score 0.
    """
    n = y_true.size
    labels = np.union1d(y_true, y_pred)
    k = labels.size
    true_idx = np.searchsorted(labels, y_true)
    pred_idx = np.searchsorted(labels, y_pred)
    denom = np.bincount(true_idx, minlength=k) + np.bincount(pred_idx, minlength=k)
    d_i = denom[true_idx].astype(np.float64)
    out = np.zeros(n, dtype=np.float64)
    np.divide(2.0 * n, k * d_i, out=out, where=(true_idx == pred_idx) & (d_i > 0))
    return out


def _roc_auc_outcomes(is_positive: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Positives: share of negatives outranked (ties ½) × n / n_pos; negatives: 0.

    The mean is U / (n_pos n_neg), the Mann–Whitney form of the area under the ROC
    curve, which equals sklearn's trapezoidal ``roc_auc_score``.
    """
    n = score.size
    n_pos = int(is_positive.sum())
    n_neg = n - n_pos
    negatives = np.sort(score[~is_positive])
    pos_scores = score[is_positive]
    below = np.searchsorted(negatives, pos_scores, side="left")
    upto = np.searchsorted(negatives, pos_scores, side="right")
    wins = below + 0.5 * (upto - below)
    out = np.zeros(n, dtype=np.float64)
    out[is_positive] = wins / n_neg * (n / n_pos)
    return out


def _log_loss_outcomes(true_idx: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """``-log(clip(p_{i, y_i}, eps, 1 - eps))``, eps = float64 machine epsilon (as sklearn)."""
    eps = np.finfo(np.float64).eps
    p = np.clip(proba[np.arange(true_idx.size), true_idx], eps, 1 - eps)
    return -np.log(p)


def _mae_outcomes(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return np.abs(y_pred - y_true)


def _squared_error_outcomes(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return (y_pred - y_true) ** 2


_OUTCOMES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "accuracy": _accuracy_outcomes,
    "balanced_accuracy": _balanced_accuracy_outcomes,
    "macro_f1": _macro_f1_outcomes,
    "roc_auc": _roc_auc_outcomes,
    "log_loss": _log_loss_outcomes,
    "rmse": _squared_error_outcomes,
    "mae": _mae_outcomes,
}


# ----------------------------------------------------------------------- validation


def _preview(values: Sequence[Any] | np.ndarray, limit: int = 5) -> str:
    """``'a', 'b', 'c' and 4 more`` (values quoted, at most `limit` shown)."""
    values = list(values)
    shown = ", ".join(repr(str(v)) for v in values[:limit])
    return shown if len(values) <= limit else f"{shown} and {len(values) - limit} more"


def _as_labels(y: Any, name: str) -> np.ndarray:
    """1-D array of class labels as strings; missing labels (None, NaN) are errors."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype.kind == "f":
        missing = np.flatnonzero(np.isnan(arr))
    elif arr.dtype.kind == "O":
        missing = np.flatnonzero([v is None or (isinstance(v, float) and v != v) for v in arr])
    else:
        missing = np.empty(0, dtype=np.intp)
    if missing.size:
        raise ValueError(f"{name}[{missing[0]}] is missing (None or NaN); labels cannot be missing")
    return arr.astype(str)


def _as_reals(y: Any, name: str, ndim: int = 1) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers") from None
    if arr.ndim != ndim:
        want = "one-dimensional" if ndim == 1 else "two-dimensional (n examples, K classes)"
        raise ValueError(f"{name} must be {want}; got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        where = ", ".join(str(i) for i in bad[0])
        raise ValueError(f"{name}[{where}] is {arr[tuple(bad[0])]}; values must be finite")
    return arr


def _check_lengths(y_true: np.ndarray, y_pred: np.ndarray) -> None:
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(f"y_true has {y_true.shape[0]} examples but y_pred has {y_pred.shape[0]}")


def _as_classes(classes: Sequence[Any] | None) -> tuple[str, ...] | None:
    if classes is None:
        return None
    out = tuple(str(c) for c in classes)
    if len(set(out)) != len(out):
        dup = sorted({c for c in out if out.count(c) > 1})
        raise ValueError(f"classes must be distinct; repeated: {_preview(dup)}")
    return out


def _check_known(labels: np.ndarray, classes: tuple[str, ...], name: str) -> None:
    unknown = np.setdiff1d(labels, np.asarray(classes, dtype=str))
    if unknown.size:
        raise ValueError(
            f"{name} contains labels that are not among the classes: {_preview(unknown)} "
            f"(classes: {_preview(classes, limit=20)})"
        )


def _default_classes(y_true: Any) -> tuple[str, ...]:
    return sorted_classes(np.asarray(y_true).astype(str))


def sorted_classes(labels: Any) -> tuple[str, ...]:
    """Distinct labels as strings, in the order used for classes everywhere.

    Numeric order when every label reads as a finite number (so ``"2"`` precedes
    ``"10"`` and the positive class of a 0/1 task is ``"1"``, as in scikit-learn);
    text order otherwise.

    Examples
    --------
    >>> sorted_classes(["10", "2", "2", "1"])
    ('1', '2', '10')
    >>> sorted_classes(["dog", "cat", "Cat"])
    ('Cat', 'cat', 'dog')
    """
    distinct = {str(v) for v in labels}

    def number(text: str) -> float | None:
        try:
            value = float(text)
        except ValueError:
            return None
        return value if np.isfinite(value) else None

    numbers = {t: number(t) for t in distinct}
    if all(v is not None for v in numbers.values()):
        return tuple(sorted(distinct, key=lambda t: (numbers[t], t)))
    return tuple(sorted(distinct))


def _score_predictions_iv(
    metric: Metric, y_true: Any, y_pred: Any, classes: Sequence[Any] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert inputs into the two arrays ``_OUTCOMES[metric.name]`` takes."""
    classes = _as_classes(classes)
    kind = metric.prediction_kind

    if kind == "value":
        t, p = _as_reals(y_true, "y_true"), _as_reals(y_pred, "y_pred")
        _check_lengths(t, p)
        return t, p

    t = _as_labels(y_true, "y_true")
    if kind == "label":
        p = _as_labels(y_pred, "y_pred")
        _check_lengths(t, p)
        if classes is not None:
            _check_known(t, classes, "y_true")
            _check_known(p, classes, "y_pred")
        return t, p

    if classes is None:
        classes = _default_classes(y_true)
    _check_known(t, classes, "y_true")

    if kind == "score":
        p = _as_reals(y_pred, "y_pred")
        _check_lengths(t, p)
        if len(classes) != 2:
            raise ValueError(f"{metric.name} needs exactly two classes; got {len(classes)}: {_preview(classes)}")
        positive = classes[1]
        is_positive = t == positive
        if is_positive.all() or not is_positive.any():
            raise ValueError(f"{metric.name} needs both classes in y_true; only {str(t[0])!r} is present")
        return is_positive, p

    # kind == "proba"
    if len(classes) < 2:
        raise ValueError(f"{metric.name} needs at least two classes; got {_preview(classes)}")
    p = _as_reals(y_pred, "y_pred", ndim=2)
    _check_lengths(t, p)
    if p.shape[1] != len(classes):
        raise ValueError(
            f"y_pred has {p.shape[1]} columns but there are {len(classes)} classes "
            f"({_preview(classes, limit=20)}); give one probability column per class"
        )
    outside = np.argwhere((p < 0) | (p > 1))
    if outside.size:
        i, j = outside[0]
        raise ValueError(f"y_pred[{i}, {j}] is {p[i, j]}; probabilities must lie in [0, 1]")
    off = np.flatnonzero(np.abs(p.sum(axis=1) - 1) > PROBA_TOLERANCE)
    if off.size:
        i = off[0]
        raise ValueError(
            f"row {i} of y_pred sums to {float(p[i].sum())!r}; each row must sum to 1 (within {PROBA_TOLERANCE:g})"
        )
    class_arr = np.asarray(classes, dtype=str)
    order = np.argsort(class_arr)
    true_idx = order[np.searchsorted(class_arr, t, sorter=order)]
    return true_idx, p


def score_predictions(
    metric_name: str,
    y_true: Any,
    y_pred: Any,
    *,
    classes: Sequence[Any] | None = None,
) -> MetricResult:
    """Score predictions and return the per-example outcomes behind the score.

    Parameters
    ----------
    metric_name : str
        A key of :data:`METRICS`.
    y_true : array_like, shape (n,)
        True labels (classification; compared as strings, so ``1`` and ``"1"`` match)
        or true values (regression).
    y_pred : array_like
        Depends on ``metric.prediction_kind``: ``"label"``, shape (n,), predicted
        labels; ``"proba"``, shape (n, K), one column per class in `classes` order, each
        row in [0, 1] and summing to 1 within :data:`PROBA_TOLERANCE`; ``"score"``,
        shape (n,), a finite score for the positive class, ``classes[1]``; ``"value"``,
        shape (n,), finite predicted values.
    classes : sequence, optional
        The challenge's classes (as strings). For ``"proba"`` it fixes the column order
        and for ``"score"`` the positive class (the second). Defaults to the distinct
        labels of `y_true`, sorted (numbers numerically), so the positive class of a
        0/1 task is 1, as in scikit-learn. For ``"label"`` metrics it is only used to
        reject unknown labels: the number of classes K in balanced accuracy and macro
        F1 is, as in scikit-learn, the classes present in `y_true` (balanced accuracy)
        or in `y_true` or `y_pred` (macro F1).

    Returns
    -------
    MetricResult
        ``score`` and ``outcomes`` (shape (n,)) with
        ``score == metric.from_mean(outcomes.mean())`` kept inside the metric's ``score_range``: the
        linearized outcomes of a perfect macro F1 average to 1.0000000000000002 for about one label set in
        five (seen as a run's part scored above 1).

    Raises
    ------
    ValueError
        Unknown metric; empty or mismatched inputs; missing labels; non-finite numbers;
        a probability matrix of the wrong width, with entries outside [0, 1] or rows not
        summing to 1; labels not among `classes`; a binary metric without exactly two
        classes, or with only one class in `y_true`.

    Notes
    -----
    Outcomes (n examples, K classes, e_i = ŷ_i − y_i):

    - accuracy: 1[ŷ_i = y_i];
    - balanced_accuracy: 1[ŷ_i = y_i] · n / (K · n_{y_i});
    - macro_f1: 1[ŷ_i = y_i] · 2n / (K · D_{y_i}), D_k = 2TP_k + FP_k + FN_k;
    - roc_auc: for a positive i, (#{negatives j: s_j < s_i} + ½ #{s_j = s_i}) / n_neg
      · n / n_pos; 0 for negatives;
    - log_loss: −log clip(p_{i,y_i}, ε, 1 − ε), ε the float64 machine epsilon;
    - mae: |e_i|;  rmse: e_i², with ``from_mean = sqrt``.

    Exact decomposition under resampling for accuracy, log loss, MAE and MSE; the
    others hold the class weights / denominators fixed at the full sample (see the
    module docstring).

    Examples
    --------
    >>> r = score_predictions("accuracy", ["a", "b", "b"], ["a", "b", "a"])
    >>> round(r.score, 4), r.outcomes.tolist()
    (0.6667, [1.0, 1.0, 0.0])
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=5)
    >>> r = score_predictions("rmse", y, y + 1.0)
    >>> r.score, get_metric("rmse").orient(r.score)
    (1.0, -1.0)
    """
    metric = get_metric(metric_name)
    a, b = _score_predictions_iv(metric, y_true, y_pred, classes)
    outcomes = _OUTCOMES[metric.name](a, b)
    outcomes.flags.writeable = False
    return MetricResult(score=metric.within_range(metric.from_mean(outcomes.mean())), outcomes=outcomes)
