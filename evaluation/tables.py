"""Datasets that hosts upload: reading, validating and splitting them.

A host uploads one table (CSV or Parquet) holding an id column, a label column and
feature columns, optionally with a test-marker column that marks the hidden test rows;
or three tables (training data, test inputs, hidden labels) that
:func:`join_public_hidden` combines into that one shape. :func:`validate_dataset`
checks the table and describes it as a :class:`DatasetSpec`; :func:`split_public_hidden`
cuts it into what contestants may see (training data, test inputs without labels) and
what they may not (the hidden labels). :func:`sample_submission` writes the prediction
file format that :func:`evaluation.predictions.parse_predictions` accepts.

Every problem with the host's data raises :class:`TableError` (a ``ValueError``) whose
message names the row, column or limit. Rows are named by the DataFrame's index:
:func:`read_table` indexes a CSV's rows by their row number in the file as a spreadsheet
counts them (the header is row 1, the first data row is row 2) and a Parquet file's rows
from 1. No Django here: pandas, numpy and pyarrow only.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.metrics import Metric, Task, get_metric, sorted_classes

__all__ = [
    "DatasetSpec",
    "TableError",
    "join_public_hidden",
    "prediction_columns",
    "read_table",
    "sample_submission",
    "split_public_hidden",
    "validate_dataset",
]


class TableError(ValueError):
    """A dataset upload or its configuration is invalid; the message says where and why."""


# ------------------------------------------------------- helpers shared with predictions

#: Cells pandas reads as missing in non-text columns (pandas' default ``na_values``).
_NA_STRINGS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip

#: Signatures of binary formats people upload by mistake, checked before decoding.
_SIGNATURES = (
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive or an Excel workbook (.xlsx)"),
    (b"\xd0\xcf\x11\xe0", "an Excel 97-2003 workbook (.xls)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
)

_MB = 2**20  # "MB" as Django's filesizeformat counts it


def _file_name(filename: str) -> str:
    return filename or "the file"


def _show(value: Any, width: int = 40) -> str:
    """A cell value quoted for a message, shortened to about `width` characters."""
    text = str(value)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return repr(text)


def _preview(values: Sequence[Any], limit: int = 5) -> str:
    """``'a', 'b', 'c' and 4 more``: at most `limit` values, quoted."""
    values = list(values)
    shown = ", ".join(_show(v) for v in values[:limit])
    return shown if len(values) <= limit else f"{shown} and {len(values) - limit} more"


def _format_size(nbytes: int, limit: int) -> tuple[str, str]:
    """Sizes in MB with one decimal, or in bytes where MB would not tell them apart."""

    def mb(n: int) -> str:
        text = f"{n / _MB:.1f}"
        return text.removesuffix(".0")

    size, cap = mb(nbytes), mb(limit)
    if size == cap or cap == "0":
        return f"{nbytes:,} bytes", f"{limit:,} bytes"
    return f"{size} MB", f"{cap} MB"


def _check_size(data: bytes, filename: str, max_bytes: int, error: type[ValueError]) -> None:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes; got {type(data).__name__}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive integer; got {max_bytes!r}")
    if len(data) > max_bytes:
        size, cap = _format_size(len(data), max_bytes)
        raise error(f"{_file_name(filename)}: the file is {size}; the limit is {cap}")
    if len(data) == 0:
        raise error(f"{_file_name(filename)}: the file is empty")


def _decode_text(data: bytes, filename: str, error: type[ValueError]) -> str:
    """Decode an upload as UTF-8 text (a leading BOM is dropped)."""
    name = _file_name(filename)
    data = bytes(data)
    for magic, what in _SIGNATURES:
        if data.startswith(magic):
            raise error(
                f"{name}: the file is not CSV text; it looks like {what}. Save it as CSV (UTF-8)"
            )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{name}: the file is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); save it as CSV UTF-8"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        offset = len(text[:nul].encode("utf-8"))
        raise error(
            f"{name}: the file is not UTF-8 text (byte 0x00 at offset {offset}); "
            "is it UTF-16? Save it as CSV UTF-8"
        )
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise error(f"{name}: the file is empty")
    return text


def _is_blank(record: list[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


def _csv_records(
    text: str, filename: str, error: type[ValueError]
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(row number, cells)`` for each non-blank record of a CSV text.

    Row numbers count records as a spreadsheet does: the first record is row 1, blank
    lines count, a quoted cell spanning lines is one row. Parsing is strict (a stray
    quote or an unclosed quote is an error naming its row).
    """
    # No cell can be longer than the text; the default field limit (131,072) would
    # reject long text features. The limit is process-wide and only ever raised here.
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    row = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            hint = " (is a quote left open?)" if "end of data" in str(exc) else ""
            raise error(
                f"{_file_name(filename)}: row {row + 1} could not be parsed as CSV: {exc}{hint}"
            ) from None
        row += 1
        if not _is_blank(record):
            yield row, record


