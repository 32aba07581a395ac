"""Tests for evaluation.tables: reading, validating and splitting host datasets."""

import io

import numpy as np
import pandas as pd
import pytest

from evaluation.metrics import get_metric
from evaluation.tables import (
    DatasetSpec,
    TableError,
    join_public_hidden,
    prediction_columns,
    read_table,
    sample_submission,
    split_public_hidden,
    validate_dataset,
)

LIMIT = 1_000_000


def read(text, filename="data.csv", **kwargs):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return read_table(data, filename=filename, max_bytes=kwargs.pop("max_bytes", LIMIT), **kwargs)


def parquet_bytes(df):
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


DATASET = (
    "id,x1,x2,label,is_test\n007,1.5,a,cat,0\n008,2.5,b,dog,0\n009,3.5,c,cat,1\n010,4.5,d,bird,1\n"
)

# ------------------------------------------------------------------------- read_table


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


# ------------------------------------------------------------------- validate_dataset


def test_validate_dataset_defaults():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(
        df, id_column="id", label_column="label", test_column="is_test", task="classification"
    )
    assert spec == DatasetSpec(
        id_column="id",
        label_column="label",
        feature_columns=("x1", "x2"),
        task="classification",
        classes=("bird", "cat", "dog"),
        test_column="is_test",
        n_rows=4,
        n_test=2,
    )


def test_validate_dataset_numeric_classes_sort_numerically():
    df = pd.DataFrame({"id": [1, 2, 3, 4], "y": [10, 2, 2, 1]})
    spec = validate_dataset(df, id_column="id", label_column="y", task="classification")
    assert spec.classes == ("1", "2", "10") and spec.feature_columns == ()
    df["y"] = [1.0, 0.0, 1.0, 0.0]  # whole floats read as "1", "0"
    assert validate_dataset(df, id_column="id", label_column="y", task="binary").classes == (
        "0",
        "1",
    )


def test_validate_dataset_explicit_features_and_regression():
    df = pd.DataFrame({"id": ["a", "b"], "f": [1, 2], "g": [3, 4], "y": ["1.5", "2"]})
    spec = validate_dataset(
        df, id_column="id", label_column="y", feature_columns=["g"], task="regression"
    )
    assert spec.feature_columns == ("g",) and spec.classes is None and spec.n_test is None


@pytest.mark.parametrize(
    ("changes", "kwargs", "match"),
    [
        (
            {},
            {"id_column": "key"},
            r"there is no id column 'key'; the columns are: 'id', 'x', 'y', 't'",
        ),
        ({}, {"label_column": "target"}, r"there is no label column 'target'"),
        ({}, {"test_column": "split"}, r"there is no test column 'split'"),
        ({}, {"label_column": "id"}, r"the id, label and test columns must be different columns"),
        ({}, {"feature_columns": ["x", "z"]}, r"feature columns not in the table: 'z'"),
        (
            {},
            {"feature_columns": ["x", "y"]},
            r"the id, label or test column cannot also be a feature: 'y'",
        ),
        ({}, {"feature_columns": ["x", "x"]}, r"feature columns are listed twice: 'x'"),
        (
            {"id": ["a", "b", "a", "b", "a"]},
            {},
            r"ids must be unique, but the id column 'id' repeats 'a' at rows 2, 4 and 6; 'b' at rows 3 and 5",
        ),
        ({"id": ["a", "", "c", None, "e"]}, {}, r"the id column 'id' is empty at rows 3 and 5"),
        (
            {"y": ["p", "q", None, "q", "p"]},
            {},
            r"the label column 'y' is empty at row 4; every row needs a label",
        ),
        (
            {"y": ["p"] * 5},
            {},
            r"the label column 'y' holds a single class \('p'\); classification needs at least two",
        ),
        (
            {"y": ["p", "q", "r", "p", "q"]},
            {"task": "binary"},
            r"a binary task needs exactly two classes; the label column 'y' has 3: 'p', 'q', 'r'",
        ),
        (
            {"y": ["1", "2", "x", "3", "4"]},
            {"task": "regression"},
            r"the label column 'y' must hold numbers for regression; row 4 has 'x'",
        ),
        (
            {"y": [1.0, 2.0, np.inf, 3.0, 4.0]},
            {"task": "regression"},
            r"the label column 'y' must hold finite numbers; row 4 has 'inf'",
        ),
        (
            {"t": [0, 1, 2, 0, 1]},
            {},
            r"the test column 't' must hold true/false or 1/0; row 4 has '2'",
        ),
        (
            {"t": ["yes", "no", "", "no", "no"]},
            {},
            r"the test column 't' must hold true/false or 1/0; row 4 has an empty cell",
        ),
        ({"t": [0, 0, 0, 0, 0]}, {}, r"the test column 't' marks no row as a test row"),
    ],
)
def test_validate_dataset_errors(changes, kwargs, match):
    df = pd.DataFrame(
        {
            "id": list("abcde"),
            "x": [1.0, 2, 3, 4, 5],
            "y": ["p", "q", "p", "q", "p"],
            "t": [0, 0, 1, 1, 0],
        },
        index=pd.Index([2, 3, 4, 5, 6], name="row"),
    )
    for column, values in changes.items():
        df[column] = values
    args = {
        "id_column": "id",
        "label_column": "y",
        "test_column": "t",
        "task": "classification",
    } | kwargs
    with pytest.raises(TableError, match=match):
        validate_dataset(df, **args)


