"""Issue 23, rows 7, 8, 9 and 11: the state of the art on dependent and loss-like boards, order-free
suite resamples, and ties in the Bayesian signed-rank test.

References: scipy's exact binomial (Clopper–Pearson) interval and beta quantiles, brute-force
sums over every possible test-set count, a per-example simulation of Møllersen & Holsbø's
eq. 10, the eq. 10 implementation checked against their Table 2 (tests/evaluation/test_sota.py),
and baycomp 1.0.3 where no tie occurs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from evaluation import stats
from evaluation.report import EntryRuns, ReportSettings, build_report
from evaluation.stats import suites as su

N = 300


def prediction(i, outcomes):
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    return EntryRuns(
        i,
        f"p{i}",
        f"t{i}",
        "predictions",
        outcomes.shape[0],
        np.arange(outcomes.shape[0]),
        outcomes.mean(axis=1),
        outcomes=outcomes,
    )


def sota_of(entries, **kw):
    s = ReportSettings(**{"n_resamples": 200, "master_seed": 3, "accuracy_like": True, **kw})
    return build_report(entries, s)["sections"][0]["sota"]


# --------------------------------------------------------------------------- row 7
def test_row7_ten_copies_of_one_classifier_are_one_classifier():
    y = np.random.default_rng(7).random(N) < 0.85
    sota = sota_of([prediction(i + 1, y) for i in range(10)], m_total_predictions=10)
    x = int(y.sum())
    # one classifier: no multiplicity. Before: 1.58 se below the raw best, bound at the Šidák level of m = 10.
    assert sota["duplicates"] == 9 and sota["m"] == 1
    assert sota["estimate"] == pytest.approx(sota["raw"], abs=1e-12) and sota["raw"] == pytest.approx(x / N, abs=1e-15)
    assert sota["bound"] == pytest.approx(sps.binomtest(x, N).proportion_ci(0.95, method="exact").low, abs=1e-12)


def test_row7_an_entry_of_two_files_and_another_of_one_of_them_give_a_report():
    """Found by a new host: alice's entry (a file 26 of 30 right and one all right) and bob's (the first file
    alone) have mean outcome vectors correlated at 1 - 4e-16, where the dependent model failed on a NaN and
    the board stopped updating. The report now computes, at eq. 10's single classifier (ρ -> 1)."""
    right = np.ones(30)
    most = right.copy()
    most[[3, 11, 19, 27]] = 0.0  # 26 of 30
    sota = sota_of([prediction(1, np.stack([most, right])), prediction(2, most)], m_total_predictions=3)
    assert sota["rho"] == pytest.approx(1.0, abs=1e-12) and sota["model"] == "dependent"
    assert sota["raw"] == pytest.approx(28 / 30, abs=1e-15)
    assert np.isfinite(sota["estimate"]) and np.isfinite(sota["bound"]) and sota["bound"] <= sota["estimate"]


def test_row7_identical_classifiers_cover_at_the_nominal_level_by_brute_force():
    """ρ = 1 (ten copies, the others not shown): coverage summed over every count x = 0..n."""
    theta, m = 0.85, 10
    x = np.arange(N + 1)
    pmf = sps.binom.pmf(x, N, theta)
    bound = np.array([stats.adjusted_sota(k / N, m, n=N, rho=1.0).lower for k in x])
    estimate = np.array([stats.adjusted_sota(k / N, m, n=N, rho=1.0).estimate for k in x])
    coverage = float(pmf[bound <= theta].sum())
    assert 0.975 <= coverage < 0.985  # Clopper–Pearson at α/2: conservative, not 100 %
    assert float(pmf @ estimate) == pytest.approx(theta, abs=1e-12)  # unbiased at ρ = 1 (§4.1)
    independent = np.array([stats.adjusted_sota(k / N, m, n=N).lower for k in x])
    assert float(pmf[independent <= theta].sum()) > 0.997  # the identical-independent form: ~100 %


