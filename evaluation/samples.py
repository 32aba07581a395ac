"""The prediction file format of a challenge: its columns and a sample file.

:func:`prediction_columns` names the columns a prediction file has besides the id
column (one per class for probabilities); :func:`sample_submission` writes a valid
file to show contestants, in the format that
:func:`evaluation.predictions.parse_predictions` accepts. Standard library and
:mod:`evaluation.metrics` only.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from evaluation.metrics import Metric, get_metric

__all__ = ["prediction_columns", "sample_submission"]


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
