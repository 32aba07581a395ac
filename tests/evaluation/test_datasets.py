"""Tests for evaluation.datasets: validating a host's dataset."""

import numpy as np
import pandas as pd
import pytest

from evaluation.datasets import DatasetSpec, validate_dataset
from evaluation.io.read import TableError
from tests.evaluation.uploads import DATASET, read


def test_validate_dataset_defaults():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(df, id_column="id", label_column="label", test_column="is_test", task="classification")
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


def test_a_classification_task_takes_at_most_ten_thousand_classes():
    """A 15 MB CSV of a million distinct labels stored a million classes with the dataset (+187 MB to
    create it, +59 MB at each load of its row): refused, naming the count; 10,000 classes still fit."""
    labels = [f"c{i}" for i in range(10_001)]
    df = pd.DataFrame({"id": range(10_001), "y": labels})
    with pytest.raises(
        TableError, match=r"holds 10,001 distinct labels; .* at most 10,000 classes \(for numbers, choose"
    ):
        validate_dataset(df, id_column="id", label_column="y", task="classification")
    assert (
        len(validate_dataset(df.iloc[:10_000], id_column="id", label_column="y", task="classification").classes)
        == 10_000
    )


def test_validate_dataset_explicit_features_and_regression():
    df = pd.DataFrame({"id": ["a", "b"], "f": [1, 2], "g": [3, 4], "y": ["1.5", "2"]})
    spec = validate_dataset(df, id_column="id", label_column="y", feature_columns=["g"], task="regression")
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


def test_a_regression_label_past_the_predictions_bound_is_refused():
    """A host's review: a label of 1e25 was stored; every file's squared error then overflowed the float32 outcomes a
    run stores, and the board answered "cannot be computed" for everyone. Labels share the predictions' bound."""
    df = pd.DataFrame({"id": list("abcd"), "x": [1.0, 2, 3, 4], "y": [1.0, 2.0, 1e25, 3.0], "t": [0, 0, 1, 1]})
    args = {"id_column": "id", "label_column": "y", "test_column": "t", "task": "regression"}
    with pytest.raises(TableError, match=r"the label column 'y' must hold numbers within ±1e\+18; row 2 has '1e\+25'"):
        validate_dataset(df, **args)
    df["y"] = [1.0, 2.0, -1e18, 3.0]
    assert validate_dataset(df, **args).n_rows == 4


def test_validate_dataset_reports_ids_that_differ_only_as_numbers():
    # Read without text_columns, "7" and "007" are the same number, hence repeated.
    df = read("id,y\n7,a\n007,b\n")
    with pytest.raises(TableError, match=r"repeats '7' at rows 2 and 3"):
        validate_dataset(df, id_column="id", label_column="y", task="classification")
    df = read("id,y\n7,a\n007,b\n", text_columns=["id"])
    assert validate_dataset(df, id_column="id", label_column="y", task="classification").n_rows == 2


def test_validate_dataset_bad_task_and_empty_frame():
    df = pd.DataFrame({"id": ["a"], "y": [1]})
    with pytest.raises(ValueError, match=r"task must be one of classification, binary, regression; got 'ranking'"):
        validate_dataset(df, id_column="id", label_column="y", task="ranking")
    with pytest.raises(TableError, match="the dataset has no rows"):
        validate_dataset(df.iloc[:0], id_column="id", label_column="y", task="regression")


def test_a_semicolon_separated_file_is_named_as_such():
    """Found by a new user: a ;-separated CSV was read as one column and the message only listed 'a;b;c'."""
    from evaluation.datasets import TableError, require_columns

    with pytest.raises(TableError, match=r"the columns are: 'id;prediction' \(the file seems separated by ';'"):
        require_columns(["id;prediction"], {"id": "id"})
    with pytest.raises(TableError, match=r"the columns are: 'a', 'b'$"):  # several columns: no guess
        require_columns(["a", "b"], {"id": "id"})