def test_row7_near_copies_use_eq_10_with_the_dependence_of_their_outcomes():
    rng = np.random.default_rng(70)
    base = rng.random(N) < 0.8
    copies = [np.where(rng.random(N) < 0.05, rng.random(N) < 0.8, base) for _ in range(10)]
    sota = sota_of([prediction(i + 1, c) for i, c in enumerate(copies)], m_total_predictions=12)
    r = np.corrcoef(np.stack(copies).astype(float))
    rho = np.sqrt(r[np.triu_indices(10, 1)].mean())  # eq. 10: followers correlate at ρ²
    assert sota["rho"] == pytest.approx(rho, abs=1e-12) and sota["model"] == "dependent" and sota["m"] == 12
    best = max(c.mean() for c in copies)
    assert sota["raw"] == best
    # the estimate inverts eq. 10's E[θ̂_max] (sota_distribution_dependent, checked against Table 2) ...
    law = stats.sota_distribution_dependent(N, sota["estimate"], 12, sota["rho"])
    assert law.expected == pytest.approx(best, abs=1e-9)
    # ... and so does a per-example simulation of eq. 10 (brute force, 4 Monte-Carlo se)
    theta, sims = sota["estimate"], 20_000
    y0 = rng.random((sims, 1, N)) < theta
    p1, p0 = theta + rho * (1 - theta), theta * (1 - rho)
    follower = rng.random((sims, 12, N)) < np.where(y0, p1, p0)
    best_sim = follower.mean(axis=2).max(axis=1)
    assert abs(best_sim.mean() - best) < 4 * best_sim.std() / np.sqrt(sims)
    # the bound: P(θ̂_max >= best) = α/2 at θ_L
    at_bound = stats.sota_distribution_dependent(N, sota["bound"], 12, sota["rho"])
    assert float(at_bound.pmf[at_bound.accuracy >= best - 1e-12].sum()) == pytest.approx(0.025, abs=1e-6)
    independent = stats.adjusted_sota(best, 12, n=N, estimates=[c.mean() for c in copies])
    assert independent.estimate < sota["estimate"] < best


def test_row7_normal_method_is_unbiased_for_one_classifier():
    a = stats.adjusted_sota(0.5, 10, standard_error=0.02, rho=1.0)
    assert a.estimate == 0.5 and a.lower == pytest.approx(0.5 - sps.norm.ppf(0.975) * 0.02, abs=1e-9)
    # equicorrelated normals ρ²: E[max] = θ + sqrt(1 - ρ²) E[max of m N(0, 1)] se, by simulation
    rho, rng = 0.8, np.random.default_rng(1)
    z = rho * rng.standard_normal((200_000, 1)) + np.sqrt(1 - rho**2) * rng.standard_normal((200_000, 10))
    b = stats.adjusted_sota(0.5, 10, standard_error=0.02, rho=rho)
    assert (0.5 - b.estimate) / 0.02 == pytest.approx(z.max(axis=1).mean(), abs=0.01)
    assert (0.5 - b.lower) / 0.02 == pytest.approx(np.quantile(z.max(axis=1), 0.975), abs=0.02)


def test_row7_rho_is_checked():
    with pytest.raises(ValueError, match=r"`rho` must be a correlation in \[0, 1\]"):
        stats.adjusted_sota(0.9, 10, n=100, rho=1.5)
    with pytest.raises(ValueError, match=r"`outcomes` must be 2-D"):
        stats.outcome_dependence(np.ones(5))


# --------------------------------------------------------------------------- row 8
def _disjoint_errors(counts):
    """0/1 error indicators of entries that err on disjoint examples (no positive dependence)."""
    out, start = [], 0
    for c in counts:
        e = np.zeros(N)
        e[start : start + c] = 1
        out.append(e)
        start += c
    return out


