"""The leaderboard report: a pure, seeded function of a challenge's stored runs.

:func:`build_report` turns every entry's runs (:class:`EntryRuns`) and the challenge's
statistical settings (:class:`ReportSettings`) into one JSON-serialisable dict. It uses
numpy and :mod:`evaluation.stats` only (no Django, no I/O), so the report can be
recomputed from an export of the runs.

Decisions
---------
Two sections.
    Recipe runs are scored on out-of-bootstrap test splits, prediction files on the
    hidden test set: different test data. Each kind is a *section* with its own
    comparisons, significance groups, rank intervals and state of the art; entries of
    different sections are never compared.
Recipe entries: seed-paired runs.
    Run i of every recipe shares its seeds and split (DESIGN §4), so comparisons are
    paired by run index (Bouthillier et al. 2021, eq. 9). The paired table uses run
    indices that all compared entries share. They are chosen greedily: start from the
    entry with most runs, add the entry that keeps most of the shared indices, and keep
    the prefix that maximises the paired observations of all its comparisons,
    (entries choose 2) × shared runs. An entry with fewer than 2 runs, or lacking
    shared runs (still running, failed runs), is shown with what it has, flagged
    ``too_few_runs`` and left out of comparisons, groups and rank intervals, with
    ``excluded_reason``.
Prediction entries: paired bootstrap over test examples.
    The one source of variation left is the test sample (DESIGN §6): intervals,
    P(A>B), groups and standard errors come from
    :func:`evaluation.stats.paired_test_bootstrap` on the per-example outcomes (one
    resample index set shared by all entries). An entry with k files is k runs: its
    outcomes are averaged per example for the test bootstrap, while its mean, Boo_n,
    median and std are taken over its k run scores. The mean's interval is the test
    bootstrap's, mapped through ``metric_from_mean`` (e.g. √ for RMSE; monotone).
    Rank intervals resample the same test examples. Noether's N counts runs, so
    ``runs_needed_for_decision`` is ``None`` for prediction entries.
Orientation.
    Comparisons, ranks and the state of the art work on scores oriented so that
    higher is better (losses negated, DESIGN §6); everything displayed is in the
    metric's own units.
Order and ties.
    Compared entries come first, ordered by the ranking statistic (``mean`` or
    ``boo_n``), then method name, then team; the submission id (creation order) only
    makes the order total and never decides a rank: entries whose statistic is equal
    (to 1e-12 relative) *and* that share a significance letter get the same rank,
    displayed ``"=2"``. Entries left out of comparisons follow, unranked. Letters are
    assigned in display order, so the leader's first letter is "a".
Noether.
    ``runs_needed_for_decision = max(0, N - runs)`` with N from
    :func:`evaluation.stats.noether_sample_size` (γ, α, β) (Noether 1987).
State of the art (Møllersen & Holsbø).
    Per section: the best entry's mean (``raw``), the multiplicity-adjusted estimate
    and a conservative bound for ``m`` entries, ``m`` being every entry ever scored on
    that test data (``m_total_*``, counted by the caller, at least the entries shown).
    Accuracy-like prediction entries use the exact binomial form with ``n_test``;
    otherwise the normal approximation with the best entry's bootstrap standard error
    (recipes: the ideal bootstrap SE of the mean, σ̂/√k with the plug-in σ̂). For a
    loss the bound is an upper bound on the loss (``bound_side``).
Seeds.
    Every random computation is seeded by :func:`derive_seed` from the challenge's
    master seed, the section, the purpose and (per entry) the entry id, so an entry's
    own intervals do not move when other entries arrive, and the report is a
    deterministic function of its inputs. Intervals have level ``1 - alpha``.

References
----------
Bajgar, O., Kadlec, R. & Kleindienst, J. (2018). A Boo(n) for Evaluating Architecture
Performance. ICML.
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks.
MLSys.
Møllersen, K. & Holsbø, E. Accounting for multiplicity in machine learning benchmark
performance.
Noether, G. E. (1987). Sample size determination for some common nonparametric tests.
JASA 82, 645–647.
Piepho, H.-P. (2004). An algorithm for a letter-based representation of all-pairwise
comparisons. J. Comput. Graph. Statist. 13, 456–466.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evaluation import stats

__all__ = ["REPORT_FORMAT", "EntryRuns", "ReportSettings", "build_report", "derive_seed"]

#: Version of the report's JSON layout.
REPORT_FORMAT = 1
KINDS = ("recipe", "predictions")
STATISTICS = ("mean", "boo_n")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
SECTION_LABELS = {"recipe": "Training recipes (seed-paired runs on out-of-bootstrap splits)",
                  "predictions": "Predictions (paired bootstrap over the hidden test set)"}
_SECTION_CODE = {"recipe": 1, "predictions": 2}
_PURPOSE = {"mean": 1, "boo_n": 2, "pairs": 3, "ranks": 4}


@dataclass(frozen=True, eq=False)
class EntryRuns:
    """One entry (submission) and its succeeded runs.

    Attributes
    ----------
    id : int
        Submission id.
    name, team : str
        Method name and team name.
    kind : {"recipe", "predictions"}
    runs_expected : int
        Runs the submission asked for (k for recipes, the number of files otherwise).
    run_index : ndarray of int, shape (runs,)
        Index i of each succeeded run (pairs recipe runs across entries).
    test : ndarray of float, shape (runs,)
        Test score of each run, in the metric's units.
    valid : ndarray of float, shape (runs,), optional
        Validation score of each run (chooses the best run in Boo_n).
    outcomes : ndarray of float, shape (runs, examples), optional
        Per-example outcomes of each run (prediction entries).
    created : str
        ISO timestamp of the submission (shown, never used to order).
    in_progress : bool
        More runs may still arrive.
    """

    id: int
    name: str
    team: str
    kind: str
    runs_expected: int
    run_index: np.ndarray
    test: np.ndarray
    valid: np.ndarray | None = None
    outcomes: np.ndarray | None = None
    created: str = ""
    in_progress: bool = False


@dataclass(frozen=True)
class ReportSettings:
    """The challenge's statistical settings (DESIGN §6).

    ``m_total_predictions``/``m_total_recipes``: entries ever scored on that test data
    (``None``: the entries given). ``n_test``: test examples (binomial SOTA; ``None``:
    the outcomes' length). ``accuracy_like``: the metric is a proportion of correct
    examples. ``metric_from_mean``: maps a mean outcome to the score (monotone).
    """

    higher_is_better: bool = True
    boo_n: int = 5
    gamma: float = 0.75
    alpha: float = 0.05
    n_resamples: int = 2000
    seed: int = 0
    statistic: str = "mean"
    correction: str = "holm"
    k_runs: int = 10
    m_total_predictions: int | None = None
    m_total_recipes: int | None = None
    n_test: int | None = None
    accuracy_like: bool = False
    metric_from_mean: Callable | None = None
    beta: float = 0.05
    curve_max_n: int = 20


# ----------------------------------------------------------------------------- helpers
def derive_seed(seed: int, *keys: int) -> int:
    """A 64-bit seed for one purpose: ``SeedSequence([seed, *keys])``'s first word.

    Examples
    --------
    >>> derive_seed(7, 1, 3) == derive_seed(7, 1, 3) != derive_seed(7, 1, 4)
    True
    """
    state = np.random.SeedSequence([int(seed), *(int(k) for k in keys)]).generate_state(1, np.uint64)
    return int(state[0])


def _f(x) -> float | None:
    """A finite Python float, or None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _interval(estimate, low=None, high=None, **extra) -> dict:
    return {"estimate": _f(estimate), "low": _f(low), "high": _f(high), **extra}


def _apply(fn: Callable | None, x):
    return x if fn is None else np.asarray(fn(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _se_through(fn: Callable | None, mean: float, se: float) -> float:
    """Standard error after the monotone map ``fn`` (delta method, slope by a difference).

    ``|fn'(mean)| · se`` with the slope taken over ``[mean - se, mean + se]`` (its lower
    end clipped at 0 for a non-negative mean, e.g. a mean squared error under √).
    """
    if fn is None or se == 0:
        return se
    lo = max(mean - se, 0.0) if mean >= 0 else mean - se
    return float(abs(_apply(fn, mean + se) - _apply(fn, lo)) * se / (mean + se - lo))


def _build_report_iv(entries, settings):
    if not isinstance(settings, ReportSettings):
        raise ValueError("`settings` must be a ReportSettings.")
    if settings.statistic not in STATISTICS:
        raise ValueError(f"`statistic` must be one of {', '.join(STATISTICS)} (got {settings.statistic!r}).")
    if settings.correction not in CORRECTIONS:
        raise ValueError(f"`correction` must be one of {', '.join(CORRECTIONS)} (got {settings.correction!r}).")
    if not 0.5 < settings.gamma < 1:
        raise ValueError(f"`gamma` must be in (0.5, 1) (got {settings.gamma!r}).")
    if not 0 < settings.alpha < 1:
        raise ValueError(f"`alpha` must be in (0, 1) (got {settings.alpha!r}).")
    for name in ("boo_n", "n_resamples", "k_runs", "curve_max_n"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be an integer >= 1 (got {value!r}).")
    seen: set[int] = set()
    checked = []
    for e in entries:
        if e.kind not in KINDS:
            raise ValueError(f"entry {e.id}: `kind` must be one of {', '.join(KINDS)} (got {e.kind!r}).")
        if e.id in seen:
            raise ValueError(f"entry ids must be unique; {e.id} appears twice.")
        seen.add(e.id)
        test = np.asarray(e.test, dtype=np.float64)
        index = np.asarray(e.run_index, dtype=np.int64)
        if test.ndim != 1 or test.size == 0 or not np.all(np.isfinite(test)):
            raise ValueError(f"entry {e.id}: `test` must be a non-empty 1-D array of finite scores.")
        if index.shape != test.shape or np.unique(index).size != index.size:
            raise ValueError(f"entry {e.id}: `run_index` must hold one distinct index per test score.")
        valid = None if e.valid is None else np.asarray(e.valid, dtype=np.float64)
        if valid is not None and (valid.shape != test.shape or not np.all(np.isfinite(valid))):
            valid = None  # a run without a validation score: Boo_n chooses by test score
        outcomes = None if e.outcomes is None else np.asarray(e.outcomes, dtype=np.float64)
        if outcomes is not None and (outcomes.ndim != 2 or outcomes.shape[0] != test.size
                                     or outcomes.shape[1] == 0 or not np.all(np.isfinite(outcomes))):
            raise ValueError(f"entry {e.id}: `outcomes` must be finite, of shape (runs, examples) "
                             f"with runs = {test.size}.")
        order = np.argsort(index, kind="stable")
        checked.append(replace(e, run_index=index[order], test=test[order],
                               valid=None if valid is None else valid[order],
                               outcomes=None if outcomes is None else outcomes[order]))
    return checked, settings


# ------------------------------------------------------------------------- per entry
def _entry_row(e: EntryRuns, s: ReportSettings, noether_n: int | None) -> dict:
    """What an entry's own runs say: location, spread, Boo_n and its curve."""
    k = e.test.size
    section = _SECTION_CODE[e.kind]
    conf = 1 - s.alpha
    boo = stats.boo_n(e.test, s.boo_n, valid=e.valid, higher_is_better=s.higher_is_better)
    row = {
        "submission_id": int(e.id), "method_name": e.name, "team": e.team, "kind": e.kind,
        "created": e.created, "in_progress": bool(e.in_progress),
        "runs_succeeded": int(k), "runs_expected": int(e.runs_expected), "k_runs": int(s.k_runs),
        "rank": None, "rank_display": None, "tied": False, "ranking_value": None,
        "mean": _interval(e.test.mean(), se=None, source="runs"),
        "boo_n": _interval(boo, n=int(s.boo_n)),
        "median": _f(np.median(e.test)), "std": _f(e.test.std(ddof=1)) if k >= 2 else None,
        "groups": "", "rank_interval": None,
        "runs_needed_for_decision": (max(0, noether_n - k) if noether_n is not None and e.kind == "recipe"
                                     else None),
        "too_few_runs": False, "compared": False, "excluded_reason": None,
        "boo_n_curve": [_f(v) for v in _boo_n_curve(e, min(s.curve_max_n, k), s.higher_is_better)],
        "run_scores": [_f(x) for x in e.test],
    }
    if k >= 2:
        if e.kind == "recipe":
            ci = stats.bootstrap_interval(e.test, "mean", n_resamples=s.n_resamples, confidence=conf,
                                          seed=derive_seed(s.seed, section, _PURPOSE["mean"], e.id))
            row["mean"].update(low=_f(ci.low), high=_f(ci.high), se=_f(e.test.std() / math.sqrt(k)))
        ci = stats.bootstrap_interval(e.test, "boo_n", n=s.boo_n, valid=e.valid, n_resamples=s.n_resamples,
                                      confidence=conf, higher_is_better=s.higher_is_better,
                                      seed=derive_seed(s.seed, section, _PURPOSE["boo_n"], e.id))
        row["boo_n"].update(low=_f(ci.low), high=_f(ci.high))
    row["ranking_value"] = row["mean"]["estimate"] if s.statistic == "mean" else row["boo_n"]["estimate"]
    return row


def _boo_n_curve(e: EntryRuns, n_max: int, higher_is_better: bool) -> np.ndarray:
    """Boo_n for n = 1..n_max at once (Bajgar et al. 2018, eq. 7, ties sharing weight).

    The same weights as :func:`evaluation.stats.boo_n`, for every n in one array
    operation: a tie block of validation (else test) scores spanning the sorted ranks
    ``(lower, upper]`` out of m gets ``(upper/m)^n - (lower/m)^n``, shared equally.
    """
    key = e.test if e.valid is None else e.valid
    key = key if higher_is_better else -key
    order = np.argsort(key, kind="stable")
    sorted_key, sorted_test = key[order], e.test[order]
    m = key.size
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    sizes = np.diff(np.r_[starts, m])
    upper = (starts + sizes) / m
    lower = starts / m
    n = np.arange(1, n_max + 1, dtype=np.float64)[:, None]
    weights = upper[None, :] ** n - lower[None, :] ** n  # (n_max, blocks)
    block_mean = np.add.reduceat(sorted_test, starts) / sizes
    return weights @ block_mean


def _exclude(row: dict, reason: str, too_few: bool = True) -> None:
    row["too_few_runs"] = row["too_few_runs"] or too_few
    row["excluded_reason"] = reason


# --------------------------------------------------------------------- recipe pairing
def _shared_runs(entries: list[EntryRuns]) -> tuple[list[EntryRuns], np.ndarray]:
    """Entries to compare and the run indices they all share (see module docstring)."""
    pool = sorted(entries, key=lambda e: (-e.test.size, e.name, e.team, e.id))
    if not pool:
        return [], np.empty(0, dtype=np.int64)
    chosen = [pool.pop(0)]
    common = set(chosen[0].run_index.tolist())
    best = (0, list(chosen), set(common))  # one entry alone: nothing to compare
    sets = {e.id: set(e.run_index.tolist()) for e in pool}
    while pool:
        j = max(range(len(pool)), key=lambda t: (len(common & sets[pool[t].id]), -t))
        common &= sets[pool[j].id]
        chosen.append(pool.pop(j))
        if len(common) < 2:
            break
        observations = len(chosen) * (len(chosen) - 1) // 2 * len(common)
        if observations >= best[0]:
            best = (observations, list(chosen), set(common))
    return best[1], np.array(sorted(best[2]), dtype=np.int64)


# ------------------------------------------------------------------- order and ranks
def _sort_key(row: dict, sign: float):
    value = row["ranking_value"]
    return (-sign * value if value is not None else math.inf, row["method_name"], row["team"],
            row["submission_id"])


def _assign_ranks(rows: list[dict]) -> None:
    """Competition ranks in display order; equal statistic + a shared letter = a tie."""
    block: list[dict] = []
    for position, row in enumerate(rows):
        head = block[0] if block else None
        tie = (head is not None and row["ranking_value"] is not None and head["ranking_value"] is not None
               and math.isclose(row["ranking_value"], head["ranking_value"], rel_tol=1e-12, abs_tol=1e-12)
               and all(set(row["groups"]) & set(other["groups"]) for other in block))
        if tie:
            row["rank"] = head["rank"]
            for member in (*block, row):
                member["tied"] = True
            block.append(row)
        else:
            row["rank"] = position + 1
            block = [row]
    for row in rows:
        row["rank_display"] = f"={row['rank']}" if row["tied"] else str(row["rank"])


def _verdict(res, i: int, j: int) -> tuple[str, int | None]:
    """Verdict of row entry i against column entry j, and the winner's matrix index."""
    if res.better[i, j]:
        return "a_better", i
    if res.better[j, i]:
        return "b_better", j
    for x, y in ((i, j), (j, i)):
        if res.significant[x, y] and res.meaningful[x, y]:
            return "not_significant_after_correction", None
        if res.significant[x, y]:
            return "not_meaningful", None
    return "not_significant", None


def _comparisons(rows: list[dict], res, index: dict[int, int], kind: str) -> list[dict]:
    out = []
    for a_pos, a in enumerate(rows):
        for b in rows[a_pos + 1:]:
            i, j = index[a["submission_id"]], index[b["submission_id"]]
            verdict, winner = _verdict(res, i, j)
            out.append({
                "section": kind, "a": a["submission_id"], "b": b["submission_id"],
                "a_name": a["method_name"], "b_name": b["method_name"],
                "p": _f(res.p[i, j]), "low": _f(res.low[i, j]), "high": _f(res.high[i, j]),
                "pvalue": _f(res.pvalue[i, j]), "pvalue_raw": _f(res.pvalue_raw[i, j]),
                "significant": bool(res.significant[i, j]), "meaningful": bool(res.meaningful[i, j]),
                "reverse": {"significant": bool(res.significant[j, i]), "meaningful": bool(res.meaningful[j, i])},
                "verdict": verdict,
                "better": None if winner is None else (a if winner == i else b)["submission_id"],
            })
    return out


def _rank_and_group(rows: list[dict], res, ranks, index: dict[int, int], s: ReportSettings) -> list[dict]:
    """Order compared rows, give letters (in display order), ranks and rank intervals."""
    sign = 1.0 if s.higher_is_better else -1.0
    rows = sorted(rows, key=lambda r: _sort_key(r, sign))
    if res is None:
        letters = {rows[0]["submission_id"]: "a"} if rows else {}
    else:
        order = np.array([index[r["submission_id"]] for r in rows], dtype=np.int64)
        groups = stats.significance_groups(replace(res, order=order))
        letters = {r["submission_id"]: groups[index[r["submission_id"]]] for r in rows}
    for row in rows:
        row["groups"] = letters[row["submission_id"]]
        i = index[row["submission_id"]]
        row["rank_interval"] = ({"rank": 1, "low": 1, "high": 1} if ranks is None else
                                {"rank": int(ranks.rank[i]), "low": int(ranks.low[i]), "high": int(ranks.high[i])})
    _assign_ranks(rows)
    return rows


# ------------------------------------------------------------------------------ SOTA
def _sota(rows: list[dict], compared: list[dict], m_total: int | None, s: ReportSettings, *,
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
                "note": "no entry has a standard error yet (recipes need 2 runs)"}
    top = max(candidates, key=lambda r: (sign * r["mean"]["estimate"], -r["submission_id"]))
    raw = top["mean"]["estimate"]
    if binomial_n is None and not top["mean"]["se"] > 0:  # no spread at all: nothing to adjust by
        return {"raw": _f(raw), "estimate": _f(raw), "bound": _f(raw),
                "bound_side": "lower" if s.higher_is_better else "upper", "m": m, "method": "normal",
                "alpha": s.alpha, "n": None, "se": 0.0, "submission_id": top["submission_id"],
                "note": "the best entry's runs are all equal (standard error 0)"}
    if binomial_n is not None:
        adj = stats.adjusted_sota(raw, m, n=binomial_n, alpha=s.alpha)
        estimate, bound = adj.estimate, adj.lower
    else:
        adj = stats.adjusted_sota(sign * raw, m, se=top["mean"]["se"], alpha=s.alpha)
        estimate, bound = sign * adj.estimate, sign * adj.lower
    return {"raw": _f(raw), "estimate": _f(estimate), "bound": _f(bound),
            "bound_side": "lower" if s.higher_is_better else "upper", "m": m, "method": adj.method,
            "alpha": s.alpha, "n": binomial_n, "se": None if binomial_n is not None else _f(top["mean"]["se"]),
            "submission_id": top["submission_id"], "note": None}


# -------------------------------------------------------------------------- sections
def _section(kind: str, rows: list[dict], compared: list[dict], res, ranks, index, s: ReportSettings,
             sota: dict | None, **design) -> dict:
    compared = _rank_and_group(compared, res, ranks, index, s)
    sign = 1.0 if s.higher_is_better else -1.0
    ids = {r["submission_id"] for r in compared}
    rest = sorted((r for r in rows if r["submission_id"] not in ids), key=lambda r: _sort_key(r, sign))
    for row in compared:
        row["compared"] = True
    leader = []
    if compared:
        top = index[compared[0]["submission_id"]]
        leader = [r["submission_id"] for r in compared if res is None or not res.better[top, index[r["submission_id"]]]]
    return {
        "kind": kind, "label": SECTION_LABELS[kind], **design,
        "entries": [r["submission_id"] for r in (*compared, *rest)],
        "compared": [r["submission_id"] for r in compared], "leader_group": leader,
        "sota": sota, "comparisons": [] if res is None else _comparisons(compared, res, index, kind),
        "_rows": [*compared, *rest],
    }


def _recipe_section(entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings) -> dict:
    eligible = [e for e in entries if e.test.size >= 2]
    for e in entries:
        if e.test.size < 2:
            _exclude(rows[e.id], f"{e.test.size} run: at least 2 are needed to compare")
    chosen, shared = _shared_runs(eligible)
    chosen_ids = {e.id for e in chosen}
    for e in eligible:
        if e.id not in chosen_ids:
            missing = sorted(set(shared.tolist()) - set(e.run_index.tolist()))
            _exclude(rows[e.id], f"lacks runs {', '.join(map(str, missing))} of the {len(shared)} seed-paired runs "
                                 f"shared by the {len(chosen)} compared entries")
    chosen = sorted(chosen, key=lambda e: e.id)
    index = {e.id: i for i, e in enumerate(chosen)}
    sign = 1.0 if s.higher_is_better else -1.0
    res = ranks = None
    if len(chosen) >= 2:
        table = np.stack([sign * e.test[np.isin(e.run_index, shared)] for e in chosen])
        code = _SECTION_CODE["recipe"]
        res = stats.pairwise_comparisons(table, paired=True, gamma=s.gamma, alpha=s.alpha, correction=s.correction,
                                         n_resamples=s.n_resamples, seed=derive_seed(s.seed, code, _PURPOSE["pairs"]))
        ranks = stats.rank_intervals(table, paired=True, n_resamples=s.n_resamples, confidence=1 - s.alpha,
                                     seed=derive_seed(s.seed, code, _PURPOSE["ranks"]))
    all_rows = [rows[e.id] for e in entries]
    sota = _sota(all_rows, [rows[e.id] for e in chosen], s.m_total_recipes, s, binomial_n=None)
    return _section("recipe", all_rows, [rows[e.id] for e in chosen], res, ranks, index, s, sota,
                    design="seed-paired runs", paired_runs=shared.tolist(), n_examples=None)


def _prediction_section(entries: list[EntryRuns], rows: dict[int, dict], s: ReportSettings) -> dict:
    lengths = [e.outcomes.shape[1] for e in entries if e.outcomes is not None]
    n_examples = max(set(lengths), key=lambda n: (lengths.count(n), n)) if lengths else None
    chosen = []
    for e in entries:
        if e.outcomes is None:
            _exclude(rows[e.id], "no per-example outcomes stored: cannot join the paired test bootstrap", False)
        elif e.outcomes.shape[1] != n_examples:
            _exclude(rows[e.id], f"scored on {e.outcomes.shape[1]} test examples, not the {n_examples} of the "
                                 f"other entries", False)
        else:
            chosen.append(e)
    chosen = sorted(chosen, key=lambda e: e.id)
    index = {e.id: i for i, e in enumerate(chosen)}
    sign = 1.0 if s.higher_is_better else -1.0
    res = ranks = None
    if chosen:
        outcomes = np.stack([e.outcomes.mean(axis=0) for e in chosen], axis=1)  # (examples, entries)
        code = _SECTION_CODE["predictions"]
        tb = stats.paired_test_bootstrap(outcomes, n_resamples=s.n_resamples, confidence=1 - s.alpha,
                                         gamma=s.gamma, alpha=s.alpha, correction=s.correction,
                                         higher_is_better=s.higher_is_better,
                                         seed=derive_seed(s.seed, code, _PURPOSE["pairs"]))
        for e in chosen:
            i = index[e.id]
            mean = rows[e.id]["mean"]
            mean.update(low=_f(_apply(s.metric_from_mean, tb.low[i])), high=_f(_apply(s.metric_from_mean, tb.high[i])),
                        se=_f(_se_through(s.metric_from_mean, float(tb.estimate[i]), float(tb.se[i]))),
                        source="test examples")
        if len(chosen) >= 2:
            res = tb.comparisons
            ranks = stats.rank_intervals(sign * outcomes.T, paired=True, n_resamples=s.n_resamples,
                                         confidence=1 - s.alpha, seed=derive_seed(s.seed, code, _PURPOSE["ranks"]))
    all_rows = [rows[e.id] for e in entries]
    binomial_n = (s.n_test or n_examples) if s.accuracy_like else None
    sota = _sota(all_rows, [rows[e.id] for e in chosen], s.m_total_predictions, s, binomial_n=binomial_n)
    return _section("predictions", all_rows, [rows[e.id] for e in chosen], res, ranks, index, s, sota,
                    design="paired bootstrap over test examples", paired_runs=None, n_examples=n_examples)


# ------------------------------------------------------------------------------ main
def build_report(entries: Sequence[EntryRuns], settings: ReportSettings) -> dict:
    """Build the leaderboard report of a challenge.

    Parameters
    ----------
    entries : sequence of EntryRuns
        Every entry with at least one succeeded run (any order).
    settings : ReportSettings
        The challenge's statistical settings.

    Returns
    -------
    dict
        JSON-serialisable (floats finite or None): ``format``, ``settings`` (with
        ``noether_n`` and ``confidence``), ``entries`` (every entry, section by section
        in display order), ``sections`` (per kind: ``kind``, ``label``, ``design``,
        ``entries``, ``compared``, ``leader_group``, ``paired_runs``, ``n_examples``,
        ``sota``, ``comparisons``). See the module docstring for the decisions.

    Raises
    ------
    ValueError
        For invalid settings (naming the field) or malformed entries.

    Notes
    -----
    Boo_n: Bajgar et al. (2018), eq. 7; P(A>B) and the γ rule: Bouthillier et al.
    (2021), eq. 9 and App. C; letters: Piepho (2004); state of the art: Møllersen &
    Holsbø; N: Noether (1987).

    Examples
    --------
    >>> e = [EntryRuns(i, f"m{i}", "t", "recipe", 5, np.arange(5), 0.7 + 0.01 * i + 0.001 * np.arange(5))
    ...      for i in (1, 2)]
    >>> r = build_report(e, ReportSettings(n_resamples=200, k_runs=5))
    >>> [(x["method_name"], x["rank_display"]) for x in r["entries"]]
    [('m2', '1'), ('m1', '2')]
    """
    entries, s = _build_report_iv(list(entries), settings)
    try:
        noether_n = stats.noether_sample_size(s.gamma, s.alpha, s.beta)
    except ValueError:
        noether_n = None
    rows = {e.id: _entry_row(e, s, noether_n) for e in entries}
    sections = []
    for kind, builder in (("recipe", _recipe_section), ("predictions", _prediction_section)):
        members = [e for e in entries if e.kind == kind]
        if members:
            sections.append(builder(members, rows, s))
    ordered = [row for section in sections for row in section.pop("_rows")]
    return {
        "format": REPORT_FORMAT,
        "settings": {"statistic": s.statistic, "boo_n": int(s.boo_n), "gamma": s.gamma, "alpha": s.alpha,
                     "confidence": 1 - s.alpha, "correction": s.correction, "n_resamples": int(s.n_resamples),
                     "seed": int(s.seed), "k_runs": int(s.k_runs), "beta": s.beta, "noether_n": noether_n,
                     "higher_is_better": bool(s.higher_is_better)},
        "entries": ordered,
        "sections": sections,
    }


def flip_comparison(pair: dict) -> dict:
    """The same comparison seen from B: P(B>A) = 1 - P(A>B), interval mirrored."""
    verdicts = {"a_better": "b_better", "b_better": "a_better"}
    return {**pair, "a": pair["b"], "b": pair["a"], "a_name": pair["b_name"], "b_name": pair["a_name"],
            "p": None if pair["p"] is None else 1 - pair["p"],
            "low": None if pair["high"] is None else 1 - pair["high"],
            "high": None if pair["low"] is None else 1 - pair["low"],
            "significant": pair["reverse"]["significant"], "meaningful": pair["reverse"]["meaningful"],
            "reverse": {"significant": pair["significant"], "meaningful": pair["meaningful"]},
            "verdict": verdicts.get(pair["verdict"], pair["verdict"])}
