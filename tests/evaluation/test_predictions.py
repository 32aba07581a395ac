"""Tests for evaluation.predictions: one test per error message, valid files of every
kind, and the property that row order never matters."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.metrics import METRICS, get_metric, score_predictions
from evaluation.predictions import MAX_PREDICTION, PredictionFileError, parse_predictions
from evaluation.samples import sample_submission

IDS = ["007", "008", "009"]
CLASSES = ["cat", "dog", "emu"]


def parse(
    text,
    metric="accuracy",
    *,
    ids=IDS,
    classes=CLASSES,
    max_bytes=100_000,
    id_column="id",
    filename="preds.csv",
):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return parse_predictions(
        data,
        filename=filename,
        id_column=id_column,
        expected_ids=ids,
        metric=get_metric(metric),
        classes=classes,
        max_bytes=max_bytes,
    )


def fails(match, text, metric="accuracy", **kwargs):
    with pytest.raises(PredictionFileError, match=match):
        parse(text, metric, **kwargs)


# -------------------------------------------------------------------------- valid files


def test_valid_label_file_is_aligned_to_expected_ids():
    out = parse("id,prediction\n009,emu\n007,cat\n008,dog\n")
    assert out.tolist() == ["cat", "dog", "emu"] and out.dtype.kind == "U"


def test_valid_proba_file_columns_in_classes_order():
    text = "emu,id,cat,dog\n0.2,008,0.3,0.5\n0,007,1,0\n0.25,009,0.25,0.5\n"
    out = parse(text, "log_loss")
    np.testing.assert_array_equal(out, [[1, 0, 0], [0.3, 0.5, 0.2], [0.25, 0.5, 0.25]])
    assert out.dtype == np.float64 and out.shape == (3, 3)


def test_valid_proba_file_within_tolerance():
    text = "id,cat,dog,emu\n007,0.3333333,0.3333333,0.3333333\n008,1,0,0\n009,0,0,1\n"
    assert parse(text, "log_loss").shape == (3, 3)


def test_valid_score_file_accepts_any_finite_score():
    out = parse("id,score\n008,-3.5\n007,1e3\n009,0\n", "roc_auc", classes=["0", "1"])
    assert out.tolist() == [1000.0, -3.5, 0.0]


def test_valid_value_file():
    out = parse("id,prediction\n007,1.5\n008,-2\n009,3e-2\n", "rmse", classes=None)
    assert out.tolist() == [1.5, -2.0, 0.03]


def test_whitespace_bom_crlf_quotes_and_blank_lines_are_tolerated():
    text = '\ufeff id , prediction \r\n\r\n"007", cat\r\n008,"dog"\r\n\r\n009 ,emu \r\n\r\n'
    assert parse(text).tolist() == ["cat", "dog", "emu"]


def test_long_cells_beyond_the_csv_default_field_limit():
    long_id = "x" * 200_000
    out = parse(f"id,prediction\n{long_id},1\n", "mae", ids=[long_id], classes=None, max_bytes=10**6)
    assert out.tolist() == [1.0]


def test_custom_id_column():
    out = parse("key,prediction\n007,1\n008,2\n009,3\n", "mae", classes=None, id_column="key")
    assert out.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", sorted(METRICS))
def test_sample_submission_parses_and_scores(name):
    metric = get_metric(name)
    classes = ["0", "1"] if metric.task == "binary" else CLASSES if metric.task == "classification" else None
    text = sample_submission(IDS, metric, classes, id_column="key")
    preds = parse(text, name, classes=classes, id_column="key")
    y_true = ["0", "1", "1"] if metric.task == "binary" else ["cat", "dog", "emu"] if classes else [0.0, 1.0, 2.0]
    assert np.isfinite(score_predictions(name, y_true, preds, classes=classes).score)


# ------------------------------------------------------------------------------ errors


def test_error_is_a_value_error():
    assert issubclass(PredictionFileError, ValueError)


def test_over_the_size_limit():
    data = b"id,prediction\n" + b"x" * int(12.3 * 2**20)
    fails(r"^preds\.csv: the file is 12\.3 MB; the limit is 10 MB$", data, max_bytes=10 * 2**20)


def test_empty_file():
    fails(r"^preds\.csv: the file is empty$", b"")


def test_blank_file():
    fails(r"^preds\.csv: the file is empty$", b"\n \r\n")
    fails(r"^preds\.csv: the file is empty$", b'""\n\n')


def test_not_utf8():
    fails(
        r"the file is not UTF-8 text \(byte 0xe9 at offset 18\)",
        "id,prediction\n007,\xe9\n".encode("latin-1"),
    )


def test_utf16():
    fails(r"the file is not UTF-8 text \(byte 0xff at offset 0\)", "id,prediction\n".encode("utf-16"))


def test_binary_file():
    fails(
        r"not CSV text; it looks like a ZIP archive or an Excel workbook \(.xlsx\)",
        b"PK\x03\x04...",
    )
    fails(r"not CSV text; it looks like a Parquet file", b"PAR1...")


def test_not_comma_separated():
    fails(
        r"the file is not comma-separated: its header is a single column 'id;prediction'",
        "id;prediction\n007;cat\n",
    )


def test_no_header():
    fails(
        r"the first row holds values \('007', 'cat'\), not column names; the file needs a header row naming its columns: id, prediction",
        "007,cat\n008,dog\n009,emu\n",
    )


def test_no_header_numbers_only():
    fails(
        r"the first row holds values \('1', '0.5'\)",
        "1,0.5\n2,0.5\n",
        "mae",
        classes=None,
        ids=["a"],
    )


def test_missing_id_column():
    fails(
        r"there is no id column 'id'; the columns found are: 'ID', 'prediction' \(found 'ID' for 'id'; column names are case-sensitive\)",
        "ID,prediction\n007,cat\n",
    )
    fails(
        r"there is no id column 'id'; the columns found are: 'row', 'prediction'$",
        "row,prediction\n007,cat\n",
    )


def test_missing_prediction_column():
    fails(
        r"missing prediction column 'prediction'; the columns found are: 'id', 'label'$",
        "id,label\n007,cat\n",
    )


def test_missing_proba_columns():
    fails(
        r"missing prediction columns 'dog', 'emu'; the columns found are: 'id', 'cat'",
        "id,cat\n007,1\n",
        "log_loss",
    )


def test_score_column_named_prediction():
    fails(r"missing prediction column 'score'", "id,prediction\n007,0.5\n", "roc_auc", classes=None)


def test_unexpected_columns():
    fails(
        r"unexpected columns 'note', 'x'; the file must have exactly the columns id, prediction",
        "id,prediction,note,x\n007,cat,a,b\n",
    )


def test_duplicate_header_column():
    fails(
        r"the header names column 'prediction' twice \(columns 2 and 3\)",
        "id,prediction,prediction\n007,cat,cat\n",
    )


def test_empty_header_name():
    fails(r"column 1 of the header row has no name", ",id,prediction\n0,007,cat\n")


def test_header_without_rows():
    fails(
        r"the file has a header but no data rows; expected 3 \(one per test id\)",
        "id,prediction\n\n",
    )


def test_wrong_number_of_fields():
    fails(
        r"row 3 has 3 fields; the header has 2 columns \(a value containing a comma must be quoted\)",
        "id,prediction\n007,cat\n008,dog,x\n",
    )


def test_unparseable_row():
    fails(
        r"row 3 could not be parsed as CSV: unexpected end of data \(is a quote left open\?\)",
        'id,prediction\n007,cat\n008,"dog\n009,emu\n',
    )


def test_duplicate_id_names_both_rows():
    fails(
        r"id '008' appears twice, in rows 3 and 5",
        "id,prediction\n007,cat\n008,dog\n\n008,emu\n009,cat\n",
    )


def test_unknown_id_names_it_and_its_row():
    fails(r"row 3: id 'x1' is not a test id$", "id,prediction\n007,cat\nx1,dog\n009,emu\n")


def test_unknown_id_with_lost_leading_zeros():
    fails(
        r"row 2: id '7' is not a test id \(did you mean '007'\? ids are compared as text\) \(2 more rows have ids that are not test ids\)",
        "id,prediction\n7,cat\n8,dog\n9,emu\n",
    )


def test_missing_ids_count_and_first_few():
    ids = [f"{i:03d}" for i in range(20)]
    text = "id,prediction\n" + "".join(f"{i},cat\n" for i in ids[:12])
    fails(
        r"the file has 12 rows of predictions; the test set has 20 ids. Missing: 8 ids, '012', '013', '014', '015', '016' and 3 more",
        text,
        ids=ids,
    )
    fails(
        r"the test set has 20 ids. Missing: 1 id, '019'$",
        "id,prediction\n" + "".join(f"{i},cat\n" for i in ids[:19]),
        ids=ids,
    )


def test_wrong_number_of_rows():
    fails(
        r"the file has 2 rows of predictions; the test set has 3 ids",
        "id,prediction\n007,cat\n008,dog\n",
    )


def test_empty_cell_names_row_and_column():
    fails(r"row 3, column 'prediction': the cell is empty", "id,prediction\n007,cat\n008, \n009,emu\n")


def test_empty_id_cell():
    fails(r"row 2, column 'id': the cell is empty", "id,prediction\n,cat\n008,dog\n009,emu\n")


def test_nan_value():
    fails(
        r"row 4, column 'prediction': 'NaN' is not a finite number",
        "id,prediction\n007,1\n008,2\n009,NaN\n",
        "mae",
        classes=None,
    )


def test_infinite_value():
    fails(
        r"row 2, column 'score': '-inf' is not a finite number",
        "id,score\n007,-inf\n008,2\n009,1\n",
        "roc_auc",
        classes=None,
    )


def test_a_value_whose_squared_error_overflows_is_refused():
    """1e200 is finite, but its squared error is not: the run stored inf and every report of the challenge
    failed on it (an attacker's finding). Refused at upload, naming the row and the bound."""
    fails(
        r"row 3, column 'prediction': '-1e200' is too large: predictions must lie within ±1e\+18",
        "id,prediction\n007,1\n008,-1e200\n009,2\n",
        "rmse",
        classes=None,
    )
    assert parse("id,prediction\n007,1e18\n008,-1e18\n009,2\n", "rmse", classes=None).tolist() == [1e18, -1e18, 2]


def test_a_value_whose_squared_error_overflows_the_stored_outcomes_is_refused():
    """A host's review: 1e99 was under the bound (1e100), its squared error 1e198 is finite in float64 but a run
    stores its per-example outcomes as float32 (at most 3.4e38): stored as inf, and the board of the challenge
    answered "cannot be computed" for everyone."""
    fails(
        r"row 2, column 'prediction': '1e99' is too large: predictions must lie within ±1e\+18",
        "id,prediction\n007,1e99\n008,1\n009,2\n",
        "rmse",
        classes=None,
    )
    worst = (2 * MAX_PREDICTION) ** 2  # a prediction and a label at opposite ends of the bound
    assert np.isfinite(np.float32(worst))


def test_wrong_type_names_row_column_and_value():
    fails(
        r"row 3, column 'prediction': 'high' is not a number",
        "id,prediction\n007,1\n008,high\n009,1\n",
        "rmse",
        classes=None,
    )


def test_underscore_numbers_are_not_numbers():
    fails(
        r"row 2, column 'prediction': '1_000' is not a number",
        "id,prediction\n007,1_000\n008,2\n009,1\n",
        "rmse",
        classes=None,
    )


def test_probability_outside_unit_interval():
    fails(
        r"row 3, column 'dog': 1.2 is not a probability \(outside \[0, 1\]\)",
        "id,cat,dog,emu\n007,1,0,0\n008,0,1.2,-0.2\n009,0,0,1\n",
        "log_loss",
    )


def test_probabilities_not_summing_to_one():
    fails(
        r"row 4: the probabilities sum to 0.99; each row must sum to 1 \(within 1e-06\)",
        "id,cat,dog,emu\n007,1,0,0\n008,0,1,0\n009,0.33,0.33,0.33\n",
        "log_loss",
    )


def test_label_not_among_classes():
    fails(
        r"row 3, column 'prediction': 'Dog' is not one of the classes \('cat', 'dog', 'emu'\); did you mean 'dog'\? \(labels are case-sensitive\)",
        "id,prediction\n007,cat\n008,Dog\n009,emu\n",
    )


def test_numeric_label_hint():
    fails(
        r"'1.0' is not one of the classes \('0', '1'\); did you mean '1'\? \(labels are compared as text\)",
        "id,prediction\n007,1.0\n008,0\n009,1\n",
        classes=["0", "1"],
    )


def test_first_problem_in_category_order():
    # A missing column is reported before any row problem.
    fails(r"missing prediction column", "id,pred\n007,\n008,dog,x\n")


# ------------------------------------------------------------------ challenge-side args


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"classes": None}, r"accuracy predictions need the classes"),
        ({"ids": []}, r"expected_ids is empty"),
        ({"ids": ["a", "a"]}, r"expected_ids must be distinct"),
        (
            {"id_column": "prediction"},
            r"the id column 'prediction' has the same name as a prediction column",
        ),
        ({"max_bytes": 0}, r"max_bytes must be a positive integer"),
    ],
)
def test_bad_challenge_arguments_are_plain_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        parse("id,prediction\n007,cat\n", **kwargs)
    assert not isinstance(info.value, PredictionFileError)


