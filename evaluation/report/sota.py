"""The multiplicity-adjusted state of the art of a section (Møllersen & Holsbø).

The best entry's mean is optimistic once ``m`` entries have been scored on the same test
data; :func:`section_sota` reports it with the debiased estimate and a bound from
:func:`evaluation.stats.adjusted_sota` (docs/DESIGN.md §6): the exact binomial form for
accuracy-like prediction entries, else the normal approximation with the entries'
standard errors. The entries' own scores enter (the non-identical form, eq. 8): a
leader far ahead of the rest is not pulled down as if every entry could have won. Prediction
entries' per-example outcomes enter too: identical outcome vectors count once in ``m``, and
their correlation gives the dependence ρ of eq. 10 (:func:`evaluation.stats.outcome_dependence`):
ten copies of one classifier are one classifier, not ten chances. An accuracy-like metric
where lower is better (an error rate) is adjusted as the accuracy ``1 - x`` and mapped back.
"""

from __future__ import annotations

import numpy as np

from evaluation import stats
from evaluation.report.ranking import by_name, same_value
from evaluation.report.settings import ReportSettings
from evaluation.report.values import finite
from evaluation.stats._resample import TIE_RELATIVE, paired_wins
from evaluation.stats.sota import distinct_rows

__all__ = ["section_sota", "twin_keys"]


def section_sota(
    rows: list[dict],
    compared: list[dict],
    m_total: int | None,
    s: ReportSettings,
    *,
    binomial_n: int | None,
    outcomes: list[np.ndarray] | None = None,
    run_keys: list[bytes] | None = None,
    trials: dict[int, float] | None = None,
) -> dict:
    """Multiplicity-adjusted state of the art of a section (Møllersen & Holsbø).

    The best is taken among the compared entries (those the section ranks), or among
    all entries with a standard error when none is compared; ``m`` counts at least
    every entry of the section, less the entries whose ``outcomes`` (per compared entry,
    files x examples) repeat another's. Those outcomes also give ``rho`` (eq. 10). A recipe section
    has no outcomes: its entries (``run_keys`` aligned with ``rows``: their seeds and scores) that repeat another's are counted once, compared or not, as a prediction file repeated is (six
    copies of one recipe made m = 6; two copies left out of the comparisons made m one too large). ``trials``
    (prediction entries, by submission id) are the trials each entry's own interval reads: the binomial form's n.
    """
    sign = 1.0 if s.higher_is_better else -1.0
    pool = compared or rows
    pool_estimate, pool_se = _mean_columns(pool)
    usable = ~np.isnan(pool_estimate) & (binomial_n is not None or ~np.isnan(pool_se))
    m, rho, duplicates, repeated = _multiplicity(rows, compared, m_total, outcomes, run_keys)
    blank = _blank_sota(m=m, alpha=s.alpha, rho=finite(rho), duplicates=duplicates)
    if not usable.any():
        return {**blank, "note": "no entry has a standard error yet (recipes need 2 runs)"}
    signed = sign * pool_estimate
    best = float(signed[usable].max())
    # equal means (to rounding: ranking.same_value) are one: the least certain of them (the largest standard error,
    # the conservative bound), then the first by name. By name alone, renaming two tied leaders of different spreads
    # moved the bound by 5 of the leader's standard errors (a statistician's finding). Read among the means within
    # 1e3 times the tie's tolerance of the best (the ones same_value can call equal, and more)
    with np.errstate(invalid="ignore"):
        near = usable & (np.abs(signed - best) <= 1e3 * TIE_RELATIVE * np.maximum(np.abs(signed), abs(best)))
    tied = [pool[i] for i in np.flatnonzero(near).tolist() if same_value(float(signed[i]), best)]
    # ... and standard errors equal to rounding are one too: copies of one entry's files resampled alike got standard
    # errors an ulp apart (the matrix product's rounding by column), which chose the copy or the original by that ulp
    # when the test examples were listed in another order (a property hunt's finding)
    widest = max(r["mean"]["se"] or 0.0 for r in tied)
    top = min((r for r in tied if same_value(r["mean"]["se"] or 0.0, widest)), key=by_name)
    raw = top["mean"]["estimate"]
    side = "lower" if s.higher_is_better else "upper"
    if binomial_n is None and not top["mean"]["se"] > 0:  # no spread at all: nothing to adjust by
        return {
            **blank,
            "raw": finite(raw),
            "estimate": finite(raw),
            "bound": finite(raw),
            "bound_side": side,
            "method": "normal",
            "se": 0.0,
            "submission_id": top["submission_id"],
            "note": "the best entry's runs are all equal (standard error 0)",
        }
    estimates, ses = (pool_estimate, pool_se) if pool is rows else _columns_of(rows, pool, pool_estimate, pool_se)
    scored = ~np.isnan(estimates)
    if repeated:
        scored &= np.fromiter((id(r) not in repeated for r in rows), dtype=bool, count=len(rows))
    if binomial_n is not None:
        binomial_n = _trials_of(top, binomial_n, trials)
        adj, estimate, bound = _adjust_binomial(raw, estimates[scored], m, s, n=binomial_n, rho=rho)
    else:
        adj, estimate, bound = _adjust_normal(raw, top["mean"]["se"], estimates[scored], ses[scored], m, s, rho=rho)
    estimate, bound = _in_range(estimate, s.score_range), _in_range(bound, s.score_range)
    return {
        **blank,
        "raw": finite(raw),
        "estimate": finite(estimate),
        "bound": finite(bound),
        "bound_side": side,
        "method": adj.method,
        "n": binomial_n,
        "se": None if binomial_n is not None else finite(top["mean"]["se"]),
        "submission_id": top["submission_id"],
        "model": adj.model,
        "shrinkage": finite(adj.shrinkage),
    }


