"""How far one test row's prediction can move a board's score: the least margin the Ladder needs.

Pure numpy, no Django. Blum & Hardt (2015) analyse the Ladder for a loss bounded in [0, 1] per row, so that one
row moves a score on n rows by at most 1/n: while that is below the margin η, a submission that changes one row's
prediction cannot beat the best release by more than η and releases nothing. That holds for an accuracy; other
metrics weigh one row more (balanced accuracy weighs a row of a rare class by 1/(K n_c), log loss counts up to
-log(eps) per row) or without bound (MAE, RMSE). :func:`largest_row_move` gives the bound per metric, so the
board can raise η to it (``leaderboard.services.boards.ladder_margin``).

Twice the move, not the move: a release is the score rounded to η's grid (Blum & Hardt's Algorithm 1 compares
the next score with that rounded release), so a file may score up to η/2 better than its own release, and a
probe gaining more than η/2 on it beats the release by more than η. A baseline of uniform rows on a log-loss
board (a label-free score, log K a row) sat 0.49 η off the grid and, at η = the move, every right probe was
released (20 of 20 labels; leaks8/ladder9). With η ≥ 2 x the move a probe gains at most η/2 and releases nothing.

References
----------
A. Blum & M. Hardt (2015), "The Ladder: A Reliable Leaderboard for Machine Learning Competitions", ICML.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.metrics import get_metric

__all__ = ["ROW_MOVE_FACTOR", "UNBOUNDED_PER_ROW", "ladder_margin_for", "largest_row_move", "resampled_row_move"]

#: The metrics one row's prediction moves without bound: the Ladder protects nothing on them (a challenge refuses it,
#: ``leaderboard.services.challenges.check_ladder_metric``).
UNBOUNDED_PER_ROW = ("mae", "rmse")

#: η is at least this many times the largest one-row move: a file may score up to η/2 past its own release (the
#: module's docstring), so a probe must gain no more than η/2.
ROW_MOVE_FACTOR = 2.0

#: The float64 machine epsilon ``evaluation.metrics`` clips probabilities to (as scikit-learn).
_EPS = float(np.finfo(np.float64).eps)


def largest_row_move(metric_name: str, public_labels: Any, *, classes: Sequence[Any] | None = None) -> float:
    """The largest change one row's prediction can make to ``metric_name`` scored on ``public_labels``.

    Parameters
    ----------
    metric_name : str
        A key of :data:`evaluation.metrics.METRICS`.
    public_labels : array_like, shape (n,)
        The true labels of the rows the score is computed on (the public board's), compared as strings.
    classes : sequence, optional
        Every class a prediction may name (the challenge's). Macro F1 counts the classes present in the labels or
        the predictions, so predicting a class absent from ``public_labels`` changes its number of classes.

    Returns
    -------
    float
        With n rows, K classes present, n_c rows of class c and m = min n_c:

        - accuracy: 1/n; balanced accuracy: 1/(K m); ROC AUC: 1/min(n_pos, n_neg) (1 without two classes);
        - log loss: (-log(eps) + log(1 - eps))/n, the clipped outcome's range (eps the float64 epsilon);
        - macro F1: (2/(m+1) + 1/(2m+1))/K, or 2/((m+1)K) + 1/(K+1) where ``classes`` holds a class absent from
          the labels (see Notes); at most 1;
        - MAE, RMSE: ``math.inf`` (one row moves them without bound).

        Each is attained or nearly so (macro F1: attained without absent classes), except ROC AUC with one class.

    Raises
    ------
    ValueError
        An unknown metric, or no labels.

    Notes
    -----
    Macro F1 is (1/K') Σ_k F1_k, F1_k = 2TP_k/(2TP_k + FP_k + FN_k) = 2TP_k/(n_k + p_k) (p_k: rows predicted k),
    K' the classes in the labels or predictions. Moving one row's prediction from a to b touches p_a, p_b and at most
    one of TP_a, TP_b. A class moved out of or into *as the row's true class* changes F1_k by at most 2/(n_k+1)
    (``2(n+p-TP)/((n+p)(n+p∓1))`` with TP >= 1 out, TP >= 0 in); as a wrong prediction by at most 1/(2n_k+1)
    (``2TP/((n+p)(n+p±1))`` with TP <= min(n_k, p)). A class absent from the labels has F1 = 0. With K' unchanged the
    two changes add at most (2/(m+1) + 1/(2m+1))/K' <= that over K. K' changes only when b (or a) is absent from the
    labels: then one present class moves, by at most 2/(m+1), and the score S/K' moves by at most
    |ΔS|/K + S/(K'(K'±1)) <= 2/((m+1)K) + 1/(K+1) (S <= K).

    Examples
    --------
    >>> largest_row_move("accuracy", ["a", "b", "b", "a"]), largest_row_move("balanced_accuracy", ["a", "b", "b"])
    (0.25, 0.5)
    >>> round(largest_row_move("log_loss", ["a", "b"] * 75), 4), largest_row_move("rmse", [1.0, 2.0])
    (0.2403, inf)
    """
    metric = get_metric(metric_name)
    if metric.name in UNBOUNDED_PER_ROW:
        return math.inf
    labels = np.asarray(public_labels).astype(str).ravel()
    if labels.size == 0:
        raise ValueError("no labels: the score of no row cannot move")
    counts = np.unique(labels, return_counts=True)[1]
    n, k, smallest = labels.size, counts.size, int(counts.min())
    if metric.name == "log_loss":
        return (-math.log(_EPS) + math.log1p(-_EPS)) / n
    if metric.name == "macro_f1":
        return min(1.0, _macro_f1_move(k, smallest, absent=_absent_classes(labels, classes)))
    if metric.name == "roc_auc":  # binary: with another number of classes it scores nothing, and moves within [0, 1]
        return 1 / smallest if k == 2 else 1.0
    return 1 / n if metric.name == "accuracy" else 1 / (k * smallest)


def resampled_row_move(
    metric_name: str, public_labels: Any, draws: Sequence[Any], *, classes: Sequence[Any] | None = None
) -> float:
    """The largest change one row's prediction can make to a score that is the mean of some runs' scores, run i
    scored on ``public_labels[draws[i]]`` (a resample: rows repeat).

    A row drawn c times in run i counts c times there: changing its prediction changes c rows of that run's resample,
    so it moves run i's score by at most c x :func:`largest_row_move` of the resample's labels (one row at a time),
    exactly c/n for an accuracy. A recipe entry's score is the mean of the runs it scored, and the recipe chooses
    them (it reads its seeds and may fail the others, or be cancelled after one): the mean over any subset of runs
    moves by at most the largest run's move, which the one run alone reaches.

    Parameters
    ----------
    metric_name : str
    public_labels : array_like, shape (n,)
    draws : sequence of array_like of int
        Each run's resample as positions in ``public_labels`` (an empty one: the run scores no public row).
    classes : sequence, optional
        As :func:`largest_row_move`.

    Returns
    -------
    float
        max over runs i and rows r of c_i(r) x ``largest_row_move(metric_name, public_labels[draws[i]])``; 0 without
        a draw.

    >>> resampled_row_move("accuracy", ["a", "b", "a", "b"], [[0, 0, 0, 1], [1, 2, 3, 0]])
    0.75
    """
    labels = np.asarray(public_labels).astype(str).ravel()
    move = 0.0
    for draw in draws:
        rows = np.asarray(draw, dtype=np.int64).ravel()
        if rows.size:
            repeats = int(np.bincount(rows).max())
            move = max(move, repeats * largest_row_move(metric_name, labels[rows], classes=classes))
    return move


def ladder_margin_for(
    eta: float,
    metric_name: str,
    public_labels: Any,
    *,
    classes: Sequence[Any] | None = None,
    draws: Sequence[Any] = (),
) -> float:
    """The η the Ladder releases and rounds with: the host's ``eta``, raised to ``ROW_MOVE_FACTOR`` x the largest move
    of one row, :func:`largest_row_move` or, where runs are scored on resamples ``draws`` of the public rows (recipe
    runs out of bootstrap), :func:`resampled_row_move`, where that is more (``math.inf`` for MAE and RMSE: each
    person's first score alone is released).

    >>> round(ladder_margin_for(0.01, "accuracy", ["a", "b"] * 75), 4), round(ladder_margin_for(0.01, "log_loss", ["a"] * 150), 4)
    (0.0133, 0.4806)
    >>> ladder_margin_for(0.01, "accuracy", ["a", "b"] * 500)
    0.01
    >>> round(ladder_margin_for(0.01, "accuracy", ["a", "b"] * 75, draws=[[0, 0, 0] + list(range(3, 150))]), 4)
    0.04
    """
    move = largest_row_move(metric_name, public_labels, classes=classes)
    if draws and math.isfinite(move):
        move = max(move, resampled_row_move(metric_name, public_labels, draws, classes=classes))
    return max(eta, ROW_MOVE_FACTOR * move)


def _macro_f1_move(k: int, smallest: int, *, absent: bool) -> float:
    """The bound of :func:`largest_row_move`'s Notes: K classes in the labels, the rarest with ``smallest`` rows."""
    if absent:
        return 2 / ((smallest + 1) * k) + 1 / (k + 1)
    return (2 / (smallest + 1) + 1 / (2 * smallest + 1)) / k


def _absent_classes(labels: np.ndarray, classes: Sequence[Any] | None) -> bool:
    """Whether a prediction may name a class none of ``labels`` has."""
    return classes is not None and bool(set(map(str, classes)) - set(labels.tolist()))
