"""The multiplicity-adjusted state of the art of a section (Møllersen & Holsbø).

The best entry's mean is optimistic once ``m`` entries have been scored on the same test
data; :func:`section_sota` reports it with the debiased estimate and a bound from
:func:`evaluation.stats.adjusted_sota` (docs/DESIGN.md §6): the exact binomial form for
accuracy-like prediction entries, else the normal approximation with the entries'
standard errors. The entries' own scores enter (the non-identical form, eq. 8): a
leader far ahead of the rest is not pulled down as if every entry could have won.
"""

from __future__ import annotations

import numpy as np

from evaluation import stats
from evaluation.report.settings import ReportSettings
from evaluation.report.values import finite

__all__ = ["section_sota"]


def section_sota(rows: list[dict], compared: list[dict], m_total: int | None, s: ReportSettings, *,
                 binomial_n: int | None) -> dict:
    """Multiplicity-adjusted state of the art of a section (Møllersen & Holsbø).

    The best is taken among the compared entries (those the section ranks), or among
    all entries with a standard error when none is compared; ``m`` counts at least
    every entry of the section.
    """
    sign = 1.0 if s.higher_is_better else -1.0
    candidates = [r for r in (compared or rows) if r["mean"]["estimate"] is not None
                  and (binomial_n is not None or r["mean"]["se"] is not None)]
    m = max(int(m_total or 0), len(rows))
    if not candidates:
        return {"raw": None, "estimate": None, "bound": None, "bound_side": None, "m": m, "method": None,
                "alpha": s.alpha, "n": None, "se": None, "submission_id": None,
                "note": "no entry has a standard error yet (recipes need 2 runs)", "model": None, "shrinkage": None}
    top = max(candidates, key=lambda r: (sign * r["mean"]["estimate"], -r["submission_id"]))
    raw = top["mean"]["estimate"]
    if binomial_n is None and not top["mean"]["se"] > 0:  # no spread at all: nothing to adjust by
        return {"raw": finite(raw), "estimate": finite(raw), "bound": finite(raw),
                "bound_side": "lower" if s.higher_is_better else "upper", "m": m, "method": "normal",
                "alpha": s.alpha, "n": None, "se": 0.0, "submission_id": top["submission_id"],
                "note": "the best entry's runs are all equal (standard error 0)", "model": None, "shrinkage": None}
    scored = [r for r in rows if r["mean"]["estimate"] is not None]
    if binomial_n is not None:
        estimates = np.clip([r["mean"]["estimate"] for r in scored], 0.0, 1.0)
        adj = stats.adjusted_sota(raw, m, n=binomial_n, alpha=s.alpha, estimates=estimates)
        estimate, bound = adj.estimate, adj.lower
    else:
        with_se = [r for r in scored if r["mean"]["se"] and r["mean"]["se"] > 0]
        adj = stats.adjusted_sota(sign * raw, m, standard_error=top["mean"]["se"], alpha=s.alpha,
                                  estimates=[sign * r["mean"]["estimate"] for r in with_se] or None,
                                  standard_errors=[r["mean"]["se"] for r in with_se] or None)
        estimate, bound = sign * adj.estimate, sign * adj.lower
    return {"raw": finite(raw), "estimate": finite(estimate), "bound": finite(bound),
            "bound_side": "lower" if s.higher_is_better else "upper", "m": m, "method": adj.method,
            "alpha": s.alpha, "n": binomial_n, "se": None if binomial_n is not None else finite(top["mean"]["se"]),
            "submission_id": top["submission_id"], "note": None, "model": adj.model,
            "shrinkage": finite(adj.shrinkage)}
