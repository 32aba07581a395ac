"""Coverage of every interval the board shows, on simulated data whose truth is known.

Run:  .venv/bin/python benchmarks/bench_coverage.py [--reps R] [--quick] [--seed S] [--ranks-only] [--rank-ks 12,15]
      [--prediction-ranks-only] [--files-ks 1,16] [--rank-examples 500]

``--ranks-only`` prints the rank rows alone (about 15 s at R = 1000), with the same figures as a full run but the
Boo_5 board of 5 entries at k = 5, 10, 30 (drawn from the main stream); ``--rank-ks`` the k a mean board is measured
at besides 5, 6, 10 and 30, each from a stream of its own (default 12, 15, 16, 20).

First, for every interval the board shows (the mean and Boo_5 of recipe runs, P(A>B),
a prediction entry's accuracy) at k = 5, 10 and 30: coverage and median width beside the
best-known interval for that statistic on the same data (Student t for the mean, BCa for
Boo_n on its own resamples, Wilson for P(A>B) and one file, Welch t with the examples'
and files' variance for k files), the targets (coverage 93-97 %, width <= 1.5x the
reference's) and a verdict per cell: inside, outside (``settings.coverage`` flags it), or
not shown on the board (the reason). Then the other intervals, before/now. With R
repetitions a coverage has a standard error of about sqrt(0.95 · 0.05 / R) (0.7 points at
R = 1000). The figures feed ``evaluation/report/coverage.py``, which the pages quote.

Data (every random draw seeded):

* runs: scores ``N(0.8, 0.02²)``, or skewed (Gamma(3) shifted, the same sd), with a
  validation score correlated ρ = 0.8 with the test score; Boo_5's truth is
  ``μ + ρ σ E[max of 5 N(0,1)]`` (exact for the bivariate normal; for the skewed runs a
  simulation of 2·10⁶ draws);
* P(A>B): seed-paired runs with a shared seed effect, P(A>B) = 0.75 exactly; and with the truth
  drawn uniformly in [0.55, 0.95] for each repetition (coverage averaged over P, as Brown, Cai &
  DasGupta 2001 judge binomial intervals: at one P a discrete interval's coverage oscillates);
* ranks: three board shapes, 5 entries whose Boo_5 and mean orders differ, a ladder of 10 alike
  entries and 30 close entries (0.001 apart), each ranked by Boo_5 (truth: the ranks of the true
  Boo_5) and by the mean (truth: the ranks of the true means);
* prediction entries: 500 test examples of varying difficulty, one file or k files each
  with its own seed effect (sd 0.02 in accuracy: Bernoulli outcomes clustered by file and
  by example); truth: that one model's accuracy on the population for one file, the
  expected accuracy over seeds for k files;
* the adjusted state of the art: 30 entries (a leader 0.02 ahead, or all alike) on 1,500
  examples; the bound is one-sided, nominal 97.5 %;
* a variance study's source: k normal runs, the chi-square interval of its sd;
* a suite of 3 tasks with k runs each: the IQM's and the probability of improvement's
  stratified-bootstrap intervals (truth: the population IQM; P = 0.75 on every task); the IQM's
  before: rliable's percentile interval, now: the expanded percentile interval.

Then, from a stream of their own, the intervals at the first k the board shows them (the mean at 6 runs;
Boo_n for n = 2, 3, 5 at Bajgar et al.'s 3n, the rule until 2026-12-01, and at 10n, the rule now).

Verdicts: a cell the board shows no interval for says why (Boo_n below 10n runs; the mean below 6
runs, where an interval inside the runs' range covers at most 1 - 2/2^k; the rank cells marked *
likewise: a Boo_n board below 10n, a mean board below 16 paired runs, the fewest at which its rank
interval covers 93 % on all three shapes: 93.0 % on 30 close entries at 16, 90.5 % at 10, Boo_n's 10n for
n = 1); P(A>B) at a fixed P = 0.75 is a reference row (the board quotes the row with P drawn). Rank
intervals over-cover on few distinct entries (97.6-99.1 % from k = 16: as runs accumulate, the ranks of
entries that differ become certain); ``settings.coverage`` flags the rank note with both ends
(``evaluation.report.coverage.RANK_RANGE``).

Then a prediction board's rank interval (``--prediction-ranks-only``, about 50 s at R = 1000 on an idle machine; ``--files-ks`` the
files per entry, default 1, 2, 5, 6, 10, 16, 30, each from a stream of its own): the three board shapes, each entry's files
of 0/1 outcomes on 500 shared examples with a seed effect per file of the shape's sd, ranked as the board ranks them.
Withheld (:func:`evaluation.report.sections.files_rank_withheld`, starred): one file on fewer than 500 examples, 2 to
15 files; on 30 close entries one file covers 87.6 / 90.3 / 91.6 / 92.6 / 93.4 % on 100 / 200 / 300 / 400 / 500
examples (``--files-ks 1 --rank-examples N``), and on 2000 examples 6 / 8 / 10 / 12 / 16 files 91.9 / 93.8 / 94.0 /
95.1 / 96.3 %, on 10000 8 / 16 files 90.1 / 94.2 % (the files' spread dominating, k files tend to a mean board's k
runs: 90.5 % at 10, 93.0 % at 16). Where shown every cell covers at least 93 % on the three shapes (R = 1000, seed
2026): one file on 500-2000 examples 93.4-99.4 %, 16 files on 100-10000 examples 94.2-99.5 %, 30 files on 500
98.5-99.8 %.

Needs only numpy and scipy; about 90 s on two cores at the default R = 1000 (plus the prediction rank rows).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation import stats as es  # noqa: E402
from evaluation.report.coverage import COVERAGE_TARGET, WIDTH_TARGET  # noqa: E402  (the targets the pages flag by)
from evaluation.report.sections import (  # noqa: E402  (rank rules)
    MIN_EXAMPLES_RANK_INTERVAL,
    files_rank_withheld,
    runs_for_rank_interval,
)
from evaluation.stats.boon import min_runs_for_interval  # noqa: E402
from evaluation.stats.bootstrap import MIN_RUNS_MEAN_INTERVAL, mean_interval_shown  # noqa: E402

KS = (5, 10, 30)
B = 1000
MU, SD, RHO, N = 0.8, 0.02, 0.8, 5
E_MAX = es.expected_max_normal(N)


def draw_runs(rng, reps, k, skewed=False, n=N):
    """(test, valid) tables of shape (reps, k) and Boo_n's truth (n = N, 5, unless said)."""
    z1, z2 = rng.standard_normal((2, reps, k))
    if skewed:
        g = (rng.gamma(3.0, size=(reps, k)) - 3.0) / np.sqrt(3.0)
        test = MU + SD * g
        valid = MU + SD * (RHO * g + np.sqrt(1 - RHO**2) * z2)
        return test, valid, SKEWED_TRUTH if n == N else SKEWED_TRUTHS[n]
    test = MU + SD * z1
    valid = MU + SD * (RHO * z1 + np.sqrt(1 - RHO**2) * z2)
    return test, valid, MU + RHO * SD * es.expected_max_normal(n)


