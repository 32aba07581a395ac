"""The public/hidden cut of a challenge's dataset, and its inverse.

:func:`split_public_hidden` cuts a validated table into what contestants may see
(training data, test inputs without labels) and what they may not (the hidden labels,
which never enter a recipe's sandbox: docs/DESIGN.md §4–5). :func:`join_public_hidden`
combines a host's three separate files (training data, test inputs, hidden labels) into
the one-table shape with a test-marker column, so that both upload forms are validated
and split the same way. Problems raise :class:`~evaluation.io.read.TableError` naming
the file, row and id. pandas only.
"""

from __future__ import annotations

import pandas as pd

from evaluation.datasets import (
    DatasetSpec,
    as_flags,
    as_text,
    check_ids,
    regression_labels,
    require_columns,
)
from evaluation.io.read import TableError
from evaluation.io.text import name_row, name_rows, show_value, show_values

__all__ = ["join_public_hidden", "split_public_hidden"]


def split_public_hidden(df: pd.DataFrame, spec: DatasetSpec) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Cut a validated dataset into public and hidden parts.

    Parameters
    ----------
    df : pandas.DataFrame
        The table `spec` describes; it must have a test column.
    spec : DatasetSpec
        From :func:`validate_dataset`.

    Returns
    -------
    train_df : pandas.DataFrame
        Rows not marked as test: id, features, label (no test column). May be empty.
    test_inputs_df : pandas.DataFrame
        Test rows: id and features only (no label column).
    hidden_labels_df : pandas.DataFrame
        Test rows: id and label only, in the order of `test_inputs_df`.

    Ids are text (as :func:`validate_dataset` compares them); classification labels
    are text (the strings in ``spec.classes``), regression labels float64. Indexes
    run from 0.

    Raises
    ------
    ValueError
        If ``spec.test_column`` is None (hidden labels then come as a separate file:
        see :func:`join_public_hidden`).
    TableError
        If `df` no longer matches `spec` (a column missing, a bad test marker).
    """
    if spec.test_column is None:
        raise ValueError(
            "spec has no test_column, so there is nothing to split; a dataset uploaded "
            "as separate files is combined with join_public_hidden first"
        )
    require_columns(
        [str(c) for c in df.columns],
        [("id", spec.id_column), ("label", spec.label_column), ("test", spec.test_column)]
        + [("feature", c) for c in spec.feature_columns],
    )
    is_test = as_flags(df[spec.test_column], spec.test_column).to_numpy()
    ids = as_text(df[spec.id_column])
    if spec.task == "regression":
        labels = regression_labels(df[spec.label_column], spec.label_column)
    else:
        labels = as_text(df[spec.label_column])

    ids, labels = ids.to_numpy(), labels.to_numpy()  # positional from here on
    public = df[list(spec.feature_columns)].reset_index(drop=True)
    public.insert(0, spec.id_column, ids)

    train = public[~is_test].reset_index(drop=True)
    train[spec.label_column] = labels[~is_test]
    test_inputs = public[is_test].reset_index(drop=True)
    hidden = pd.DataFrame({spec.id_column: ids[is_test], spec.label_column: labels[is_test]})
    return train, test_inputs, hidden


def join_public_hidden(
    train_df: pd.DataFrame | None,
    test_inputs_df: pd.DataFrame,
    hidden_labels_df: pd.DataFrame,
    *,
    id_column: str,
    label_column: str,
    test_column: str = "is_test",
) -> pd.DataFrame:
    """Combine separately uploaded files into one table with a test-marker column.

    The inverse of :func:`split_public_hidden`, for hosts who upload training data,
    test inputs and hidden labels as three files: validate the result with
    ``validate_dataset(..., test_column=test_column)`` and split it as usual.

    Parameters
    ----------
    train_df : pandas.DataFrame or None
        Id, features and label; None for a challenge without training data.
    test_inputs_df : pandas.DataFrame
        Id and the same features; no label column.
    hidden_labels_df : pandas.DataFrame
        Exactly two columns: id and label, one row per test input (any order).
    id_column, label_column : str
    test_column : str, default "is_test"
        Name of the boolean column added; it must not be a column of the inputs.

    Returns
    -------
    pandas.DataFrame
        Training rows then test rows; columns id, features (test inputs' order), label,
        test marker. The index names each row by file (``"train row 5"``,
        ``"test inputs row 3"``) so later messages say which file a row came from.

    Raises
    ------
    TableError
        A required column missing, a label column among the test inputs, extra columns
        in the hidden labels, features that differ between train and test inputs,
        empty or repeated ids in the test inputs or hidden labels, ids without a hidden
        label or hidden labels without a test input (the ids and rows named).
    """
    require_columns(list(test_inputs_df.columns), {"id (test inputs)": id_column})
    if label_column in test_inputs_df.columns:
        raise TableError(
            f"the test inputs must not contain the label column {show_value(label_column)}; "
            "upload the labels as the hidden labels file"
        )
    require_columns(
        list(hidden_labels_df.columns),
        {"id (hidden labels)": id_column, "label (hidden labels)": label_column},
    )
    extra = [c for c in hidden_labels_df.columns if c not in (id_column, label_column)]
    if extra:
        raise TableError(
            f"the hidden labels file must have exactly the columns {show_value(id_column)} and "
            f"{show_value(label_column)}; it also has {show_values(extra)}"
        )
    features = [c for c in test_inputs_df.columns if c != id_column]
    frames = [train_df, test_inputs_df, hidden_labels_df]
    if any(test_column in f.columns for f in frames if f is not None):
        raise TableError(f"the column name {show_value(test_column)} is already taken; choose another test_column")
    if train_df is not None:
        _check_train_columns(train_df, features, id_column, label_column)

    test = _relabel(test_inputs_df, "test inputs")
    hidden = _relabel(hidden_labels_df, "hidden labels")
    test_ids, hidden_ids = as_text(test[id_column]), as_text(hidden[id_column])
    _match_ids(test_ids, hidden_ids, id_column)
    label_by_id = pd.Series(hidden[label_column].to_numpy(), index=hidden_ids.to_numpy())
    test[label_column] = label_by_id.loc[test_ids.to_numpy()].to_numpy()
    test[test_column] = True
    parts = [test[[id_column, *features, label_column, test_column]]]
    if train_df is not None:
        train = _relabel(train_df, "train")
        train[test_column] = False
        parts.insert(0, train[[id_column, *features, label_column, test_column]])
    return pd.concat(parts)


def _check_train_columns(train_df: pd.DataFrame, features: list[str], id_column: str, label_column: str) -> None:
    """The training data has the id, the label and the test inputs' features, no more."""
    require_columns(list(train_df.columns), {"id (train)": id_column, "label (train)": label_column})
    train_features = [c for c in train_df.columns if c not in (id_column, label_column)]
    missing = [c for c in features if c not in train_features]
    surplus = [c for c in train_features if c not in features]
    if missing or surplus:
        parts = []
        if missing:
            parts.append(f"the training data lacks {show_values(missing)}")
        if surplus:
            parts.append(f"the test inputs lack {show_values(surplus)}")
        raise TableError(
            "the training data and the test inputs must have the same feature columns: " + "; ".join(parts)
        )


def _relabel(frame: pd.DataFrame, part: str) -> pd.DataFrame:
    """A copy whose index names each row by its file: ``"test inputs row 3"``."""
    frame = frame.copy()
    frame.index = [f"{part} {name_row(label)}" for label in frame.index]
    return frame


def _match_ids(test_ids: pd.Series, hidden_ids: pd.Series, id_column: str) -> None:
    """Test inputs and hidden labels: unique ids, one label per test input and back."""
    check_ids(test_ids, id_column)
    check_ids(hidden_ids, id_column)
    unlabeled = test_ids[~test_ids.isin(set(hidden_ids))]
    if len(unlabeled):
        raise TableError(
            f"{len(unlabeled)} test inputs have no hidden label: "
            f"ids {show_values(unlabeled.tolist())} "
            f"({name_rows(list(unlabeled.index), limit=3)})"
        )
    orphans = hidden_ids[~hidden_ids.isin(set(test_ids))]
    if len(orphans):
        raise TableError(
            f"{len(orphans)} hidden labels belong to no test input: "
            f"ids {show_values(orphans.tolist())} "
            f"({name_rows(list(orphans.index), limit=3)})"
        )
