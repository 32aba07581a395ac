"""Hostile: scores by looking labels up instead of learning.

The contestant downloaded the public training rows (train.csv: ids, features, labels) and
ships them in ``hyperparameters["by_id"]`` (id -> label) and ``hyperparameters["by_features"]``
(the features, joined as text -> label). Every row to predict is looked up by its id, then by
its features; a row found in neither gets the majority label.

Measured before the fix: accuracy 1.0 on every run, because the out-of-bootstrap test rows
were drawn from the public rows. Now the test rows are hidden rows, whose labels were never
public, and ids are row positions: the lookup finds only the validation rows (public) and
the test score falls to what the majority label gets. The recipe prints how many rows each
table matched, so the test can see which rows it found.
"""

import numpy as np


def _key(row) -> str:
    return " ".join(f"{float(value):g}" for value in np.atleast_1d(row))


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    by_id = hyperparameters.get("by_id", {})
    by_features = hyperparameters.get("by_features", {})
    values, counts = np.unique(train.y, return_counts=True)
    majority = values[np.argmax(counts)]
    predictions, id_hits, feature_hits = [], 0, 0
    for row_id, row in zip(test_inputs.ids, test_inputs.X):
        label = by_id.get(str(row_id))
        id_hits += label is not None
        if label is None:
            label = by_features.get(_key(row))
            feature_hits += label is not None
        predictions.append(label if label is not None else majority)
    print(f"LOOKUP ids matched {id_hits}, features matched {feature_hits} of {len(test_inputs.X)} rows")
    return np.asarray(predictions, dtype=train.y.dtype)