# ------------------------------------------------------------------------- properties


def _valid_file(kind_metric, ids, rng_values, classes):
    metric = get_metric(kind_metric)
    kind = metric.prediction_kind
    if kind == "label":
        header = ["id", "prediction"]
        rows = [[i, classes[v % len(classes)]] for i, v in zip(ids, rng_values, strict=True)]
    elif kind == "proba":
        header = ["id", *classes]
        rows = []
        for i, v in zip(ids, rng_values, strict=True):
            p = np.full(len(classes), 0.0)
            p[v % len(classes)] = 0.75
            p[(v + 1) % len(classes)] += 0.25
            rows.append([i, *(repr(float(x)) for x in p)])
    else:
        header = ["id", "score" if kind == "score" else "prediction"]
        rows = [[i, repr(v / 7)] for i, v in zip(ids, rng_values, strict=True)]
    return header, rows


@settings(max_examples=40, deadline=None)
@given(
    metric=st.sampled_from(["accuracy", "log_loss", "roc_auc", "mae"]),
    ids=st.lists(
        st.text(alphabet="0123456789abcXYZ-_ ", min_size=1, max_size=6).map(str.strip).filter(bool),
        min_size=1,
        max_size=25,
        unique=True,
    ),
    data=st.data(),
)
def test_row_order_does_not_matter(metric, ids, data):
    values = data.draw(st.lists(st.integers(-50, 50), min_size=len(ids), max_size=len(ids)))
    header, rows = _valid_file(metric, ids, values, CLASSES)
    perm = data.draw(st.permutations(range(len(rows))))

    def render(rs):
        return "\n".join(",".join(r) for r in [header, *rs]) + "\n"

    a = parse(render(rows), metric, ids=ids)
    b = parse(render([rows[k] for k in perm]), metric, ids=ids)
    np.testing.assert_array_equal(a, b)
    assert a.shape[0] == len(ids)
