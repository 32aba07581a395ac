"""Issue 23, rows 1, 2 and 10: a Boo_n board resamples the statistic it shows; a lower-is-better board mirrors.

Row 1: each entry's rank interval resamples its own Boo_n (chosen by its validation scores where it
has them, by test score where it has none), not Boo_n chosen by test for every entry as soon as one
lacks validation scores. Row 2: a run with a NaN/inf validation score is left out of its entry (the
row names it and why); Boo_n is eq. 7 on the complete (valid, test) pairs. Row 10: a board of losses
is the accuracy board mirrored, number for number (runs sorted by the oriented value everywhere).

The references are written out here: Boo_n by its definition (Bajgar et al. 2018, eq. 5: the
expected test score of the best-validation run of n drawn with replacement), enumerating every
n-tuple of runs, and rank intervals from a joint bootstrap over runs drawn with another generator
(the boards are built so that the intervals do not depend on the draws).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from evaluation import stats
from evaluation.report import EntryRuns, ReportSettings, build_report


def recipe(i, test, valid=None, index=None, name=None):
    test = np.asarray(test, dtype=float)
    index = np.arange(test.size) if index is None else np.asarray(index)
    return EntryRuns(
        i,
        name or f"m{i}",
        "t",
        "recipe",
        test.size,
        index,
        test,
        valid=None if valid is None else np.asarray(valid, dtype=float),
    )


def by_id(report):
    return {row["submission_id"]: row for row in report["entries"]}


def ref_boo_n(test, key, n: int) -> float:
    """Eq. 5 by enumeration: the mean, over all m^n n-tuples of runs drawn with replacement, of the
    test score of the tuple's best run by ``key`` (higher is better; no ties between distinct runs)."""
    test, key = np.asarray(test, float), np.asarray(key, float)
    tuples = np.array(list(itertools.product(range(test.size), repeat=n)))
    best = np.take_along_axis(tuples, np.argmax(key[tuples], axis=1)[:, None], axis=1)[:, 0]
    return float(test[best].mean())


def ref_rank_intervals(tests, keys, n: int, n_resamples: int, level: float, seed: int):
    """Percentile intervals of each entry's rank (1 = highest Boo_n) over joint resamples of the runs,
    each entry's Boo_n chosen by its own key (eq. 5 by enumeration); widened to whole ranks."""
    rng = np.random.default_rng(seed)
    m = tests[0].size
    ranks = np.empty((len(tests), n_resamples))
    for b in range(n_resamples):
        idx = rng.integers(0, m, m)
        values = np.array([ref_boo_n(t[idx], k[idx], n) for t, k in zip(tests, keys)])
        ranks[:, b] = [1 + np.sum(values > v) for v in values]
    q = [100 * (1 - level) / 2, 100 * (1 + level) / 2]
    lo, hi = np.percentile(ranks, q, axis=1)
    return np.floor(lo + 1e-9).astype(int), np.ceil(hi - 1e-9).astype(int)


# --------------------------------------------------------------------------- row 1
def _row1_board():
    """A's validation scores pick its worst test runs (its Boo_n by validation is low, by test high);
    B has no validation scores; C validates on its test scores. Displayed Boo_2: B > C > A, far apart (20 runs:
    Boo_n's interval, and a Boo_n board's rank intervals, need 10n)."""
    rng = np.random.default_rng(1)
    k = 20
    a_test = np.linspace(0.50, 0.95, k)
    rng.shuffle(a_test)
    a_valid = -a_test + 0.001 * rng.standard_normal(k)
    b_test = 0.82 + 0.001 * rng.standard_normal(k)
    c_test = 0.77 + 0.001 * rng.standard_normal(k)
    c_valid = c_test + 0.0005 * rng.standard_normal(k)
    return [recipe(1, a_test, a_valid, name="A"), recipe(2, b_test, name="B"), recipe(3, c_test, c_valid, name="C")]


