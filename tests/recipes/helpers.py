"""Plain helpers of the recipe tests (no pytest, so that a driver run as another uid can
import them): the digits data, the seed plan, an accuracy metric, running a recipe file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.seeds import SOURCES, seed_record
from evaluation.splits import out_of_bootstrap_split
from execution.recipe_data import RecipeData
from execution.run import execute_recipe_run
from execution.sandbox import Limits

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "examples" / "recipes"
HOSTILE = ROOT / "examples" / "hostile"
MASTER_SEED = 2024


def load_digits_data() -> RecipeData:
    from sklearn.datasets import load_digits

    d = load_digits()
    return RecipeData(
        X=d.data,
        y=d.target,
        ids=np.array([f"d{i}" for i in range(len(d.target))]),
        feature_names=[f"pixel_{i}" for i in range(64)],
        classes=list(range(10)),
        task="classification",
    )


def accuracy(y_true, y_pred):
    """Accuracy and per-example correctness, the metric signature the runner expects."""
    outcomes = (np.asarray(y_true) == np.asarray(y_pred)).astype(float)
    return float(outcomes.mean()), outcomes


def proba_accuracy(y_true, proba, classes=tuple(range(10))):
    return accuracy(y_true, np.asarray(classes)[np.argmax(proba, axis=1)])


def plan(data: RecipeData, run_index: int, randomize=SOURCES):
    """Run ``run_index``'s seeds and split: a fixed random 70 % of the rows are public, the rest hidden."""
    seeds = seed_record(MASTER_SEED, run_index, randomize)
    stratify = data.y if data.task == "classification" else None
    rows = np.random.default_rng(MASTER_SEED).permutation(len(data.y))
    n_public = int(len(data.y) * 0.7)
    return seeds, out_of_bootstrap_split(
        np.sort(rows[:n_public]), np.sort(rows[n_public:]), seeds["split"], stratify=stratify
    )


def run_file(
    path: Path,
    data: RecipeData,
    *,
    run_index: int = 0,
    limits: Limits | None = None,
    metric=accuracy,
    prediction_kind: str = "label",
    **kwargs,
):
    seeds, split = plan(data, run_index)
    return execute_recipe_run(
        recipe_source=path.read_text(),
        data=data,
        split=split,
        seeds=seeds,
        metric=metric,
        prediction_kind=prediction_kind,
        limits=limits or Limits(wall_time_s=120),
        **kwargs,
    )