def _multiplicity(
    rows: list[dict],
    compared: list[dict],
    m_total: int | None,
    outcomes: list[np.ndarray] | None,
    run_keys: list[bytes] | None = None,
) -> tuple[int, float | None, int, set[int]]:
    """``(m, rho, duplicates, repeated)``: the number of entries less the repeated outcome vectors (or runs).

    ``repeated`` holds the ``id()`` of the rows whose outcomes (compared rows) or ``run_keys`` (any row) repeat
    an earlier row's.
    """
    m = max(int(m_total or 0), len(rows))
    if (outcomes is None or len(outcomes) < 1) and run_keys:  # aligned with `rows`
        seen: set[bytes] = set()
        repeated = set()
        for row, key in zip(rows, run_keys, strict=True):
            if key in seen:
                repeated.add(id(row))
            seen.add(key)
        return max(len(seen), m - len(repeated)), None, len(repeated), repeated
    if outcomes is None or len(outcomes) < 1:
        return m, None, 0, set()
    vectors = _rounding_twins_as_copies(np.stack([np.asarray(o, dtype=np.float64).mean(axis=0) for o in outcomes]))
    rho, distinct = stats.outcome_dependence(vectors)
    kept = set(distinct_rows(vectors).tolist())
    repeated = {id(r) for i, r in enumerate(compared) if i not in kept}
    duplicates = len(outcomes) - distinct
    return max(distinct, m - duplicates), rho, duplicates, repeated


