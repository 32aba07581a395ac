"""Hosts' datasets: check a table and describe it as a :class:`DatasetSpec`.

A host uploads one table (CSV or Parquet, read by :func:`evaluation.io.read.read_table`)
holding an id column, a label column and feature columns, optionally with a
test-marker column that marks the hidden test rows; or three tables that
:func:`evaluation.public_hidden.join_public_hidden` combines into that one shape.
:func:`validate_dataset` checks the table; every problem raises
:class:`~evaluation.io.read.TableError` naming the row, column or value (rows are named
by the DataFrame's index, docs/DESIGN.md §7). The column helpers (:func:`as_text`,
:func:`as_flags`, :func:`require_columns`, :func:`check_ids`,
:func:`regression_labels`) are shared with :mod:`evaluation.public_hidden`. pandas and
numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation.io.read import TableError
from evaluation.io.text import name_row, name_rows, show_value, show_values
from evaluation.metrics import Task, sorted_classes
from evaluation.predictions import MAX_PREDICTION

__all__ = [
    "DatasetSpec",
    "as_flags",
    "as_text",
    "check_ids",
    "regression_labels",
    "require_columns",
    "shuffle_test_rows",
    "validate_dataset",
]


_TASKS = ("classification", "binary", "regression")


@dataclass(frozen=True)
class DatasetSpec:
    """What :func:`validate_dataset` found in a dataset.

    Attributes
    ----------
    id_column, label_column : str
    feature_columns : tuple of str
        In the table's column order (or the order given).
    task : {"classification", "binary", "regression"}
    classes : tuple of str or None
        Classification: the distinct labels as strings, sorted (numerically when every
        label is a number, else as text). None for regression.
    test_column : str or None
        The column marking hidden test rows, if any.
    n_rows : int
    n_test : int or None
        Rows marked as test rows (None without a test column).
    """

    id_column: str
    label_column: str
    feature_columns: tuple[str, ...]
    task: Task
    classes: tuple[str, ...] | None
    test_column: str | None
    n_rows: int
    n_test: int | None


def as_text(series: pd.Series) -> pd.Series:
    """Cell values as stripped strings; missing cells become ``""``.

    Integers print without a decimal point, and so do floats that hold whole numbers
    (a numeric column with a gap is read as float: 7.0 -> "7").
    """
    if pd.api.types.is_bool_dtype(series):
        return series.map(lambda v: "" if pd.isna(v) else str(bool(v)))

    def one(value: Any) -> str:
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            return ""
        if isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer():
            return str(int(value))
        return str(value).strip()

    return series.map(one).astype(object)


_TRUE = {"true", "1", "yes", "t", "y", "1.0"}
_FALSE = {"false", "0", "no", "f", "n", "0.0"}


def as_flags(series: pd.Series, column: str) -> pd.Series:
    """A test-marker column as booleans (true/false, 1/0, yes/no, any case)."""
    text = as_text(series).str.lower()
    bad = ~text.isin(_TRUE | _FALSE)
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        shown = "an empty cell" if text.iloc[i] == "" else show_value(series.iloc[i])
        raise TableError(
            f"the test column {show_value(column)} must hold true/false or 1/0; {name_row(series.index[i])} has {shown}"
        )
    return text.isin(_TRUE)


def require_columns(columns: Sequence[str], wanted: dict[str, str] | list[tuple[str, str]]) -> None:
    """Each ``(role, column)`` must be among `columns`; the message names the first missing."""
    pairs = wanted.items() if isinstance(wanted, dict) else wanted
    for role, column in pairs:
        if column not in columns:
            # one column whose name holds ; or a tab: the file is most likely not comma-separated
            other = next((sep for sep in (";", "\t", "|") if len(columns) == 1 and sep in str(columns[0])), None)
            hint = f" (the file seems separated by {other!r}: save it with commas)" if other else ""
            raise TableError(
                f"there is no {role} column {show_value(column)}; the columns are: "
                f"{show_values(columns, limit=20)}{hint}",
                setting=role.split(" ")[0],
            )


def check_ids(ids: pd.Series, column: str) -> None:
    empty = ids == ""
    if empty.any():
        raise TableError(f"the id column {show_value(column)} is empty at {name_rows(ids.index[empty.to_numpy()])}")
    repeated = ids[ids.duplicated(keep=False)]
    if len(repeated):
        groups = repeated.groupby(repeated, sort=False).groups
        parts = [f"{show_value(i)} at {name_rows(list(rows), limit=3)}" for i, rows in list(groups.items())[:3]]
        more = len(groups) - 3
        raise TableError(
            f"ids must be unique, but the id column {show_value(column)} repeats "
            + "; ".join(parts)
            + (f"; and {more} more repeated ids" if more > 0 else "")
        )


def validate_dataset(
    df: pd.DataFrame,
    *,
    id_column: str,
    label_column: str,
    feature_columns: Sequence[str] | None = None,
    test_column: str | None = None,
    task: Task,
) -> DatasetSpec:
    """Check a host's dataset and describe it.

    Parameters
    ----------
    df : pandas.DataFrame
        The table, e.g. from :func:`read_table` (its index names rows in messages).
    id_column, label_column : str
        Columns holding the example ids (unique, non-empty; compared as text) and the
        labels (no empty cells).
    feature_columns : sequence of str, optional
        Defaults to every other column except the id, label and test columns.
    test_column : str, optional
        A column marking the hidden test rows: true/false, 1/0 or yes/no. At least one
        row must be marked.
    task : {"classification", "binary", "regression"}
        Classification needs at least two classes, binary exactly two; regression
        labels must be finite numbers.

    Returns
    -------
    DatasetSpec

    Raises
    ------
    TableError
        Naming the missing column, the rows with empty or repeated ids (and the ids),
        the rows with empty labels, a non-numeric or non-finite regression label (row
        and value), the wrong number of classes, a bad test-marker value (row and value).
    ValueError
        An unknown `task`.

    Examples
    --------
    >>> df = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 2, 3], "y": [0, 1, 0],
    ...                    "test": [0, 0, 1]})
    >>> spec = validate_dataset(df, id_column="id", label_column="y",
    ...                         test_column="test", task="binary")
    >>> spec.feature_columns, spec.classes, spec.n_test
    (('x',), ('0', '1'), 1)
    """
    if task not in _TASKS:
        raise ValueError(f"task must be one of {', '.join(_TASKS)}; got {task!r}")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    columns, roles = _columns_and_roles(df, id_column, label_column, test_column)
    features = _feature_columns(columns, roles, feature_columns)
    check_ids(as_text(df[id_column]), id_column)
    classes = _check_labels(df[label_column], label_column, task)
    n_test = None
    if test_column is not None:
        n_test = int(as_flags(df[test_column], test_column).sum())
        if n_test == 0:
            raise TableError(f"the test column {show_value(test_column)} marks no row as a test row")

    return DatasetSpec(
        id_column=id_column,
        label_column=label_column,
        feature_columns=features,
        task=task,
        classes=classes,
        test_column=test_column,
        n_rows=len(df),
        n_test=n_test,
    )


def _columns_and_roles(
    df: pd.DataFrame, id_column: str, label_column: str, test_column: str | None
) -> tuple[list[str], dict[str, str]]:
    """The table's column names (distinct) and ``{role: column}``, each role present."""
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})
        raise TableError(f"column names must be distinct; repeated: {show_values(dup)}")
    if len(df) == 0:
        raise TableError("the dataset has no rows")
    roles = {"id": id_column, "label": label_column}
    if test_column is not None:
        roles["test"] = test_column
    require_columns(columns, roles)
    if len(set(roles.values())) != len(roles):
        raise TableError(
            "the id, label and test columns must be different columns; got "
            + ", ".join(f"{role}={show_value(c)}" for role, c in roles.items())
        )
    return columns, roles


