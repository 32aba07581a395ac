"""Intervals for proportions that stay honest at 0 and 1, and the tests they are dual to.

A percentile bootstrap of a proportion collapses at the boundary: ten wins out of ten
seeds resample to ten out of ten every time, and the "interval" is [1, 1]. The score
intervals here do not: each is the set of values p0 that its test does not reject, so
the interval excludes p0 exactly when the test's p-value is below the interval's level.

* Wilson (1927): the score interval of a binomial proportion, dual to the z-test with
  the null variance p0(1-p0)/k. Used for the paired P(A>B) (the share of seeds won,
  ties counting one half) and for accuracies.
* Clopper & Pearson (1934): the exact interval, dual to the exact binomial test; with
  the conditional McNemar test for paired binary outcomes.
* Newcombe (2006), method 5: the score interval of the Mann–Whitney probability
  P(X > Y) with the Hanley–McNeil variance at N* = (m + n)/2; at 1/2 it is the
  Mann–Whitney null variance (m + n + 1)/(12 m n), so the dual test is the
  Mann–Whitney z-test (no tie or continuity correction, conservative with ties).

Every helper is vectorized over arrays of counts and levels (one level per element).

References
----------
Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
inference. JASA 22, 209–212. Clopper, C. J. & Pearson, E. S. (1934). The use of
confidence or fiducial limits illustrated in the case of the binomial. Biometrika 26,
404–413. Newcombe, R. G. (2006). Confidence intervals for an effect size measure based
on the Mann–Whitney statistic. Part 2. Statist. Med. 25, 559–573. Brown, L. D., Cai,
T. T. & DasGupta, A. (2001). Interval estimation for a binomial proportion. Statist.
Sci. 16, 101–133.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ._types import Interval
from ._validation import check_choice, check_open_unit

__all__ = ["proportion_interval"]

METHODS = ("wilson", "clopper-pearson")


def _z(level) -> np.ndarray:
    """Two-sided normal quantile of a significance level ``level`` (array)."""
    return special.ndtri(1.0 - np.asarray(level, dtype=np.float64) / 2.0)


def wilson(x, k, level) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``x`` successes (real, ties as halves) out of ``k``.

    ``level`` is the significance level (the interval has confidence ``1 - level``).
    """
    x, k = np.asarray(x, dtype=np.float64), np.asarray(k, dtype=np.float64)
    z = _z(level)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / k
        d = 1.0 + z * z / k
        centre = (p + z * z / (2 * k)) / d
        half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / k + z * z / (4 * k * k)) / d
    low = np.where((k > 0) & (x > 0), np.clip(centre - half, 0.0, 1.0), 0.0)
    high = np.where((k > 0) & (x < k), np.clip(centre + half, 0.0, 1.0), 1.0)
    return low, high


def kish_effective_n(p, variance, trials, floor) -> np.ndarray:
    """Kish's effective sample size ``p(1-p) / Var(p̂)`` of a clustered proportion, in ``[1, trials]``.

    ``variance`` is the estimated variance of ``p̂`` under the design (e.g. test examples
    and files: ``s²_examples/n + s²_files/k``); ``trials`` the pooled outcomes. The design
    effect is ``trials / n_eff`` (Kish 1965, §8.2), at least 1, so Wilson's interval at
    ``n_eff`` is never narrower than at the pooled count. Where ``p̂`` is 0 or 1 the
    variance says nothing about the clusters (every outcome equal): ``floor`` (e.g. the
    examples of one file, every file counted once).
    """
    p, variance = np.asarray(p, dtype=np.float64), np.asarray(variance, dtype=np.float64)
    trials, floor = np.asarray(trials, dtype=np.float64), np.asarray(floor, dtype=np.float64)
    pq = p * (1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(variance > 0, pq / np.where(variance > 0, variance, 1.0), trials)
    return np.where(pq > 0, np.clip(n_eff, 1.0, trials), np.minimum(floor, trials))


def score_pvalue(x, k, p0=0.5) -> np.ndarray:
    """Two-sided score (z) test of ``x / k = p0``, the test dual to :func:`wilson`."""
    x, k = np.asarray(x, dtype=np.float64), np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.abs(x - k * p0) / np.sqrt(k * p0 * (1 - p0))
    return np.where(k > 0, np.minimum(1.0, 2.0 * special.ndtr(-z)), 1.0)


def clopper_pearson(x, k, level) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) interval of ``x`` successes (integers) out of ``k``."""
    x, k = np.asarray(x, dtype=np.float64), np.asarray(k, dtype=np.float64)
    a = np.asarray(level, dtype=np.float64) / 2
    with np.errstate(invalid="ignore"):
        low = np.where(x > 0, special.betaincinv(np.maximum(x, 1e-300), k - x + 1, a), 0.0)
        high = np.where(x < k, special.betaincinv(x + 1, np.maximum(k - x, 1e-300), 1 - a), 1.0)
    return np.where(k > 0, low, 0.0), np.where(k > 0, high, 1.0)


def binomial_pvalue(x, k) -> np.ndarray:
    """Exact two-sided binomial test of p = 1/2 (``2 min(tail)``), dual to Clopper–Pearson."""
    x, k = np.asarray(x, dtype=np.float64), np.asarray(k, dtype=np.float64)
    tail = stats.binom.cdf(np.minimum(x, k - x), k, 0.5)
    return np.where(k > 0, np.minimum(1.0, 2.0 * tail), 1.0)


def _mw_variance(theta, m, n) -> np.ndarray:
    """Hanley–McNeil variance of the Mann–Whitney P with N* = (m + n)/2 (Newcombe 2006)."""
    nstar = (m + n) / 2.0
    return (
        theta
        * (1 - theta)
        / (m * n)
        * (1 + (nstar - 1) * (1 - theta) / (2 - theta) + (nstar - 1) * theta / (1 + theta))
    )


def mann_whitney_interval(theta, m, n, level, iterations=60) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's score interval of P(X > Y) from samples of sizes ``m`` and ``n``.

    The roots of ``(θ̂ - θ)² = z² V(θ)`` below and above θ̂, found by bisection for all
    elements at once.
    """
    theta, m, n = (np.asarray(v, dtype=np.float64) for v in (theta, m, n))
    theta, m, n, z2 = np.broadcast_arrays(theta, m, n, _z(level) ** 2)

    def outside(t):  # True where t lies outside the interval (the test rejects t)
        return (theta - t) ** 2 > z2 * _mw_variance(t, m, n)

    bounds = []
    for lo, hi, inside_is_hi in (
        (np.zeros_like(theta), theta.copy(), True),
        (theta.copy(), np.ones_like(theta), False),
    ):
        for _ in range(iterations):
            mid = (lo + hi) / 2
            out = outside(mid)
            if inside_is_hi:  # searching the lower limit: outside below it
                lo, hi = np.where(out, mid, lo), np.where(out, hi, mid)
            else:
                lo, hi = np.where(out, lo, mid), np.where(out, mid, hi)
        bounds.append(hi if inside_is_hi else lo)
    return bounds[0], bounds[1]


