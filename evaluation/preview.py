"""What a host sees of an uploaded dataset before publishing it: first rows, column types, class balance.

Pure: text frames in (as ``leaderboard.services.dataset_files`` stores them), a frozen
:class:`TablePreview` out. A column's type is what its values parse as: ``integer``,
``number`` or ``text`` (empty cells count as missing, not as text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["ColumnInfo", "TablePreview", "column_kind", "table_preview"]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    role: str  # "id", "label", "feature" or "ignored"
    kind: str  # "integer", "number" or "text"
    missing: int
    distinct: int


@dataclass(frozen=True)
class TablePreview:
    """``head``: the first rows (header, rows of text); ``balance``: (class, training rows, test rows) per class,
    empty for regression; ``n_train``/``n_test``: rows found in each part."""

    columns: tuple[ColumnInfo, ...]
    header: tuple[str, ...]
    head: tuple[tuple[str, ...], ...]
    balance: tuple[tuple[str, int, int], ...]
    n_train: int
    n_test: int


def column_kind(values: pd.Series) -> str:
    """``integer``, ``number`` or ``text``: what every non-empty value of ``values`` parses as."""
    filled = values[values.astype(str).str.strip() != ""]
    if filled.empty:
        return "text"
    numbers = pd.to_numeric(filled, errors="coerce")
    if numbers.isna().any():
        return "text"
    return "integer" if (numbers == numbers.round()).all() else "number"


def table_preview(
    train: pd.DataFrame,
    *,
    id_column: str,
    label_column: str,
    feature_columns: Sequence[str],
    test_labels: pd.DataFrame | None = None,
    classes: Sequence[str] = (),
    rows: int = 5,
    max_columns: int = 12,
) -> TablePreview:
    """The preview of a stored dataset.

    Parameters
    ----------
    train : DataFrame of str, shape (n_train, columns)
        The public training rows.
    id_column, label_column : str
    feature_columns : sequence of str
    test_labels : DataFrame of str, optional
        The hidden test rows' id and label columns (None: no fixed test set).
    classes : sequence of str
        The classes, for classification (empty for regression).
    rows : int, default 5
        How many first rows to show.
    max_columns : int, default 12
        How many columns the first rows show: the id, the label, then the first features.
    """
    features = set(feature_columns)

    def role(name):
        return (
            "id"
            if name == id_column
            else "label"
            if name == label_column
            else "feature"
            if name in features
            else "ignored"
        )

    columns = tuple(
        ColumnInfo(
            str(name),
            role(name),
            column_kind(train[name]),
            int((train[name].astype(str).str.strip() == "").sum()),
            int(train[name].nunique()),
        )
        for name in train.columns
    )
    shown = [c for c in (id_column, label_column) if c in train.columns]
    shown += [c for c in train.columns if c not in shown][: max(0, max_columns - len(shown))]
    head = tuple(tuple(str(v) for v in row) for row in train[shown].head(rows).itertuples(index=False))
    n_test = 0 if test_labels is None else len(test_labels)
    balance: tuple[tuple[str, int, int], ...] = ()
    if classes:
        train_counts = train[label_column].astype(str).value_counts()
        test_counts = (
            test_labels[label_column].astype(str).value_counts() if test_labels is not None else pd.Series(dtype=int)
        )
        balance = tuple((str(c), int(train_counts.get(str(c), 0)), int(test_counts.get(str(c), 0))) for c in classes)
    return TablePreview(columns, tuple(str(c) for c in shown), head, balance, len(train), n_test)
