"""Logistic regression (scikit-learn) on standardized features.

Deterministic given the seeds: lbfgs is deterministic and `random_state` comes from the
run's ``init`` seed. Works on any numeric-feature classification challenge.
"""

from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from varboard_recipe import align_proba, from_proba

HYPERPARAMETERS = {"C": 1.0, "max_iter": 200}
SEARCH_SPACE = {"C": {"type": "loguniform", "low": 1e-3, "high": 1e2}}


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    model = make_pipeline(
        StandardScaler(),
        LogisticRegression(
            C=float(hyperparameters["C"]), max_iter=int(hyperparameters["max_iter"]), random_state=seeds["init"]
        ),
    )
    model.fit(train.X, train.y)
    proba = align_proba(model.predict_proba(test_inputs.X), model.classes_, test_inputs)
    return from_proba(proba, test_inputs)
