"""Boo_n: the expected test score of the best-validation model out of n runs.

Bajgar, Kadlec & Kleindienst (2018), "A Boo(n) for Evaluating Architecture
Performance", ICML: eq. 6 (Gaussian form) and eq. 7 (non-parametric form).

Two non-parametric estimators share one form, a weighted sum of the test scores sorted
by validation score, with cumulative weights ``W(j)`` over the ``j`` worst runs:

* ``"paper"`` (eq. 7): ``W(j) = (j/m)^n``, the expected best of n runs drawn *with
  replacement* from the m observed ones. It is biased low for small m (a draw repeats
  runs): at m = 10, n = 5 on normal runs by about 0.12 standard deviations.
* ``"unbiased"``: ``W(j) = C(j, n) / C(m, n)``, the average over all n-subsets of the m
  runs of the best one's test score (the U-statistic of E[max of n], Hoeffding 1948);
  unbiased for ``n <= m``.

Both are exact for ``n = 1`` (the mean). Keep ``m >= 3n`` runs for a stable estimate.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special

from ._validation import as_sample, check_bool, check_choice, check_int

__all__ = ["boo_n", "boo_n_gaussian", "expected_max_normal", "min_runs_flag", "min_runs_for_interval", "min_runs_rule"]

ESTIMATORS = ("paper", "unbiased")

#: Runs per unit of n below which Boo_n gets no interval. Bajgar et al. (2018, §4) keep m >= 3n runs for a
#: stable *estimate*; an interval needs more: measured (``benchmarks/bench_coverage.py``, "Boo_n from the first
#: k shown"), the board's interval covers 82.6-90.1 % at k = 3n for n = 2, 3 and 5 (normal and skewed runs) and
#: 93.3-94.8 % at k = 10n (normal and skewed runs averaged; 92.8-95.0 % each), inside issue 23's 93-97 %. Every interval kept inside its bootstrap's support stops
#: there (at k = 3n the truth lies beyond what the resamples reach: a 99.5 % level covered 87.3 and 84.7 % at k = 9, n = 3).
RUNS_PER_N = 10


#: Fewest runs for which the board shows the mean's interval (:func:`evaluation.stats.bootstrap.mean_interval_shown`);
#: defined here, where Boo_n's own rule reads it. A mean-ranked board's rank intervals need more
#: (:func:`evaluation.report.sections.runs_for_rank_interval`: 16).
MIN_RUNS_MEAN_INTERVAL = 6


def min_runs_for_interval(n: int) -> int:
    """Fewest runs k for which the board shows a Boo_n interval (and its default settings must give): 10n
    (:data:`RUNS_PER_N`), and never fewer than the mean's :data:`MIN_RUNS_MEAN_INTERVAL`.

    Below 10n the bootstrap of Boo_n covers less than its level (the board's interval: 82.6-90.1 % at
    k = 3n for n = 2, 3, 5; BCa: 61 % at k = n = 5; ``benchmarks/bench_coverage.py``): no interval is shown.
    Boo_1 is the mean of the runs (eq. 7 weighs every run alike), so it needs what the mean's
    interval needs: a board of 5 runs showed Boo_1 = 0.9600 in [0.9500, 0.9878] beside the same
    mean without an interval (a new user's finding, 2026-11-30).

    >>> min_runs_for_interval(5), min_runs_for_interval(1)
    (50, 6)
    """
    n = check_int(n, "n", minimum=1)
    return MIN_RUNS_MEAN_INTERVAL if n == 1 else max(RUNS_PER_N * n, MIN_RUNS_MEAN_INTERVAL)


def min_runs_rule(n: int) -> str:
    """:func:`min_runs_for_interval` in words, for the board's and the host's messages: "10n = 50", or for
    Boo_1 "6, as for the mean (Boo_1 is the mean of the runs)".

    >>> min_runs_rule(5), min_runs_rule(1)
    ('10n = 50', '6, as for the mean (Boo_1 is the mean of the runs)')
    """
    need = min_runs_for_interval(n)
    if need == RUNS_PER_N * n:
        return f"{RUNS_PER_N}n = {need}"
    return f"{need}, as for the mean (Boo_{n} is the mean of the runs)"


def min_runs_flag(n: int) -> str:
    """The board's flag on an entry with too few runs for a Boo_n interval: "k < 10n", or for Boo_1 "k < 6".

    >>> min_runs_flag(5), min_runs_flag(1)
    ('k < 10n', 'k < 6')
    """
    need = min_runs_for_interval(n)
    return f"k < {RUNS_PER_N}n" if need == RUNS_PER_N * n else f"k < {need}"


# --------------------------------------------------------------------------- E[max]
def _expected_max_normal_iv(n):
    return check_int(n, "n", minimum=1)


def expected_max_normal(n) -> float:
    """Expected maximum of ``n`` independent standard normal variables.

    Parameters
    ----------
    n : int
        Number of variables, ``n >= 1``.

    Returns
    -------
    float
        ``E[max(Z_1, ..., Z_n)]`` with ``Z_i ~ N(0, 1)`` iid.

    Raises
    ------
    ValueError
        If ``n`` is not an integer >= 1.

    Notes
    -----
    Computed by quadrature of
    ``E[M] = ∫_0^∞ (1 - Φ(x)^n) dx - ∫_{-∞}^0 Φ(x)^n dx`` with ``Φ(x)^n`` evaluated
    as ``exp(n · log Φ(x))`` (``scipy.special.log_ndtr``), so that large ``n`` (a
    leaderboard's count of entries) stays accurate. This is the factor of the
    Gaussian Boo_n (Bajgar et al. 2018, eq. 6) and of the normal-approximation
    adjusted state of the art.

    References
    ----------
    Bajgar, O., Kadlec, R. & Kleindienst, J. (2018). A Boo(n) for Evaluating
    Architecture Performance. ICML.

    Examples
    --------
    >>> round(expected_max_normal(5), 5)
    1.16296
    """
    n = _expected_max_normal_iv(n)
    if n == 1:
        return 0.0

    def upper(x):  # 1 - Φ(x)^n for x >= 0
        return -special.expm1(n * special.log_ndtr(x))

    def lower(x):  # Φ(x)^n for x <= 0
        return np.exp(n * special.log_ndtr(x))

    centre = np.sqrt(2.0 * np.log(n))
    top = centre + 12.0
    opts = dict(epsabs=1e-13, epsrel=1e-12, limit=200)
    pos = integrate.quad(upper, 0.0, top, points=[centre], **opts)[0]
    neg = integrate.quad(lower, -40.0, 0.0, **opts)[0]
    return float(pos - neg)


# --------------------------------------------------------------------------- weights
def _power_table(m: int, n: int, estimator: str = "paper") -> np.ndarray:
    """Cumulative weights ``W(j)``, ``j = 0..m``, in floating point (never integer powers).

    ``"paper"``: ``(j / m) ** n``; ``"unbiased"``: ``C(j, n) / C(m, n)`` (0 for j < n),
    from log-gamma functions.
    """
    j = np.arange(m + 1, dtype=np.float64)
    if estimator == "paper":
        return (j / m) ** n
    with np.errstate(invalid="ignore"):
        log_w = (
            special.gammaln(j + 1) - special.gammaln(j - n + 1) - special.gammaln(m + 1) + special.gammaln(m - n + 1)
        )
    return np.where(j >= n, np.exp(log_w), 0.0)


def _boo_weights(key: np.ndarray, n: int, estimator: str = "paper") -> np.ndarray:
    """Weight of each run in the non-parametric Boo_n (eq. 7), ties sharing weight.

    ``key`` orders the runs (larger is better). A tie block occupying ranks
    ``j+1..j+c`` (worst first) receives ``W(j+c) - W(j)`` in total, shared equally by
    its ``c`` members. For the paper's ``W(j) = (j/m)^n`` the difference ``a^n - b^n``
    is computed as ``a^n · (-expm1(n · log(b/a)))`` to keep its relative precision.
    """
    m = key.size
    order = np.argsort(key, kind="stable")
    sk = key[order]
    new_block = np.empty(m, dtype=bool)
    new_block[0] = True
    new_block[1:] = sk[1:] != sk[:-1]
    block = np.cumsum(new_block) - 1
    size = np.bincount(block).astype(np.float64)
    if estimator == "paper":
        upper = np.cumsum(size) / m
        lower = upper - size / m
        with np.errstate(divide="ignore"):
            log_ratio = np.log(lower) - np.log(upper)
        w_block = np.exp(n * np.log(upper)) * -np.expm1(n * log_ratio)
    else:
        table = _power_table(m, n, estimator)
        upper = np.cumsum(size).astype(np.int64)
        w_block = table[upper] - table[upper - size.astype(np.int64)]
    weights = np.empty(m)
    weights[order] = (w_block / size)[block]
    return weights


def _boo_n_resampled(
    test: np.ndarray, key: np.ndarray, counts: np.ndarray, n: int, estimator: str = "paper"
) -> np.ndarray:
    """Boo_n of many resamples at once, from their count matrix.

    Parameters
    ----------
    test, key : ndarray, shape (entries, m)
        Reported values and the ordering key (larger is better) of each entry's runs.
    counts : ndarray, shape (B, m)
        ``counts[b, r]``: how often run ``r`` appears in resample ``b`` (rows sum to m).

    Returns
    -------
    ndarray, shape (entries, B)

    Notes
    -----
    In resample ``b`` the copies of the runs form tie blocks by key (copies of one run
    are tied with each other). With ``C`` copies in a block, ``U`` the rank of its
    best copy and ``L = U - C``, the block contributes
    ``(W(U) - W(L)) · (Σ copies' test) / C`` (eq. 7 with shared ties).
    """
    n_entries, m = test.shape
    b = counts.shape[0]
    table = _power_table(m, n, estimator)
    order = np.argsort(key, axis=1, kind="stable")
    sk = np.take_along_axis(key, order, axis=1)
    st = np.take_along_axis(test, order, axis=1)
    c = counts[:, order]  # (B, entries, m), runs sorted worst first per entry
    cs = np.cumsum(c, axis=2)
    ties = bool(np.any(sk[:, 1:] == sk[:, :-1]))
    if not ties:
        w = table[cs] - table[cs - c]
        return np.einsum("bem,em->eb", w, st)
    new_block = np.ones((n_entries, m), dtype=bool)
    new_block[:, 1:] = sk[:, 1:] != sk[:, :-1]
    starts = np.flatnonzero(new_block.ravel())
    ends = np.append(starts[1:], n_entries * m) - 1
    entry_first_block = np.searchsorted(starts // m, np.arange(n_entries))
    cflat = c.reshape(b, n_entries * m)
    size = np.add.reduceat(cflat, starts, axis=1)
    total = np.add.reduceat(cflat * st.ravel(), starts, axis=1)
    upper = cs.reshape(b, n_entries * m)[:, ends]
    w = table[upper] - table[upper - size]
    term = w * total / np.maximum(size, 1)
    return np.add.reduceat(term, entry_first_block, axis=1).T


# --------------------------------------------------------------------------- Boo_n
def _boo_n_iv(test, n, valid, higher_is_better, min_size=1, estimator="paper"):
    test = as_sample(test, "test", min_size=min_size)
    n = check_int(n, "n", minimum=1)
    estimator = check_choice(estimator, "estimator", ESTIMATORS)
    if estimator == "unbiased" and n > test.size:
        raise ValueError(f"`n` must be at most the number of runs ({test.size}) for estimator='unbiased' (got {n}).")
    if valid is not None:
        valid = as_sample(valid, "valid")
        if valid.size != test.size:
            raise ValueError(f"`valid` and `test` must have the same length (got {valid.size} and {test.size}).")
    higher_is_better = check_bool(higher_is_better, "higher_is_better")
    return test, n, valid, higher_is_better, estimator


def boo_n(test, n, *, valid=None, higher_is_better=True, estimator="paper") -> float:
    """Non-parametric Boo_n: expected test score of the best-validation run out of n.

    Parameters
    ----------
    test : array_like, shape (m,)
        Test score of each run (the reported value).
    n : int
        Size of the pool the best run is chosen from, ``n >= 1``.
    valid : array_like, shape (m,), optional
        Validation score of each run, used to choose the best run. Without it the
        test score chooses (Boo_n is then the expected maximum of n test scores).
    higher_is_better : bool, default True
        If False, the *lowest* validation (or test) value is the best run; the
        reported test values are still averaged as they are.
    estimator : {"paper", "unbiased"}, default "paper"
        The paper's eq. 7 (draws with replacement; reproduces the published values)
        or the unbiased order-statistic estimator (n-subsets of the runs; ``n <= m``).

    Returns
    -------
    float
        ``Boo_n``. ``Boo_1`` is the mean of ``test``.

    Raises
    ------
    ValueError
        If ``test`` is empty or not finite, ``valid`` has another length, ``n < 1``,
        or ``n`` exceeds the runs with ``estimator="unbiased"``.

    Notes
    -----
    Bajgar et al. (2018), eq. 7: sort the m runs by validation score, worst first;
    ``Boo_n = Σ_j ((j/m)^n - ((j-1)/m)^n) · test_(j)``. Tied validation values share
    their block's weight equally: a tie block at ranks ``j+1..j+c`` gives each
    member ``(((j+c)/m)^n - (j/m)^n) / c``. Weights are computed in floating point,
    so large m and n do not overflow (the ``boon`` 0.1.0 package computes
    ``m**n`` in integers and overflows, e.g. for m = 100, n = 10).

    ``estimator="unbiased"`` weighs the j-th worst run by ``C(j-1, n-1) / C(m, n)``:
    the mean over all n-subsets of the runs of the test score of the subset's best
    run, unbiased for E[test of the best of n] (Hoeffding 1948). With fewer than
    ``3n`` runs either estimate is unstable, and below ``10n`` its interval covers less than
    its level (:func:`min_runs_for_interval`); the report says so.
    References
    ----------
    Bajgar, O., Kadlec, R. & Kleindienst, J. (2018). A Boo(n) for Evaluating
    Architecture Performance. ICML.

    Examples
    --------
    >>> boo_n([1, 2, 3, 4], 2)
    3.125
    >>> round(boo_n([10, 20, 30], 2, valid=[1, 1, 2]), 4)
    23.3333
    >>> round(boo_n([1, 2, 3, 4], 2, estimator="unbiased"), 4)  # mean of the 6 pairs' maxima
    3.3333
    """
    test, n, valid, higher_is_better, estimator = _boo_n_iv(test, n, valid, higher_is_better, estimator=estimator)
    key = test if valid is None else valid
    if not higher_is_better:
        key = -key
    # Sum in a canonical order (by key, then oriented test): exactly invariant to run order, and a loss's
    # Boo_n the exact negative of the mirrored accuracy's.
    order = np.lexsort((test if higher_is_better else -test, key))
    test, key = test[order], key[order]
    return float(_boo_weights(key, n, estimator) @ test)


def _boo_n_gaussian_iv(test, n, valid, higher_is_better):
    return _boo_n_iv(test, n, valid, higher_is_better, min_size=2)


def boo_n_gaussian(test, n, *, valid=None, higher_is_better=True) -> float:
    """Parametric (Gaussian) Boo_n.

    Parameters
    ----------
    test : array_like, shape (m,)
        Test score of each run, ``m >= 2``.
    n : int
        Size of the pool the best run is chosen from, ``n >= 1``.
    valid : array_like, shape (m,), optional
        Validation score of each run. Without it the test score chooses (ρ = 1).
    higher_is_better : bool, default True
        If False, the run with the lowest validation (or test) value is chosen.

    Returns
    -------
    float
        ``μ_test + s · ρ · σ_test · E[max of n N(0,1)]`` with ``s = +1`` when higher
        is better and ``-1`` otherwise.

    Raises
    ------
    ValueError
        If ``test`` has fewer than 2 values or is not finite, ``valid`` has another
        length, or ``n < 1``.

    Notes
    -----
    Bajgar et al. (2018), eq. 6, assuming (valid, test) bivariate normal: choosing the
    best of n by validation shifts the expected test score by ``ρ σ_test E_n`` where
    ``ρ = corr(valid, test)`` and ``E_n`` is :func:`expected_max_normal`. ``σ_test``
    is the sample standard deviation (``ddof=1``). If ``valid`` or ``test`` is
    constant the correlation is undefined and ρ = 0 is used (a constant validation
    score makes the choice a random pick).

    References
    ----------
    Bajgar, O., Kadlec, R. & Kleindienst, J. (2018). A Boo(n) for Evaluating
    Architecture Performance. ICML.

    Examples
    --------
    >>> round(boo_n_gaussian([1.0, 2.0, 3.0, 4.0], 5), 4)
    4.0014
    """
    test, n, valid, higher_is_better, _ = _boo_n_gaussian_iv(test, n, valid, higher_is_better)
    mu = float(np.mean(test))
    sd = float(np.std(test, ddof=1))
    if valid is None:
        rho = 1.0
    elif np.ptp(valid) == 0 or sd == 0:
        rho = 0.0
    else:
        rho = float(np.corrcoef(valid, test)[0, 1])
    sign = 1.0 if higher_is_better else -1.0
    return mu + sign * rho * sd * expected_max_normal(n)
