"""Prediction entries (and imported per-instance results): one test set, paired across entries.

A prediction entry's variation comes from the test sample and, when its team ran k seeds
and uploaded k files, from the seeds (docs/DESIGN.md §6). Every entry is scored on the
same examples, so comparisons are paired by example (Koehn 2004; Berg-Kirkpatrick et al.
2012); files of one entry are independent draws of its training randomness.

Entry intervals (``confidence_level``; 0/1 outcomes are correctness indicators unless ``proportions=False``, a
metric that is no proportion, whose outcomes take the t forms whatever their values):

* one file of 0/1 outcomes (accuracy): Wilson's score interval of the proportion;
* k > 1 files of 0/1 outcomes: Wilson's interval at Kish's effective sample size
  ``p̂(1-p̂) / (s²_examples / n + s²_files / k)`` (the design effect of examples and files,
  :func:`~evaluation.stats.proportions.kish_effective_n`), at most the k·n pooled outcomes,
  so never narrower than Wilson on them; all outcomes equal: n (every file counted once).
  A Welch t interval gave 5 files all correct the interval [1, 1];
* one file of other outcomes (a loss per example): Student's t interval of the mean;
* k > 1 files of other outcomes: the mean over files and examples, with the two variance components
  ``s²_examples / n + s²_files / k`` (the per-example outcomes averaged over files, and
  the k file means) and Welch–Satterthwaite's degrees of freedom. Averaging the files
  per example and bootstrapping examples alone (as before) leaves the seed variance
  out: 5 files covered 80 % at a nominal 95 %.

Pairs (one rule, :mod:`evaluation.stats.decisions`): the difference of means d, oriented
so that positive favours the row entry, is tested by

* the exact McNemar test (a binomial test on the discordant examples) when both
  entries are one file of 0/1 outcomes, its dual interval for d from the Clopper–Pearson
  interval of the discordant share;
* the paired t-test on the per-example differences when both are one file;
* Welch's t-test with both variance components otherwise;

each interval drawn at its pair's multiplicity-adjusted level. P(i>j), the analogue of
Bouthillier et al.'s P(A>B) when the test set varies, is the share of bootstrap resamples
(examples shared by all entries, files resampled within each entry) in which i's mean
beats j's, ties one half, symmetrised about the observed difference d so that no difference is ½:
``G(δ) = ½[P*(D* > d - δ) + P*(D* < d + δ)]`` over the B resamples and d itself, ``P(i>j) = G(d)``;
its interval maps the dual interval of d through G, which is monotone with ``G(0) = ½``: it
holds ½ exactly when the adjusted p-value is at least alpha (:func:`_probabilities`).
With only the test set varying, a significant difference has P(i>j) near 1, so γ rarely
binds.

References
----------
Koehn, P. (2004). Statistical significance tests for machine translation evaluation.
EMNLP. Berg-Kirkpatrick, T., Burkett, D. & Klein, D. (2012). An empirical investigation
of statistical significance in NLP. EMNLP. McNemar, Q. (1947). Psychometrika 12,
153–157. Welch, B. L. (1947). Biometrika 34, 28–35. Satterthwaite, F. E. (1946).
Biometrics Bull. 2, 110–114. Owen, A. B. (2007). The pigeonhole bootstrap. Ann. Appl.
Stat. 1, 386–411. Bouthillier, X. et al. (2021). MLSys.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import stats

from . import _resample as rs
from . import proportions as pr
from . import torch_backend as tb
from ._types import TestBootstrapResult
from ._validation import (
    as_generator,
    check_bool,
    check_choice,
    check_gamma,
    check_int,
    check_open_unit,
)
from .decisions import decide_pairs
from .multiplicity import METHODS
from .outperform import assemble_pairwise

__all__ = ["entry_mean_intervals", "paired_test_bootstrap"]

# Count-matrix elements per matrix product (resamples x examples): 160 resamples of
# 100,000 examples, a 64 MB float32 block allocated once; BLAS is more efficient
# with more rows.
_SUM_BATCH_ELEMENTS = 1 << 24


def _as_files(outcomes, files) -> list[np.ndarray]:
    """Each entry's outcomes as (files, examples) float64 arrays; the ValueError names the argument."""
    if (outcomes is None) == (files is None):
        raise ValueError("Give exactly one of `outcomes` (examples x entries) or `files` (one array per entry).")
    if files is not None:
        try:
            entries = [np.atleast_2d(np.asarray(e, dtype=np.float64)) for e in files]
        except (TypeError, ValueError):
            raise ValueError("`files` must hold arrays of real numbers.") from None
        if not entries:
            raise ValueError("`files` must not be empty.")
        for e, arr in enumerate(entries):
            if arr.ndim != 2 or arr.size == 0:
                raise ValueError(f"`files[{e}]` must be (files, examples) or (examples,) (got shape {arr.shape}).")
        if len({arr.shape[1] for arr in entries}) > 1:
            raise ValueError("`files` must give every entry the same number of test examples.")
        return entries
    try:
        x = np.asarray(outcomes).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError("`outcomes` must be an array of real numbers.") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"`outcomes` must be 2-D (examples x entries) (got shape {x.shape}).")
    if x.size == 0:
        raise ValueError("`outcomes` must not be empty.")
    return [x[:, e][None, :] for e in range(x.shape[1])]


