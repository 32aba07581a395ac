"""Hosts' dataset uploads (CSV or Parquet) read into a DataFrame.

:func:`read_table` checks the size, recognises Parquet by its name or magic bytes and
reads anything else as strict UTF-8 CSV with a header row. Every problem raises
:class:`TableError` (a ``ValueError``) whose message names the file and the row,
column or limit (docs/DESIGN.md §7). Rows are named by the DataFrame's index: a CSV's
rows by their row number in the file as a spreadsheet counts them (the header is row
1, the first data row is row 2), a Parquet file's rows from 1.

Size limits: the file itself (``max_bytes``), its data rows (``max_rows``) and, for
Parquet, the data once decompressed (``max_decoded_bytes``): a Parquet file of a few
kilobytes can hold tens of millions of compressed rows, so its footer (row count,
uncompressed row-group sizes) is checked before any data is read, and the decoded size
again while reading. pandas and pyarrow only.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.io.text import (
    check_header,
    check_size,
    csv_records,
    decode_text,
    format_sizes,
    is_number,
    name_file,
    refuse_json,
    show_values,
)

__all__ = [
    "DECODED_PER_FILE_BYTE",
    "DEFAULT_MAX_COLUMNS",
    "DEFAULT_MAX_ROWS",
    "TableError",
    "check_columns",
    "check_lines",
    "read_table",
]


class TableError(ValueError):
    """A dataset upload or its configuration is invalid; the message says where and why.

    ``setting``: the column setting at fault (``"id"``, ``"label"``, ``"test"``) when it is the
    setting, not the file, that is wrong (a column name not in the table), so that a form can
    show the message beside that setting; else None.
    """

    def __init__(self, message: str, setting: str | None = None):
        super().__init__(message)
        self.setting = setting


#: Default of ``read_table``'s ``max_rows``.
DEFAULT_MAX_ROWS = 5_000_000
#: Default of ``read_table``'s ``max_columns``.
DEFAULT_MAX_COLUMNS = 10_000
#: Longest CSV header line read, per column allowed (a generous name length).
_HEADER_BYTES_PER_COLUMN = 256
#: Default of ``read_table``'s ``max_decoded_bytes``, per byte of ``max_bytes``.
DECODED_PER_FILE_BYTE = 10
_PARQUET_BATCH_ROWS = 65_536

#: Cells pandas reads as missing in non-text columns (pandas' default ``na_values``).
_NA_STRINGS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip


def read_table(
    data: bytes,
    *,
    filename: str,
    max_bytes: int,
    text_columns: Collection[str] = (),
    max_rows: int = DEFAULT_MAX_ROWS,
    max_decoded_bytes: int | None = None,
    max_columns: int = DEFAULT_MAX_COLUMNS,
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
    max_rows : int, default 5,000,000
        Most data rows accepted (CSV or Parquet).
    max_decoded_bytes : int, optional
        Most bytes a Parquet file may decode to; default ``10 * max_bytes``. Checked
        from the file's metadata before any data is read (a few kilobytes of zstd can
        hold millions of rows), then again while reading.

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
        column names, no data rows, more than `max_rows` rows ("the file has
        20,000,000 rows; the limit is 5,000,000 rows"), a Parquet file over
        `max_decoded_bytes` once decompressed, more than `max_columns` columns ("the file
        has 1,500,000 columns; the limit is 10,000 columns"), an unreadable Parquet file.
    ValueError
        `max_bytes`, `max_rows`, `max_decoded_bytes` or `max_columns` is not a positive
        integer.

    Examples
    --------
    >>> df = read_table(b"id,x,y\\n007,1.5,a\\n008,2.5,b\\n", filename="d.csv",
    ...                 max_bytes=10_000, text_columns=["id"])
    >>> df["id"].tolist(), df["x"].tolist(), df.index.tolist()
    (['007', '008'], [1.5, 2.5], [2, 3])
    """
    check_size(data, filename, max_bytes, TableError)
    _check_positive(max_rows, "max_rows")
    if max_decoded_bytes is None:
        max_decoded_bytes = DECODED_PER_FILE_BYTE * max_bytes
    _check_positive(max_decoded_bytes, "max_decoded_bytes")
    _check_positive(max_columns, "max_columns")
    lower = (filename or "").lower()
    if bytes(data[:4]) == b"PAR1" or lower.endswith((".parquet", ".pq")):
        return _read_parquet(bytes(data), filename, max_rows, max_decoded_bytes, max_columns)
    check_columns(data, filename=filename, max_columns=max_columns)
    return _read_csv(bytes(data), filename, set(text_columns), max_rows)


def check_lines(data: bytes, *, filename: str, max_rows: int) -> None:
    """Refuse a CSV with more than `max_rows` data rows by counting its line ends.

    Counts ``\\n`` bytes (about 10 ms for 20 MB) before anything is decoded or split; a
    blank line or a quoted cell spanning lines counts as a line, so give `max_rows`
    some slack over the rows expected.

    Raises
    ------
    TableError
        More than ``max_rows + 1`` lines (the header and `max_rows` data rows).
    ValueError
        `max_rows` is not a positive integer.
    """
    _check_positive(max_rows, "max_rows")
    data = data if isinstance(data, bytes) else bytes(data)
    lines = data.count(b"\n") + (0 if data[-1:] == b"\n" else 1)
    if lines - 1 > max_rows:
        raise TableError(
            f"{name_file(filename)}: the file has {lines - 1:,} rows after its header; the limit is {max_rows:,} rows"
        )


def _too_many_columns(name: str, columns: int, max_columns: int, *, more: bool = False) -> TableError:
    return TableError(
        f"{name}: the file has {'more than ' if more else ''}{columns:,} columns; the limit is {max_columns:,} columns"
    )