def skewed_truth(rng, n=N) -> float:
    g = (rng.gamma(3.0, size=(400_000, n)) - 3.0) / np.sqrt(3.0)
    v = RHO * g + np.sqrt(1 - RHO**2) * rng.standard_normal(g.shape)
    return float(MU + SD * g[np.arange(g.shape[0]), v.argmax(axis=1)].mean())


def covers(low, high, truth):
    return float(np.mean((np.asarray(low) <= truth) & (truth <= np.asarray(high))))


# --------------------------------------------------------------------------- the board's intervals


def _cell(name, k, low, high, truth, ref_name, ref_low, ref_high, shown=None):
    """One line of the board table: coverage and median width of the board's interval and the reference's."""
    width, ref_width = float(np.median(np.asarray(high) - low)), float(np.median(np.asarray(ref_high) - ref_low))
    return {
        "interval": name,
        "k": k,
        "coverage": covers(low, high, truth),
        "width": width,
        "reference": ref_name,
        "ref_coverage": covers(ref_low, ref_high, truth),
        "ref_width": ref_width,
        "ratio": width / ref_width if ref_width > 0 else float("inf"),
        "shown": shown,
    }


def student_t(test):
    """Student's t interval of the mean of each row (the reference for the mean)."""
    k = test.shape[1]
    half = stats.t.ppf(0.975, k - 1) * test.std(axis=1, ddof=1) / np.sqrt(k)
    return test.mean(axis=1) - half, test.mean(axis=1) + half


