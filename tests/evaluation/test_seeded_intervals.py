"""seeded_intervals: every row's interval is bootstrap_interval's with the row's own seed."""

import numpy as np
import pytest

from evaluation.stats.bootstrap import bootstrap_interval, seeded_intervals


@pytest.mark.parametrize(
    "statistic,estimator,k,higher,n_resamples",
    [
        ("mean", "paper", 10, True, 500),
        ("mean", "paper", 7, True, 333),
        ("boo_n", "paper", 10, True, 500),
        ("boo_n", "paper", 9, False, 301),
        ("boo_n", "unbiased", 10, False, 500),
        ("boo_n", "unbiased", 5, True, 400),  # k - 1 < n: the percentile interval
        ("boo_n", "paper", 40, True, 3000),  # several draw calls per entry
    ],
)
def test_rows_equal_bootstrap_interval_with_own_seed(statistic, estimator, k, higher, n_resamples):
    rng = np.random.default_rng(k)
    x = rng.normal(size=(23, k))
    valid = x + 0.1 * rng.normal(size=x.shape) if statistic == "boo_n" else None
    if valid is not None:
        valid[0, 1] = valid[0, 2]  # a tie: the general path
        x[1] = x[1, 0]  # no spread
    seeds = [int(s) for s in rng.integers(0, 2**63, size=len(x))]
    low, high = seeded_intervals(
        x,
        seeds,
        statistic,
        n=5,
        valid=valid,
        n_resamples=n_resamples,
        confidence_level=0.9,
        higher_is_better=higher,
        estimator=estimator,
    )
    for e in range(len(x)):
        ci = bootstrap_interval(
            x[e],
            statistic,
            n=5,
            valid=None if valid is None else valid[e],
            rng=seeds[e],
            n_resamples=n_resamples,
            confidence_level=0.9,
            higher_is_better=higher,
            estimator=estimator,
        )
        assert low[e] == pytest.approx(ci.low, abs=1e-10) and high[e] == pytest.approx(ci.high, abs=1e-10), e


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="values"):
        seeded_intervals(np.ones((3, 4)), [1, 2], "mean")
    with pytest.raises(ValueError, match="valid"):
        seeded_intervals(np.ones((2, 4)), [1, 2], "mean", valid=np.ones((2, 4)))


def test_a_row_does_not_depend_on_the_other_rows(monkeypatch):
    """Bitwise: the incremental report reuses rows computed on another board (docs/scale.md)."""
    from evaluation.stats import bootstrap

    rng = np.random.default_rng(5)
    x, valid = rng.normal(size=(40, 8)), rng.normal(size=(40, 8))
    seeds = list(range(40))
    monkeypatch.setattr(bootstrap, "SEEDED_BLOCK_ELEMENTS", 7 * 200 * 8)
    full = seeded_intervals(x, seeds, "boo_n", n=3, valid=valid, n_resamples=200)
    for rows in ([3], [0, 5, 39], list(range(1, 40, 3))):
        part = seeded_intervals(x[rows], [seeds[r] for r in rows], "boo_n", n=3, valid=valid[rows], n_resamples=200)
        assert part[0].tolist() == full[0][rows].tolist() and part[1].tolist() == full[1][rows].tolist()


def test_an_unbiased_boo_n_row_does_not_depend_on_the_other_rows():
    """Found by a statistician: the unbiased Boo_n's pivot centre was a matrix product over the block of rows, so an
    entry's limits moved by 1-2 ulp when other entries joined its group (0.7026382377573104 alone, ...106 on a
    board of 8), against the bitwise reuse of rows by the incremental report."""
    rng = np.random.default_rng(5)
    x = 0.7 + 0.01 * rng.standard_normal((8, 30))
    seeds = list(range(8))
    full = seeded_intervals(x, seeds, "boo_n", n=3, n_resamples=100, estimator="unbiased")
    for r in range(8):
        alone = seeded_intervals(x[[r]], [seeds[r]], "boo_n", n=3, n_resamples=100, estimator="unbiased")
        assert (alone[0][0], alone[1][0]) == (full[0][r], full[1][r]), r


@pytest.mark.parametrize(
    "statistic,seed,n_new",
    [("mean", 0, 1), ("mean", 1, 2), ("boo_n", 2, 3), ("mean", 3, 1), ("mean", 4, 40), ("boo_n", 5, 30)],
)
def test_rank_intervals_update_equals_the_full_computation(statistic, seed, n_new):
    """Few new entries are compared with the overlapping ones resample by resample, many by their ranges."""
    from evaluation.stats import rank_intervals
    from evaluation.stats.bootstrap import rank_intervals_update

    rng = np.random.default_rng(seed)
    m, k = 120, 9
    table = np.linspace(0, 0.3, m)[:, None] + 0.05 * rng.normal(size=(m, k))
    valid = table + 0.01 * rng.normal(size=(m, k)) if statistic == "boo_n" else None
    new = np.zeros(m, bool)
    new[rng.choice(np.arange(1, m), size=n_new, replace=False)] = True  # not row 0: runs keep their order
    kw = dict(n_resamples=400, confidence_level=0.9, rng=11, statistic=statistic, n=3)
    old = rank_intervals(table[~new], valid=None if valid is None else valid[~new], **kw)
    full = rank_intervals(table, valid=valid, **kw)
    low, high = np.zeros(m, np.int64), np.zeros(m, np.int64)
    low[~new], high[~new] = old.low, old.high
    known = ~new
    known[5] = False  # an old entry whose interval is not known: recomputed
    got = rank_intervals_update(table, new, known, low, high, valid=valid, **kw)
    assert got.rank.tolist() == full.rank.tolist()
    assert got.low.tolist() == full.low.tolist() and got.high.tolist() == full.high.tolist()


