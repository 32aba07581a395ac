"""``largest_row_move`` against brute force: every single-row change of a prediction on small random data sets.

The bound must hold for every change (else the Ladder's raised η lets a single-row probe through) and, for accuracy,
balanced accuracy, ROC AUC and log loss, be attained or nearly so (else η is raised more than needed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.metrics import score_predictions
from evaluation.row_moves import largest_row_move, resampled_row_move

EPS = np.finfo(np.float64).eps


def _label_sets(seed: int, count: int, *, binary: bool = False):
    """``count`` random (labels, classes) pairs of 3 to 8 rows, each class of ``classes`` in the labels."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        k = 2 if binary else int(rng.integers(2, 5))
        classes = [str(c) for c in range(k)]
        labels = rng.choice(classes, size=int(rng.integers(max(3, k), 9)))
        if len(set(labels)) == k:
            out.append((labels, classes))
    return out


def _largest_label_move(metric: str, labels, classes, predicted_classes, rng) -> float:
    """The largest score change one row's prediction makes (over every class predicted for it), from random predictions
    of the other rows."""
    best = 0.0
    for _ in range(6):
        pred = rng.choice(predicted_classes, size=labels.size)
        for row in range(labels.size):
            scores = []
            for c in predicted_classes:
                probe = pred.copy()
                probe[row] = c
                scores.append(score_predictions(metric, labels, probe, classes=predicted_classes).score)
            best = max(best, max(scores) - min(scores))  # any two of them: one row's change from the one to the other
    return best


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy"])
def test_a_label_metric_s_bound_holds_and_is_attained(metric):
    rng = np.random.default_rng(1)
    for labels, classes in _label_sets(0, 40):
        bound = largest_row_move(metric, labels)
        moved = _largest_label_move(metric, labels, classes, classes, rng)
        assert moved <= bound + 1e-12
        # attained: the row of the rarest class (accuracy: any row) from wrong to right, whatever the rest
        assert moved >= bound - 1e-12, (labels, moved, bound)


def test_macro_f1_s_bound_holds_with_and_without_a_class_absent_from_the_labels():
    rng = np.random.default_rng(2)
    ratios = []
    for labels, classes in _label_sets(3, 40):
        for predicted in (classes, [*classes, "absent"]):
            bound = largest_row_move("macro_f1", labels, classes=predicted)
            moved = _largest_label_move("macro_f1", labels, classes, predicted, rng)
            assert moved <= bound + 1e-12, (labels, predicted, moved, bound)
            ratios.append(moved / bound)
    assert max(ratios) > 0.7  # a bound, not a guess: some random data set comes near it


def test_macro_f1_s_bound_without_absent_classes_is_attained():
    """The rarest class's only right row moved to another class of one row predicted perfectly: (2/(m+1) + 1/(2m+1))/K
    (F1_a from 1 to 0, F1_b from 1 to 2/3)."""
    labels = np.array(["a", "b", "c", "c", "c"])
    pred = labels.copy()
    probe = pred.copy()
    probe[0] = "b"
    moved = score_predictions("macro_f1", labels, pred).score - score_predictions("macro_f1", labels, probe).score
    assert moved == pytest.approx(largest_row_move("macro_f1", labels), abs=1e-12)


def test_roc_auc_s_bound_holds_and_is_attained():
    rng = np.random.default_rng(4)
    for labels, _ in _label_sets(5, 40, binary=True):
        bound = largest_row_move("roc_auc", labels)
        moved = 0.0
        for _ in range(4):
            score = rng.integers(0, 4, size=labels.size).astype(float)  # ties included
            for row in range(labels.size):
                scores = []
                for value in (-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0):
                    probe = score.copy()
                    probe[row] = value
                    scores.append(score_predictions("roc_auc", labels, probe, classes=["0", "1"]).score)
                moved = max(moved, max(scores) - min(scores))
        assert moved <= bound + 1e-12
        assert moved >= bound - 1e-12, (labels, moved, bound)