def test_validate_dataset_reports_ids_that_differ_only_as_numbers():
    # Read without text_columns, "7" and "007" are the same number, hence repeated.
    df = read("id,y\n7,a\n007,b\n")
    with pytest.raises(TableError, match=r"repeats '7' at rows 2 and 3"):
        validate_dataset(df, id_column="id", label_column="y", task="classification")
    df = read("id,y\n7,a\n007,b\n", text_columns=["id"])
    assert validate_dataset(df, id_column="id", label_column="y", task="classification").n_rows == 2


def test_validate_dataset_bad_task_and_empty_frame():
    df = pd.DataFrame({"id": ["a"], "y": [1]})
    with pytest.raises(
        ValueError, match=r"task must be one of classification, binary, regression; got 'ranking'"
    ):
        validate_dataset(df, id_column="id", label_column="y", task="ranking")
    with pytest.raises(TableError, match="the dataset has no rows"):
        validate_dataset(df.iloc[:0], id_column="id", label_column="y", task="regression")


# ---------------------------------------------------------------- split / join frames


def test_split_public_hidden():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(
        df, id_column="id", label_column="label", test_column="is_test", task="classification"
    )
    train, test_inputs, hidden = split_public_hidden(df, spec)
    assert list(train.columns) == ["id", "x1", "x2", "label"]
    assert list(test_inputs.columns) == ["id", "x1", "x2"]
    assert list(hidden.columns) == ["id", "label"]
    assert train["id"].tolist() == ["007", "008"] and train["label"].tolist() == ["cat", "dog"]
    assert test_inputs["id"].tolist() == ["009", "010"] and test_inputs["x1"].tolist() == [3.5, 4.5]
    assert hidden.to_dict("list") == {"id": ["009", "010"], "label": ["cat", "bird"]}
    assert all(
        part.index.tolist() == list(range(len(part))) for part in (train, test_inputs, hidden)
    )


def test_split_public_hidden_regression_labels_are_floats():
    df = pd.DataFrame(
        {"id": [1, 2, 3], "x": [0, 1, 2], "y": ["1.5", "2", "3"], "t": [False, True, True]}
    )
    spec = validate_dataset(
        df, id_column="id", label_column="y", test_column="t", task="regression"
    )
    train, test_inputs, hidden = split_public_hidden(df, spec)
    assert hidden["y"].tolist() == [2.0, 3.0] and hidden["id"].tolist() == ["2", "3"]
    assert "y" not in test_inputs.columns and train["y"].tolist() == [1.5]


def test_split_public_hidden_checks_the_frame_still_matches_the_spec():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(
        df, id_column="id", label_column="label", test_column="is_test", task="classification"
    )
    with pytest.raises(TableError, match=r"there is no feature column 'x1'"):
        split_public_hidden(df.drop(columns=["x1"]), spec)


def test_split_public_hidden_needs_a_test_column():
    df = pd.DataFrame({"id": ["a", "b"], "y": [1.0, 2.0]})
    spec = validate_dataset(df, id_column="id", label_column="y", task="regression")
    with pytest.raises(ValueError, match="spec has no test_column"):
        split_public_hidden(df, spec)


def _three_files():
    train = read("id,x,y\na,1,p\nb,2,q\n", text_columns=["id", "y"])
    test_inputs = read("id,x\nd,4\nc,3\n", text_columns=["id"])
    hidden = read("id,y\nc,p\nd,q\n", text_columns=["id", "y"])
    return train, test_inputs, hidden