def board_runs(rng, reps):
    """Mean (bootstrap-t; reference Student t) and Boo_5 (BCa, the board's, from 10n runs) of recipe entries."""
    cells = []
    for skewed in (False, True):
        tag = "skewed" if skewed else "normal"
        for k in KS:
            test, valid, truth = draw_runs(rng, reps, k, skewed)
            mean = es.bootstrap_interval(test, "mean", n_resamples=B, rng=1)
            shown = None if mean_interval_shown(k) else f"k < {MIN_RUNS_MEAN_INTERVAL}: at most 1 - 2/2^k"
            cells.append(_cell(f"mean ({tag} runs)", k, mean.low, mean.high, MU, "Student t", *student_t(test), shown))
            need = min_runs_for_interval(N)
            for estimator in ("paper", "unbiased"):
                if estimator == "unbiased" and k < N:
                    continue
                boo = es.bootstrap_interval(test, "boo_n", n=N, valid=valid, n_resamples=B, rng=1, estimator=estimator)
                ref = es.bootstrap_interval(
                    test, "boo_n", n=N, valid=valid, n_resamples=B, rng=2, estimator=estimator, method="bca"
                )  # its own resamples
                name = f"Boo_5{' unbiased' if estimator == 'unbiased' else ''} ({tag} runs)"
                shown = None if k >= need else f"k < 10n = {need}"
                cells.append(_cell(name, k, boo.low, boo.high, truth, "BCa", ref.low, ref.high, shown))
    return cells


#: Boo_n's interval at the runs where the board would first show it by Bajgar et al.'s 3n (the rule until
#: 2026-12-01) and where it shows it now (10n, :func:`evaluation.stats.boon.min_runs_for_interval`), and at 30 for
#: n = 3 (the default n): n -> the k measured.
BOO_N_KS = {2: (6, 16, 20), 3: (9, 24, 30), 5: (15, 40, 50)}


def board_first_shown(rng, reps):
    """The intervals at the first k the board shows them: the mean at 6 runs (against Student t), and Boo_n
    (against BCa on its own resamples) at ``BOO_N_KS``: n = 2, 3 (the default) and 5, normal and skewed runs, both
    estimators. Drawn from a stream of its own (``rng`` left as it was, so the other cells keep their draws)."""
    own = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])
    cells = []
    for skewed in (False, True):
        test, _, _ = draw_runs(own, reps, MIN_RUNS_MEAN_INTERVAL, skewed)
        mean = es.bootstrap_interval(test, "mean", n_resamples=B, rng=1)
        name = f"mean ({'skewed' if skewed else 'normal'} runs)"
        cells.append(_cell(name, MIN_RUNS_MEAN_INTERVAL, mean.low, mean.high, MU, "Student t", *student_t(test)))
    for n, ks in BOO_N_KS.items():
        need = min_runs_for_interval(n)
        for skewed in (False, True):
            tag = "skewed" if skewed else "normal"
            for k in ks:
                test, valid, truth = draw_runs(own, reps, k, skewed, n=n)
                for estimator in ("paper", "unbiased"):
                    kw = dict(n=n, valid=valid, n_resamples=B, estimator=estimator)
                    boo = es.bootstrap_interval(test, "boo_n", rng=1, **kw)
                    ref = es.bootstrap_interval(test, "boo_n", rng=2, method="bca", **kw)
                    name = f"Boo_{n}{' unbiased' if estimator == 'unbiased' else ''} ({tag} runs)"
                    shown = None if k >= need else f"k < 10n = {need}"
                    cells.append(_cell(name, k, boo.low, boo.high, truth, "BCa", ref.low, ref.high, shown))
    return cells