def _feature_columns(
    columns: list[str], roles: dict[str, str], feature_columns: Sequence[str] | None
) -> tuple[str, ...]:
    """The feature columns: the ones given (checked) or every column without a role."""
    if feature_columns is None:
        return tuple(c for c in columns if c not in roles.values())
    features = tuple(str(c) for c in feature_columns)
    missing = [c for c in features if c not in columns]
    if missing:
        raise TableError(
            f"feature columns not in the table: {show_values(missing)}; the columns are: "
            f"{show_values(columns, limit=20)}"
        )
    clash = [c for c in features if c in roles.values()]
    if clash:
        raise TableError(f"the id, label or test column cannot also be a feature: {show_values(clash)}")
    if len(set(features)) != len(features):
        dup = sorted({c for c in features if features.count(c) > 1})
        raise TableError(f"feature columns are listed twice: {show_values(dup)}")
    return features


#: The most classes of a classification task. They are stored with the dataset and read with it by every
#: page and check (a million distinct labels took 59 MB each time its row was loaded); beyond, a label is an id.
MAX_CLASSES = 10_000


def _check_labels(labels: pd.Series, label_column: str, task: Task) -> tuple[str, ...] | None:
    """Every row labelled; the classes of a classification task (None for regression)."""
    label_text = as_text(labels)
    empty = label_text == ""
    if empty.any():
        raise TableError(
            f"the label column {show_value(label_column)} is empty at "
            f"{name_rows(labels.index[empty.to_numpy()])}; every row needs a label"
        )
    if task == "regression":
        regression_labels(labels, label_column)
        return None
    distinct = label_text.unique()
    if len(distinct) > MAX_CLASSES:
        raise TableError(
            f"the label column {show_value(label_column)} holds {len(distinct):,} distinct labels; a classification "
            f"task takes at most {MAX_CLASSES:,} classes (for numbers, choose regression)"
        )
    classes = sorted_classes(distinct)
    if len(classes) < 2:
        raise TableError(
            f"the label column {show_value(label_column)} holds a single class "
            f"({show_values(classes)}); classification needs at least two"
        )
    if task == "binary" and len(classes) != 2:
        raise TableError(
            f"a binary task needs exactly two classes; the label column "
            f"{show_value(label_column)} has {len(classes)}: {show_values(classes)}"
        )
    return classes