def test_join_then_split_round_trip():
    train, test_inputs, hidden = _three_files()
    df = join_public_hidden(train, test_inputs, hidden, id_column="id", label_column="y")
    assert list(df.columns) == ["id", "x", "y", "is_test"]
    assert df.index.tolist() == [
        "train row 2",
        "train row 3",
        "test inputs row 2",
        "test inputs row 3",
    ]
    spec = validate_dataset(
        df, id_column="id", label_column="y", test_column="is_test", task="classification"
    )
    assert spec.n_test == 2 and spec.classes == ("p", "q")
    tr, ti, hl = split_public_hidden(df, spec)
    assert tr["id"].tolist() == ["a", "b"] and ti["id"].tolist() == ["d", "c"]
    assert hl.to_dict("list") == {"id": ["d", "c"], "y": ["q", "p"]}


def test_join_without_training_data():
    _, test_inputs, hidden = _three_files()
    df = join_public_hidden(None, test_inputs, hidden, id_column="id", label_column="y")
    assert df["is_test"].all() and len(df) == 2


def test_join_names_the_file_of_a_repeated_id():
    train, test_inputs, hidden = _three_files()
    test_inputs["id"] = ["d", "a"]
    hidden["id"] = ["a", "d"]
    df = join_public_hidden(train, test_inputs, hidden, id_column="id", label_column="y")
    with pytest.raises(TableError, match=r"repeats 'a' at train row 2, test inputs row 3"):
        validate_dataset(
            df, id_column="id", label_column="y", test_column="is_test", task="classification"
        )


def test_join_errors():
    train, test_inputs, hidden = _three_files()
    join = lambda tr, ti, hl: join_public_hidden(tr, ti, hl, id_column="id", label_column="y")  # noqa: E731
    with pytest.raises(TableError, match=r"the test inputs must not contain the label column 'y'"):
        join(train, test_inputs.assign(y="p"), hidden)
    with pytest.raises(
        TableError,
        match=r"the hidden labels file must have exactly the columns 'id' and 'y'; it also has 'x'",
    ):
        join(train, test_inputs, hidden.assign(x=1))
    with pytest.raises(TableError, match=r"there is no label \(hidden labels\) column 'y'"):
        join(train, test_inputs, hidden.rename(columns={"y": "label"}))
    with pytest.raises(TableError, match=r"the training data lacks 'z'"):
        join(train, test_inputs.assign(z=0), hidden)
    with pytest.raises(
        TableError, match=r"1 test inputs have no hidden label: ids 'c' \(test inputs row 3\)"
    ):
        join(train, test_inputs, hidden.iloc[[1]])
    with pytest.raises(
        TableError,
        match=r"1 hidden labels belong to no test input: ids 'c' \(hidden labels row 2\)",
    ):
        join(train, test_inputs.iloc[[0]], hidden)
    with pytest.raises(
        TableError,
        match=r"the id column 'id' repeats 'c' at hidden labels row 2, hidden labels row 3",
    ):
        join(train, test_inputs, hidden.assign(id=["c", "c"]))
    with pytest.raises(TableError, match=r"the column name 'is_test' is already taken"):
        join(train.assign(is_test=0), test_inputs, hidden)


# ------------------------------------------------------------------ sample submission


@pytest.mark.parametrize(
    ("metric", "classes", "expected"),
    [
        ("accuracy", ["cat", "dog"], "key,prediction\n1,cat\nb,cat\n"),
        (
            "log_loss",
            ["cat", "dog", "emu"],
            "key,cat,dog,emu\n" + "1,{0},{0},{0}\nb,{0},{0},{0}\n".format(repr(1 / 3)),
        ),
        ("roc_auc", ["0", "1"], "key,score\n1,0.5\nb,0.5\n"),
        ("rmse", None, "key,prediction\n1,0.0\nb,0.0\n"),
    ],
)
def test_sample_submission(metric, classes, expected):
    assert sample_submission([1, "b"], get_metric(metric), classes, id_column="key") == expected


def test_sample_submission_quotes_and_defaults():
    text = sample_submission(["a,b"], "mae", None)
    assert text == 'id,prediction\n"a,b",0.0\n'


def test_sample_submission_errors():
    with pytest.raises(ValueError, match="accuracy predictions need the classes"):
        sample_submission(["a"], "accuracy", None)
    with pytest.raises(ValueError, match="log_loss predictions need the classes"):
        sample_submission(["a"], "log_loss", [])
    with pytest.raises(ValueError, match="has the same name as a prediction column"):
        sample_submission(["a"], "mae", None, id_column="prediction")


def test_prediction_columns():
    assert prediction_columns("accuracy", ["a"]) == ("prediction",)
    assert prediction_columns("mae", None) == ("prediction",)
    assert prediction_columns("roc_auc", None) == ("score",)
    assert prediction_columns("log_loss", [1, 2]) == ("1", "2")