def test_blocks_on_several_threads_give_the_same_intervals(monkeypatch):
    """The blocks run on a thread pool; each entry draws from its own seed, so threads change nothing."""
    from evaluation.stats import bootstrap

    rng = np.random.default_rng(4)
    x = 0.7 + 0.01 * rng.standard_normal((40, 10))
    valid = x + 0.003 * rng.standard_normal((40, 10))
    monkeypatch.setattr(bootstrap, "SEEDED_BLOCK_ELEMENTS", 500 * 10 * 3)  # 3 entries per block: 14 blocks
    results = []
    for threads in ("1", "4"):
        monkeypatch.setenv("VARBOARD_STATS_THREADS", threads)
        results.append(bootstrap.seeded_intervals(x, list(range(40)), "boo_n", n=3, valid=valid, n_resamples=500))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    single = bootstrap_interval(x[7], "boo_n", n=3, valid=valid[7], rng=7, n_resamples=500)
    assert results[1][0][7] == pytest.approx(single.low, rel=1e-12)
    assert results[1][1][7] == pytest.approx(single.high, rel=1e-12)


def test_tied_runs_give_the_same_limits_in_both_paths():
    """Found by a statistician: a resample of equal (distinct) runs kept a standard error of ~1e-10 from the
    cancellation in second - first² in the report's path, so t* was finite and huge and the limits depended on
    the rounding: [0.64, 0.78] against bootstrap_interval's [0.64, 0.686] for 13 runs at 0.64 and 2 at 0.78,
    209 of 3,000 two-valued entries apart. Both now count such a spread as 0."""
    rng = np.random.default_rng(0)
    cases = [(np.array([0.64] * 13 + [0.78] * 2), 704)]
    for _ in range(300):
        k, m = int(rng.integers(6, 31)), int(rng.integers(1, 3))
        base = round(float(rng.uniform(0.05, 0.95)), 2)
        other = round(base + float(rng.choice([-1, 1])) * 0.01 * int(rng.integers(1, 20)), 2)
        cases.append((np.array([base] * (k - m) + [other] * m), int(rng.integers(1000))))
    for runs, seed in cases:
        low, high = seeded_intervals(runs[None, :], [seed], "mean", n_resamples=200)
        reference = bootstrap_interval(runs, "mean", rng=seed, n_resamples=200)
        assert (low[0], high[0]) == pytest.approx((reference.low, reference.high), abs=1e-12), (runs, seed)
    low, high = seeded_intervals(cases[0][0][None, :], [704], "mean", n_resamples=200)
    assert high[0] < 0.69  # not the largest run


def test_runs_far_from_zero_keep_their_spread():
    """Found by a reviewer: a zero threshold on the scale of max|x| zeroed every resampled spread of runs 1e6 + 1e-4·z,
    so the interval turned symmetric. The mean's spread is judged on the centred runs' scale: the interval of the
    shifted runs is the interval of the runs, shifted."""
    z = np.random.default_rng(3).standard_normal(10)
    base = seeded_intervals((1e-4 * z)[None, :], [5], "mean", n_resamples=500)
    for offset in (1e6, -1e6, 1e3):
        low, high = seeded_intervals((offset + 1e-4 * z)[None, :], [5], "mean", n_resamples=500)
        reference = bootstrap_interval(offset + 1e-4 * z, "mean", rng=5, n_resamples=500)
        assert (low[0] - offset, high[0] - offset) == pytest.approx((base[0][0], base[1][0]), abs=1e-8)
        assert (reference.low, reference.high) == pytest.approx((low[0], high[0]), abs=1e-8)


def test_the_tie_margin_read_from_the_ranges_equals_the_one_read_from_the_matrix():
    """``_tie_margin`` reads max|θ*| from each entry's range (2 x entries numbers) instead of the (entries, B)
    matrix (1.45 s of a 20,000-entry update): the same float wherever every statistic is finite, and the matrix's
    finite values where one is not."""
    from evaluation.stats.bootstrap import _tie_margin

    rng = np.random.default_rng(7)
    for shift in (-3.0, -0.5, 0.0, 0.7, 1e6):
        boot = shift + rng.standard_normal((40, 300)) * rng.uniform(0.01, 5)
        lo, hi = boot.min(axis=1), boot.max(axis=1)
        assert _tie_margin(boot, lo, hi) == _tie_margin(boot)
        assert _tie_margin(boot) == 2.0 * 41 * 1e-12 * float(np.abs(boot).max())
    boot[3, 5], boot[7, 0] = np.inf, np.nan  # not finite: the finite values decide, as before
    lo, hi = boot.min(axis=1), boot.max(axis=1)
    finite = np.abs(boot[np.isfinite(boot)]).max()
    assert _tie_margin(boot, lo, hi) == _tie_margin(boot) == 2.0 * 41 * 1e-12 * float(finite)