def regression_labels(labels: pd.Series, column: str) -> pd.Series:
    """Regression labels as float64; the first non-numeric, non-finite or too large one is an error."""
    values = pd.to_numeric(labels, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise TableError(
            f"the label column {show_value(column)} must hold numbers for regression; "
            f"{name_row(labels.index[i])} has {show_value(labels.iloc[i])}"
        )
    values = values.astype(np.float64)
    bad = ~np.isfinite(values.to_numpy())
    if bad.any():
        i = int(np.argmax(bad))
        raise TableError(
            f"the label column {show_value(column)} must hold finite numbers; "
            f"{name_row(labels.index[i])} has {show_value(labels.iloc[i])}"
        )
    # Within the predictions' bound: a squared error then fits the float32 outcomes a run stores (a label of
    # 1e25 made every scored file's inf, and the board answered "cannot be computed" for everyone).
    bad = np.abs(values.to_numpy()) > MAX_PREDICTION
    if bad.any():
        i = int(np.argmax(bad))
        raise TableError(
            f"the label column {show_value(column)} must hold numbers within ±{MAX_PREDICTION:g}; "
            f"{name_row(labels.index[i])} has {show_value(labels.iloc[i])}"
        )
    return values


def shuffle_test_rows(
    test_inputs: pd.DataFrame, hidden_labels: pd.DataFrame, *, seed: int | Sequence[int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Put the test inputs and their hidden labels in one fixed shuffled order.

    The host's row order is information: a table sorted by label gives the labels away
    by position to anyone who reads the test inputs. Both frames are permuted alike, so
    row ``j`` of each is still the same test row.

    Parameters
    ----------
    test_inputs : pandas.DataFrame, shape (n, id + features)
    hidden_labels : pandas.DataFrame, shape (n, 2)
        Row ``i`` labels row ``i`` of `test_inputs` (as :func:`split_public_hidden` returns them).
    seed : int or sequence of int
        Fixes the order (``numpy.random.default_rng(seed).permutation``); keep it secret
        from contestants, or the host's order can be undone.

    Returns
    -------
    test_inputs, hidden_labels : pandas.DataFrame
        The same rows, reordered alike; indexes run from 0.

    Raises
    ------
    ValueError
        If the two frames differ in length (``hidden_labels`` must have one row per test input).

    Examples
    --------
    >>> t = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 2, 3]})
    >>> h = pd.DataFrame({"id": ["a", "b", "c"], "label": ["0", "0", "1"]})
    >>> t2, h2 = shuffle_test_rows(t, h, seed=0)
    >>> bool((t2["id"] == h2["id"]).all())
    True
    """
    if len(test_inputs) != len(hidden_labels):
        raise ValueError(
            f"hidden_labels has {len(hidden_labels)} rows for {len(test_inputs)} test inputs; "
            "it must have one row per test input"
        )
    order = np.random.default_rng(seed).permutation(len(test_inputs))
    return (
        test_inputs.iloc[order].reset_index(drop=True),
        hidden_labels.iloc[order].reset_index(drop=True),
    )