def test_row1_rank_intervals_resample_each_entrys_own_boo_n():
    entries = _row1_board()
    s = ReportSettings(statistic="boo_n", boo_n=2, k_runs=20, n_resamples=400)
    rows = by_id(build_report(entries, s))
    keys = [e.test if e.valid is None else e.valid for e in entries]
    for e, key in zip(entries, keys):
        assert rows[e.id]["ranking_value"] == pytest.approx(ref_boo_n(e.test, key, 2), rel=1e-12)
    low, high = ref_rank_intervals([e.test for e in entries], keys, 2, 400, 0.95, seed=11)
    assert [rows[e.id]["rank"] for e in entries] == [3, 1, 2]
    for e, lo, hi in zip(entries, low, high):
        interval = rows[e.id]["rank_interval"]
        assert interval == {"rank": rows[e.id]["rank"], "low": lo, "high": hi, "widened": False}, e.name
    assert (low.tolist(), high.tolist()) == ([3, 1, 2], [3, 1, 2])  # the board leaves no room to the draws


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_row1_rank_intervals_take_test_score_as_key_where_valid_is_missing(higher_is_better):
    """The stats call the board makes: an entry without validation scores is keyed by its test scores,
    the others by theirs; the same resamples as the board of the keys written out."""
    entries = _row1_board()
    sign = 1.0 if higher_is_better else -1.0
    flipped = [recipe(e.id, sign * e.test, None if e.valid is None else sign * e.valid) for e in entries]
    s = ReportSettings(statistic="boo_n", boo_n=2, k_runs=20, n_resamples=300, higher_is_better=higher_is_better)
    shown = by_id(build_report(flipped, s))
    # The same board with B's test scores copied in as its validation scores: nothing may change.
    explicit = [e if e.valid is not None else recipe(e.id, e.test, e.test.copy()) for e in flipped]
    again = by_id(build_report(explicit, s))
    for e in entries:
        assert shown[e.id]["rank_interval"] == again[e.id]["rank_interval"]
        assert shown[e.id]["rank_interval"]["rank"] == shown[e.id]["rank"]


# --------------------------------------------------------------------------- row 2
def _row2_entries(bad_valid: float):
    """Three entries of 21 seed-paired runs (Boo_2's interval needs 10n = 20 complete ones); the first has a
    non-finite validation score at run 3."""
    rng = np.random.default_rng(2)
    entries = []
    for i in range(3):
        test = 0.80 + 0.005 * i + 0.02 * rng.standard_normal(21)
        valid = test + 0.02 * rng.standard_normal(21)
        entries.append(recipe(i + 1, test, valid))
    valid = entries[0].valid.copy()
    valid[3] = bad_valid
    entries[0] = recipe(1, entries[0].test, valid)
    return entries


def _without_run(e: EntryRuns, run: int) -> EntryRuns:
    keep = e.run_index != run
    return replace(e, run_index=e.run_index[keep], test=e.test[keep], valid=e.valid[keep])


def _rows_but_left_out(report):
    return [{key: value for key, value in row.items() if key != "runs_left_out"} for row in report["entries"]]


@pytest.mark.parametrize("bad_valid", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("statistic", ["boo_n", "mean"])
def test_row2_a_run_without_a_finite_validation_score_is_left_out_and_named(bad_valid, statistic):
    entries = _row2_entries(bad_valid)
    e = entries[0]
    s = ReportSettings(statistic=statistic, boo_n=2, k_runs=21, n_resamples=300)
    report = build_report(entries, s)
    row = by_id(report)[1]
    complete = np.isfinite(e.valid)
    # Eq. 7 on the 20 complete (valid, test) pairs, not Boo_n chosen by test over all 21.
    assert row["boo_n"]["estimate"] == pytest.approx(ref_boo_n(e.test[complete], e.valid[complete], 2), rel=1e-12)
    assert row["boo_n"]["estimate"] < ref_boo_n(e.test, e.test, 2) - 1e-3  # the optimistic selection on test
    word = "NaN" if math.isnan(bad_valid) else str(bad_valid)
    assert row["runs_left_out"] == [{"run_index": 3, "reason": f"validation score is {word}"}]
    # The estimate, its intervals and the rank intervals: those of the board without that run.
    reference = build_report([_without_run(e, 3), *entries[1:]], s)
    assert all(r["runs_left_out"] == [] for r in reference["entries"])
    assert _rows_but_left_out(report) == _rows_but_left_out(reference)
    assert report["sections"] == reference["sections"]
    assert row["boo_n"]["low"] is not None and row["rank_interval"]["rank"] == row["rank"]


def test_row2_entry_with_no_finite_validation_score_chooses_by_test():
    """Every validation score missing: the entry has no validation scores (row 1), nothing is left out."""
    entries = _row2_entries(np.nan)
    first = recipe(1, entries[0].test, np.full(21, np.nan))
    s = ReportSettings(statistic="boo_n", boo_n=2, k_runs=21, n_resamples=200)
    row = by_id(build_report([first, *entries[1:]], s))[1]
    assert row["runs_left_out"] == [] and row["runs_succeeded"] == 21
    assert row["boo_n"]["estimate"] == pytest.approx(ref_boo_n(first.test, first.test, 2), rel=1e-12)


def test_row2_validation_scores_of_another_length_are_refused():
    e = recipe(1, [0.8, 0.81, 0.82], [0.7, 0.71])
    with pytest.raises(ValueError, match=r"entry 1: `valid` must hold one validation score per test score"):
        build_report([e], ReportSettings(n_resamples=100, k_runs=3))


# --------------------------------------------------------------------------- row 10
def _mirror(x):
    return None if x is None else -x


def assert_mirrored(acc, loss, path="report"):
    """``loss`` is ``acc`` of the same runs negated: values in the metric's units negated, an interval's
    limits swapped and negated, a bound's side swapped, everything oriented (ranks, letters, P(A>B),
    p-values, verdicts, spreads) equal: exactly, to the last bit (the code before this was off by up to 3e-3)."""
    if isinstance(acc, dict):
        assert acc.keys() == loss.keys(), path
        swap = "estimate" in acc and "low" in acc
        for key in acc:
            a, b = acc[key], loss[key]
            if key == "higher_is_better":
                assert a is (not b), path
            elif key == "bound_side":
                assert {a, b} == {"lower", "upper"} or a == b is None, f"{path}.{key}"
            elif swap and key in ("low", "high"):
                assert_close(_mirror(acc["high" if key == "low" else "low"]), b, f"{path}.{key}")
            elif key in ("estimate", "ranking_value", "median", "raw", "bound", "boo_n_curve", "run_scores"):
                assert_close(a if a is None else np.negative(a).tolist(), b, f"{path}.{key}")
            else:
                assert_mirrored(a, b, f"{path}.{key}")
    elif isinstance(acc, list):
        assert len(acc) == len(loss), path
        for i, (a, b) in enumerate(zip(acc, loss)):
            assert_mirrored(a, b, f"{path}[{i}]")
    else:
        assert_close(acc, loss, path)


def assert_close(a, b, path):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool) and b is not None:
        assert a == b, f"{path}: {a!r} mirrors to {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _row10_entries(sign: float):
    """Seven recipe entries, 10 seed-paired runs; validation scores rounded (ties for Boo_n); one entry
    without validation scores; one entry a run short. Four prediction entries of 1 to 3 files."""
    rng = np.random.default_rng(10)
    entries = []
    for i in range(7):
        test = 0.80 + 0.004 * i + 0.01 * rng.standard_normal(10)
        valid = np.round(test + 0.01 * rng.standard_normal(10), 2)
        index = np.arange(10)
        if i == 5:
            test, valid, index = test[1:], valid[1:], index[1:]
        entries.append(recipe(i + 1, sign * test, None if i == 4 else sign * valid, index=index))
    for i in range(4):
        k = 1 + i % 3
        outcomes = sign * (0.5 + 0.02 * i + 0.3 * rng.standard_normal((k, 200)))
        entries.append(
            EntryRuns(20 + i, f"p{i}", "t", "predictions", k, np.arange(k), outcomes.mean(axis=1), outcomes=outcomes)
        )
    return entries