def _check_header(header: list[str], filename: str, error: type[ValueError]) -> None:
    """Header cells (already stripped) must be non-empty, distinct names."""
    name = _file_name(filename)
    for i, cell in enumerate(header, start=1):
        if not cell:
            hint = (
                " (a file saved by pandas with its index has this; save with index=False)"
                if i == 1
                else ""
            )
            raise error(f"{name}: column {i} of the header row has no name{hint}")
    seen: dict[str, int] = {}
    for i, cell in enumerate(header, start=1):
        if cell in seen:
            raise error(
                f"{name}: the header names column {_show(cell)} twice "
                f"(columns {seen[cell]} and {i})"
            )
        seen[cell] = i


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _row_name(label: Any) -> str:
    """How a DataFrame index label reads in a message: ``row 7`` or the label itself."""
    return label if isinstance(label, str) else f"row {label}"


def _rows_text(labels: Sequence[Any], limit: int = 5) -> str:
    """``rows 3, 8 and 9`` / ``row 3`` / ``rows 3, 4, 5, 6, 7 and 12 more``."""
    labels = list(labels)
    if all(not isinstance(x, str) for x in labels):
        nums = [str(x) for x in labels[:limit]]
        more = len(labels) - limit
        if len(labels) == 1:
            return f"row {nums[0]}"
        if more > 0:
            return f"rows {', '.join(nums)} and {more} more"
        return f"rows {', '.join(nums[:-1])} and {nums[-1]}"
    names = [_row_name(x) for x in labels[:limit]]
    more = len(labels) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


# ---------------------------------------------------------------------------- reading


def read_table(
    data: bytes,
    *,
    filename: str,
    max_bytes: int,
    text_columns: Collection[str] = (),
) -> pd.DataFrame:
    """Read a host's dataset upload (CSV or Parquet) into a DataFrame.

    Parameters
    ----------
    data : bytes
        The uploaded file.
    filename : str
        Its name, used in messages and to recognise Parquet (``.parquet``, ``.pq``);
        Parquet is also recognised by its magic bytes ``PAR1``. Anything else is read as
        CSV: comma-separated, UTF-8 (with or without a byte-order mark), header row first.
    max_bytes : int
        Size limit; larger files are rejected before any parsing.
    text_columns : collection of str, optional
        CSV columns to keep as text rather than let pandas infer numbers: pass the id
        column (so ``007`` stays ``007``) and, for classification, the label column.
        In these only empty cells are missing; other columns use pandas' defaults.

    Returns
    -------
    pandas.DataFrame
        Columns named by the stripped header cells. The index, named ``"row"``, holds
        each row's number in the file: for CSV the spreadsheet row (header = row 1),
        for Parquet the record number from 1. Blank CSV lines are skipped.

    Raises
    ------
    TableError
        Over `max_bytes` ("the file is 12.3 MB; the limit is 10 MB"), empty, a binary
        file that is neither CSV nor Parquet, not UTF-8 ("byte 0x.. at offset N"), a row
        that cannot be parsed or has the wrong number of fields (its row number), a
        header that is missing (the first row holds numbers) or has empty or duplicate
        column names, no data rows, an unreadable Parquet file.

    Examples
    --------
    >>> df = read_table(b"id,x,y\\n007,1.5,a\\n008,2.5,b\\n", filename="d.csv",
    ...                 max_bytes=10_000, text_columns=["id"])
    >>> df["id"].tolist(), df["x"].tolist(), df.index.tolist()
    (['007', '008'], [1.5, 2.5], [2, 3])
    """
    _check_size(data, filename, max_bytes, TableError)
    lower = (filename or "").lower()
    if bytes(data[:4]) == b"PAR1" or lower.endswith((".parquet", ".pq")):
        return _read_parquet(bytes(data), filename)
    return _read_csv(bytes(data), filename, set(text_columns))


def _read_parquet(data: bytes, filename: str) -> pd.DataFrame:
    name = _file_name(filename)
    try:
        df = pq.ParquetFile(io.BytesIO(data)).read().to_pandas()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise TableError(f"{name}: the file is not a readable Parquet file ({exc})") from None
    _check_header([str(c).strip() for c in df.columns], filename, TableError)
    if len(df) == 0:
        raise TableError(f"{name}: the file has no data rows")
    df.columns = [str(c).strip() for c in df.columns]
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    return df


