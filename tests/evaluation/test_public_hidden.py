"""Tests for evaluation.public_hidden: splitting a dataset and joining three files."""

import pandas as pd
import pytest

from evaluation.datasets import validate_dataset
from evaluation.io.read import TableError
from evaluation.public_hidden import join_public_hidden, split_public_hidden
from tests.evaluation.uploads import DATASET, read


def test_split_public_hidden():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(df, id_column="id", label_column="label", test_column="is_test", task="classification")
    train, test_inputs, hidden = split_public_hidden(df, spec)
    assert list(train.columns) == ["id", "x1", "x2", "label"]
    assert list(test_inputs.columns) == ["id", "x1", "x2"]
    assert list(hidden.columns) == ["id", "label"]
    assert train["id"].tolist() == ["007", "008"] and train["label"].tolist() == ["cat", "dog"]
    assert test_inputs["id"].tolist() == ["009", "010"] and test_inputs["x1"].tolist() == [3.5, 4.5]
    assert hidden.to_dict("list") == {"id": ["009", "010"], "label": ["cat", "bird"]}
    assert all(part.index.tolist() == list(range(len(part))) for part in (train, test_inputs, hidden))


def test_split_public_hidden_regression_labels_are_floats():
    df = pd.DataFrame({"id": [1, 2, 3], "x": [0, 1, 2], "y": ["1.5", "2", "3"], "t": [False, True, True]})
    spec = validate_dataset(df, id_column="id", label_column="y", test_column="t", task="regression")
    train, test_inputs, hidden = split_public_hidden(df, spec)
    assert hidden["y"].tolist() == [2.0, 3.0] and hidden["id"].tolist() == ["2", "3"]
    assert "y" not in test_inputs.columns and train["y"].tolist() == [1.5]


def test_split_public_hidden_checks_the_frame_still_matches_the_spec():
    df = read(DATASET, text_columns=["id", "label"])
    spec = validate_dataset(df, id_column="id", label_column="label", test_column="is_test", task="classification")
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
    spec = validate_dataset(df, id_column="id", label_column="y", test_column="is_test", task="classification")
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
        validate_dataset(df, id_column="id", label_column="y", test_column="is_test", task="classification")


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
    with pytest.raises(TableError, match=r"1 test inputs have no hidden label: ids 'c' \(test inputs row 3\)"):
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