def test_row8_an_error_rate_is_adjusted_upward_as_one_minus_accuracy():
    errors = _disjoint_errors([27, 36, 45, 54])  # error rates 0.09, 0.12, 0.15, 0.18 on 300 examples
    loss = sota_of([prediction(i + 1, e) for i, e in enumerate(errors)], higher_is_better=False, m_total_predictions=4)
    assert loss["raw"] == 0.09 and loss["bound_side"] == "upper" and loss["rho"] == 0.0
    # Before: estimate 0.0742 and "upper" bound 0.0535, both below the raw 0.09.
    a = 1 - (1 - 0.05 / 2) ** (1 / 4)  # Šidák level of m = 4
    assert loss["bound"] == pytest.approx(1 - sps.beta.ppf(a, 273, 28), abs=1e-9) == pytest.approx(0.1393, abs=1e-4)
    assert loss["raw"] < loss["estimate"] < loss["bound"]
    # mirror: the accuracy board of the same outcomes, mapped back
    accuracy = sota_of([prediction(i + 1, 1 - e) for i, e in enumerate(errors)], m_total_predictions=4)
    assert (loss["estimate"], loss["bound"]) == pytest.approx(
        (1 - accuracy["estimate"], 1 - accuracy["bound"]), abs=1e-12
    )
    mirror = stats.adjusted_sota(0.91, 4, n=N, estimates=[0.91, 0.88, 0.85, 0.82])
    assert loss["estimate"] == pytest.approx(1 - mirror.estimate, abs=1e-12)


# --------------------------------------------------------------------------- row 9
@pytest.fixture(scope="module")
def board():
    rng = np.random.default_rng(9)
    runs = [[rng.normal(0.5 + 0.05 * e, 0.1, size=5 + (e + t) % 3) for t in range(3)] for e in range(5)]
    return runs, [101, 7, 55, 3, 42], [11, 12, 13]


def _all(runs, keys, task_keys, taus):
    kw = {"n_resamples": 500, "rng": 5, "keys": keys, "task_keys": task_keys}
    iqm = su.aggregate_interval(runs, "iqm", **kw)
    profile = su.performance_profile(runs, taus, **kw)
    poi = su.probability_of_improvement(runs, **kw)
    return iqm, profile, poi


def test_row9_reordering_entries_tasks_and_runs_changes_no_limit(board):
    runs, keys, task_keys = board
    taus = np.linspace(0.2, 0.9, 8)
    iqm, profile, poi = _all(runs, keys, task_keys, taus)
    rng = np.random.default_rng(0)
    e_perm, t_perm = rng.permutation(5), np.array([2, 0, 1])
    shuffled = [[rng.permutation(runs[e][t]) for t in t_perm] for e in e_perm]
    iqm2, profile2, poi2 = _all(shuffled, [keys[e] for e in e_perm], [task_keys[t] for t in t_perm], taus)
    for a, b in (
        (iqm.low, iqm2.low),
        (iqm.high, iqm2.high),
        (profile.low, profile2.low),
        (profile.high, profile2.high),
    ):
        assert np.array_equal(a[e_perm], b)  # bit for bit (before: up to 0.067 at B = 500)
    back = np.ix_(e_perm, e_perm)
    for a, b in ((poi.p, poi2.p), (poi.low, poi2.low), (poi.high, poi2.high)):
        assert np.array_equal(a[back], b, equal_nan=True)
    # without keys (positions), shuffling the runs alone changes nothing either
    plain = su.aggregate_interval(runs, "iqm", n_resamples=500, rng=5)
    runs_shuffled = [[rng.permutation(task) for task in entry] for entry in runs]
    again = su.aggregate_interval(runs_shuffled, "iqm", n_resamples=500, rng=5)
    assert np.array_equal(plain.low, again.low) and np.array_equal(plain.high, again.high)


def test_row9_another_team_joining_moves_no_other_limit(board):
    runs, keys, task_keys = board
    newcomer = [np.array([0.9, 0.1, 0.5]), np.array([0.7, 0.8]), np.array([0.4, 0.45, 0.5, 0.55])]
    taus = np.linspace(0.2, 0.9, 8)
    before = _all(runs, keys, task_keys, taus)
    after = _all([newcomer] + runs, [999] + keys, task_keys, taus)
    assert np.array_equal(before[0].low, after[0].low[1:]) and np.array_equal(before[0].high, after[0].high[1:])
    assert np.array_equal(before[1].low, after[1].low[1:])
    assert np.array_equal(before[2].low, after[2].low[1:, 1:], equal_nan=True)
    # an entry's interval is the one it gets alone, as a recipe board's entry interval is seeded by its id
    alone = su.aggregate_interval([runs[3]], "iqm", n_resamples=500, rng=5, keys=[keys[3]], task_keys=task_keys)
    assert (alone.low[0], alone.high[0]) == (before[0].low[3], before[0].high[3])


