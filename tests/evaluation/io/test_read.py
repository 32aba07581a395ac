"""Tests for evaluation.io.read: reading hosts' CSV and Parquet uploads."""

import io

import numpy as np
import pandas as pd
import pytest

from evaluation.io.read import TableError, read_table
from tests.evaluation.uploads import DATASET, LIMIT, parquet_bytes, read


def test_read_csv_infers_types_and_keeps_text_columns():
    df = read(DATASET, text_columns=["id", "label"])
    assert list(df.columns) == ["id", "x1", "x2", "label", "is_test"]
    assert df["id"].tolist() == ["007", "008", "009", "010"]
    assert df["x1"].dtype == np.float64
    assert df.index.name == "row" and df.index.tolist() == [2, 3, 4, 5]


def test_read_csv_without_text_columns_reads_numbers():
    df = read("id,y\n007,1\n008,2\n")
    assert df["id"].tolist() == [7, 8]


def test_read_csv_bom_crlf_blank_lines_and_stripped_header():
    text = "\ufeff id , y \r\n\r\na,1\r\n\r\nb,2\r\n\r\n"
    df = read(text)
    assert list(df.columns) == ["id", "y"]
    assert df["y"].tolist() == [1, 2]
    assert df.index.tolist() == [3, 5]  # blank lines count as rows, like a spreadsheet


def test_read_csv_quoted_multiline_cell_is_one_row():
    df = read('id,text\na,"line one\nline two"\nb,"x, y"\n')
    assert df["text"].tolist() == ["line one\nline two", "x, y"]
    assert df.index.tolist() == [2, 3]


def test_read_csv_long_text_cell():
    df = read("id,text\na," + "w" * 300_000 + "\n")
    assert len(df["text"].iloc[0]) == 300_000


def test_read_csv_text_columns_keep_na_strings():
    df = read("id,x\nNA,1\nnull,NA\n", text_columns=["id"])
    assert df["id"].tolist() == ["NA", "null"]
    assert np.isnan(df["x"].iloc[1])


def test_read_parquet_by_magic_bytes_and_extension():
    src = pd.DataFrame({"id": ["a", "b"], "x": [1.0, 2.0]})
    for filename in ("data.parquet", "data.bin"):
        df = read(parquet_bytes(src), filename=filename)
        assert df["id"].tolist() == ["a", "b"] and df["x"].tolist() == [1.0, 2.0]
        assert df.index.tolist() == [1, 2]


@pytest.mark.parametrize(
    ("data", "filename", "match"),
    [
        (b"", "d.csv", r"^d\.csv: the file is empty$"),
        (b"\xef\xbb\xbf \n\n", "d.csv", r"d\.csv: the file is empty"),
        (b'""\n', "d.csv", r"d\.csv: the file is empty"),
        (
            "id,x\nab\xe9,1\n".encode("latin-1"),
            "d.csv",
            r"the file is not UTF-8 text \(byte 0xe9 at offset 7\)",
        ),
        (
            "id,x\n".encode("utf-16"),
            "d.csv",
            r"the file is not UTF-8 text \(byte 0xff at offset 0\)",
        ),
        (b"id,x\n\x00a,1\n", "d.csv", r"the file is not UTF-8 text \(byte 0x00 at offset 5\)"),
        (
            b"PK\x03\x04rest",
            "d.xlsx",
            r"not CSV text; it looks like a ZIP archive or an Excel workbook",
        ),
        (b"\x1f\x8b\x08rest", "d.csv.gz", r"looks like a gzip-compressed file"),
        (b"PAR1notparquet", "d.csv", r"d\.csv: the file is not a readable Parquet file"),
        (b"id,x\n", "d.parquet", r"d\.parquet: the file is not a readable Parquet file"),
        (
            b'id,x\na,1\nb,"2\nc,3\n',
            "d.csv",
            r"row 3 could not be parsed as CSV: unexpected end of data \(is a quote left open\?\)",
        ),
        (b'id,x\na,"1"2\n', "d.csv", r"row 2 could not be parsed as CSV"),
        (
            b"id,x\na,1\nb,2,3\n",
            "d.csv",
            r"row 3 has 3 fields; the header has 2 columns \(a value containing a comma must be quoted\)",
        ),
        (b"id,x,y\na,1,2\nb,2\n", "d.csv", r"row 3 has 2 fields; the header has 3 columns$"),
        (
            b"1,0.5,3\n2,0.7,4\n",
            "d.csv",
            r"the first row holds values \('1', '0.5', '3'\), not column names",
        ),
        (b"id,x,id\na,1,2\n", "d.csv", r"the header names column 'id' twice \(columns 1 and 3\)"),
        (b",x\n0,1\n", "d.csv", r"column 1 of the header row has no name \(a file saved by pandas"),
        (b"id,,x\n0,1,2\n", "d.csv", r"column 2 of the header row has no name$"),
        (b"id,x\n\n", "d.csv", r"the file has a header but no data rows"),
    ],
)
def test_read_table_errors(data, filename, match):
    with pytest.raises(TableError, match=match):
        read_table(data, filename=filename, max_bytes=LIMIT)