@pytest.mark.parametrize("statistic", ["mean", "boo_n"])
def test_row10_a_loss_board_mirrors_the_accuracy_board(statistic):
    common = {"statistic": statistic, "boo_n": 3, "k_runs": 10, "n_resamples": 500, "master_seed": 3}
    acc = build_report(_row10_entries(1.0), ReportSettings(higher_is_better=True, **common))
    loss = build_report(_row10_entries(-1.0), ReportSettings(higher_is_better=False, **common))
    assert_mirrored(acc, loss)


@pytest.mark.parametrize("statistic", ["mean", "iqm", "boo_n"])
def test_row10_bootstrap_interval_of_losses_mirrors(statistic):
    """One entry's interval: the runs sorted by the oriented value, so the same resamples (same seed)."""
    rng = np.random.default_rng(100)
    x = 0.8 + 0.01 * rng.standard_normal(12)
    valid = np.round(x + 0.01 * rng.standard_normal(12), 2) if statistic == "boo_n" else None
    kw = {"n": 3, "n_resamples": 2000, "rng": 5}
    acc = stats.bootstrap_interval(x, statistic, valid=valid, **kw)
    loss = stats.bootstrap_interval(
        -x, statistic, valid=None if valid is None else -valid, higher_is_better=False, **kw
    )
    assert (loss.estimate, loss.low, loss.high) == (-acc.estimate, -acc.high, -acc.low)
    np.testing.assert_array_equal(loss.bootstrap_distribution, -acc.bootstrap_distribution)


@pytest.mark.parametrize("statistic", ["mean", "boo_n"])
def test_row10_seeded_intervals_of_losses_mirror(statistic):
    rng = np.random.default_rng(101)
    x = 0.8 + 0.01 * rng.standard_normal((6, 10))
    valid = np.round(x + 0.01 * rng.standard_normal((6, 10)), 2) if statistic == "boo_n" else None
    kw = {"n": 3, "n_resamples": 1000}
    seeds = list(range(20, 26))
    low, high = stats.seeded_intervals(x, seeds, statistic, valid=valid, **kw)
    loss_low, loss_high = stats.seeded_intervals(
        -x, seeds, statistic, valid=None if valid is None else -valid, higher_is_better=False, **kw
    )
    np.testing.assert_array_equal(loss_low, -high)
    np.testing.assert_array_equal(loss_high, -low)
