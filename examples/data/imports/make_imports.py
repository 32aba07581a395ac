"""Write the demo's imported results: four classifiers' per-instance outcomes on digits.

Run from the repository root:  .venv/bin/python examples/data/imports/make_imports.py

Deterministic (fixed seeds, scikit-learn's bundled digits, no download). The files stand for
results produced elsewhere, in the three formats varboard imports:

* ``digits_models.csv``: a generic CSV (``model,instance_id,correct``) with two models;
* ``samples_svm.jsonl``: per-sample lines as lm-evaluation-harness logs them (``doc_id``,
  ``target``, ``resps``, ``acc``) for one model;
* ``solved_tree.json``: the ids one model got right, as SWE-bench reports resolved
  instances, with ``instances.txt`` listing every instance id.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

HERE = Path(__file__).resolve().parent


def main() -> None:
    X, y = load_digits(return_X_y=True)
    ids = np.array([f"digit-{i:04d}" for i in range(len(y))])
    X_train, X_test, y_train, y_test, _, id_test = train_test_split(
        X, y, ids, test_size=0.3, stratify=y, random_state=7
    )
    models = {
        "Random forest (200 trees)": RandomForestClassifier(n_estimators=200, random_state=0),
        "Gaussian naive Bayes": GaussianNB(),
        "SVM, RBF kernel": SVC(gamma=0.001, random_state=0),
        "Decision tree": DecisionTreeClassifier(random_state=0),
    }
    correct = {name: (m.fit(X_train, y_train).predict(X_test) == y_test) for name, m in models.items()}
    (HERE / "instances.txt").write_text("\n".join(id_test) + "\n")
    with (HERE / "digits_models.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "instance_id", "correct"])
        for name in ("Random forest (200 trees)", "Gaussian naive Bayes"):
            writer.writerows((name, i, int(c)) for i, c in zip(id_test, correct[name]))
    svm = models["SVM, RBF kernel"].predict(X_test)
    with (HERE / "samples_svm.jsonl").open("w") as handle:
        for doc, target, pred in zip(id_test, y_test, svm):
            handle.write(
                json.dumps(
                    {
                        "doc_id": doc,
                        "target": str(target),
                        "resps": [[str(pred)]],
                        "filtered_resps": [str(pred)],
                        "acc": float(pred == target),
                    }
                )
                + "\n"
            )
    solved = [i for i, c in zip(id_test, correct["Decision tree"]) if c]
    (HERE / "solved_tree.json").write_text(json.dumps({"resolved": solved}, indent=0) + "\n")
    print({name: round(float(c.mean()), 4) for name, c in correct.items()})


if __name__ == "__main__":
    main()
