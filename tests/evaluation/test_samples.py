"""Tests for evaluation.samples: the prediction columns and the sample file."""

import pytest

from evaluation.metrics import get_metric
from evaluation.samples import prediction_columns, sample_submission


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
