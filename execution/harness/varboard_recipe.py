"""Helpers for recipes: ``from varboard_recipe import seed_everything, rng``.

This module is copied next to the recipe in the sandbox and imports nothing from the
varboard project. It works with or without torch installed.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["Inputs", "seed_everything", "rng", "torch_generator", "label_indices", "from_proba", "align_proba"]


@dataclass
class Inputs:
    """Rows handed to a recipe.

    Attributes
    ----------
    X : ndarray, shape (n, n_features) of float, or (n,) of str for text tasks
    y : ndarray, shape (n,), or None for the rows to predict
    ids : ndarray of str, shape (n,)
    feature_names : list of str
    classes : ndarray, shape (n_classes,)
        Class labels in the order of the probability columns (empty for regression).
    task : str
        "classification" or "regression".
    prediction_kind : str
        What the challenge's metric scores: "label" (one class label per row), "proba"
        (an (n, n_classes) array of probabilities, columns in the order of `classes`)
        or "value" (one number per row).
    """

    X: np.ndarray
    y: np.ndarray | None
    ids: np.ndarray
    feature_names: list
    classes: np.ndarray
    task: str = "classification"
    prediction_kind: str = "label"

    def __len__(self) -> int:
        return len(self.X)


def seed_everything(seeds: dict, source: str = "init") -> int:
    """Seed Python's `random`, numpy's global state and torch (CPU and CUDA) from one source.

    Also makes torch deterministic where it can: ``use_deterministic_algorithms(True,
    warn_only=True)``, ``cudnn.deterministic = True``, ``cudnn.benchmark = False``, and
    ``CUBLAS_WORKSPACE_CONFIG`` (the sandbox sets it before torch starts). torch is
    seeded only if the recipe has imported it, so call this after ``import torch``.
    The harness calls it with the ``init`` seed before every ``fit_predict``.

    Returns the seed used.
    """
    seed = int(seeds[source])
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    return seed


def rng(seeds: dict, source: str) -> np.random.Generator:
    """A numpy Generator for one source of variation, e.g. ``rng(seeds, "data_order")``."""
    if source not in seeds:
        raise KeyError(f"unknown seed source {source!r}; available: {', '.join(seeds)}")
    return np.random.default_rng(int(seeds[source]))


def torch_generator(seeds: dict, source: str, device: str = "cpu"):
    """A seeded ``torch.Generator`` (for ``DataLoader(generator=...)``, ``torch.randperm``)."""
    import torch

    return torch.Generator(device=device).manual_seed(int(seeds[source]))


def label_indices(inputs: Inputs) -> np.ndarray:
    """``inputs.y`` as integer positions in ``inputs.classes`` (for torch losses)."""
    if inputs.y is None:  # numpy would fail with a TypeError comparing None
        raise TypeError("`inputs.y` is None: the rows to predict have no labels")
    classes = np.asarray(inputs.classes)
    order = np.argsort(classes)
    pos = np.searchsorted(classes, inputs.y, sorter=order)
    pos = np.clip(pos, 0, len(classes) - 1)
    idx = order[pos]
    if not np.all(classes[idx] == inputs.y):
        raise ValueError("some labels are not among inputs.classes")
    return idx.astype(np.int64)


def from_proba(proba, inputs: Inputs) -> np.ndarray:
    """What to return for `inputs` given class probabilities of shape (n, n_classes).

    The probabilities themselves when the challenge scores probabilities, else the most
    probable class label of each row.
    """
    if hasattr(proba, "detach"):
        proba = proba.detach().cpu().numpy()
    proba = np.asarray(proba, dtype=np.float64)
    if inputs.prediction_kind == "proba":
        return proba
    return np.asarray(inputs.classes)[np.argmax(proba, axis=1)]


def align_proba(proba, model_classes, inputs: Inputs) -> np.ndarray:
    """Reorder probability columns from a model's class order to ``inputs.classes``.

    E.g. scikit-learn's ``predict_proba`` follows ``model.classes_`` (the sorted classes
    seen in training). Classes the model never saw get probability 0.
    """
    proba = np.asarray(proba, dtype=np.float64)
    position = {c: j for j, c in enumerate(np.asarray(inputs.classes).tolist())}
    out = np.zeros((len(proba), len(position)))
    for j, c in enumerate(np.asarray(model_classes).tolist()):
        out[:, position[c]] = proba[:, j]
    return out