def test_row9_keys_are_checked(board):
    runs, _, _ = board
    with pytest.raises(ValueError, match=r"`keys` must give one non-negative integer per key"):
        su.aggregate_interval(runs, keys=[1, 2])
    with pytest.raises(ValueError, match=r"`task_keys` must be distinct"):
        su.aggregate_interval(runs, task_keys=[1, 1, 2])


# --------------------------------------------------------------------------- row 11
def test_row11_identical_entries_split_the_ties():
    x = np.array([0.8, 0.7, 0.9, 0.6, 0.75])
    # brute force: every posterior sample of identical entries is exactly (1/2, 0, 1/2)
    w = np.random.default_rng(0).dirichlet([0.5] + [1.0] * x.size, size=3)
    d = np.r_[0.0, x - x]
    for ws in w:
        above = sum(ws[i] * ws[j] * 0.5 for i in range(d.size) for j in range(d.size))
        assert above == pytest.approx(0.5 * ws.sum() ** 2)
    r = su.bayesian_signed_rank(x, x.copy(), rope=0.0, n_samples=4_000)
    assert (r.p_a_better, r.p_rope, r.p_b_better) == (0.5, 0.0, 0.5)  # before: (1, 0, 0)


def test_row11_swapping_a_and_b_swaps_the_answer_and_agrees_with_baycomp_without_ties():
    cases = [
        ([0.8, 0.7, 0.9, 0.6], [0.8, 0.7, 0.9, 0.6], 0.0),  # before: (1, 0, 0) both ways
        ([0.8, 0.7, 0.9, 0.6], [0.8, 0.7, 0.9, 0.6], 0.05),
        ([0.8, 0.7, 0.9, 0.6], [0.7, 0.8, 0.9, 0.6], 0.0),
        ([0.81, 0.7, 0.9, 0.6, 0.5], [0.8, 0.72, 0.9, 0.58, 0.55], 0.01),
    ]
    for x, y, rope in cases:
        ab = su.bayesian_signed_rank(x, y, rope=rope, n_samples=5_000, rng=3)
        ba = su.bayesian_signed_rank(y, x, rope=rope, n_samples=5_000, rng=3)
        assert (ab.p_a_better, ab.p_rope, ab.p_b_better) == (ba.p_b_better, ba.p_rope, ba.p_a_better)
    baycomp = pytest.importorskip("baycomp")  # where no sample ties, baycomp's argmax is the same rule
    x = np.array([0.81, 0.7, 0.9, 0.6, 0.5, 0.66, 0.72, 0.8])
    y = np.array([0.8, 0.72, 0.9, 0.58, 0.55, 0.7, 0.74, 0.83])  # one task exactly equal
    theirs = baycomp.SignedRankTest.probs(x, y, rope=0.01, nsamples=50_000)
    ours = su.bayesian_signed_rank(x, y, rope=0.01, n_samples=50_000)
    assert (ours.p_a_better, ours.p_rope, ours.p_b_better) == pytest.approx(theirs, abs=0.01)


def test_suite_intervals_hold_their_estimates_and_stay_in_range():
    """Found by a statistician: with one run per task (what Ladder tasks give) the IQM's interval missed its estimate
    by an ulp in 752 of 4,000 suites (0.5267652544005125 in [0.5267652544005124, 0.5267652544005124]), and a profile's
    upper limit was 1.0000000000000002."""
    from evaluation.stats import suites

    rng = np.random.default_rng(1)
    for i in range(300):
        tasks = [[np.array([v]) for v in rng.uniform(0, 1, 3)]]
        ci = suites.aggregate_interval(tasks, "iqm", n_resamples=100, rng=i)
        assert ci.low[0] <= ci.estimate[0] <= ci.high[0]
    profile = suites.performance_profile([[np.array([0.1, 0.2, 0.3])] * 3], [0.0, 0.15, 0.25])
    assert np.all(profile.high <= 1.0) and np.all(profile.low >= 0.0)
    assert np.all((profile.low <= profile.estimate) & (profile.estimate <= profile.high))