def test_log_loss_s_bound_holds_and_is_attained():
    rng = np.random.default_rng(6)
    for labels, classes in _label_sets(7, 25):
        k = len(classes)
        bound = largest_row_move("log_loss", labels)
        candidates = [np.eye(k)[c] for c in range(k)] + [np.full(k, 1 / k), rng.dirichlet(np.ones(k))]
        moved = 0.0
        for _ in range(3):
            proba = np.array([candidates[i] for i in rng.integers(0, len(candidates), size=labels.size)])
            for row in range(labels.size):
                scores = []
                for candidate in candidates:
                    probe = proba.copy()
                    probe[row] = candidate
                    scores.append(score_predictions("log_loss", labels, probe, classes=classes).score)
                moved = max(moved, max(scores) - min(scores))
        assert moved <= bound * (1 + 1e-12)
        assert moved >= bound * (1 - 1e-9), (labels, moved, bound)  # one-hot on the truth against one-hot off it
    assert largest_row_move("log_loss", ["a", "b"] * 75) == pytest.approx(-math.log(EPS) / 150, rel=1e-12)


@pytest.mark.parametrize("metric", ["mae", "rmse"])
def test_an_error_s_row_moves_it_without_bound(metric):
    assert largest_row_move(metric, [0.5, 1.5, 2.0]) == math.inf
    truth = np.array([0.5, 1.5, 2.0])
    far = score_predictions(metric, truth, [0.5, 1.5, 1e12]).score - score_predictions(metric, truth, truth).score
    assert far > 1e11  # one row, as far as its prediction goes


def test_no_labels_are_refused():
    with pytest.raises(ValueError, match="no labels"):
        largest_row_move("accuracy", [])


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "macro_f1"])
def test_a_resampled_row_s_bound_holds_for_the_runs_a_recipe_keeps(metric):
    """A row drawn c times in run i's resample moves that run's score by c rows' worth; the score of any subset of runs
    (their mean) moves by at most ``resampled_row_move``, attained by one run alone for an accuracy."""
    rng = np.random.default_rng(11)
    for labels, classes in _label_sets(7, 30):
        draws = [rng.integers(0, labels.size, size=labels.size) for _ in range(3)]
        bound = resampled_row_move(metric, labels, draws, classes=classes)
        largest = 0.0
        for _ in range(4):
            pred = rng.choice(classes, size=labels.size)
            for row in range(labels.size):
                for c in classes:
                    moved = pred.copy()
                    moved[row] = c
                    for draw in draws:
                        a = score_predictions(metric, labels[draw], pred[draw], classes=classes).score
                        b = score_predictions(metric, labels[draw], moved[draw], classes=classes).score
                        largest = max(largest, abs(a - b))
        assert largest <= bound + 1e-12, (labels, draws)
        if metric == "accuracy":
            assert bound == pytest.approx(max(np.bincount(d).max() for d in draws) / labels.size)
            assert largest == pytest.approx(bound)


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "macro_f1"])
def test_eta_tells_the_public_class_counts_and_nothing_of_which_row_has_which_label(metric):
    """The raised η is published (the board's note, ``feedback.margin``): it may tell the public part's class counts
    (balanced accuracy's 1/(K min n_c)), an aggregate, but no row's label. So it is the same for every labelling of the
    public rows with those counts, recipe runs' resamples included where they are drawn within classes (a challenge's
    default, ``stratify``): which rows a class holds moves which rows repeat, not how often the most drawn one does.
    (Unstratified, a resample's class counts depend on which rows it drew, and η on balanced accuracy or macro F1 with
    them: 0.27 to 1.0 over labellings here, a function of the labels and of the secret public cut together.)"""
    from evaluation.boards import split_with_parts

    rng = np.random.default_rng(3)
    train = rng.choice(list("abc"), size=40)
    public = np.array(list("a" * 9 + "b" * 5 + "c" * 12))

    def margin(labels) -> float:
        pool = np.concatenate([train, labels, np.array(list("abc" * 4))])
        parts = [np.arange(40, 40 + labels.size), np.arange(40 + labels.size, pool.size)]
        draws = []
        for seed in range(8):
            test = split_with_parts(np.arange(40), parts, seed, stratify=pool).test
            draws.append(test[test < 40 + labels.size] - 40)
        return resampled_row_move(metric, labels, draws, classes=list("abc"))

    first = margin(public)
    assert first > largest_row_move(metric, public, classes=list("abc"))  # the resamples raise it
    for _ in range(5):
        assert margin(rng.permutation(public)) == pytest.approx(first, abs=0, rel=1e-12)