def _read_csv(data: bytes, filename: str, text_columns: set[str]) -> pd.DataFrame:
    name = _file_name(filename)
    text = _decode_text(data, filename, TableError)
    records = _csv_records(text, filename, TableError)
    first = next(records, None)
    if first is None:  # e.g. a lone "" : not blank text, but no cell in it
        raise TableError(f"{name}: the file is empty")
    raw_header = first[1]
    header = [cell.strip() for cell in raw_header]
    _check_header(header, filename, TableError)
    if all(_is_number(cell) for cell in header):
        raise TableError(
            f"{name}: the first row holds values ({_preview(header, 3)}), not column names; "
            "the file needs a header row naming its columns"
        )
    rows: list[int] = []
    for row, record in records:
        if len(record) != len(header):
            hint = (
                " (a value containing a comma must be quoted)" if len(record) > len(header) else ""
            )
            raise TableError(
                f"{name}: row {row} has {len(record)} fields; "
                f"the header has {len(header)} columns{hint}"
            )
        rows.append(row)
    if not rows:
        raise TableError(f"{name}: the file has a header but no data rows")

    positions = range(len(header))
    is_text = [cell in text_columns for cell in header]
    try:
        df = pd.read_csv(
            io.StringIO(text),
            header=0,
            names=list(positions),
            dtype={i: str for i in positions if is_text[i]},
            keep_default_na=False,
            na_values={i: [""] if is_text[i] else list(_NA_STRINGS) for i in positions},
            low_memory=False,
        )
    except (ValueError, pd.errors.ParserError) as exc:  # checked above; kept as a net
        raise TableError(f"{name}: the file could not be parsed as CSV ({exc})") from None
    if len(df) != len(rows):
        raise TableError(
            f"{name}: the file could not be parsed consistently ({len(rows)} rows by one "
            f"reading, {len(df)} by another); check the quoting"
        )
    df.columns = header
    df.index = pd.Index(rows, name="row")
    return df


# ------------------------------------------------------------------------- validating


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


def _as_text(series: pd.Series) -> pd.Series:
    """Cell values as stripped strings; missing cells become ``""``.

    Integers print without a decimal point, and so do floats that hold whole numbers
    (a numeric column with a gap is read as float: 7.0 -> "7").
    """
    if pd.api.types.is_bool_dtype(series):
        return series.map(lambda v: "" if pd.isna(v) else str(bool(v)))

    def one(value: Any) -> str:
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            return ""
        if (
            isinstance(value, float | np.floating)
            and math.isfinite(value)
            and float(value).is_integer()
        ):
            return str(int(value))
        return str(value).strip()

    return series.map(one).astype(object)


_TRUE = {"true", "1", "yes", "t", "y", "1.0"}
_FALSE = {"false", "0", "no", "f", "n", "0.0"}


def _as_flags(series: pd.Series, column: str) -> pd.Series:
    """A test-marker column as booleans (true/false, 1/0, yes/no, any case)."""
    text = _as_text(series).str.lower()
    bad = ~text.isin(_TRUE | _FALSE)
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        shown = "an empty cell" if text.iloc[i] == "" else _show(series.iloc[i])
        raise TableError(
            f"the test column {_show(column)} must hold true/false or 1/0; "
            f"{_row_name(series.index[i])} has {shown}"
        )
    return text.isin(_TRUE)


def _require_columns(
    columns: Sequence[str], wanted: dict[str, str] | list[tuple[str, str]]
) -> None:
    """Each ``(role, column)`` must be among `columns`; the message names the first missing."""
    pairs = wanted.items() if isinstance(wanted, dict) else wanted
    for role, column in pairs:
        if column not in columns:
            raise TableError(
                f"there is no {role} column {_show(column)}; the columns are: "
                f"{_preview(columns, limit=20)}"
            )


