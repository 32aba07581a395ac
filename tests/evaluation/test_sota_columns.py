"""The state of the art's columns of the rows' means (issue 27)."""

from __future__ import annotations

import numpy as np


def test_the_sections_mean_columns_of_all_rows_equal_those_read_row_by_row():
    """``sota._columns_of`` takes the compared rows' means from their columns (issue 27): the same arrays as
    ``_mean_columns`` of every row, rows not compared, missing values and repeated dicts included."""
    from evaluation.report.sota import _columns_of, _mean_columns

    rng = np.random.default_rng(3)
    for trial in range(50):
        rows = [
            {
                "mean": {
                    "estimate": None if rng.random() < 0.1 else float(rng.random()),
                    "se": None if rng.random() < 0.2 else float(rng.random()),
                }
            }
            for _ in range(int(rng.integers(1, 30)))
        ]
        pool = [rows[i] for i in sorted(rng.choice(len(rows), size=int(rng.integers(1, len(rows) + 1)), replace=False))]
        estimate, se = _mean_columns(pool)
        got, want = _columns_of(rows, pool, estimate, se), _mean_columns(rows)
        assert all(a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(got, want)), trial