def test_copies_of_one_recipe_count_once_in_the_state_of_the_art():
    """Found by a statistician: prediction files repeated counted once in m, six recipe entries with identical runs
    six times (m = 6, raw 0.79224 adjusted to 0.78855). A recipe section counts entries with the same seeds and
    scores once: the six copies give the state of the art of one."""
    from evaluation.report import EntryRuns, ReportSettings, build_report

    rng = np.random.default_rng(0)
    x, other = 0.79 + 0.01 * rng.standard_normal(10), 0.785 + 0.01 * rng.standard_normal(10)
    copies = [EntryRuns(i, f"copy{i}", "t", "recipe", 10, np.arange(10), x.copy()) for i in range(1, 7)]
    rest = [EntryRuns(7, "other", "t", "recipe", 10, np.arange(10), other)]
    report_settings = ReportSettings(n_resamples=200, k_runs=10)
    many = build_report(copies + rest, report_settings)["sections"][0]["sota"]
    one = build_report(copies[:1] + rest, report_settings)["sections"][0]["sota"]
    assert (many["m"], many["duplicates"]) == (2, 5)
    assert (many["estimate"], many["bound"]) == (one["estimate"], one["bound"])
    shifted = [EntryRuns(8, "other seeds", "t", "recipe", 10, np.arange(1, 11), x.copy())]  # same scores, other seeds
    assert build_report(copies[:1] + shifted + rest, report_settings)["sections"][0]["sota"]["duplicates"] == 0


def test_copies_left_out_of_the_comparisons_count_once_too():
    """Found by a statistician: two identical entries of 2 runs (lacking seeds the compared entries share, so not
    compared) each added 1 to m (m = 6 for 5 distinct entries); the same copies compared made m = 5."""
    from evaluation.report import EntryRuns, ReportSettings, build_report

    rng = np.random.default_rng(0)
    full = [
        EntryRuns(i, f"F{i}", f"t{i}", "recipe", 10, np.arange(10), 0.8 - 0.01 * i + 0.01 * rng.standard_normal(10))
        for i in range(1, 5)
    ]
    c = 0.7 + 0.01 * rng.standard_normal(2)
    twins = [EntryRuns(j, f"C{j}", "c", "recipe", 10, np.array([0, 1]), c.copy()) for j in (10, 11)]
    section = build_report(full + twins, ReportSettings(n_resamples=200, k_runs=10))["sections"][0]
    # Compared too now (each pair on the seeds it shares; their 2 runs give no rank interval), counted once in m.
    assert sorted(section["compared"]) == [1, 2, 3, 4, 10, 11] and section["paired_runs"] == list(range(10))
    assert (section["sota"]["m"], section["sota"]["duplicates"]) == (5, 1)


def test_a_suite_iqm_weighs_each_task_alike_whatever_its_runs():
    """Found by a statistician: the IQM pooled every run of every task, so a task with more runs weighed more: two
    entries with the same scores on each task but 10 and 2 runs swapped got IQMs of 0.89 and 0.11, intervals apart,
    while their means of task means and profiles were equal. A task's runs now weigh 1/T together (rliable's runs x
    tasks matrix when every task has as many runs: the same figures as scipy's trim_mean there)."""
    from scipy import stats as sps

    from evaluation.stats import suites

    t1, t2 = (lambda k: np.linspace(0.85, 0.95, k)), (lambda k: np.linspace(0.05, 0.15, k))
    ragged = suites.aggregate_interval([[t1(10), t2(2)], [t1(2), t2(10)]], "iqm", n_resamples=500, rng=0)
    assert ragged.estimate == pytest.approx([0.5111, 0.4889], abs=1e-4)
    assert ragged.low[0] < ragged.high[1] and ragged.low[1] < ragged.high[0]  # the intervals overlap
    rng = np.random.default_rng(3)
    for k, tasks in ((6, 2), (5, 3), (7, 4)):
        entry = [rng.uniform(0, 1, k) for _ in range(tasks)]
        equal = suites.aggregate_interval([entry], "iqm", n_resamples=10).estimate[0]
        assert equal == pytest.approx(sps.trim_mean(np.concatenate(entry), 0.25), abs=1e-12)