def _paired_test_bootstrap_iv(
    outcomes, files, n_resamples, rng, confidence_level, gamma, alpha, correction, higher_is_better, priority
):
    entries = _as_files(outcomes, files)
    name = "outcomes" if files is None else "files"
    for e, arr in enumerate(entries):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            where = (
                f"example {bad[0][1]}, entry {e}"
                if arr.shape[0] == 1
                else f"entry {e}, file {bad[0][0]}, example {bad[0][1]}"
            )
            raise ValueError(f"`{name}` contains NaN or inf ({where}).")
    if entries[0].shape[1] < 2:
        raise ValueError(f"`{name}` needs at least 2 test examples (got {entries[0].shape[1]}).")
    if priority is not None:
        priority = np.asarray(priority)
        if sorted(priority.tolist()) != list(range(len(entries))):
            raise ValueError(f"`priority` must be a permutation of the {len(entries)} entries.")
    return (
        entries,
        check_int(n_resamples, "n_resamples", minimum=1),
        as_generator(rng),
        check_open_unit(confidence_level, "confidence_level"),
        check_gamma(gamma),
        check_open_unit(alpha, "alpha"),
        check_choice(correction, "correction", METHODS),
        check_bool(higher_is_better, "higher_is_better"),
        priority,
    )


def _resampled_sums(x: np.ndarray, integral: bool, n_resamples: int, rng) -> np.ndarray:
    """Sums of every column (a file) over B resamples of the examples, shape (B, columns).

    The count matrix of a batch of resamples (batch x examples) times the outcome
    matrix (examples x columns) gives all resampled sums at once; float32 when that
    is exact (small integer outcomes), float64 otherwise.
    """
    n_ex = x.shape[0]
    exact32 = integral and np.abs(x).max() * n_ex < 2**24
    dtype = np.float32 if exact32 else np.float64
    xw = x.astype(dtype)
    sums = np.empty((n_resamples, x.shape[1]))
    step = max(1, min(n_resamples, _SUM_BATCH_ELEMENTS // n_ex))
    counts = np.empty((step, n_ex), dtype=dtype)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        block = rs.fill_counts(rng, n_ex, counts[: stop - start])
        sums[start:stop] = block @ xw
    return sums


class _Design:
    """The entries' outcomes laid out for the bootstrap and the tests (oriented: higher better)."""

    def __init__(self, entries: list[np.ndarray], sign: float, proportions: bool = True):
        self.files = np.array([e.shape[0] for e in entries])
        self.n = entries[0].shape[1]
        self.columns = np.concatenate(entries, axis=0).T  # (examples, files of all entries)
        self.starts = np.concatenate([[0], np.cumsum(self.files)])
        # An example every file scored alike keeps that value (three copies of x average to x, not x ± 1 ulp:
        # a copy uploaded as three seeds was "significantly different" from x).
        self.per_example = np.stack(
            [np.where(e.min(axis=0) == e.max(axis=0), e[0], e.mean(axis=0)) for e in entries], axis=1
        )  # (examples, entries)
        self.file_means = [e.mean(axis=1) for e in entries]
        self.range = np.array([[e.min(), e.max()] for e in entries])  # a mean stays within its values
        # outcomes that all tie under the board's tie rule have no spread: their resampled means differ by rounding
        # only (100 losses of 0.3: a standard error of 2.5e-16, 0.25: exactly 0; the state of the art adjusted by it)
        self.constant = np.array([rs.all_tie(e) for e in entries])
        # the scale of the rounding in a mean is its outcomes' mean magnitude, not the mean's own: means that cancel
        # to 2e-17 and 0 differ by rounding (P(A>B) = 1/2 in [1/2, 1/2] had p = 0 against the mean's own scale), and
        # not the largest outcome's (one shared squared error of 1e12 made a difference of 0.05 at t = 100 a tie;
        # two reviewers' findings)
        self.magnitude = np.array([np.abs(e).mean() for e in entries])
        # ... also when rounded: 25 outcomes of 0.1 average to 0.10000000000000002
        self.estimate = np.clip(self.per_example.mean(axis=0), self.range[:, 0], self.range[:, 1])
        self.integral = all(np.all(e == np.round(e)) for e in entries)
        # 0/1 outcomes are correctness indicators (Wilson, McNemar) unless the metric is no proportion (a loss whose
        # errors happen to be 0 or 1 on this test set: in other units the same board took t intervals and tests)
        indicators = [proportions and bool(np.all((e == 0) | (e == 1))) for e in entries]
        self.binary = np.array([e.shape[0] == 1 and b for e, b in zip(entries, indicators)])
        self.binary_files = np.array([e.shape[0] > 1 and b for e, b in zip(entries, indicators)])
        self.sign = sign
        # variance components of each entry's mean: examples, and files (0 for one file)
        self.var_examples = self.per_example.var(axis=0, ddof=1) / self.n
        self.var_files = np.array([m.var(ddof=1) / m.size if m.size > 1 else 0.0 for m in self.file_means])
        self.file_keys = rs.file_stream_keys(entries, sign)

    def resampled_means(self, n_resamples: int, rng) -> np.ndarray:
        """Each entry's mean in B resamples (B, entries): examples shared, files per entry.

        An entry's files are resampled from a stream of its own, seeded by the draw and by its files' content: the
        ranks of its oriented outcomes, files in sorted order (the same for a board and its mirror of losses, and
        in every unit). Two entries of the same files get the same resamples (tied in every one: the same rank
        interval), and a newcomer moves no other entry's draws. Drawn side by side for all entries, copies of one
        entry got rank intervals [1, 5] and [1, 6], and an unrelated pair's P moved when an entry of five files
        arrived (a statistician's findings)."""
        sums = _resampled_sums(self.columns, self.integral, n_resamples, rng)
        if np.all(self.files == 1):
            return sums / self.n
        base = int(rng.integers(2**63))
        weights = np.ones((n_resamples, self.columns.shape[1]))
        for e, (key, order) in enumerate(self.file_keys):
            if order is not None:
                stream = np.random.default_rng([base, key])
                weights[:, self.starts[e] + order] = rs.draw_counts(stream, order.size, n_resamples, np.float64)
        totals = np.add.reduceat(sums * weights, self.starts[:-1], axis=1)
        return totals / (self.files * self.n)


def _satterthwaite(parts: list[np.ndarray], dfs: list[np.ndarray]) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom of a sum of variance components."""
    total = sum(parts)
    denominator = sum(np.where(df > 0, p * p / np.maximum(df, 1), 0.0) for p, df in zip(parts, dfs))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, total * total / denominator, np.inf)


def _effective_trials(d: _Design) -> np.ndarray:
    """Each entry's trials: Kish's effective sample size for several files of 0/1 outcomes, else its examples."""
    return np.where(
        d.binary_files, pr.kish_effective_n(d.estimate, d.var_examples + d.var_files, d.files * d.n, d.n), d.n
    )


def _entry_intervals(d: _Design, confidence_level: float):
    """Each entry's interval of its mean (oriented units are not used: original outcomes)."""
    level = 1.0 - confidence_level
    trials = _effective_trials(d)
    w_low, w_high = pr.wilson(d.estimate * trials, trials, level)
    df = _satterthwaite([d.var_examples, d.var_files], [np.full(d.files.size, d.n - 1), d.files - 1])
    half = stats.t.ppf(1 - level / 2, df) * np.sqrt(d.var_examples + d.var_files)
    score = d.binary | d.binary_files
    # an interval holds its estimate: a half-width of rounding noise (constant outcomes) cannot cross it
    low = np.minimum(np.where(score, w_low, np.maximum(d.estimate - half, d.range[:, 0])), d.estimate)
    high = np.maximum(np.where(score, w_high, np.minimum(d.estimate + half, d.range[:, 1])), d.estimate)
    method = np.where(
        d.binary, "wilson", np.where(d.binary_files, "wilson-deff", np.where(d.files > 1, "welch-t", "t"))
    )
    return low, high, method


def _pair_tests(d: _Design, iu: np.ndarray, ju: np.ndarray):
    """Per pair: oriented difference, raw p-value, the test's name, and its dual interval of d.

    McNemar's exact test where both entries are one file of 0/1 outcomes, else the
    paired t-test (both one file) or Welch's t-test with both variance components.
    """
    n, sign = d.n, d.sign
    diff = sign * (d.estimate[iu] - d.estimate[ju])
    both_binary = d.binary[iu] & d.binary[ju]
    single = (d.files[iu] == 1) & (d.files[ju] == 1)
    centred = d.per_example - d.estimate
    cross = centred.T @ centred / (n - 1)  # (entries, entries) covariance of per-example outcomes
    var_ex = np.maximum(cross[iu, iu] + cross[ju, ju] - 2 * cross[iu, ju], 0.0) / n
    var = var_ex + d.var_files[iu] + d.var_files[ju]
    df = np.where(
        single,
        n - 1,
        _satterthwaite(
            [var_ex, d.var_files[iu], d.var_files[ju]], [np.full(iu.size, n - 1), d.files[iu] - 1, d.files[ju] - 1]
        ),
    )
    scale = np.sqrt(var)
    degenerate = var <= 1e-14 * (d.var_examples[iu] + d.var_examples[ju] + 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(diff) / np.where(degenerate, 1.0, scale)
    # no spread at all: a difference of rounding noise is none (p = 1), any other is certain (p = 0)
    nil = np.abs(diff) <= rs.TIE_RELATIVE * np.maximum(d.magnitude[iu], d.magnitude[ju])
    diff = np.where(degenerate & nil, 0.0, diff)
    pvalue = np.where(degenerate, np.where(diff == 0, 1.0, 0.0), 2 * stats.t.sf(t, df))
    # examples both got right (0/1 outcomes): one product of the entries' outcomes, (entries, entries); the pairs'
    # products example by example took (examples, pairs) arrays: 12 GB at 100 entries x 100,000 examples
    agree = (d.per_example.T @ d.per_example)[iu, ju]
    wins_i, wins_j = n * d.estimate[iu] - agree, n * d.estimate[ju] - agree
    b, c = (wins_i, wins_j) if sign > 0 else (wins_j, wins_i)
    discordant = np.round(b + c)
    b = np.round(b)
    pvalue = np.where(both_binary, pr.binomial_pvalue(b, discordant), pvalue)
    method = np.where(both_binary, "mcnemar", np.where(single, "paired-t", "welch-t"))

    def interval(level):
        half = stats.t.ppf(1 - level / 2, df) * np.where(degenerate, 0.0, scale)
        lo, hi = diff - half, diff + half
        cp_lo, cp_hi = pr.clopper_pearson(b, discordant, level)
        return (
            np.where(both_binary, discordant * (2 * cp_lo - 1) / n, lo),
            np.where(both_binary, discordant * (2 * cp_hi - 1) / n, hi),
        )

    return diff, pvalue, method, interval


def _probabilities(means_boot: np.ndarray, iu, ju, sign: float, diff, magnitude, low=None, high=None):
    """P(i>j) = G(d) from the resampled means, or (low=..., high=...) G at the interval's ends.

    G is the symmetrised bootstrap distribution of the difference,
    ``G(δ) = ½[P*(D* > d - δ) + P*(D* < d + δ)]`` over the B resamples and d itself (B + 1 values, so that
    G(δ) > ½ for every δ > 0), differences within ``rs.TIE_RELATIVE`` of the pair's scale counting as ties (½): monotone
    with ``G(0) = ½`` exactly, so the interval ``[G(low), G(high)]`` holds ½ exactly when d's dual interval
    holds 0, i.e. when the adjusted p-value is at least alpha, and rounding decides no count (a board and its
    mirror of 1 - outcomes agree). The plain ``P*(D* > d - δ)`` has ``G(0) = P*(D* > d)``, 0.465-0.538 on a
    board's pairs: a decided pair showed an interval holding ½, about 1 in 400 pairs (a statistician's
    finding). ``means_boot`` (B, entries); pairs in batches of about ``rs.BATCH_ELEMENTS``.
    """
    npairs, n_resamples = iu.size, means_boot.shape[0]
    oriented = np.ascontiguousarray((sign * means_boot).T)
    scale = rs.TIE_RELATIVE * magnitude  # each entry's outcomes' (relative: no unit), for the pairs' ties
    out: np.ndarray | tuple[np.ndarray, np.ndarray] = (
        np.empty(npairs) if low is None else (np.empty(npairs), np.empty(npairs))
    )
    step = rs.batch_size(n_resamples, npairs)
    for start in range(0, npairs, step):
        stop = min(npairs, start + step)
        i, j = iu[start:stop], ju[start:stop]
        boot = oriented[i] - oriented[j]
        d, tol = diff[start:stop, None], np.maximum(scale[i], scale[j])[:, None]
        if isinstance(out, np.ndarray):  # low is None
            out[start:stop] = _symmetric_share(boot, d, d, tol)
            continue
        # A limit equal to d up to rounding (an exact interval closed at the observed difference) is d
        # itself, so that G(low) <= G(d) = P(i>j) <= G(high): the interval holds its estimate.
        for side, limit in ((0, low), (1, high)):
            delta = limit[start:stop, None]
            delta = np.where(np.abs(d - delta) <= tol, d, delta)
            out[side][start:stop] = _symmetric_share(boot, d, delta, tol)
    return out


def _symmetric_share(boot: np.ndarray, d: np.ndarray, delta: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """``½[P*(D* > d - δ) + P*(D* < d + δ)]`` per row of ``boot`` (the resampled differences D*) with d itself
    as one more value, values within ``tol`` of a threshold counting one half."""
    above, below = d - delta, d + delta
    beyond = np.count_nonzero(boot > above + tol, axis=1) + np.count_nonzero(boot < below - tol, axis=1)
    near = np.count_nonzero(boot >= above - tol, axis=1) + np.count_nonzero(boot <= below + tol, axis=1) - beyond
    d, above, below, tol = d[:, 0], above[:, 0], below[:, 0], tol[:, 0]
    beyond = beyond + (d > above + tol) + (d < below - tol)
    near = near + (np.abs(d - above) <= tol) + (np.abs(d - below) <= tol)
    return 0.5 * (beyond + 0.5 * near) / (boot.shape[1] + 1)


def entry_mean_intervals(
    files, confidence_level=0.95, proportions=True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each entry's interval of its mean outcome, as :func:`paired_test_bootstrap` gives it (no resampling).

    The same rule (module docstring: Wilson for 0/1 outcomes, at the design-effect sample size for
    several files; Student's t, Welch's with several files, otherwise), for one entry or many.

    Parameters
    ----------
    files : sequence of array_like
        One array per entry of shape (files, examples) or (examples,), every entry on the same
        examples, at least 2 of them, finite.
    confidence_level : float, default 0.95
    proportions : bool, default True
        As :func:`paired_test_bootstrap`'s: False for a metric that is no proportion (0/1 outcomes take t too).

    Returns
    -------
    (estimate, low, high, method) : arrays of shape (entries,)
        ``method`` names the interval (``"wilson"``, ``"wilson-deff"``, ``"t"``, ``"welch-t"``).

    Examples
    --------
    >>> est, low, high, method = entry_mean_intervals([[1, 1, 0, 1]], 0.95)
    >>> float(est[0]), str(method[0]), bool(low[0] < 0.75 < high[0])
    (0.75, 'wilson', True)
    """
    entries = _paired_test_bootstrap_iv(None, files, 1, 0, confidence_level, 0.75, 0.05, "none", True, None)[0]
    design = _Design(entries, 1.0, check_bool(proportions, "proportions"))
    low, high, method = _entry_intervals(design, check_open_unit(confidence_level, "confidence_level"))
    return design.estimate, low, high, method


# long because it states the whole contract of the prediction sections in its docstring
def paired_test_bootstrap(
    outcomes=None,
    *,
    files=None,
    n_resamples=10_000,
    rng=0,
    confidence_level=0.95,
    gamma=0.75,
    alpha=0.05,
    correction="holm",
    higher_is_better=True,
    priority=None,
    backend="numpy",
    device="auto",
    proportions=True,
) -> TestBootstrapResult:
    """Entries scored on one test set: intervals, and all pairs compared per example.

    Parameters
    ----------
    outcomes : array_like, shape (examples, entries), optional
        Per-example outcomes (1/0 correctness, a loss, ...), one file per entry; a
        1-D array is one entry.
    files : sequence of array_like, optional
        Instead of ``outcomes``: one array per entry of shape (files, examples) or
        (examples,). An entry with k files (k seeds) is k runs. Every entry has the
        same examples, in one order.
    n_resamples : int, default 10000
        Bootstrap resamples B (examples shared by all entries, files within each).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.
    confidence_level : float, default 0.95
        Level of each entry's interval of the mean.
    gamma : float, default 0.75
        Threshold of a meaningful difference, in (0.5, 1).
    alpha : float, default 0.05
        Family-wise significance level of the pairwise decisions.
    correction : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Multiplicity adjustment over all unordered pairs.
    higher_is_better : bool, default True
        False for losses: comparisons then treat the lower mean as better.
    priority : array_like of int, optional
        Entries best first by the board's ranking statistic (default: by mean).
    backend : {"numpy", "torch", "auto"}, default "numpy"
        Where the resampling runs: "torch" on ``device`` ("auto": CUDA when available,
        else the CPU; :mod:`evaluation.stats.torch_backend`), equal within Monte Carlo
        error; "auto": torch on CUDA when a device is present and the work is large.
    device : str, default "auto"
    proportions : bool, default True
        Whether 0/1 outcomes are read as correctness indicators (Wilson intervals, McNemar's test). False for a
        metric that is no proportion (a loss whose per-example values happen to be 0 or 1, e.g. absolute errors
        of whole units): its outcomes take the t interval and tests whatever their values, as they would in
        another unit (:func:`evaluation.report.values.outcomes_are_proportions`).

    Returns
    -------
    TestBootstrapResult
        ``estimate``, ``low``, ``high`` of each entry's mean (original units; see the
        module docstring for the method, ``entry_method``); ``standard_error`` (the
        bootstrap's); ``comparisons`` (a PairwiseResult: P(i>j) and its interval at
        each pair's adjusted level); ``diff_low``/``diff_high`` the dual interval of
        the difference of means (row minus column, oriented: positive favours the
        row); ``pair_method`` (k x k: "mcnemar", "paired-t", "welch-t");
        ``bootstrap_distribution``: each entry's mean in each resample ``(entries, B)``.

    Raises
    ------
    ValueError
        Unless exactly one of ``outcomes`` and ``files`` is given; if it is empty, not
        finite, of the wrong shape or has fewer than 2 examples, entries differ in
        their examples, or a parameter is invalid.

    Notes
    -----
    See the module docstring. ``standard_error`` is the standard deviation of the
    resampled means (ddof=1), to be used as :func:`adjusted_sota`'s ``standard_error``; 0 for an entry whose
    outcomes all tie under the board's tie rule (its resampled means differ by rounding only).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.random((2000, 3)) < [0.80, 0.75, 0.65]
    >>> res = paired_test_bootstrap(correct, n_resamples=1000)
    >>> res.comparisons.order.tolist(), bool(res.comparisons.better[0, 2])
    ([0, 1, 2], True)
    """
    (entries, n_resamples, rng, confidence_level, gamma, alpha, correction, higher_is_better, priority) = (
        _paired_test_bootstrap_iv(
            outcomes, files, n_resamples, rng, confidence_level, gamma, alpha, correction, higher_is_better, priority
        )
    )
    design = _Design(entries, 1.0 if higher_is_better else -1.0, check_bool(proportions, "proportions"))
    backend, device = tb.resolve_backend(
        check_choice(backend, "backend", tb.BACKENDS), device, n_resamples * sum(e.size for e in entries)
    )
    if backend == "torch":
        means_boot = tb.testset_means_bootstrap(
            entries,
            n_resamples=n_resamples,
            seed=int(rng.integers(2**63)),
            device=device,
            file_keys=design.file_keys,
        )
    else:
        means_boot = design.resampled_means(n_resamples, rng)  # (B, entries)
    low, high, entry_method = _entry_intervals(design, confidence_level)
    comparisons, dl, dh, pair_method = _compare_entries(
        design, means_boot, gamma=gamma, alpha=alpha, correction=correction, n_resamples=n_resamples, priority=priority
    )
    return TestBootstrapResult(
        design.estimate,
        low,
        high,
        np.where(design.constant, 0.0, rs.standard_error(means_boot, axis=0)),
        comparisons,
        dl,
        dh,
        confidence_level,
        n_resamples,
        means_boot.T,
        entry_method,
        pair_method,
        design.files,
        _effective_trials(design),
    )


def _compare_entries(design: _Design, means_boot, *, gamma, alpha, correction, n_resamples, priority):
    """All pairs' decisions (a PairwiseResult), the intervals of d and the tests' names (k x k)."""
    k = design.estimate.size
    iu, ju = np.triu_indices(k, 1)
    diff, pvalue, method, d_interval = _pair_tests(design, iu, ju)
    p = _probabilities(means_boot, iu, ju, design.sign, diff, design.magnitude)

    def interval(level):
        lo, hi = d_interval(level)
        p_lo, p_hi = _probabilities(means_boot, iu, ju, design.sign, diff, design.magnitude, lo, hi)
        return p_lo, p_hi, lo, hi

    decisions = decide_pairs(diff, pvalue, interval, alpha=alpha, gamma=gamma, correction=correction)
    names = set(method.tolist())
    comparisons = assemble_pairwise(
        k,
        iu,
        ju,
        p,
        pvalue,
        None,
        design.estimate * design.sign,
        paired=True,
        gamma=gamma,
        alpha=alpha,
        correction=correction,
        n_resamples=n_resamples,
        priority=priority,
        decisions=decisions,
        method=names.pop() if len(names) == 1 else "mixed",
    )
    if design.sign < 0:  # report means in original units, order stays by merit
        comparisons = _with_means(comparisons, design.estimate)
    d_lo, d_hi = decisions.extra
    dl = np.full((k, k), np.nan)
    dh = np.full((k, k), np.nan)
    dl[iu, ju], dl[ju, iu] = d_lo, -d_hi
    dh[iu, ju], dh[ju, iu] = d_hi, -d_lo
    pair_method = np.full((k, k), "", dtype=object)
    pair_method[iu, ju] = pair_method[ju, iu] = method
    return comparisons, dl, dh, pair_method


def _with_means(result, means):
    return replace(result, means=np.asarray(means, dtype=np.float64))