def mann_whitney_pvalue(theta, m, n) -> np.ndarray:
    """Two-sided Mann–Whitney z-test of P(X > Y) = 1/2, dual to :func:`mann_whitney_interval`."""
    theta, m, n = (np.asarray(v, dtype=np.float64) for v in (theta, m, n))
    z = np.abs(theta - 0.5) / np.sqrt(_mw_variance(0.5, m, n))
    return np.minimum(1.0, 2.0 * special.ndtr(-z))


def _proportion_interval_iv(successes, trials, method, confidence_level):
    method = check_choice(method, "method", METHODS)
    confidence_level = check_open_unit(confidence_level, "confidence_level")
    try:
        x = np.asarray(successes, dtype=np.float64)
        k = np.asarray(trials, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`successes` and `trials` must be numbers.") from None
    x, k = np.broadcast_arrays(x, k)
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(k)) or np.any(k < 1) or np.any(k != np.round(k)):
        raise ValueError("`trials` must hold whole numbers >= 1.")
    if np.any((x < 0) | (x > k)):
        raise ValueError("`successes` must lie between 0 and `trials`.")
    if method == "clopper-pearson" and np.any(x != np.round(x)):
        raise ValueError("`successes` must be whole numbers for method='clopper-pearson'.")
    return x, k, method, confidence_level


def proportion_interval(successes, trials, *, method="wilson", confidence_level=0.95) -> Interval:
    """Confidence interval of a proportion that stays honest at 0 and 1.

    Parameters
    ----------
    successes : array_like
        Successes (real for ``"wilson"``: a tie may count one half).
    trials : array_like
        Trials, whole numbers >= 1, broadcast against ``successes``.
    method : {"wilson", "clopper-pearson"}, default "wilson"
        Wilson's score interval, or the exact Clopper–Pearson interval.
    confidence_level : float, default 0.95

    Returns
    -------
    Interval
        ``estimate = successes / trials``, ``low``, ``high``, ``standard_error``
        ``sqrt(p(1 - p)/trials)``; floats for scalar input, arrays otherwise;
        ``statistic = "proportion"``, no bootstrap distribution.

    Raises
    ------
    ValueError
        If ``trials`` is not a whole number >= 1, ``successes`` lies outside
        ``[0, trials]`` (or is fractional for Clopper–Pearson), or ``method`` or
        ``confidence_level`` is invalid.

    Notes
    -----
    Wilson (1927): ``(p̂ + z²/2k ± z sqrt(p̂(1-p̂)/k + z²/4k²)) / (1 + z²/k)``; its
    coverage averages the nominal level already at k = 10 (Brown, Cai & DasGupta
    2001). Clopper & Pearson (1934): Beta quantiles, coverage at least nominal.

    Examples
    --------
    >>> ci = proportion_interval(10, 10)
    >>> round(ci.low, 4), ci.high
    (0.7225, 1.0)
    """
    x, k, method, confidence_level = _proportion_interval_iv(successes, trials, method, confidence_level)
    level = 1.0 - confidence_level
    low, high = wilson(x, k, level) if method == "wilson" else clopper_pearson(x, k, level)
    p = x / k
    se = np.sqrt(p * (1 - p) / k)
    if p.ndim == 0:
        return Interval(float(p), float(low), float(high), confidence_level, "proportion", float(se))
    return Interval(p, low, high, confidence_level, "proportion", se)