def test_rounding_twins_count_once_in_the_state_of_the_art():
    """Found by a property hunt: two recipe entries of the same seeds whose scores differ only by rounding (``c / n``
    against ``c * (1 / n)``) are one entry on the board (ranked "=1", P(A>B) = 1/2) but counted twice in m; prediction
    entries whose per-example losses differ by rounding likewise. The state of the art counts them once, as it
    counts exact copies, under the board's one tie rule (``_resample.tie_block_starts``)."""
    from evaluation.report import EntryRuns, ReportSettings, build_report

    counts = np.array([7101, 7189, 7143, 7220, 7065, 7170, 7122, 7154, 7098, 7201], dtype=np.float64)
    n = 9000.0
    one, other = counts / n, counts * (1.0 / n)
    assert not np.array_equal(one, other) and np.allclose(one, other, rtol=1e-15, atol=0)
    rest = EntryRuns(3, "rest", "t", "recipe", 10, np.arange(10), one - 0.004)
    twins = [
        EntryRuns(1, "a", "t", "recipe", 10, np.arange(10), one),
        EntryRuns(2, "b", "t", "recipe", 10, np.arange(10), other),
    ]
    report_settings = ReportSettings(n_resamples=200, k_runs=10)
    both = build_report(twins + [rest], report_settings)["sections"][0]["sota"]
    alone = build_report(twins[:1] + [rest], report_settings)["sections"][0]["sota"]
    assert (both["m"], both["duplicates"]) == (2, 1)
    # the same law; the leader shown may be either twin (equal under the rule), so its raw mean may differ by 1 ulp
    assert (both["estimate"], both["bound"]) == pytest.approx((alone["estimate"], alone["bound"]), rel=1e-12, abs=0)

    rng = np.random.default_rng(3)
    loss = rng.gamma(2.0, 0.5, size=(1, 400))
    ulp = np.nextafter(loss, np.inf)  # one ulp apart in every example
    third = rng.gamma(2.0, 0.5, size=(1, 400))
    entries = [
        EntryRuns(i, f"p{i}", "t", "predictions", 1, np.arange(1), np.array([o.mean()]), outcomes=o)
        for i, o in ((1, loss), (2, ulp), (3, third))
    ]
    lower = ReportSettings(n_resamples=200, higher_is_better=False)
    sota = build_report(entries, lower)["sections"][0]["sota"]
    copy = EntryRuns(2, "p2", "t", "predictions", 1, np.arange(1), np.array([loss.mean()]), outcomes=loss.copy())
    exact = build_report([entries[0], copy, entries[2]], lower)["sections"][0]["sota"]
    assert (sota["m"], sota["duplicates"]) == (exact["m"], exact["duplicates"]) == (2, 1)


def test_the_state_of_the_art_counts_twins_by_pairs_so_an_entry_added_never_lowers_m():
    """Found by a property hunt: A's runs lie 1.6e-12 (relative) above B's, beyond the tie rule, so the board calls A
    significantly better (P(A>B) = 1); a C between them, within the rule of each, chained the section's scores
    into one tie block and made A, B and C one entry: m fell from 2 to 1 as C was added. Twins are entries whose
    runs tie pairwise, as the board's pairs tie them: C is B's twin (or A's), never A and B each other's."""
    k, x = 12, 0.7 + np.arange(12) * 1e-3
    gap = 0.8e-12 * 0.7
    entries = [
        EntryRuns(i, name, "t", "recipe", k, np.arange(k), x + step * gap)
        for i, (name, step) in enumerate((("A", 2), ("B", 0), ("C", 1)), 1)
    ]
    report_settings = ReportSettings(n_resamples=200, k_runs=k)
    two = build_report(entries[:2], report_settings)["sections"][0]
    three = build_report(entries, report_settings)["sections"][0]
    pair = next(p for p in three["comparisons"] if {p["a"], p["b"]} == {1, 2})
    assert (pair["p"], pair["verdict"], pair["better"]) == (1.0, "a_better", 1)
    assert (two["sota"]["m"], two["sota"]["duplicates"]) == (2, 0)
    assert (three["sota"]["m"], three["sota"]["duplicates"]) == (2, 1)
