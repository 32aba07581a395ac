"""The pool of rows a challenge's recipe runs draw from, as plain numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RecipeData"]


def _plain(arr, name: str) -> np.ndarray:
    """An array np.load can read back without pickle (object columns become str/float)."""
    arr = np.asarray(arr)
    if arr.dtype == object:
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            return arr.astype(str)
    if arr.dtype.kind not in "biufU":
        raise ValueError(f"`{name}` has unsupported dtype {arr.dtype}")
    return arr


@dataclass(frozen=True, eq=False)
class RecipeData:
    """The pool a challenge's splits index into.

    Attributes
    ----------
    X : ndarray, shape (n, n_features) of numbers, or (n,) of str for text
    y : ndarray, shape (n,)
        Labels (classification) or targets (regression) of every pool row.
    ids : ndarray, shape (n,)
    feature_names : list of str
    classes : list
        Class labels in the order of probability columns; empty for regression.
    task : {"classification", "regression"}
    """

    X: np.ndarray
    y: np.ndarray
    ids: np.ndarray
    feature_names: list
    classes: list
    task: str = "classification"

    def __post_init__(self):
        X, y, ids = _plain(self.X, "X"), _plain(self.y, "y"), _plain(self.ids, "ids")
        if X.ndim not in (1, 2) or len(X) < 2:
            raise ValueError(f"`X` must be a 1-d (text) or 2-d array of at least 2 rows, got shape {X.shape}")
        if y.shape != (len(X),) or ids.shape != (len(X),):
            raise ValueError(
                f"`y` and `ids` must have one entry per row of X ({len(X)}), got {y.shape} and {ids.shape}"
            )
        if self.task not in ("classification", "regression"):
            raise ValueError(f"`task` must be 'classification' or 'regression', got {self.task!r}")
        classes = list(self.classes)
        if self.task == "classification":
            if len(classes) < 2:
                raise ValueError("`classes` must list at least 2 classes for a classification task")
            unknown = np.setdiff1d(y, np.asarray(classes))
            if len(unknown):
                raise ValueError(f"`y` holds {len(unknown)} value(s) not in `classes`, e.g. {unknown[0]!r}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "feature_names", [str(f) for f in self.feature_names])
        object.__setattr__(self, "classes", classes)