def _rounding_twins_as_copies(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (entries x examples) with the rows that tie each other in every example under the board's tie
    rule (:func:`~evaluation.stats._resample.paired_wins`) replaced by the first of them by content: losses that
    differ by rounding only are one classifier, as equal ones are, and count once in m. Candidates are rows whose
    projections on one fixed random direction agree to 1e-9 of their magnitude (twins agree to about 1e-12; two
    classifiers apart on one example by a whole outcome almost surely differ there), so each example is read once
    (no sort of them all) and only candidates are compared example by example."""
    direction = np.random.default_rng(0).standard_normal(vectors.shape[1])
    key, scale = vectors @ direction, np.abs(vectors) @ np.abs(direction)
    order = np.argsort(key, kind="stable")
    close = np.abs(np.diff(key[order])) <= 1e-9 * np.maximum(scale[order][1:], scale[order][:-1])
    out = vectors
    for start, stop in _runs_of(close):
        kept: list[int] = []
        for i in order[start : stop + 1].tolist():  # by projection, a function of the content: any entry order
            twin = next((r for r in kept if _tied_everywhere(vectors[i], vectors[r])), None)
            if twin is None:
                kept.append(i)
            elif not np.array_equal(vectors[i], vectors[twin]):
                out = out.copy() if out is vectors else out
                out[i] = vectors[twin]
    return out


def twin_keys(run_index: list[np.ndarray], tests: list[np.ndarray]) -> list[bytes]:
    """Each recipe entry's seeds and scores as bytes, equal for entries of the same seeds whose scores tie run by
    run under the board's pair rule (:func:`_rounding_twins_as_copies`, as prediction entries' outcomes): two
    entries scored as ``c / n`` and ``c * (1 / n)`` rank "=1" with P(A>B) = 1/2 and count once in m. By pairs,
    not by chains of the section's scores: put on ``tie_canonical`` over the section, A and B 1.6e-12 apart (A
    significantly better on the board, P(A>B) = 1) became one entry once a C between them arrived, and m fell
    from 2 to 1 as an entry was added (a property hunt's finding)."""
    index_keys = [np.asarray(i, dtype=np.int64).tobytes() for i in run_index]
    keys: list[bytes] = [b""] * len(tests)
    groups: dict[bytes, list[int]] = {}
    for e, key in enumerate(index_keys):
        groups.setdefault(key, []).append(e)
    for key, members in groups.items():
        # one length per group (its run indices'): concatenated, not stacked row by row (20,000 entries: issue 27)
        runs = len(key) // 8
        stacked = np.concatenate([np.asarray(tests[e], dtype=np.float64) for e in members]).reshape(len(members), runs)
        blob = np.ascontiguousarray(_rounding_twins_as_copies(stacked), dtype=np.float64).tobytes()
        step = runs * 8
        for k, e in enumerate(members):
            keys[e] = key + blob[k * step : (k + 1) * step]
    return keys


def _tied_everywhere(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` tie in every example: equal (copies, the common case, checked first), or equal to
    the tie rule."""
    return bool(np.array_equal(a, b) or np.all(paired_wins(a, b) == 1))


def _runs_of(flags: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of True in ``flags[i]`` (``i`` joins ``i + 1``): the blocks of joined items."""
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def _trials_of(top: dict, n: int, trials: dict[int, float] | None) -> int:
    """The binomial form's trials for the best entry: the trials its own interval reads (``trials``, by submission
    id: Kish's effective sample size for several files) up to the ``n`` test examples, else ``n``. With the examples alone,
    five seeds of accuracies 0.729-0.770 on 10,000 examples got a "conservative" bound of 0.7408, inside their own
    interval [0.7327, 0.7654] (a statistician's finding)."""
    own = (trials or {}).get(top["submission_id"])
    if own is None:
        return n
    # at most the test examples: the law reads every entry at the best's trials (the others' files more than the
    # examples would count); rounded at 1e-6 first, so that an accuracy and its error rate (equal to rounding)
    # give the same integer (9.499999999999993 and 9.500000000000002 rounded to 9 and 10)
    return max(1, min(n, int(np.floor(round(own, 6) + 0.5))))


def _mean_columns(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's mean estimate and standard error as arrays, NaN where None (one pass over the rows: 20,000 rows
    were read seven times by the section's lists, 0.07 s; issue 27). A report's numbers are finite or None."""
    pairs = [(mean["estimate"], mean["se"]) for mean in (r["mean"] for r in rows)]
    table = np.array(pairs, dtype=np.float64).reshape(len(rows), 2)
    return table[:, 0], table[:, 1]


def _columns_of(
    rows: list[dict], pool: list[dict], estimate: np.ndarray, se: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_mean_columns` of ``rows``, the rows of ``pool`` (whose columns ``estimate`` and ``se`` are) taken from
    those columns by identity, only the others read: a recipe section's compared rows are most of its rows, and a
    pass over 20,000 row dicts costs ~15 ms (issue 27)."""
    where = {id(r): k for k, r in enumerate(pool)}
    at = np.array([where.get(id(r), -1) for r in rows], dtype=np.int64)
    out_estimate, out_se = estimate[np.maximum(at, 0)], se[np.maximum(at, 0)]
    rest = np.flatnonzero(at < 0)
    if rest.size:
        out_estimate[rest], out_se[rest] = _mean_columns([rows[i] for i in rest.tolist()])
    return out_estimate, out_se


def _adjust_binomial(
    raw: float, scored: np.ndarray, m: int, s: ReportSettings, *, n: int, rho: float | None
) -> tuple[stats.AdjustedSota, float, float]:
    """The exact binomial form on an accuracy-like metric; an error rate ``x`` is adjusted as ``1 - x``;
    ``scored``: the means of the entries counted (the others' repeats left out)."""
    flip = not s.higher_is_better

    def acc(x):
        return np.clip(1.0 - np.asarray(x) if flip else np.asarray(x), 0.0, 1.0)

    adj = stats.adjusted_sota(float(acc(raw)), m, n=n, alpha=s.alpha, rho=rho, estimates=acc(scored))
    estimate, bound = (1.0 - adj.estimate, 1.0 - adj.lower) if flip else (adj.estimate, adj.lower)
    return adj, estimate, bound


def _adjust_normal(
    raw: float, se: float, scored: np.ndarray, scored_ses: np.ndarray, m: int, s: ReportSettings, *, rho: float | None
) -> tuple[stats.AdjustedSota, float, float]:
    """The normal approximation with the entries' standard errors (those positive), on the sign-flipped scale;
    ``scored`` and ``scored_ses``: the means and standard errors of the entries counted."""
    sign = 1.0 if s.higher_is_better else -1.0
    with_se = scored_ses > 0  # NaN (None): left out
    adj = stats.adjusted_sota(
        sign * raw,
        m,
        standard_error=se,
        alpha=s.alpha,
        estimates=sign * scored[with_se] if with_se.any() else None,
        standard_errors=scored_ses[with_se] if with_se.any() else None,
        rho=rho,
    )
    return adj, sign * adj.estimate, sign * adj.lower


def _in_range(value: float, score_range: tuple[float | None, float | None]) -> float:
    """``value`` clipped to the values the score can take: the normal approximation's bound (and, far out, its
    estimate) can leave them, as an entry's interval can; the truth cannot lie there, so clipping drops only
    impossible values. Five accuracies of 0 or 0.5 (mean 0.1, standard error 0.1) on a board of two got the
    lower bound -0.124, and the mirrored error rates the upper bound 1.124 (a property hunt's finding)."""
    lower, upper = score_range
    if lower is not None:
        value = max(value, lower)
    if upper is not None:
        value = min(value, upper)
    return value


def _blank_sota(*, m: int, alpha: float, rho: float | None, duplicates: int) -> dict:
    """A section's ``sota`` dict with every key present, ``None`` where nothing is known yet."""
    return {
        "raw": None,
        "estimate": None,
        "bound": None,
        "bound_side": None,
        "m": m,
        "method": None,
        "alpha": alpha,
        "n": None,
        "se": None,
        "submission_id": None,
        "beaten_by": None,
        "note": None,
        "model": None,
        "shrinkage": None,
        "rho": rho,
        "duplicates": duplicates,
    }
