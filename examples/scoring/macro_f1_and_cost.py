"""A sample host scoring program (docs/scoring-programs.md): two metrics on a 3-class sentiment task.

- ``macro_f1``: the macro-averaged F1 of the predicted labels, a secondary metric. It does
  not decompose into per-row terms, so it returns a plain number: the board shows its
  interval (over an entry's files) but no paired statistics (test bootstrap, McNemar) for it,
  and it cannot be the primary metric.
- ``cost``: a cost-weighted error, the mean over rows of the cost of predicting
  ``prediction`` when the truth is ``label`` (confusing negative and positive costs 5,
  any other mistake 1), marked primary: it ranks the board. It decomposes, so it returns
  its per-row outcomes too, on which the board's paired statistics are built.

``y_true`` has the dataset's ``label`` column, ``y_pred`` the submission's ``prediction``
column; both are indexed by the id column, rows in the same order. Only numpy and pandas
are used (scikit-learn would do as well: it is installed in the sandbox).
"""

import numpy as np

METRICS = [
    {"name": "macro_f1", "label": "Macro F1", "higher_is_better": True},
    {"name": "cost", "label": "Cost-weighted error", "higher_is_better": False, "primary": True},
]

COSTS = {("negative", "positive"): 5.0, ("positive", "negative"): 5.0}


def macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    f1s = []
    for label in np.unique(truth):
        tp = np.sum((predicted == label) & (truth == label))
        fp = np.sum((predicted == label) & (truth != label))
        fn = np.sum((predicted != label) & (truth == label))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(f1s))


def score(y_true, y_pred):
    truth = y_true["label"].to_numpy()
    predicted = y_pred["prediction"].to_numpy()
    costs = np.array([0.0 if t == p else COSTS.get((t, p), 1.0) for t, p in zip(truth, predicted)])
    return {
        "macro_f1": macro_f1(truth, predicted),
        "cost": {"score": float(costs.mean()), "outcomes": costs},
    }