def _pab_cell(rng, reps, k, name, draw_truth):
    """One P(A>B) cell: ``reps`` seed-paired pairs of k runs whose P(A>B) is ``draw_truth(rng)``."""
    low, high, rlow, rhigh, truth = (np.empty(reps) for _ in range(5))
    for r in range(reps):
        truth[r] = draw_truth(rng)
        shift = stats.norm.ppf(truth[r]) * np.sqrt(2) * SD
        seed = rng.standard_normal(k)
        a = MU + shift + seed + SD * rng.standard_normal(k)
        b = MU + seed + SD * rng.standard_normal(k)
        c = es.compare(a, b, paired=True, n_resamples=200, rng=r)
        low[r], high[r] = c.low, c.high
        w = es.proportion_interval(float(np.sum(a > b)), k)
        rlow[r], rhigh[r] = w.low, w.high
    return _cell(name, k, low, high, truth, "Wilson", rlow, rhigh)


def board_pab(rng, reps):
    """Seed-paired P(A>B): the board's interval against Wilson's on the k paired outcomes, at P = 0.75, and
    with P drawn in [0.55, 0.95] for each repetition (coverage averaged over P, Brown, Cai & DasGupta 2001)."""
    cells = [_pab_cell(rng, reps, k, "P(A>B), seed-paired", lambda _: 0.75) for k in KS]
    for c in cells:  # at one P a discrete interval's coverage oscillates: the board quotes the averaged row
        c["info"] = "reference only (P fixed at 0.75: the board quotes the row with P drawn)"
    own = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])  # leaves `rng`'s stream as it was
    cells += [_pab_cell(own, reps, k, "P(A>B), truth in [.55, .95]", lambda g: g.uniform(0.55, 0.95)) for k in KS]
    return cells


def board_predictions(rng, reps, n_examples=500):
    """Accuracy of a prediction entry: one file (Wilson) and k files with a seed effect (Wilson at the
    design-effect n; reference: Welch t with the examples' and files' variance components)."""
    theta, tau = 0.8, 0.02
    cells = []
    for k in KS:
        one, files_ci, ref = (np.empty((reps, 2)) for _ in range(3))
        model = np.empty(reps)
        for r in range(reps):
            p = rng.beta(8, 2, n_examples)  # difficulty of each example, mean 0.8
            shift = tau * rng.standard_normal((k, 1))
            files = (rng.random((k, n_examples)) < np.clip(p + shift, 0, 1)).astype(float)
            model[r] = float(np.mean(np.clip(p + shift[0], 0, 1)))  # one file is one model: its own accuracy
            res = es.paired_test_bootstrap(files=[files[:1], files], n_resamples=2, rng=r)
            one[r], files_ci[r] = (res.low[0], res.high[0]), (res.low[1], res.high[1])
            var = files.mean(axis=0).var(ddof=1) / n_examples + files.mean(axis=1).var(ddof=1) / k
            df = var**2 / (
                (files.mean(axis=0).var(ddof=1) / n_examples) ** 2 / (n_examples - 1)
                + (files.mean(axis=1).var(ddof=1) / k) ** 2 / (k - 1)
            )
            half = stats.t.ppf(0.975, df) * np.sqrt(var)
            ref[r] = files.mean() - half, files.mean() + half
        cells.append(_cell("accuracy, 1 file", k, one[:, 0], one[:, 1], model, "Wilson", one[:, 0], one[:, 1]))
        cells.append(
            _cell(
                "accuracy, k files (clustered)",
                k,
                files_ci[:, 0],
                files_ci[:, 1],
                theta,
                "Welch t",
                ref[:, 0],
                ref[:, 1],
            )
        )
    return cells


