"""Contestants' prediction files: parse, validate and align them to the test ids.

A prediction file is a UTF-8 CSV with a header row, one row per test id, and exactly
these columns, in any order (``id`` stands for the challenge's id column):

========  =====================================  ===================================
kind      columns                                cells
========  =====================================  ===================================
label     ``id``, ``prediction``                 one of the classes, as written
proba     ``id``, one column per class, named    probabilities in [0, 1], each row
          by the class label                     summing to 1 (within 1e-6)
score     ``id``, ``score``                      a finite number, higher meaning
                                                 more likely the positive class
value     ``id``, ``prediction``                 a finite number
========  =====================================  ===================================

Ids are compared as text (``007`` is not ``7``), whitespace around cells and column
names is ignored, blank lines are skipped. Every failure raises
:class:`PredictionFileError` (a ``ValueError``) whose message starts with the file name
and names the row (numbered as a spreadsheet numbers them: the header is row 1), the
column, the value or the limit. Hidden labels are never passed in, so no message can
reveal one. No Django here.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluation.io.text import (
    check_header,
    check_size,
    csv_records,
    decode_text,
    is_blank,
    is_number,
    name_file,
    show_value,
    show_values,
)
from evaluation.metrics import PROBA_TOLERANCE, Metric
from evaluation.samples import prediction_columns

__all__ = ["PredictionFileError", "parse_predictions", "prediction_columns"]


class PredictionFileError(ValueError):
    """A prediction file is invalid; the message names the problem and where it is."""


_Fail = Callable[[str], PredictionFileError]  # builds the error, prefixed with the file name


def _id_hint(value: str, loose_ids: dict[str, str]) -> str:
    """Suggest the test id a spreadsheet may have mangled (``7`` for ``007``)."""
    match = loose_ids.get(_loose(value))
    return f" (did you mean {match!r}? ids are compared as text)" if match is not None else ""


def _loose(value: str) -> str:
    """A key under which ``007``, ``7`` and ``7.0`` collide."""
    text = value.strip().lower()
    if text.endswith(".0"):
        text = text[:-2]
    return text.lstrip("0") or "0"


def _label_hint(value: str, classes: Sequence[str]) -> str:
    lowered = {c.lower(): c for c in classes}
    if value.lower() in lowered:
        return f"; did you mean {lowered[value.lower()]!r}? (labels are case-sensitive)"
    try:
        number = float(value)
    except ValueError:
        return ""
    for c in classes:
        try:
            if float(c) == number:
                return f"; did you mean {c!r}? (labels are compared as text)"
        except ValueError:
            continue
    return ""


def _parse_predictions_iv(
    expected_ids: Sequence[Any], metric: Metric, classes: Sequence[Any] | None, id_column: str
) -> tuple[list[str], tuple[str, ...] | None, tuple[str, ...]]:
    """Validate the challenge-side arguments (programming errors: plain ValueError)."""
    if not isinstance(metric, Metric):
        raise TypeError(f"metric must be a Metric; got {type(metric).__name__}")
    ids = [str(i) for i in expected_ids]
    if not ids:
        raise ValueError("expected_ids is empty")
    if len(set(ids)) != len(ids):
        raise ValueError("expected_ids must be distinct")
    class_tuple = None if classes is None else tuple(str(c) for c in classes)
    if metric.prediction_kind in ("label", "proba") and not class_tuple:
        raise ValueError(f"{metric.name} predictions need the classes")
    columns = prediction_columns(metric, class_tuple)
    if id_column in columns:
        raise ValueError(f"the id column {id_column!r} has the same name as a prediction column")
    return ids, class_tuple, columns


def parse_predictions(
    data: bytes,
    *,
    filename: str,
    id_column: str,
    expected_ids: Sequence[str],
    metric: Metric,
    classes: Sequence[str] | None,
    max_bytes: int,
) -> np.ndarray:
    """Validate a prediction file and return its predictions in `expected_ids` order.

    Parameters
    ----------
    data : bytes
        The uploaded file.
    filename : str
        Its name, for messages.
    id_column : str
        The challenge's id column name.
    expected_ids : sequence of str, length n
        The test ids (compared as text).
    metric : Metric
        Its ``prediction_kind`` fixes the columns (see the module docstring).
    classes : sequence of str or None
        The challenge's classes; required for ``"label"`` and ``"proba"``.
    max_bytes : int
        Size limit, checked before anything is parsed.

    Returns
    -------
    numpy.ndarray
        Row i is the prediction for ``expected_ids[i]``. ``"label"``: shape (n,), str;
        ``"proba"``: shape (n, K) float64, columns in `classes` order; ``"score"`` and
        ``"value"``: shape (n,) float64.

    Raises
    ------
    PredictionFileError
        The file is over the limit, empty, binary or not UTF-8; a row cannot be parsed
        or has the wrong number of fields; the header is missing, has an empty or a
        repeated name, lacks the id column or a prediction column, or has columns it
        should not; there are no data rows; an id is empty, repeated (both rows named),
        not a test id, or test ids are missing (the file's row count and the first
        missing ids); a cell is empty, not a number, NaN or infinite, a probability
        outside [0, 1], a row of probabilities not summing to 1, a label not among the
        classes. The first problem found is reported.
    ValueError
        Inconsistent challenge-side arguments (no classes for a label metric, repeated
        expected ids, an id column named like a prediction column).

    Examples
    --------
    >>> from evaluation.metrics import get_metric
    >>> parse_predictions(b"id,score\\nb,0.2\\na,0.9\\n", filename="p.csv",
    ...                   id_column="id", expected_ids=["a", "b"],
    ...                   metric=get_metric("roc_auc"), classes=None, max_bytes=1000)
    array([0.9, 0.2])
    """
    ids, classes, pred_columns = _parse_predictions_iv(expected_ids, metric, classes, id_column)
    name = name_file(filename)

    def fail(message: str) -> PredictionFileError:
        return PredictionFileError(f"{name}: {message}")

    check_size(data, filename, max_bytes, PredictionFileError)
    text = decode_text(data, filename, PredictionFileError, csv_only=True)
    header_row, raw_header, rows = _read_records(text, filename)
    header = [cell.strip() for cell in raw_header]
    wanted = [id_column, *pred_columns]
    check_header(header, filename, PredictionFileError)
    _check_columns(header, wanted, id_column, ids, fail)

    rows, row_numbers = _data_rows(rows, header_row, len(header), len(ids), fail)
    cells = _cells(rows, row_numbers, [header.index(c) for c in wanted], wanted, fail)
    position = _align(cells[:, 0].tolist(), row_numbers, ids, fail)
    preds = _predictions(cells[:, 1:], row_numbers, wanted[1:], metric.prediction_kind, classes, fail)
    out = np.empty((len(ids), *preds.shape[1:]), dtype=preds.dtype)
    out[position] = preds
    return out


def _data_rows(
    rows: list[list[str]], header_row: int, width: int, n_ids: int, fail: _Fail
) -> tuple[list[list[str]], np.ndarray]:
    """The non-blank records after the header and their row numbers; each has `width` fields."""
    lengths = np.fromiter(map(len, rows), dtype=np.intp, count=len(rows))
    blank = np.zeros(len(rows), dtype=bool)
    for k in np.flatnonzero(lengths <= 1):  # only these can be blank
        blank[k] = is_blank(rows[k])
    if blank.any():
        keep = np.flatnonzero(~blank)
        rows, lengths = [rows[k] for k in keep], lengths[keep]
    else:
        keep = np.arange(len(rows))
    row_numbers = keep + header_row + 1  # records are numbered from 1, blank ones too
    if not rows:
        raise fail(f"the file has a header but no data rows; expected {n_ids} (one per test id)")
    wrong = np.flatnonzero(lengths != width)
    if wrong.size:
        k = wrong[0]
        hint = " (a value containing a comma must be quoted)" if lengths[k] > width else ""
        raise fail(f"row {row_numbers[k]} has {lengths[k]} fields; the header has {width} columns{hint}")
    return rows, row_numbers


def _cells(
    rows: list[list[str]], row_numbers: np.ndarray, order: list[int], wanted: list[str], fail: _Fail
) -> np.ndarray:
    """The `wanted` columns (at positions `order`) of every row, stripped; none empty."""
    # Variable-width numpy strings: vectorized strip/compare/parse without the memory of
    # fixed-width "<U" arrays sized by the longest cell.
    cells = np.array(rows, dtype=np.dtypes.StringDType())[:, order]
    cells = np.strings.strip(cells)
    empty = np.argwhere(cells == "")
    if empty.size:
        i, j = empty[0]
        raise fail(f"row {row_numbers[i]}, column {show_value(wanted[j])}: the cell is empty")
    return cells


def _predictions(
    values: np.ndarray,
    row_numbers: np.ndarray,
    columns: list[str],
    kind: str,
    classes: tuple[str, ...] | None,
    fail: _Fail,
) -> np.ndarray:
    """The prediction cells (rows x columns, stripped, non-empty) parsed for `kind`."""
    if kind == "label":
        assert classes is not None  # the argument check refuses label predictions without classes
        return _labels(values[:, 0], row_numbers, columns[0], classes, fail)
    preds = _numbers(values, row_numbers, columns, fail)
    if kind == "proba":
        _check_probabilities(preds, row_numbers, columns, fail)
        return preds
    return preds[:, 0]


def _read_records(text: str, filename: str) -> tuple[int, list[str], list[list[str]]]:
    """``(header row number, header cells, the records after it)``, blank records kept.

    One pass of the C csv reader; on a parse error the slower numbered reader runs
    again to name the row.
    """
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        for _ in csv_records(text, filename, PredictionFileError):
            pass
        raise  # unreachable: the numbered reader raises PredictionFileError first
    first = next((i for i, record in enumerate(records) if not is_blank(record)), None)
    if first is None:  # e.g. a lone "" : not blank text, but no cell in it
        raise PredictionFileError(f"{name_file(filename)}: the file is empty")
    return first + 1, records[first], records[first + 1 :]


def _check_columns(header: list[str], wanted: list[str], id_column: str, ids: list[str], fail: _Fail) -> None:
    found = show_values(header, limit=12)
    expected = ", ".join(wanted) if len(wanted) <= 12 else f"{', '.join(wanted[:12])}, …"
    if id_column not in header:
        if all(is_number(cell) for cell in header) or not set(header).isdisjoint(ids):
            raise fail(
                f"the first row holds values ({show_values(header, 3)}), not column names; the "
                f"file needs a header row naming its columns: {expected}"
            )
        if len(header) == 1 and any(sep in header[0] for sep in ("\t", ";", "|")):
            raise fail(
                f"the file is not comma-separated: its header is a single column "
                f"{show_value(header[0])}; save it as CSV with the columns {expected}"
            )
        raise fail(
            f"there is no id column {id_column!r}; the columns found are: {found}{_case_hint([id_column], header)}"
        )
    missing = [c for c in wanted if c not in header]
    if missing:
        noun = "column" if len(missing) == 1 else "columns"
        raise fail(
            f"missing prediction {noun} {show_values(missing, limit=8)}; the columns found are: "
            f"{found}{_case_hint(missing, header)}"
        )
    extra = [c for c in header if c not in wanted]
    if extra:
        noun = "column" if len(extra) == 1 else "columns"
        raise fail(
            f"unexpected {noun} {show_values(extra, limit=8)}; the file must have exactly the columns {expected}"
        )


def _case_hint(missing: list[str], header: list[str]) -> str:
    lowered = {h.lower(): h for h in header}
    for column in missing:
        if column.lower() in lowered:
            found = lowered[column.lower()]
            return f" (found {found!r} for {column!r}; column names are case-sensitive)"
    return ""


def _align(file_ids: list[str], row_numbers: np.ndarray, ids: list[str], fail: _Fail) -> np.ndarray:
    """Position in `ids` of each file row; repeated, unknown and missing ids are errors."""
    if len(set(file_ids)) != len(file_ids):
        first_row: dict[str, int] = {}
        for value, row in zip(file_ids, row_numbers.tolist(), strict=True):
            if value in first_row:
                raise fail(f"id {show_value(value)} appears twice, in rows {first_row[value]} and {row}")
            first_row[value] = row
    index = {value: i for i, value in enumerate(ids)}
    position = np.fromiter((index.get(v, -1) for v in file_ids), dtype=np.intp, count=len(file_ids))
    unknown = np.flatnonzero(position < 0)
    if unknown.size:
        k = unknown[0]
        value = file_ids[k]
        loose_ids = {_loose(i): i for i in ids}
        more = f" ({unknown.size - 1} more rows have ids that are not test ids)" if unknown.size > 1 else ""
        raise fail(f"row {row_numbers[k]}: id {show_value(value)} is not a test id{_id_hint(value, loose_ids)}{more}")
    if len(file_ids) != len(ids):
        seen = set(file_ids)
        missing = [i for i in ids if i not in seen]
        raise fail(
            f"the file has {len(file_ids)} rows of predictions; the test set has {len(ids)} "
            f"ids. Missing: {len(missing)} id{'s' if len(missing) != 1 else ''}, {show_values(missing)}"
        )
    return position


def _labels(
    values: np.ndarray, row_numbers: np.ndarray, column: str, classes: tuple[str, ...], fail: _Fail
) -> np.ndarray:
    allowed = set(classes)
    labels = values.tolist()
    known = np.fromiter((v in allowed for v in labels), dtype=bool, count=len(labels))
    if not known.all():
        k = int(np.argmin(known))
        raise fail(
            f"row {row_numbers[k]}, column {show_value(column)}: {show_value(labels[k])} is not one of the "
            f"classes ({show_values(classes, limit=20)}){_label_hint(labels[k], classes)}"
        )
    return np.array(labels, dtype=str)


#: The largest magnitude a predicted number may have: its squared error, and a mean of a test set's
#: squared errors, stay finite (1e200 squared is inf, and one infinite score stopped every report of a
#: challenge until a host hid the entry), also as the float32 per-example outcomes a run stores
#: (``Run.pack_outcomes``; at most 3.4e38): with 1e100 allowed, a file holding 1e99 was accepted, its
#: squared error stored as inf, and the leaderboard answered "cannot be computed" for everyone.
MAX_PREDICTION = 1e18


def _numbers(values: np.ndarray, row_numbers: np.ndarray, columns: list[str], fail: _Fail) -> np.ndarray:
    """Cells as float64, shape (rows, columns); non-numbers, non-finite numbers and numbers beyond
    ±:data:`MAX_PREDICTION` are errors.

    Numbers are read as Python's ``float`` reads them, except that ``1_000`` (which no
    spreadsheet writes) is not a number.
    """
    try:
        out = values.astype(np.float64)
    except ValueError:
        out = None
    underscore = np.strings.find(values, "_") >= 0
    if out is None or underscore.any():
        for (i, j), cell in np.ndenumerate(values):
            try:
                if "_" in cell:
                    raise ValueError
                float(cell)
            except ValueError:
                raise fail(
                    f"row {row_numbers[i]}, column {show_value(columns[j])}: {show_value(cell)} is not a number"
                ) from None
    assert out is not None  # astype fails only on a cell that float() refuses too, reported above
    bad = np.argwhere(~np.isfinite(out))
    if bad.size:
        i, j = bad[0]
        raise fail(
            f"row {row_numbers[i]}, column {show_value(columns[j])}: {show_value(values[i, j])} is not a finite number"
        )
    huge = np.argwhere(np.abs(out) > MAX_PREDICTION)
    if huge.size:
        i, j = huge[0]
        raise fail(
            f"row {row_numbers[i]}, column {show_value(columns[j])}: {show_value(values[i, j])} is too large: "
            f"predictions must lie within ±{MAX_PREDICTION:g}, so that their errors can be scored"
        )
    return out


def _check_probabilities(proba: np.ndarray, row_numbers: np.ndarray, columns: list[str], fail: _Fail) -> None:
    outside = np.argwhere((proba < 0) | (proba > 1))
    if outside.size:
        i, j = outside[0]
        raise fail(
            f"row {row_numbers[i]}, column {show_value(columns[j])}: {float(proba[i, j])!r} is not a "
            "probability (outside [0, 1])"
        )
    sums = proba.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1) > PROBA_TOLERANCE)
    if off.size:
        i = off[0]
        total = f"{sums[i]:.10g}" if math.isfinite(sums[i]) else str(sums[i])
        raise fail(
            f"row {row_numbers[i]}: the probabilities sum to {total}; each row must sum to 1 "
            f"(within {PROBA_TOLERANCE:g})"
        )
