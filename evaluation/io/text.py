"""Uploaded text files: size check, UTF-8 decoding, strict CSV records, header checks.

Shared by the dataset reader (:mod:`evaluation.io.read`) and the prediction-file parser
(:mod:`evaluation.predictions`). Each check takes the exception class to raise, so a
host's upload fails with a ``TableError`` and a contestant's with a
``PredictionFileError``; every message names the file and the row, column, byte or
limit (docs/DESIGN.md §7). The message helpers at the end (:func:`show_value`,
:func:`show_values`, :func:`name_row`, :func:`name_rows`) quote cells and name rows
the same way everywhere. Rows are numbered as a spreadsheet numbers them: the first
record is row 1, blank lines count. Standard library only.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "MB",
    "check_header",
    "check_size",
    "csv_records",
    "decode_text",
    "format_sizes",
    "is_blank",
    "is_number",
    "name_file",
    "refuse_json",
    "name_row",
    "name_rows",
    "show_value",
    "show_values",
]

#: Signatures of binary formats people upload by mistake, checked before decoding.
_SIGNATURES = (
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive or an Excel workbook (.xlsx)"),
    (b"\xd0\xcf\x11\xe0", "an Excel 97-2003 workbook (.xls)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
)

MB = 2**20  #: "MB" as Django's filesizeformat counts it

#: The start of a JSON document (an object, or an array of arrays, objects, strings or numbers), after any BOM and
#: white space: no CSV header begins so.
_JSON_START = re.compile(rb"\s*(\{\s*(\"|\})|\[\s*[\[{\"\d\-\]])")


def refuse_json(data: bytes, filename: str, error: type[ValueError]) -> None:
    """Refuse a JSON file uploaded where a CSV belongs, saying so: read as CSV, pandas' ``to_json`` output was
    refused for its "80 columns" (its commas) or for a header of JSON fragments (a new user's review)."""
    head = bytes(data[:256]).removeprefix(b"\xef\xbb\xbf")
    if _JSON_START.match(head):
        raise error(
            f"{name_file(filename)}: the file is not CSV text; it looks like JSON. Save it as CSV (UTF-8), "
            "with a header row naming its columns"
        )


def name_file(filename: str) -> str:
    """How a file is named in a message: its name, or "the file" when it has none."""
    return filename or "the file"


def show_value(value: Any, width: int = 40) -> str:
    """A cell value quoted for a message, shortened to about `width` characters."""
    text = str(value)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return repr(text)


def show_values(values: Sequence[Any], limit: int = 5) -> str:
    """``'a', 'b', 'c' and 4 more``: at most `limit` values, quoted."""
    values = list(values)
    shown = ", ".join(show_value(v) for v in values[:limit])
    return shown if len(values) <= limit else f"{shown} and {len(values) - limit} more"


def format_sizes(nbytes: int, limit: int) -> tuple[str, str]:
    """Sizes in MB with one decimal, or in bytes where MB would not tell them apart."""

    def mb(n: int) -> str:
        text = f"{n / MB:.1f}"
        return text.removesuffix(".0")

    size, cap = mb(nbytes), mb(limit)
    if size == cap or cap == "0":
        return f"{nbytes:,} bytes", f"{limit:,} bytes"
    return f"{size} MB", f"{cap} MB"


def check_size(data: bytes, filename: str, max_bytes: int, error: type[ValueError]) -> None:
    """Refuse an upload over `max_bytes` or empty, before anything is parsed.

    Raises
    ------
    TypeError
        `data` is not bytes.
    ValueError
        `max_bytes` is not a positive integer.
    error
        The file is over the limit ("the file is 12.3 MB; the limit is 10 MB") or empty.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes; got {type(data).__name__}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive integer; got {max_bytes!r}")
    if len(data) > max_bytes:
        size, cap = format_sizes(len(data), max_bytes)
        raise error(f"{name_file(filename)}: the file is {size}; the limit is {cap}")
    if len(data) == 0:
        raise error(f"{name_file(filename)}: the file is empty")


def decode_text(data: bytes, filename: str, error: type[ValueError], *, csv_only: bool = False) -> str:
    """Decode an upload as UTF-8 text (a leading BOM is dropped).

    Binary formats uploaded by mistake (Parquet, ZIP/xlsx, xls, gzip) are named, and with
    ``csv_only`` a JSON document (:func:`refuse_json`); a byte that is not UTF-8 is named
    with its offset; a NUL byte suggests UTF-16.
    """
    name = name_file(filename)
    data = bytes(data)
    for magic, what in _SIGNATURES:
        if data.startswith(magic):
            raise error(f"{name}: the file is not CSV text; it looks like {what}. Save it as CSV (UTF-8)")
    if csv_only:
        refuse_json(data, filename, error)
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
            f"{name}: the file is not UTF-8 text (byte 0x00 at offset {offset}); is it UTF-16? Save it as CSV UTF-8"
        )
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise error(f"{name}: the file is empty")
    return text


def is_blank(record: list[str]) -> bool:
    """A CSV record of a blank line (no cell, or one cell of whitespace)."""
    return not record or (len(record) == 1 and not record[0].strip())


def csv_records(text: str, filename: str, error: type[ValueError]) -> Iterator[tuple[int, list[str]]]:
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
            raise error(f"{name_file(filename)}: row {row + 1} could not be parsed as CSV: {exc}{hint}") from None
        row += 1
        if not is_blank(record):
            yield row, record


def check_header(header: list[str], filename: str, error: type[ValueError]) -> None:
    """Header cells (already stripped) must be non-empty, distinct names."""
    name = name_file(filename)
    for i, cell in enumerate(header, start=1):
        if not cell:
            hint = " (a file saved by pandas with its index has this; save with index=False)" if i == 1 else ""
            raise error(f"{name}: column {i} of the header row has no name{hint}")
    seen: dict[str, int] = {}
    for i, cell in enumerate(header, start=1):
        if cell in seen:
            raise error(f"{name}: the header names column {show_value(cell)} twice (columns {seen[cell]} and {i})")
        seen[cell] = i


def is_number(text: str) -> bool:
    """Whether Python's ``float`` reads `text` (used to spot a missing header row)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def name_row(label: Any) -> str:
    """How a DataFrame index label reads in a message: ``row 7`` or the label itself."""
    return label if isinstance(label, str) else f"row {label}"


def name_rows(labels: Sequence[Any], limit: int = 5) -> str:
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
    names = [name_row(x) for x in labels[:limit]]
    more = len(labels) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")