def print_board(cells: list[dict]) -> None:
    lo, hi = COVERAGE_TARGET
    print(
        f"The board's intervals (nominal 95 %); targets: coverage {100 * lo:.0f}-{100 * hi:.0f} % and median "
        f"width <= {WIDTH_TARGET}x the reference's"
    )
    print(
        f"{'interval':<34} {'k':>3} {'cover':>6} {'width':>9} {'reference':>10} {'cover':>6} {'width':>9} "
        f"{'ratio':>6}  verdict"
    )
    for c in cells:
        ok = lo <= c["coverage"] <= hi and c["ratio"] <= WIDTH_TARGET
        verdict = (
            f"not shown on the board ({c['shown']})"
            if c["shown"]
            else "inside the targets"
            if ok
            else c["info"]
            if c.get("info")
            else "OUTSIDE the targets (flagged by settings.coverage)"
        )
        print(
            f"{c['interval']:<34} {c['k']:>3} {100 * c['coverage']:5.1f}% {c['width']:9.5f} {c['reference']:>10} "
            f"{100 * c['ref_coverage']:5.1f}% {c['ref_width']:9.5f} {c['ratio']:6.2f}  {verdict}"
        )
    print()


#: Marks a rank cell the board does not show (``evaluation.report.sections.ranks_withheld``): below 10n runs
#: on a Boo_n board, below 6 on a mean board. Measured all the same.
RANK_MARK = "*"
#: The rank cells the board does not show, by row name: filled by :func:`rank_rows`.
WITHHELD: dict[str, set[int]] = {}

#: Three board shapes: 5 entries whose Boo_5 and mean orders differ, a ladder of 10 alike entries, and 30 close
#: entries (0.001 apart, sd 0.02), where the rank intervals cover less than their level.
BOARDS = {
    "5 entries": (np.array([0.80, 0.795, 0.79, 0.785, 0.78]), np.array([0.005, 0.015, 0.025, 0.035, 0.045])),
    "ladder of 10": (np.linspace(0.80, 0.77, 10), np.full(10, 0.02)),
    "30 close entries": (np.linspace(0.80, 0.77, 30), np.full(30, 0.02)),
}


#: The k a mean board's rank interval is measured at besides ``KS`` and 6, to place its first k shown
#: (:func:`evaluation.report.sections.runs_for_rank_interval`); drawn from a stream of their own (``--rank-ks``).
MEAN_RANK_KS = (12, 15, 16, 20)


def rank_rows(rng, reps, extra_ks=MEAN_RANK_KS):
    """Rank intervals (the percentile interval of the resampled ranks, widened to whole ranks) on a board ranked
    by Boo_5 (truth: the ranks of the true Boo_5) and on one ranked by the mean (truth: the ranks of the true
    means), on three board shapes; the mean board also at ``extra_ks``, each from a stream of its own, so that
    adding one leaves every other cell's draws as they were."""
    out = {}
    own = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])  # the added boards leave `rng` as it was
    extra = rng.bit_generator.seed_seq.spawn(1)[0]  # the mean board's added k: one stream per (shape, k)
    for shape, (means, sds) in BOARDS.items():
        for statistic in ("boo_n", "mean"):
            draw = rng if (shape, statistic) == ("5 entries", "boo_n") else own
            truth = means + sds * E_MAX if statistic == "boo_n" else means  # Boo_5 without validation: E[max of 5]
            true_rank = stats.rankdata(-truth, method="min")
            name = f"recipe rank interval ({'Boo_5' if statistic == 'boo_n' else 'mean'} board, {shape})"
            n_rep = reps // 2 if shape == "5 entries" else reps // 4
            by_k = {}
            first = min_runs_for_interval(N) if statistic == "boo_n" else MIN_RUNS_MEAN_INTERVAL
            for k in sorted({*KS, first}):  # and the first k the board showed it at (a Boo_5 board: 10n = 50)
                stream = draw if k in KS else own  # the added k leaves `rng` as it was
                by_k[k] = (None, _rank_coverage(stream, means, sds, true_rank, k, n_rep, statistic))
            for k in () if statistic == "boo_n" else sorted(set(extra_ks) - set(by_k)):
                stream = np.random.default_rng([*extra.generate_state(2), list(BOARDS).index(shape), k])
                by_k[k] = (None, _rank_coverage(stream, means, sds, true_rank, k, n_rep, statistic))
            out[name] = dict(sorted(by_k.items()))
            WITHHELD[name] = {k for k in by_k if k < runs_for_rank_interval(statistic, N)}
    return out