def test_read_table_size_limit_in_mb():
    data = b"x" * int(12.3 * 2**20)
    with pytest.raises(TableError, match=r"^big\.csv: the file is 12\.3 MB; the limit is 10 MB$"):
        read_table(data, filename="big.csv", max_bytes=10 * 2**20)


def test_read_table_size_limit_in_bytes_when_mb_would_not_differ():
    with pytest.raises(TableError, match=r"the file is 11 bytes; the limit is 10 bytes"):
        read_table(b"id,x\n1,2\n3\n", filename="d.csv", max_bytes=10)


def test_read_parquet_empty_and_duplicate_columns():
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table([pa.array([1]), pa.array([2])], names=["a", "a"]), buf)
    with pytest.raises(TableError, match=r"the header names column 'a' twice"):
        read(buf.getvalue(), filename="d.parquet")
    with pytest.raises(TableError, match=r"the file has no data rows"):
        read(parquet_bytes(pd.DataFrame({"a": pd.Series([], dtype=float)})), filename="d.parquet")


def test_table_error_is_a_value_error():
    assert issubclass(TableError, ValueError)


def test_max_bytes_must_be_positive():
    with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
        read_table(b"a\n1\n", filename="d.csv", max_bytes=0)


# ---------------------------------------------------------------------- Parquet bombs


def _constant_parquet(rows: int, chunk: int = 1_000_000) -> bytes:
    """``rows`` zeros in one int64 column, zstd: 20 million rows take about 90 KB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    table = pa.table({"x": pa.array(np.zeros(min(rows, chunk), dtype=np.int64))})
    with pq.ParquetWriter(buf, table.schema, compression="zstd") as writer:
        for start in range(0, rows, chunk):
            writer.write_table(table.slice(0, min(chunk, rows - start)))
    return buf.getvalue()


def test_parquet_bomb_is_refused_from_its_metadata_without_memory():
    import tracemalloc

    import pyarrow as pa

    data = _constant_parquet(20_000_000)
    assert len(data) < 300_000  # decoded as int64 it would be 160 MB
    pool = pa.default_memory_pool()
    arrow_before = pool.max_memory()
    tracemalloc.start()
    try:
        with pytest.raises(
            TableError, match=r"^bomb\.parquet: the file has 20,000,000 rows; the limit is 5,000,000 rows$"
        ):
            read_table(data, filename="bomb.parquet", max_bytes=1_000_000)
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert python_peak < 5 * 2**20  # numpy and pandas allocations: nothing was decoded
    assert pool.max_memory() - arrow_before < 16 * 2**20  # nor by Arrow


def test_parquet_decoded_size_limit_from_metadata_names_the_limit():
    data = _constant_parquet(2_000_000)  # 16 MB of int64 once decoded
    with pytest.raises(
        TableError,
        match=r"^d\.parquet: the data takes 15\.3 MB once decompressed; the limit is 9\.5 MB decompressed$",
    ):
        read_table(data, filename="d.parquet", max_bytes=1_000_000)
    assert len(read_table(data, filename="d.parquet", max_bytes=1_000_000, max_decoded_bytes=20 * 2**20)) == 2_000_000
    with pytest.raises(TableError, match=r"the file has 2,000,000 rows; the limit is 1,999,999 rows"):
        read_table(data, filename="d.parquet", max_bytes=1_000_000, max_rows=1_999_999)


def test_parquet_decoded_size_is_checked_again_while_reading():
    # A long string repeated through a dictionary: small even uncompressed, 20 MB decoded.
    df = pd.DataFrame({"text": ["w" * 1000] * 20_000})
    with pytest.raises(TableError, match=r"the data takes more than [\d.]+ MB once decompressed; the limit is 1 MB"):
        read_table(parquet_bytes(df), filename="d.parquet", max_bytes=1_000_000, max_decoded_bytes=2**20)


def test_max_rows_applies_to_csv():
    with pytest.raises(TableError, match=r"^d\.csv: the file has 3 rows; the limit is 2 rows$"):
        read("id\n1\n2\n3\n", filename="d.csv", max_rows=2)
    assert len(read("id\n1\n2\n", max_rows=2)) == 2


@pytest.mark.parametrize("name", ["max_rows", "max_decoded_bytes"])
def test_row_and_decoded_limits_must_be_positive(name):
    with pytest.raises(ValueError, match=f"{name} must be a positive integer; got 0"):
        read_table(b"a\n1\n", filename="d.csv", max_bytes=100, **{name: 0})
