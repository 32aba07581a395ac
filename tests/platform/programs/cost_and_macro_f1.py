"""A host's scoring program for the 3-class test challenge of tests/platform/test_scoring_programs.py.

``examples/scoring/macro_f1_and_cost.py`` adapted: its labels are cat, dog and fox, and ``cost`` (which
decomposes into per-row outcomes) is marked primary, so it ranks the board; ``macro_f1`` (a plain number:
it does not decompose) is secondary.
"""

import numpy as np

METRICS = [
    {"name": "macro_f1", "label": "Macro F1", "higher_is_better": True},
    {"name": "cost", "label": "Cost-weighted error", "higher_is_better": False, "primary": True},
]

COSTS = {("cat", "fox"): 5.0, ("fox", "cat"): 5.0}


def macro_f1(truth, predicted):
    f1s = []
    for label in np.unique(truth):
        tp = np.sum((predicted == label) & (truth == label))
        fp = np.sum((predicted == label) & (truth != label))
        fn = np.sum((predicted != label) & (truth == label))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(f1s))


def score(y_true, y_pred):
    truth = y_true["label"].astype(str).to_numpy()
    predicted = y_pred["prediction"].astype(str).to_numpy()
    costs = np.array([0.0 if t == p else COSTS.get((t, p), 1.0) for t, p in zip(truth, predicted)])
    return {"macro_f1": macro_f1(truth, predicted), "cost": {"score": float(costs.mean()), "outcomes": costs}}