def _rank_coverage(stream, means, sds, true_rank, k, n_rep, statistic):
    """The share of entries whose true rank the board's rank interval covers, over ``n_rep`` boards of k runs."""
    hit = 0.0
    for r in range(n_rep):
        table = means[:, None] + sds[:, None] * stream.standard_normal((means.size, k))
        ri = es.rank_intervals(table, n_resamples=400, rng=r, statistic=statistic, n=N)
        hit += np.mean((ri.low <= true_rank) & (true_rank <= ri.high))
    return hit / n_rep


#: The files per entry a prediction board's rank interval is measured at (``--files-ks``): one file (resampled over
#: the examples alone), 2 and 5 (withheld: :func:`evaluation.report.sections.files_rank_withheld`, 2-15 files), 6 (the
#: first count of several files shown until predrule23), 10, 16 (the first shown now), 30. Each (shape, files) from a
#: stream of its own.
FILES_KS = (1, 2, 5, 6, 10, 16, 30)
#: The examples a simulated prediction entry is scored on, and the beta law of their difficulty (mean 0.8), as in
#: :func:`board_predictions`.
RANK_EXAMPLES, DIFFICULTY = 500, (8, 2)


def prediction_rank_rows(rng, reps, files_ks=FILES_KS, n_examples=RANK_EXAMPLES):
    """Rank intervals of a prediction board (issue 23): the three board shapes of :data:`BOARDS`, each entry's files of
    0/1 outcomes on ``n_examples`` shared examples of beta difficulty shifted to the entry's accuracy, each
    file with a seed effect of the shape's sd (the file-to-file variation the board resamples), ranked as
    :func:`evaluation.report.sections._prediction_ranks` ranks them: ``paired_test_bootstrap``'s joint resamples
    (examples shared, files within each entry), the percentile interval of the resampled ranks. Truth: for one
    file, the ranks of the models' own accuracies; for several, of the expected accuracies over seeds
    (:func:`_true_accuracy`). From streams of their own: every other cell keeps its draws."""
    out = {}
    base = rng.bit_generator.seed_seq.spawn(1)[0].generate_state(2)
    for index, (shape, (means, sds)) in enumerate(BOARDS.items()):
        n_rep = reps // 2 if shape == "5 entries" else reps // 4
        by_files = {}
        for files in files_ks:
            stream = np.random.default_rng([*base, index, files])
            by_files[files] = (None, _files_rank_coverage(stream, means, sds, files, n_rep, n_examples))
        name = f"prediction rank interval (k = files, {shape}{'' if n_examples == RANK_EXAMPLES else f', n = {n_examples}'})"
        out[name] = by_files
        WITHHELD[name] = {f for f in by_files if files_rank_withheld(f, n_examples)}
    return out


def _true_accuracy(means, sds) -> np.ndarray:
    """Each entry's accuracy expected over examples and seeds: E clip(p + (mean - 0.8) + sd Z, 0, 1), p of beta
    difficulty (quantile grid of 4,000 points), Z normal (Gauss-Hermite, 60 nodes)."""
    p = stats.beta.ppf((np.arange(4000) + 0.5) / 4000, *DIFFICULTY)
    z, w = np.polynomial.hermite_e.hermegauss(60)
    x = np.clip(p[None, :, None] + (means - 0.8)[:, None, None] + sds[:, None, None] * z, 0, 1)
    return (x.mean(axis=1) * (w / w.sum())).sum(axis=1)