def _check_ids(ids: pd.Series, column: str) -> None:
    empty = ids == ""
    if empty.any():
        raise TableError(
            f"the id column {_show(column)} is empty at {_rows_text(ids.index[empty.to_numpy()])}"
        )
    repeated = ids[ids.duplicated(keep=False)]
    if len(repeated):
        groups = repeated.groupby(repeated, sort=False).groups
        parts = [
            f"{_show(i)} at {_rows_text(list(rows), limit=3)}"
            for i, rows in list(groups.items())[:3]
        ]
        more = len(groups) - 3
        raise TableError(
            f"ids must be unique, but the id column {_show(column)} repeats "
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
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})
        raise TableError(f"column names must be distinct; repeated: {_preview(dup)}")
    if len(df) == 0:
        raise TableError("the dataset has no rows")
    roles = {"id": id_column, "label": label_column}
    if test_column is not None:
        roles["test"] = test_column
    _require_columns(columns, roles)
    if len(set(roles.values())) != len(roles):
        raise TableError(
            "the id, label and test columns must be different columns; got "
            + ", ".join(f"{role}={_show(c)}" for role, c in roles.items())
        )

    if feature_columns is None:
        features = tuple(c for c in columns if c not in roles.values())
    else:
        features = tuple(str(c) for c in feature_columns)
        missing = [c for c in features if c not in columns]
        if missing:
            raise TableError(
                f"feature columns not in the table: {_preview(missing)}; the columns are: "
                f"{_preview(columns, limit=20)}"
            )
        clash = [c for c in features if c in roles.values()]
        if clash:
            raise TableError(
                f"the id, label or test column cannot also be a feature: {_preview(clash)}"
            )
        if len(set(features)) != len(features):
            dup = sorted({c for c in features if features.count(c) > 1})
            raise TableError(f"feature columns are listed twice: {_preview(dup)}")

    _check_ids(_as_text(df[id_column]), id_column)

    labels = df[label_column]
    label_text = _as_text(labels)
    empty = label_text == ""
    if empty.any():
        raise TableError(
            f"the label column {_show(label_column)} is empty at "
            f"{_rows_text(labels.index[empty.to_numpy()])}; every row needs a label"
        )
    classes = None
    if task == "regression":
        _regression_labels(labels, label_column)
    else:
        classes = sorted_classes(label_text.unique())
        if len(classes) < 2:
            raise TableError(
                f"the label column {_show(label_column)} holds a single class "
                f"({_preview(classes)}); classification needs at least two"
            )
        if task == "binary" and len(classes) != 2:
            raise TableError(
                f"a binary task needs exactly two classes; the label column "
                f"{_show(label_column)} has {len(classes)}: {_preview(classes)}"
            )

    n_test = None
    if test_column is not None:
        n_test = int(_as_flags(df[test_column], test_column).sum())
        if n_test == 0:
            raise TableError(f"the test column {_show(test_column)} marks no row as a test row")

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


