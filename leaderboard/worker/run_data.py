"""The data a challenge's recipe runs draw from, and run i's split (worker side).

Run i of every submission of a challenge gets the same seed record and split
(docs/DESIGN.md §4), so comparisons between recipe entries are paired. A worker builds a
challenge's pool once per dataset version (the arrays are read-only), not once per run; the
web process never loads it.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from evaluation.boards import split_with_parts
from evaluation.splits import Split, fixed_split
from execution.recipe_data import RecipeData

from ..choices import SplitScheme, TestRows
from ..models import Challenge, Dataset, Phase
from ..services.boards import board_public_mask
from ..services.dataset_files import dataset_frame, dataset_hidden_labels
from ..services.errors import PlatformError


def recipe_data(*, challenge: Challenge) -> tuple[RecipeData, np.ndarray, np.ndarray]:
    """The pool the splits index into: (pool, public row indices, hidden row indices).

    The pool holds the public training rows and the hidden test rows with their labels; only
    the inputs of hidden rows ever reach the sandbox (the runner scores outside it).
    """
    dataset = challenge.dataset
    return _recipe_data_cached(dataset.pk, dataset.version)


@functools.lru_cache(maxsize=8)
def _recipe_data_cached(dataset_id: int, version: str):
    data, public_idx, hidden_idx = _build_recipe_data(Dataset.objects.get(pk=dataset_id))
    for array in (data.X, data.y, data.ids, public_idx, hidden_idx):
        array.setflags(write=False)
    return data, public_idx, hidden_idx


def _features(pool: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Numbers when every feature cell is numeric, else text (one column, or the columns joined)."""
    features = pool[columns]
    numeric = features.apply(pd.to_numeric, errors="coerce")
    if not numeric.isna().any().any():
        return numeric.to_numpy(dtype=np.float64)
    if len(columns) == 1:
        return features.iloc[:, 0].astype(str).to_numpy(dtype=str)
    return features.astype(str).agg(" ".join, axis=1).to_numpy(dtype=str)


def _build_recipe_data(dataset: Dataset):
    public = dataset_frame(dataset=dataset, part="train")
    hidden = dataset_frame(dataset=dataset, part="test_inputs")
    if not len(hidden):
        raise PlatformError(
            "this challenge's dataset has no hidden test rows, which recipe runs are tested on; "
            "the host must upload test rows"
        )
    hidden[dataset.label_column] = dataset_hidden_labels(dataset=dataset)
    pool = pd.concat([public, hidden], ignore_index=True)
    labels = pool[dataset.label_column]
    y = labels.astype(float).to_numpy() if dataset.task == "regression" else labels.astype(str).to_numpy(dtype=str)
    data = RecipeData(
        X=_features(pool, list(dataset.feature_columns)),
        y=y,
        ids=pool[dataset.id_column].astype(str).to_numpy(dtype=str),
        feature_names=list(dataset.feature_columns),
        classes=list(dataset.classes or []),
        task=dataset.task,
    )
    return data, np.arange(len(public)), np.arange(len(public), len(pool))


def run_split(*, challenge: Challenge, seeds: dict) -> tuple[RecipeData, Split]:
    """The pool and the split of the run whose seed record is ``seeds`` (docs/DESIGN.md §4).

    Out of bootstrap: training and validation rows are resampled from the public rows, test
    rows from the hidden rows: from the public board's part and the private board's part
    separately when the challenge has a private board. Fixed: the public rows (less a
    validation carve-out) train, every hidden row tests.
    """
    data, public_idx, hidden_idx = recipe_data(challenge=challenge)
    if challenge.split_scheme == SplitScheme.FIXED:
        return data, fixed_split(public_idx, hidden_idx, seed=challenge.master_seed)
    stratify = data.y if (challenge.stratify and data.task != "regression") else None
    on_public = board_public_mask(dataset=challenge.dataset)
    parts = [hidden_idx[on_public], hidden_idx[~on_public]]
    return data, split_with_parts(public_idx, parts, seeds["split"], stratify=stratify)


def run_predicted_rows(*, challenge: Challenge) -> np.ndarray:
    """The rows a recipe run predicts as its test rows: every hidden row, each once, whatever the run's resample
    drew (``execution.workspace.build_inputs`` scores the resample from them), so its inputs are the same in
    every run and say nothing of the draws."""
    return recipe_data(challenge=challenge)[2]


def run_test_parts(*, challenge: Challenge, split: Split, phase: Phase | None) -> dict[str, np.ndarray]:
    """Masks over ``split.test`` of the rows on each board (the private one only where the phase scores it)."""
    _, _, hidden_idx = recipe_data(challenge=challenge)
    public = np.isin(split.test, hidden_idx[board_public_mask(dataset=challenge.dataset)])
    parts = {"public": public}
    if phase is None or phase.test_rows != TestRows.PUBLIC:
        parts["private"] = ~public
    return parts