def _files_rank_coverage(stream, means, sds, files, n_rep, n_examples=RANK_EXAMPLES):
    """The share of entries whose true rank the prediction board's rank interval covers, over ``n_rep`` boards."""
    hit, expected = 0.0, _true_accuracy(means, sds)
    for r in range(n_rep):
        p = stream.beta(*DIFFICULTY, n_examples)
        shift = sds[:, None] * stream.standard_normal((means.size, files))
        prob = np.clip(p + (means - 0.8)[:, None, None] + shift[:, :, None], 0, 1)
        outcomes = (stream.random(prob.shape) < prob).astype(float)
        truth = means + shift[:, 0] if files == 1 else expected  # one file: that model's accuracy (monotone in it)
        true_rank = stats.rankdata(-truth, method="min")
        res = es.paired_test_bootstrap(files=list(outcomes), n_resamples=400, rng=r)
        ri = es.rank_intervals_from_distribution(res.estimate, res.bootstrap_distribution, 0.95)
        hit += np.mean((ri.low <= true_rank) & (true_rank <= ri.high))
    return hit / n_rep


def sota_rows(rng, reps, n_examples=1500):
    """The adjusted state of the art's lower bound (one-sided, nominal 97.5 %)."""
    out = {}
    for name, thetas in (("leader ahead", np.r_[0.86, np.linspace(0.80, 0.84, 29)]), ("all alike", np.full(30, 0.84))):
        hit_old = hit_new = 0
        n_rep = max(20, reps // 4)
        for _ in range(n_rep):
            scores = rng.binomial(n_examples, thetas) / n_examples
            best = scores.max()
            hit_old += es.adjusted_sota(best, thetas.size, n=n_examples).lower <= thetas.max()
            hit_new += es.adjusted_sota(best, thetas.size, n=n_examples, estimates=scores).lower <= thetas.max()
        out[f"state of the art bound ({name})"] = {k: (hit_old / n_rep, hit_new / n_rep) for k in (KS[0],)}
    return out


def study_rows(rng, reps):
    """A variance study's standard deviation of one source (chi-square interval)."""
    out = {}
    for k in KS:
        hits = [_study_hit(rng, k) for _ in range(reps)]
        out[k] = (None, float(np.mean(hits)))
    return {"variance study: sd of a source": out}


def _study_hit(rng, k) -> bool:
    from evaluation.stats.variance_study import variance_study

    r = variance_study({"init": MU + SD * rng.standard_normal(k), "all": MU + 2 * SD * rng.standard_normal(k)})
    return bool(r.sd_low[0] <= SD <= r.sd_high[0])


def suite_rows(rng, reps, tasks=3):
    """A suite of 3 tasks: the IQM (before: rliable's percentile interval; now: the expanded percentile
    interval) and the probability of improvement (stratified bootstrap)."""
    from evaluation.stats import suites

    centres = np.array([0.0, 0.5, 1.0])
    pooled = (centres[None, :] + rng.standard_normal((200_000, tasks))).ravel()
    truth_iqm = float(stats.trim_mean(pooled, 0.25))
    shift = stats.norm.ppf(0.75) * np.sqrt(2)  # P(X_t > Y_t) = 0.75 on every task
    iqm, poi = {}, {}
    for k in KS:
        hit_old = hit_iqm = hit_poi = 0
        n_rep = max(20, reps // 4)
        for r in range(n_rep):
            x = centres[None, :] + shift + rng.standard_normal((k, tasks))
            y = centres[None, :] + rng.standard_normal((k, tasks))
            ci = suites.aggregate_interval(np.stack([y]), "iqm", n_resamples=500, rng=r)  # expanded percentile
            hit_iqm += ci.low[0] <= truth_iqm <= ci.high[0]
            old = suites.aggregate_interval(np.stack([y]), "iqm", n_resamples=500, rng=r, method="percentile")
            hit_old += old.low[0] <= truth_iqm <= old.high[0]
            p = suites.probability_of_improvement(np.stack([x, y]), n_resamples=500, rng=r)
            hit_poi += p.low[0, 1] <= 0.75 <= p.high[0, 1]
        iqm[k], poi[k] = (hit_old / n_rep, hit_iqm / n_rep), (None, hit_poi / n_rep)
    return {"suite IQM (3 tasks, k runs each)": iqm, "suite probability of improvement": poi}


def print_table(rows: dict, nominal: dict, elapsed: float) -> None:
    ks = sorted({k for by_k in rows.values() for k in by_k})
    print(f"{'interval':<52} {'nominal':>7} " + " ".join(f"{'k=' + str(k) + ' before/now':>18}" for k in ks))
    for name, by_k in rows.items():
        cells = []
        for k in ks:
            if k not in by_k:
                cells.append(f"{'':>18}")
                continue
            old, new = by_k[k]
            mark = RANK_MARK if k in WITHHELD.get(name, ()) else " "
            cells.append(f"{'—' if old is None else f'{100 * old:5.1f}'} / {100 * new:5.1f}{mark}".rjust(18))
        print(f"{name:<52} {100 * nominal.get(name, 0.95):6.1f}% " + " ".join(cells))
    print(f"\n(percent; 'before' = the method the board used until now; {elapsed:.0f} s)")
    print(
        f"{RANK_MARK} not shown on the board: a Boo_5 board below k = 10n = {min_runs_for_interval(N)}, a mean board "
        f"below k = {runs_for_rank_interval('mean', N)} (the reason is on the board: "
        f"evaluation.report.coverage.rank_withheld_reason), a prediction entry of 2 to 15 files, or of one file on "
        f"fewer than {MIN_EXAMPLES_RANK_INTERVAL} examples (evaluation.report.coverage.files_rank_withheld_reason); "
        "measured all the same."
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="repetitions per cell (1000)")
    parser.add_argument("--quick", action="store_true", help="60 repetitions: a smoke run")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--ranks-only", action="store_true", help="only the rank rows (their figures as in a full run)")
    parser.add_argument(
        "--rank-ks", default=",".join(map(str, MEAN_RANK_KS)), help="a mean board's added k (12,15,16,20)"
    )
    parser.add_argument("--files-ks", default=",".join(map(str, FILES_KS)), help="a prediction board's files")
    parser.add_argument("--prediction-ranks-only", action="store_true", help="only the prediction boards' rank rows")
    parser.add_argument("--rank-examples", type=int, default=RANK_EXAMPLES, help="their examples (500)")
    args = parser.parse_args(argv)
    reps = 60 if args.quick else args.reps
    rng = np.random.default_rng(args.seed)
    rank_ks = tuple(int(k) for k in args.rank_ks.split(",") if k)
    files_ks = tuple(int(k) for k in args.files_ks.split(",") if k)
    if args.ranks_only or args.prediction_ranks_only:  # the streams spawned before rank_rows (P(A>B)'s, the first
        rng.bit_generator.seed_seq.spawn(2)  # k shown's), then the rank rows, then the prediction boards'
        started = time.perf_counter()
        rows = rank_rows(rng, reps, rank_ks) if args.ranks_only else {}
        rng.bit_generator.seed_seq.spawn(0 if args.ranks_only else 2)  # rank_rows' two streams, where it did not run
        rows.update(prediction_rank_rows(rng, reps, files_ks, args.rank_examples) if args.prediction_ranks_only else {})
        print_table(rows, {}, time.perf_counter() - started)
        return
    global SKEWED_TRUTH
    SKEWED_TRUTH = skewed_truth(np.random.default_rng(args.seed + 1))
    SKEWED_TRUTHS.update({n: skewed_truth(np.random.default_rng(args.seed + 1), n) for n in BOO_N_KS})
    started = time.perf_counter()
    cells = [c for part in (board_runs, board_pab, board_predictions, board_first_shown) for c in part(rng, reps)]
    print_board(cells)
    rows = {}
    rows.update(rank_rows(rng, reps, rank_ks))
    rows.update(prediction_rank_rows(rng, reps, files_ks))
    for part in (sota_rows, study_rows, suite_rows):
        rows.update(part(rng, reps))
    nominal = {name: 0.975 for name in rows if name.startswith("state of the art")}
    print_table(rows, nominal, time.perf_counter() - started)


SKEWED_TRUTH = float("nan")
#: Boo_n's truth on skewed runs for the n of ``BOO_N_KS`` (a simulation, as ``SKEWED_TRUTH`` for n = 5).
SKEWED_TRUTHS: dict[int, float] = {}

if __name__ == "__main__":
    main()