def _regression_labels(labels: pd.Series, column: str) -> pd.Series:
    """Regression labels as float64; the first non-numeric or non-finite one is an error."""
    values = pd.to_numeric(labels, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise TableError(
            f"the label column {_show(column)} must hold numbers for regression; "
            f"{_row_name(labels.index[i])} has {_show(labels.iloc[i])}"
        )
    values = values.astype(np.float64)
    bad = ~np.isfinite(values.to_numpy())
    if bad.any():
        i = int(np.argmax(bad))
        raise TableError(
            f"the label column {_show(column)} must hold finite numbers; "
            f"{_row_name(labels.index[i])} has {_show(labels.iloc[i])}"
        )
    return values


# -------------------------------------------------------------------------- splitting


def split_public_hidden(
    df: pd.DataFrame, spec: DatasetSpec
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
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
    _require_columns(
        [str(c) for c in df.columns],
        [("id", spec.id_column), ("label", spec.label_column), ("test", spec.test_column)]
        + [("feature", c) for c in spec.feature_columns],
    )
    is_test = _as_flags(df[spec.test_column], spec.test_column).to_numpy()
    ids = _as_text(df[spec.id_column])
    if spec.task == "regression":
        labels = _regression_labels(df[spec.label_column], spec.label_column)
    else:
        labels = _as_text(df[spec.label_column])

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
    _require_columns(list(test_inputs_df.columns), {"id (test inputs)": id_column})
    if label_column in test_inputs_df.columns:
        raise TableError(
            f"the test inputs must not contain the label column {_show(label_column)}; "
            "upload the labels as the hidden labels file"
        )
    _require_columns(
        list(hidden_labels_df.columns),
        {"id (hidden labels)": id_column, "label (hidden labels)": label_column},
    )
    extra = [c for c in hidden_labels_df.columns if c not in (id_column, label_column)]
    if extra:
        raise TableError(
            f"the hidden labels file must have exactly the columns {_show(id_column)} and "
            f"{_show(label_column)}; it also has {_preview(extra)}"
        )
    features = [c for c in test_inputs_df.columns if c != id_column]
    frames = [train_df, test_inputs_df, hidden_labels_df]
    if any(test_column in f.columns for f in frames if f is not None):
        raise TableError(
            f"the column name {_show(test_column)} is already taken; choose another test_column"
        )
    if train_df is not None:
        _require_columns(
            list(train_df.columns), {"id (train)": id_column, "label (train)": label_column}
        )
        train_features = [c for c in train_df.columns if c not in (id_column, label_column)]
        missing = [c for c in features if c not in train_features]
        surplus = [c for c in train_features if c not in features]
        if missing or surplus:
            parts = []
            if missing:
                parts.append(f"the training data lacks {_preview(missing)}")
            if surplus:
                parts.append(f"the test inputs lack {_preview(surplus)}")
            raise TableError(
                "the training data and the test inputs must have the same feature columns: "
                + "; ".join(parts)
            )

    def relabel(frame: pd.DataFrame, part: str) -> pd.DataFrame:
        frame = frame.copy()
        frame.index = [f"{part} {_row_name(label)}" for label in frame.index]
        return frame

    test = relabel(test_inputs_df, "test inputs")
    hidden = relabel(hidden_labels_df, "hidden labels")
    test_ids, hidden_ids = _as_text(test[id_column]), _as_text(hidden[id_column])
    _check_ids(test_ids, id_column)
    _check_ids(hidden_ids, id_column)
    unlabeled = test_ids[~test_ids.isin(set(hidden_ids))]
    if len(unlabeled):
        raise TableError(
            f"{len(unlabeled)} test inputs have no hidden label: "
            f"ids {_preview(unlabeled.tolist())} "
            f"({_rows_text(list(unlabeled.index), limit=3)})"
        )
    orphans = hidden_ids[~hidden_ids.isin(set(test_ids))]
    if len(orphans):
        raise TableError(
            f"{len(orphans)} hidden labels belong to no test input: "
            f"ids {_preview(orphans.tolist())} "
            f"({_rows_text(list(orphans.index), limit=3)})"
        )
    label_by_id = pd.Series(hidden[label_column].to_numpy(), index=hidden_ids.to_numpy())
    test[label_column] = label_by_id.loc[test_ids.to_numpy()].to_numpy()
    test[test_column] = True
    parts = [test[[id_column, *features, label_column, test_column]]]
    if train_df is not None:
        train = relabel(train_df, "train")
        train[test_column] = False
        parts.insert(0, train[[id_column, *features, label_column, test_column]])
    return pd.concat(parts)


# ------------------------------------------------------------------ submission format


def prediction_columns(metric: Metric | str, classes: Sequence[str] | None) -> tuple[str, ...]:
    """The prediction column(s) a submission file has besides the id column.

    ``"label"`` and ``"value"`` metrics: ``("prediction",)``; ``"score"``:
    ``("score",)``; ``"proba"``: one column per class, named by the class label.

    Raises
    ------
    ValueError
        A ``"proba"`` metric without `classes`.
    """
    metric = get_metric(metric) if isinstance(metric, str) else metric
    kind = metric.prediction_kind
    if kind == "proba":
        if not classes:
            raise ValueError(f"{metric.name} predictions need the classes, one column each")
        return tuple(str(c) for c in classes)
    return ("score",) if kind == "score" else ("prediction",)


def sample_submission(
    ids: Sequence[Any],
    metric: Metric | str,
    classes: Sequence[str] | None = None,
    *,
    id_column: str = "id",
) -> str:
    """CSV text of a valid prediction file, to show contestants the format.

    Parameters
    ----------
    ids : sequence
        The test ids, in the order to write them.
    metric : Metric or str
    classes : sequence of str, optional
        Required for ``"label"`` and ``"proba"`` metrics.
    id_column : str, default "id"
        The challenge's id column (a prediction file names it the same way).

    Returns
    -------
    str
        Header ``id_column`` + :func:`prediction_columns`, one row per id, ``\\n`` line
        ends: ``"label"`` predicts the first class, ``"proba"`` uniform probabilities
        1/K, ``"score"`` 0.5, ``"value"`` 0.0.

    Examples
    --------
    >>> print(sample_submission(["a", "b"], "log_loss", ["cat", "dog"]), end="")
    id,cat,dog
    a,0.5,0.5
    b,0.5,0.5
    """
    metric = get_metric(metric) if isinstance(metric, str) else metric
    columns = prediction_columns(metric, classes)
    if id_column in columns:
        raise ValueError(f"the id column {id_column!r} has the same name as a prediction column")
    kind = metric.prediction_kind
    if kind == "label":
        if not classes:
            raise ValueError(f"{metric.name} predictions need the classes")
        values = [str(classes[0])]
    elif kind == "proba":
        values = [repr(1 / len(columns))] * len(columns)
    elif kind == "score":
        values = ["0.5"]
    else:
        values = ["0.0"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([id_column, *columns])
    writer.writerows([str(i), *values] for i in ids)
    return out.getvalue()