def check_columns(data: bytes, *, filename: str, max_columns: int) -> None:
    """Refuse a CSV with more than `max_columns` columns from its header line alone.

    Looks at the header line only (a byte search for its end, then a count of its
    commas); nothing is decoded or split, so a 15 MB header is refused in milliseconds.
    Quoted commas are honoured; a header line longer than ``256 * max_columns`` bytes
    is refused too.

    Raises
    ------
    TableError
        More than `max_columns` columns, or a header line over the bound.
    ValueError
        `max_columns` is not a positive integer.
    """
    _check_positive(max_columns, "max_columns")
    name = name_file(filename)
    bound = _HEADER_BYTES_PER_COLUMN * max_columns
    data = data if isinstance(data, bytes) else bytes(data)
    refuse_json(data, filename, TableError)
    end = data.find(b"\n")  # a byte search: milliseconds, whatever the size
    line = data if end < 0 else data[:end]
    commas = line.count(b",")
    if commas + 1 > max_columns and b'"' not in line:  # no quoting: the commas are the count
        raise _too_many_columns(name, commas + 1, max_columns)
    if len(line) > bound:
        raise TableError(
            f"{name}: the header line is {len(line):,} bytes long; a file of at most {max_columns:,} columns "
            f"(this upload's limit, not its format's) may have a header of {bound:,} bytes. "
            + ("The file is a single line: is it a CSV with one row per line?" if end < 0 else "")
        )
    if line.count(b",") + 1 <= max_columns:  # an upper bound on the fields: enough
        return
    text = line.decode("utf-8", errors="replace").rstrip("\r")
    try:
        fields = len(next(csv.reader([text]), []))
    except csv.Error:  # e.g. a quote left open: counted and reported by the full parse
        return
    if fields > max_columns:
        raise _too_many_columns(name, fields, max_columns)


def _check_positive(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")


def _too_many_rows(name: str, rows: int, max_rows: int) -> TableError:
    return TableError(f"{name}: the file has {rows:,} rows; the limit is {max_rows:,} rows")


def _too_large_decoded(name: str, nbytes: int, limit: int, *, more: bool = False) -> TableError:
    size, cap = format_sizes(nbytes, limit)
    return TableError(
        f"{name}: the data takes {'more than ' if more else ''}{size} once decompressed; "
        f"the limit is {cap} decompressed"
    )


#: Bytes one value of a Parquet physical type takes once decoded (at least): a
#: variable-length value counts as the pointer pandas keeps for it.
_DECODED_WIDTH = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12, "BYTE_ARRAY": 8}


def _check_parquet_metadata(meta: pq.FileMetaData, name: str, max_rows: int, limit: int, max_columns: int) -> None:
    """Refuse a Parquet file by its footer alone: its columns, rows and decoded size.

    The decoded size is the larger of the row groups' uncompressed sizes
    (``total_byte_size``) and rows × the decoded width of a row, since dictionary and
    run-length encoding make a constant column small even uncompressed.
    """
    if meta.num_columns > max_columns:
        raise _too_many_columns(name, meta.num_columns, max_columns)
    if meta.num_rows > max_rows:
        raise _too_many_rows(name, meta.num_rows, max_rows)
    schema = meta.schema
    width = sum(
        _DECODED_WIDTH.get(schema.column(i).physical_type, schema.column(i).length or 8)
        for i in range(meta.num_columns)
    )
    uncompressed = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    decoded = max(uncompressed, meta.num_rows * width)
    if decoded > limit:
        raise _too_large_decoded(name, decoded, limit)


def _read_parquet_guarded(parquet: pq.ParquetFile, name: str, limit: int) -> pa.Table:
    """Read batch by batch, stopping once the decoded data passes `limit` bytes.

    Catches what the metadata cannot show, e.g. a long string repeated through a
    dictionary; memory stays within `limit` plus one batch.
    """
    batches, decoded = [], 0
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS):
        decoded += batch.nbytes
        if decoded > limit:
            raise _too_large_decoded(name, decoded, limit, more=True)
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=parquet.schema_arrow)


def _read_parquet(data: bytes, filename: str, max_rows: int, limit: int, max_columns: int) -> pd.DataFrame:
    name = name_file(filename)
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        _check_parquet_metadata(parquet.metadata, name, max_rows, limit, max_columns)
        df = _read_parquet_guarded(parquet, name, limit).to_pandas()
    except TableError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise TableError(f"{name}: the file is not a readable Parquet file ({exc})") from None
    check_header([str(c).strip() for c in df.columns], filename, TableError)
    if len(df) == 0:
        raise TableError(f"{name}: the file has no data rows")
    df.columns = [str(c).strip() for c in df.columns]
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    return df


def _read_csv(data: bytes, filename: str, text_columns: set[str], max_rows: int) -> pd.DataFrame:
    name = name_file(filename)
    text = decode_text(data, filename, TableError)
    records = csv_records(text, filename, TableError)
    first = next(records, None)
    if first is None:  # e.g. a lone "" : not blank text, but no cell in it
        raise TableError(f"{name}: the file is empty")
    raw_header = first[1]
    header = [cell.strip() for cell in raw_header]
    check_header(header, filename, TableError)
    if all(is_number(cell) for cell in header):
        raise TableError(
            f"{name}: the first row holds values ({show_values(header, 3)}), not column names; "
            "the file needs a header row naming its columns"
        )
    rows: list[int] = []
    for row, record in records:
        if len(record) != len(header):
            hint = " (a value containing a comma must be quoted)" if len(record) > len(header) else ""
            raise TableError(f"{name}: row {row} has {len(record)} fields; the header has {len(header)} columns{hint}")
        rows.append(row)
    if len(rows) > max_rows:
        raise _too_many_rows(name, len(rows), max_rows)
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
