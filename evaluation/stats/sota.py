"""Multiplicity-adjusted state of the art (Møllersen & Holsbø).

With m entries scored on one test set of n examples, the best observed accuracy is the
sample maximum of m noisy estimates: an optimistic estimate of the best entry's true
accuracy. Under independent entries of accuracy θ_j the errors of entry j are
``X_j ~ Bin(n, 1 - θ_j)`` and the best accuracy is ``θ̂_max = (n - Z)/n`` with
``Z = min_j X_j``.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np
from scipy import integrate, optimize, signal, special, stats

from ._resample import TIE_RELATIVE
from ._types import AdjustedSota, SotaDistribution
from ._validation import as_generator, as_sample, check_bool, check_int, check_open_unit, check_real
from .boon import expected_max_normal

__all__ = [
    "adjusted_sota",
    "distinct_rows",
    "outcome_dependence",
    "sota_distribution",
    "sota_distribution_dependent",
    "sota_distribution_nonidentical",
    "sota_exceedance",
]


def _check_theta(theta, name="theta") -> float:
    try:
        return check_open_unit(theta, name)
    except ValueError:
        raise ValueError(f"`{name}` must be an accuracy strictly between 0 and 1 (got {theta!r}).") from None


def _check_thetas(thetas, name="thetas") -> np.ndarray:
    try:
        arr = np.asarray(thetas, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be an array of accuracies.") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array (got shape {arr.shape}).")
    if not np.all((arr > 0) & (arr < 1)):
        bad = np.flatnonzero(~((arr > 0) & (arr < 1)))[0]
        raise ValueError(f"`{name}` must hold accuracies strictly between 0 and 1 (index {bad} is {arr[bad]!r}).")
    return arr


def _log_sf(z: np.ndarray, n: int, p_err) -> np.ndarray:
    """``log P(X > z)`` for ``X ~ Bin(n, p_err)``, accurate when the sf is near 1."""
    cdf = stats.binom.cdf(z, n, p_err)
    sf = stats.binom.sf(z, n, p_err)
    with np.errstate(divide="ignore"):
        return np.where(cdf < 0.5, np.log1p(-cdf), np.log(sf))


def _from_cdf_of_min(cdf_z: np.ndarray, m: int, n: int, confidence_level: float, method: str):
    """SotaDistribution from ``F_Z(z) = P(Z <= z)``, z = 0..n; limits at `confidence_level`."""
    pmf_z = np.diff(cdf_z, prepend=0.0)
    pmf_z = np.clip(pmf_z, 0.0, None)
    pmf = pmf_z[::-1].copy()  # accuracy (n - z)/n ascending: index k = n - z
    pmf /= pmf.sum()
    accuracy = np.arange(n + 1) / n
    expected = float(pmf @ accuracy)
    sd = float(np.sqrt(pmf @ (accuracy - expected) ** 2))
    cum = np.cumsum(pmf)
    tails = np.array([(1 - confidence_level) / 2, (1 + confidence_level) / 2])
    lower, upper = (np.searchsorted(cum, tails * (1 - 1e-12)) / n).tolist()
    return SotaDistribution(expected, sd, lower, upper, accuracy, pmf, m, n, confidence_level, method)


# --------------------------------------------------------------------------- identical
def _sota_distribution_iv(m, n, theta, confidence_level):
    return (
        check_int(m, "m", minimum=1),
        check_int(n, "n", minimum=1),
        _check_theta(theta),
        check_open_unit(confidence_level, "confidence_level"),
    )


def sota_distribution(m, n, theta, *, confidence_level=0.95) -> SotaDistribution:
    """Distribution of the best accuracy among m identical independent entries.

    Parameters
    ----------
    m : int
        Number of entries scored on the test set, ``m >= 1``.
    n : int
        Number of test examples, ``n >= 1``.
    theta : float
        True accuracy of every entry, in (0, 1).
    confidence_level : float, default 0.95
        Probability of ``[lower, upper]``: they are the ``(1 - confidence_level)/2``
        and ``(1 + confidence_level)/2`` quantiles.

    Returns
    -------
    SotaDistribution
        ``expected`` = E[θ̂_max], ``sd``, ``lower``, ``upper`` (the
        multiplicity-adjusted limits), the support ``accuracy`` and its ``pmf``;
        ``exceedance(x)`` gives P(θ̂_max >= x).

    Raises
    ------
    ValueError
        If ``m`` or ``n`` is not a positive integer, or ``theta``/``confidence_level`` is
        outside (0, 1).

    Notes
    -----
    Møllersen & Holsbø, §3.3: errors ``X_j ~ Bin(n, 1-θ)``, ``Z = min_j X_j``,
    ``F_Z(z) = 1 - (1 - P(X <= z))^m``, computed as ``-expm1(m · log P(X > z))``
    so that large m and small tail probabilities keep their precision;
    ``θ̂_max = (n - Z)/n``. Paper values (Table 1, §3.4): m = 1000, n = 3000,
    θ = 0.9 gives E = 0.9173, sd = 0.001817 and limits [0.9143, 0.9213].

    References
    ----------
    Møllersen, K. & Holsbø, E. Accounting for multiplicity in machine learning
    benchmark performance. arXiv:2303.07272.

    Examples
    --------
    >>> d = sota_distribution(1000, 3000, 0.9)
    >>> round(d.expected, 4), round(d.sd, 6), d.lower, round(d.upper, 4)
    (0.9173, 0.001817, 0.9143333333333333, 0.9213)
    """
    m, n, theta, confidence_level = _sota_distribution_iv(m, n, theta, confidence_level)
    z = np.arange(n + 1)
    cdf_z = -np.expm1(m * _log_sf(z, n, 1.0 - theta))
    return _from_cdf_of_min(cdf_z, m, n, confidence_level, "exact")


def _sota_exceedance_iv(m, n, theta, x):
    m, n, theta, _ = _sota_distribution_iv(m, n, theta, 0.95)
    x = check_real(x, "x")
    return m, n, theta, x


def sota_exceedance(m, n, theta, x) -> float:
    """P(θ̂_max >= x): the chance that the best of m entries reaches accuracy x.

    Parameters
    ----------
    m : int
        Number of entries, ``m >= 1``.
    n : int
        Number of test examples.
    theta : float
        True accuracy of every entry, in (0, 1).
    x : float
        Accuracy threshold.

    Returns
    -------
    float
        ``P(Z <= n(1-x)) = 1 - (1 - P(X <= ⌊n(1-x)⌋))^m`` (Møllersen & Holsbø, §3.3).

    Raises
    ------
    ValueError
        On invalid ``m``, ``n``, ``theta`` or a non-finite ``x``.

    Examples
    --------
    Twenty coin flips guessed by 100 people: the chance someone gets 75% right.

    >>> round(sota_exceedance(100, 20, 0.5, 0.75), 4)
    0.8765
    """
    m, n, theta, x = _sota_exceedance_iv(m, n, theta, x)
    if x <= 0:
        return 1.0
    if x > 1:
        return 0.0
    z = np.floor(n * (1.0 - x) + 1e-9)
    return float(-np.expm1(m * _log_sf(z, n, 1.0 - theta)))


# --------------------------------------------------------------------------- non-identical
def _sota_distribution_nonidentical_iv(n, thetas, confidence_level):
    return (
        check_int(n, "n", minimum=1),
        _check_thetas(thetas),
        check_open_unit(confidence_level, "confidence_level"),
    )


def sota_distribution_nonidentical(n, thetas, *, confidence_level=0.95) -> SotaDistribution:
    """Distribution of the best accuracy among independent entries of different accuracy.

    Parameters
    ----------
    n : int
        Number of test examples.
    thetas : array_like, shape (m,)
        True accuracy of each entry, each in (0, 1).
    confidence_level : float, default 0.95
        Probability of ``[lower, upper]``.

    Returns
    -------
    SotaDistribution

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer, ``thetas`` is empty or outside (0, 1),
        or ``confidence_level`` is outside (0, 1).

    Notes
    -----
    Møllersen & Holsbø, §4.2: ``F_Z(z) = 1 - Π_j (1 - P(X_j <= z))``, computed as
    ``-expm1(Σ_j log P(X_j > z))``. Entries with equal θ are grouped.

    Examples
    --------
    >>> d = sota_distribution_nonidentical(3000, [0.9] * 1000)
    >>> round(d.expected, 4)
    0.9173
    """
    n, thetas, confidence_level = _sota_distribution_nonidentical_iv(n, thetas, confidence_level)
    values, multiplicity = np.unique(thetas, return_counts=True)
    z = np.arange(n + 1)
    log_sf = np.zeros(n + 1)
    step = max(1, (1 << 22) // (n + 1))
    for start in range(0, values.size, step):
        v = values[start : start + step, None]
        mult = multiplicity[start : start + step, None]
        log_sf += (mult * _log_sf(z[None, :], n, 1.0 - v)).sum(axis=0)
    return _from_cdf_of_min(-np.expm1(log_sf), thetas.size, n, confidence_level, "exact")


# --------------------------------------------------------------------------- dependent
def _sota_distribution_dependent_iv(
    n, thetas_or_theta, m, rho, theta_leader, fixed_leader, n_sim, rng, confidence_level
):
    n = check_int(n, "n", minimum=1)
    if np.ndim(thetas_or_theta) == 0:
        theta = _check_theta(thetas_or_theta, "thetas_or_theta")
        if m is None:
            raise ValueError("`m` is required when `thetas_or_theta` is a single accuracy.")
        m = check_int(m, "m", minimum=1)
        thetas = np.full(m, theta)
    else:
        thetas = _check_thetas(thetas_or_theta, "thetas_or_theta")
        if m is not None and check_int(m, "m", minimum=1) != thetas.size:
            raise ValueError(
                f"`m` must equal the number of accuracies in `thetas_or_theta` "
                f"(got m={m} and {thetas.size} accuracies)."
            )
    rho = check_real(rho, "rho")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"`rho` must be in [0, 1] (got {rho!r}).")
    leader = float(thetas.max()) if theta_leader is None else _check_theta(theta_leader, "theta_leader")
    flip1, flip0 = _flips(leader, np.sort(thetas), rho)
    if np.any((flip1 < -1e-12) | (flip1 > 1 + 1e-12) | (flip0 < -1e-12) | (flip0 > 1 + 1e-12)):
        raise ValueError(
            f"`rho` = {rho} is not attainable with a leading classifier of accuracy {leader} and "
            f"accuracies down to {thetas.min()}: the agreement probabilities would leave [0, 1] "
            "(lower `rho`, or raise the smallest accuracy)."
        )
    return (
        n,
        np.sort(thetas),
        rho,
        leader,
        check_bool(fixed_leader, "fixed_leader"),
        check_int(n_sim, "n_sim", minimum=1),
        as_generator(rng),
        check_open_unit(confidence_level, "confidence_level"),
    )


def _flips(theta0: float, thetas: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """P(Y_j = 0 | Y_0 = 1) and P(Y_j = 1 | Y_0 = 0): marginal θ_j, corr(Y_0, Y_j) = ρ."""
    cov = rho * np.sqrt(theta0 * (1 - theta0) * thetas * (1 - thetas))
    return (theta0 - cov - theta0 * thetas) / theta0, ((1 - theta0) * thetas - cov) / (1 - theta0)


def _leader_counts(n: int, theta0: float, fixed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The leading classifier's correct counts K and their probabilities."""
    if fixed:
        return np.array([int(round(n * theta0))]), np.array([1.0])
    half = 40.0 * np.sqrt(n * theta0 * (1 - theta0)) + 40.0
    k = np.arange(int(max(0, np.floor(n * theta0 - half))), int(min(n, np.ceil(n * theta0 + half))) + 1)
    w = stats.binom.pmf(k, n, theta0)
    return k, w / w.sum()


def _dependent_exact(n, thetas, theta0, rho, fixed) -> np.ndarray:
    """P(max correct <= c), c = 0..n, exactly: followers are iid given K within each θ value.

    Given the leader's K correct answers, a follower with accuracy θ gets
    ``Bin(K, 1 - flip1) + Bin(n - K, flip0)`` right; the pmf of that sum is one FFT
    convolution per K (all K at once), and the cdf of the maximum is the product of
    the followers' cdfs, mixed over K.
    """
    values, mult = np.unique(thetas, return_counts=True)
    ks, wk = _leader_counts(n, theta0, fixed)
    c = np.arange(n + 1)
    log_cdf_max = np.zeros((ks.size, n + 1))
    for value, count in zip(values, mult):  # distinct accuracies (few: the exact path's condition)
        f1, f0 = _flips(theta0, np.array([value]), rho)
        a = stats.binom.pmf(c[None, :], ks[:, None], 1 - f1[0])
        b = stats.binom.pmf(c[None, :], (n - ks)[:, None], f0[0])
        pmf = np.clip(signal.fftconvolve(a, b, axes=1)[:, : n + 1], 0.0, None)
        cdf = np.minimum(np.cumsum(pmf / pmf.sum(axis=1, keepdims=True), axis=1), 1.0)
        with np.errstate(divide="ignore"):
            log_cdf_max += count * np.log(cdf)
    return np.minimum(np.exp(log_cdf_max).T @ wk, 1.0)


def _dependent_simulated(n, thetas, theta0, rho, fixed, n_sim, rng) -> np.ndarray:
    """P(max correct <= c) from ``n_sim`` simulated test sets (followers drawn as counts)."""
    f1, f0 = _flips(theta0, thetas, rho)
    best = np.empty(n_sim, dtype=np.int64)
    step = max(1, (1 << 22) // thetas.size)
    for start in range(0, n_sim, step):
        stop = min(n_sim, start + step)
        if fixed:
            k = np.full((stop - start, 1), int(round(n * theta0)))
        else:
            k = rng.binomial(n, theta0, size=(stop - start, 1))
        kept = k - rng.binomial(k, np.clip(f1, 0, 1)[None, :])
        gained = rng.binomial(n - k, np.clip(f0, 0, 1)[None, :])
        best[start:stop] = (kept + gained).max(axis=1)
    return np.cumsum(np.bincount(best, minlength=n + 1)) / n_sim


# long because the docstring states the model, both scenarios and the paper's values
def sota_distribution_dependent(
    n,
    thetas_or_theta,
    m=None,
    rho=0.0,
    *,
    theta_leader=None,
    fixed_leader=False,
    n_sim=10_000,
    rng=0,
    confidence_level=0.95,
) -> SotaDistribution:
    """Distribution of the best accuracy among entries that depend on a leading classifier.

    Parameters
    ----------
    n : int
        Number of test examples.
    thetas_or_theta : float or array_like, shape (m,)
        Accuracy of every entry (a single value needs ``m``), or of each entry. The
        order does not matter.
    m : int, optional
        Number of entries (required with a single accuracy).
    rho : float, default 0
        Correlation between each entry's per-example correctness and the leading
        classifier's, in [0, 1]. 0 gives independent entries, 1 (with equal
        accuracies) entries identical to the leader.
    theta_leader : float, optional
        Accuracy θ_0 of the leading classifier (default: the largest accuracy, as the
        paper's θ_0 = θ_SOTA).
    fixed_leader : bool, default False
        Fix the leader's outcome vector y_0 to exactly ``round(n θ_0)`` correct
        examples in every test set (the paper's ``fixed = TRUE`` scenario) instead
        of drawing it anew (``y_0 ~ Bernoulli(θ_0)``).
    n_sim : int, default 10000
        Simulated test sets when the accuracies take more than 8 distinct values.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness (simulation only).
    confidence_level : float, default 0.95
        Probability of ``[lower, upper]``.

    Returns
    -------
    SotaDistribution
        ``method="exact"`` (at most 8 distinct accuracies) or ``"simulation"``; ``m``
        is the number of entries (the leader is not one of them).

    Raises
    ------
    ValueError
        On invalid ``n``, accuracies, ``m``, ``theta_leader``, ``n_sim`` or ``rng``,
        ``rho`` outside [0, 1], or a ``rho`` that these accuracies cannot attain.

    Notes
    -----
    Møllersen & Holsbø, §4.3, eq. 10, after Boland, Proschan & Tong (1989): a latent
    leading classifier answers example i correctly (Y_0i = 1) with probability θ_0;
    given Y_0, the m entries are independent, entry j being wrong where the leader is
    right with probability ``(θ_0 - ρ σ_0j - θ_0 θ_j)/θ_0`` and right where the leader
    is wrong with probability ``((1 - θ_0) θ_j - ρ σ_0j)/(1 - θ_0)``, with
    ``σ_0j = sqrt(θ_0(1-θ_0) θ_j(1-θ_j))``: entry j keeps its accuracy θ_j and
    ``corr(Y_0i, Y_ji) = ρ``. The leader is not among the m entries, so the result
    does not depend on their order (the earlier implementation took the first entry
    as the leader and gave followers the accuracy ``ρ θ_1 + (1-ρ) θ_j``). Given the
    leader's K correct answers the entries' counts are independent sums of two
    binomials: exact by conditioning on K for few distinct accuracies, simulated
    otherwise (``O(n_sim · m)``).

    Paper values (n = 3000, m = 1000, ρ = 0.6, θ_0 = 0.9, θ_j spread uniformly over
    [θ_max - 0.025, θ_max], θ_max = 0.9 + 0.025/1001): E = 0.9101, sd = 0.00365, upper
    limit 0.91733. With identical θ_j = 0.9 and a fixed y_0 the upper limit is also
    0.91733 (sd 0.00148).

    References
    ----------
    Møllersen, K. & Holsbø, E. Accounting for multiplicity in machine learning
    benchmark performance. arXiv:2303.07272. Boland, P. J., Proschan, F. & Tong, Y. L.
    (1989). Modelling dependence in simple and indirect majority systems. J. Appl.
    Probab. 26, 81–88.

    Examples
    --------
    >>> d = sota_distribution_dependent(3000, 0.9, 1000, 1.0)
    >>> round(d.expected, 3)  # all copy the leader: no multiplicity gain
    0.9
    """
    n, thetas, rho, leader, fixed, n_sim, rng, confidence_level = _sota_distribution_dependent_iv(
        n, thetas_or_theta, m, rho, theta_leader, fixed_leader, n_sim, rng, confidence_level
    )
    if np.unique(thetas).size <= 8:
        cdf_best, method = _dependent_exact(n, thetas, leader, rho, fixed), "exact"
    else:
        cdf_best, method = _dependent_simulated(n, thetas, leader, rho, fixed, n_sim, rng), "simulation"
    pmf_best = np.diff(cdf_best, prepend=0.0)
    cdf_z = np.cumsum(np.clip(pmf_best, 0.0, None)[::-1])  # Z = n - best
    return _from_cdf_of_min(cdf_z, thetas.size, n, confidence_level, method)


# --------------------------------------------------------------------------- adjusted
def _adjusted_sota_iv(best, m, n, standard_error, alpha, estimates, standard_errors, rho=None):
    if rho is not None:
        rho = check_real(rho, "rho")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"`rho` must be a correlation in [0, 1] (got {rho!r}).")
    best = check_real(best, "best")
    m = check_int(m, "m", minimum=1)
    alpha = check_open_unit(alpha, "alpha")
    if (n is None) == (standard_error is None):
        raise ValueError("Give exactly one of `n` (accuracy-like metric) or `standard_error`.")
    if n is not None:
        n = check_int(n, "n", minimum=1)
        if not 0.0 <= best <= 1.0:
            raise ValueError(f"`best` must be an accuracy in [0, 1] when `n` is given (got {best!r}).")
    else:
        standard_error = check_real(standard_error, "standard_error")
        if standard_error <= 0:
            raise ValueError(f"`standard_error` must be positive (got {standard_error!r}).")
    if estimates is not None:
        estimates = as_sample(estimates, "estimates")
        if estimates.size > m:
            raise ValueError(
                f"`estimates` holds {estimates.size} scores for m = {m} entries; m counts "
                "every entry ever scored, so it cannot be smaller."
            )
        if n is not None and np.any((estimates < 0) | (estimates > 1)):
            raise ValueError("`estimates` must be accuracies in [0, 1] when `n` is given.")
    if standard_errors is not None:
        if estimates is None or n is not None:
            raise ValueError("`standard_errors` goes with `estimates` and `standard_error` (normal method).")
        standard_errors = as_sample(standard_errors, "standard_errors")
        if standard_errors.size != estimates.size or np.any(standard_errors <= 0):
            raise ValueError("`standard_errors` must hold one positive value per estimate.")
    return best, m, n, standard_error, alpha, estimates, standard_errors, rho


def _expected_max_accuracy(theta: float, m: int, n: int) -> float:
    """E[θ̂_max] = Σ_{k<n} P(max count > k) / n = Σ_k -expm1(m log F(k)) / n.

    Only counts within 60 standard deviations of nθ are evaluated: below them every
    term is 1 (F(k)^m underflows), above them every term is 0 to double precision.
    """
    half = 60.0 * np.sqrt(n * theta * (1 - theta)) + 60.0
    lo = int(max(0, np.floor(n * theta - half)))
    hi = int(min(n, np.ceil(n * theta + half)))
    k = np.arange(lo, hi)
    log_cdf = stats.binom.logcdf(k, n, theta)
    return float((lo + np.sum(-np.expm1(m * log_cdf))) / n)


# long because its docstring states the identical and the non-identical forms
def adjusted_sota(
    best, m, *, n=None, standard_error=None, alpha=0.05, estimates=None, standard_errors=None, rho=None
) -> AdjustedSota:
    """Debiased estimate and lower bound of the state of the art among m entries.

    Parameters
    ----------
    best : float
        Best observed score (an accuracy in [0, 1] when ``n`` is given).
    m : int
        Number of entries ever scored on this test set (not only those shown).
    n : int, optional
        Number of test examples, for an accuracy-like metric (exact binomial method).
    standard_error : float, optional
        Standard error of the best entry's score (e.g. the ``standard_error`` of
        :func:`paired_test_bootstrap`), for any metric (normal approximation).
    alpha : float, default 0.05
        Family-wise significance level of the bound (a level of a test, hence
        ``alpha`` rather than a ``confidence_level``): ``lower`` is the smallest θ not
        rejected by the one-sided tests "the best of m entries of true score θ reaches
        ``best``" at the Šidák-adjusted level ``1 - (1 - α/2)^(1/m)`` each, the lower
        end of the multiplicity-adjusted two-sided interval at level ``1 - alpha``.
    estimates : array_like, optional
        Every entry's own score (the best included; at most m values, entries
        missing from it are taken at the median). Given, the entries are *not*
        assumed equally good: the non-identical form (Møllersen & Holsbø, §4.2,
        eq. 8) with the entries' scores shrunk toward their mean.
    standard_errors : array_like, optional
        With ``estimates`` and the normal method: each entry's standard error
        (default: ``standard_error`` for all).
    rho : float, optional
        Dependence of the entries: the correlation, in [0, 1], of each entry's
        per-example outcomes with a leading classifier's (Møllersen & Holsbø, §4.3,
        eq. 10; :func:`outcome_dependence` estimates it from the outcomes). None or 0:
        independent entries.

    Returns
    -------
    AdjustedSota
        ``naive`` (= best), ``estimate``, ``lower``, ``method``, ``m``.

    Raises
    ------
    ValueError
        Unless exactly one of ``n`` and ``standard_error`` is given, or on an invalid
        ``best``, ``m``, ``n``, ``standard_error`` or ``alpha``.

    Notes
    -----
    Binomial (Møllersen & Holsbø, §3): the estimate is the θ whose E[θ̂_max] (of m
    identical independent entries, :func:`sota_distribution`) equals ``best``
    (root found with ``scipy.optimize.brentq``); the lower bound is the θ at which
    ``P(θ̂_max >= best) = α/2``, i.e. the one-sided Clopper–Pearson bound for
    ``x = round(best · n)`` successes at level ``1 - (1 - α/2)^(1/m)``:
    ``θ_L = Beta⁻¹(a; x, n - x + 1)`` with ``a = 1 - (1 - α/2)^(1/m)``.

    Normal, with ``se`` the standard error: ``estimate = best - E[max of m N(0,1)] · se``
    and ``lower = best - Φ⁻¹((1 - α/2)^(1/m)) · se``.

    These assume all m entries equally good. With one leader at 0.90 and 49 entries
    at 0.80 on 3,600 examples, the identical form returns 0.8888, 2.25 standard
    errors below the leader's score, although the 49 others cannot reach 0.90. With
    ``estimates``, the entries' accuracies are ``θ_j(w) = c + w (θ̂_j - c)`` (c the
    mean score), the law of the best score is eq. 8, ``F(z) = 1 - Π_j (1 - P(X_j <=
    z))`` (binomial) or its normal analogue, w is chosen so that E[θ̂_max] = best
    (the authors' shrinkage of observed scores, ``SOTA_accuracy_shrink.R``), and the
    estimate is ``max_j θ_j(w)``; the lower bound is ``max_j θ_j(w_L)`` with
    ``P(θ̂_max >= best) = α/2`` at ``w_L``. When even identical entries at c would
    reach ``best`` (w = 0), the identical form applies. ``shrinkage`` reports w.

    Dependent (``rho`` > 0; ``model="dependent"``): the m entries, of equal accuracy θ,
    are independent given a latent leader's outcomes y_0 ~ Bernoulli(θ) and correlate
    with it at ρ (eq. 10, :func:`sota_distribution_dependent`); the estimate is the θ
    whose E[θ̂_max] equals ``best`` and the bound the θ at which P(θ̂_max >= best) = α/2.
    At ρ = 1 every entry is the leader: the estimate is ``best`` (unbiased, §4.1) and
    the bound Clopper–Pearson's at α/2 whatever m (ten copies of one classifier are
    one classifier). The binomial law is exact (conditioning on the leader's count)
    while its grid has at most ``_DEPENDENT_EXACT_CELLS`` cells; beyond, and for the
    normal method, its Gaussian analogue ``θ + s(ρ Z_0 + sqrt(1-ρ²) Z_j)`` is used
    (``s = sqrt(θ(1-θ)/n)`` or ``standard_error``), so ``E[max] = θ + sqrt(1-ρ²)
    E[max of m N(0,1)] s``. With ``estimates`` as well, the form that adjusts less is
    kept: each leaves out what the other models (the spread of the entries, their
    dependence), and either omission only enlarges the adjustment.

    For ``m = 1`` the estimate equals ``best``.

    References
    ----------
    Møllersen, K. & Holsbø, E. Accounting for multiplicity in machine learning
    benchmark performance. arXiv:2303.07272.

    Examples
    --------
    >>> a = adjusted_sota(0.9173, 1000, n=3000)
    >>> round(a.estimate, 3), round(a.lower, 3)
    (0.9, 0.895)
    """
    best, m, n, se, alpha, estimates, ses, rho = _adjusted_sota_iv(
        best, m, n, standard_error, alpha, estimates, standard_errors, rho
    )
    identical = _adjusted_identical(best, m, n, se, alpha)
    if m == 1:
        return identical
    independent = identical if estimates is None else _nonidentical(best, m, n, se, alpha, estimates, ses, identical)
    if not rho:
        return independent
    dependent = _adjusted_dependent(best, m, n, se, alpha, rho)
    return dependent if dependent.estimate >= independent.estimate else independent


def _adjusted_identical(best, m, n, se, alpha) -> AdjustedSota:
    """The identical-entries form of :func:`adjusted_sota`."""
    # a = 1 - (1 - α/2)^(1/m), computed without cancellation for large m.
    a = -np.expm1(np.log1p(-alpha / 2) / m)
    if se is not None:
        estimate = best - expected_max_normal(m) * se
        lower = best - stats.norm.isf(a) * se
        return AdjustedSota(best, float(estimate), float(lower), "normal", m, alpha, None, se)
    # Clopper–Pearson's lower limit at the successes best·n, unrounded (the beta form is continuous in them): the
    # pooled accuracy of two files, 593.5 of 1,000, rounded to 593 as an accuracy and to 594 as 1 - an error rate
    # (the state of the art of a board and of its mirror differed; a statistician's finding)
    x = min(max(best * n, 0.0), float(n))
    lower = 0.0 if x <= 0 else float(special.betaincinv(x, n - x + 1, a))
    eps = 1e-12
    lo, hi = eps, 1.0 - eps
    f = _remembered(lambda theta: _expected_max_accuracy(theta, m, n) - best)
    if f(lo) >= 0:
        estimate = 0.0
    elif f(hi) <= 0:
        estimate = 1.0
    else:
        estimate = optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13)
    return AdjustedSota(best, float(estimate), lower, "binomial", m, alpha, n, None)


def _shrunk(estimates: np.ndarray, m: int, n: int | None, se: float, ses: np.ndarray | None = None):
    """The m entries' scores (missing ones at the contenders' median), who contends, and the centre c of θ(w).

    Returns ``(c, values, counts, value_ses, contends)``: the distinct (score, standard error) pairs, how
    many entries hold each (``value_ses`` None without ``ses``), and whether each contends: the best score
    and every score within 12 standard deviations of the runner-up's (:func:`_contending`). Contenders
    are shrunk toward c, their mean; the others keep their observed scores in the law of the maximum.
    An entry far below (a submission at chance level) so moves neither c nor the law: shrunk toward c
    with its own large se, it had tightened the bound by up to 7 se, and in c it had spread the
    competitors apart (0.7849 to 0.7961 for one entry at 0.10 beside five at 0.77-0.83, n = 500: two
    statisticians' findings). Sorted and summed in sorted order: the entries' order changes no bit.
    """
    pad = m - estimates.size
    # the missing ones at the median of the runner-up's window (a far entry moved the median; the best alone would
    # put every missing entry at the leader's score: one example less for the runner-up moved the bound by 0.014)
    own = _contending(estimates, np.ones(estimates.size, dtype=np.int64), n, se, ses, reach=False)
    scores = np.concatenate([estimates, np.full(pad, np.median(estimates[own]))])
    if ses is None:
        values, counts = np.unique(scores, return_counts=True)
        value_ses = None
    else:
        pairs, counts = np.unique(
            np.column_stack([scores, np.concatenate([ses, np.full(pad, np.median(ses[own]))])]),
            axis=0,
            return_counts=True,
        )
        values, value_ses = pairs[:, 0].copy(), pairs[:, 1].copy()
    contends = _contending(values, counts, n, se, value_ses)
    centre = float(np.repeat(values[contends], counts[contends]).mean())
    return centre, values, counts, value_ses, contends


def _contending(values, counts, n: int | None, se: float, value_ses, reach: bool = True) -> np.ndarray:
    """The best score and those within 12 standard deviations (at the runner-up's score) of the runner-up (of the
    best, at its score, when the runner-up's 12 standard deviations do not reach the best):
    as far as :func:`_binomial_max` and :func:`_normal_max` read the law of the maximum. Equal scores are
    ordered by their standard errors, so the runner-up's window is the same whatever the entries' order."""
    order = np.lexsort((np.zeros(values.size) if value_ses is None else value_ses, values))
    ranked = np.repeat(order, counts[order])  # entries, worst first
    runner = ranked[-2] if ranked.size >= 2 else ranked[-1]

    def window(j) -> tuple[float, float]:  # (score, 12 standard deviations at it)
        x = float(values[j])
        if n is not None:
            return x, 12 * (np.sqrt(n * x * (1 - x)) + 1.0) / n
        return x, 12 * (float(value_ses[j]) if value_ses is not None else se)

    x, width = window(runner)
    # Scores within rounding of a window's edge are on it (:data:`._resample.TIE_RELATIVE` of the scores' magnitude):
    # a board's and its mirror's means differ by an ulp, and an entry exactly 12 standard deviations below the
    # runner-up contended on one and not on the other (the centre c moved: estimates 0.7642 and 0.7615, the mirror's
    # shrinkage 0.75 instead of 0.92; a property hunt's finding)
    tol = TIE_RELATIVE * max(float(np.max(np.abs(values))), abs(x), width)
    # A runner-up that cannot reach the best contends no more than any other entry far below (``reach``): two
    # entries, a loss 10^4 times the leader's was shrunk with it toward their mean and moved its bound from 1.07
    # to 4.99 (a statistician's finding). Without ``reach``, the runner-up's window whatever (the missing entries'
    # median: :func:`_shrunk`).
    if reach and values[ranked[-1]] > x + width + tol:
        x, width = window(ranked[-1])
    return values >= x - width - tol


def _binomial_max(values, counts, n):
    """(E[θ̂_max], P(θ̂_max >= x)) of independent entries with accuracies ``values`` x ``counts``.

    Møllersen & Holsbø, §4.2, eq. 8: ``P(max <= c) = Π_j P(X_j <= c)``, evaluated on the
    counts within 12 standard deviations of the best entry (entries far below it add
    nothing there).
    """
    top = float(values.max())
    sd = np.sqrt(n * top * (1 - top)) + 1.0
    lo = int(max(0, np.floor(n * top - 12 * sd)))
    hi = int(min(n, np.ceil(n * top + 12 * sd)))
    c = np.arange(lo, hi + 1)
    keep = n * values + 12 * (np.sqrt(n * values * (1 - values)) + 1.0) >= lo
    log_cdf = (counts[keep, None] * stats.binom.logcdf(c[None, :], n, values[keep, None])).sum(axis=0)
    cdf = np.exp(log_cdf)
    expected = (lo + np.sum(1.0 - cdf[:-1])) / n

    def exceed(x):
        k = int(np.ceil(x * n - 1e-9)) - 1  # P(max >= x) = 1 - P(max <= ceil(xn) - 1)
        return 1.0 if k < lo else (0.0 if k >= hi else float(1.0 - cdf[k - lo]))

    return expected, exceed


#: Entries per array operation of :func:`_normal_max`.
_MAX_CHUNK = 512
#: Grid points x entries one evaluation of the normal maximum's law may cost before its grid is coarsened.
_MAX_WORK = 300_000


def _log_cdf_max(grid, values, ses, counts, cut):
    """``log P(max <= g)`` on ``grid``: Σ_j c_j log Φ((g - θ_j)/s_j), entry j read below ``cut[j]`` only."""
    keep = np.flatnonzero(cut > 0)
    keep = keep[np.argsort(-cut[keep], kind="stable")] if keep.size > _MAX_CHUNK else keep
    log_cdf = np.zeros(grid.size)
    for start in range(0, keep.size, _MAX_CHUNK):
        idx = keep[start : start + _MAX_CHUNK]
        top = int(cut[idx].max())
        z = (grid[None, :top] - values[idx, None]) / ses[idx, None]
        terms = counts[idx, None] * special.log_ndtr(z)
        terms[np.arange(top)[None, :] >= cut[idx, None]] = 0.0
        log_cdf[:top] += terms.sum(axis=0)
    return log_cdf


def _normal_max(values, ses, counts, expected: bool = True, spread: float | None = None):
    """(E[max], P(max >= x)) of independent normal scores N(values, ses²), on a fine grid.

    ``P(max <= g) = Π_j Φ((g - θ_j)/s_j)^c_j`` (Møllersen & Holsbø, §4.2, eq. 8). An
    entry's factor is read only on the grid points below θ_j + 12 s_j: above them
    ``log Φ > -2e-33`` leaves the product unchanged in double precision. A board whose
    entries x 4001 grid points exceed ``_MAX_WORK`` gets a coarser grid (at least 201
    points; the trapezoid rule on 1 - cdf, flat at both ends, stays accurate; docs/scale.md).
    ``P(max >= x)`` is computed at x itself, never interpolated on the grid, so ``expected=False``
    (only the tail is wanted) skips the grid and returns E[max] as NaN.
    """
    spread = float(ses.max()) if spread is None else spread  # the grid's half-width, in se of the contenders
    points = 4001
    reach = values + 12 * ses
    read = int(np.count_nonzero(reach >= values.max() - 12 * spread))  # entries read at the grid's first point
    coarse = read * points > _MAX_WORK

    def exceed(x):
        at = np.array([x])
        return float(-np.expm1(_log_cdf_max(at, values, ses, counts, (reach >= x).astype(int))[0]))

    if not expected:  # only the tail is wanted: no grid
        return float("nan"), exceed
    if coarse:
        points = max(201, 2 * (_MAX_WORK // (2 * read)) + 1)
    grid = np.linspace(values.max() - 12 * spread, values.max() + 12 * spread, points)
    cut = np.searchsorted(grid, reach, side="right")
    cdf = np.exp(_log_cdf_max(grid, values, ses, counts, cut))
    mean = grid[0] + float(integrate.trapezoid(1.0 - cdf, grid))
    # P(max >= x) at x itself, never interpolated: the grid's step follows the widest se, and a leader far more
    # certain than the others (se 3.3e-5 beside 0.0115 and 0.029) had its bound set by the step, 5 of its se below
    # its score (500 at se 3.3e-7; the best alone at 1.96), and its constant runs' rounding (se 7.9e-17) moved it too
    return mean, exceed


def _remembered(f):
    """``f`` evaluated at most once per point: ``brentq`` evaluates the ends of its bracket again, which the
    callers have just evaluated to see whether a root lies between (two laws of the maximum of 20,000 entries
    saved per root; the values, hence the root, are the same; issue 27)."""
    return lru_cache(maxsize=None)(f)


def _nonidentical(best, m, n, se, alpha, estimates, ses, identical: AdjustedSota):
    """Estimate and lower bound under the non-identical model with the entries' own scores.

    The contenders' accuracies (:func:`_shrunk`) are modelled as ``θ_j(w) = c + w (θ̂_j - c)``,
    shrunk toward their mean c (w = 0: identical contenders, the identical form; w = 1: the
    observed scores), the other entries at their observed scores, with w chosen so that
    E[θ̂_max] equals ``best`` (Møllersen & Holsbø's shrinkage of the observed scores); the
    estimate is max_j θ_j(w). The lower bound takes the w at which P(θ̂_max >= best) = α/2.
    """
    centre, values, counts, ses_full, contends = _shrunk(estimates, m, n, se, ses)
    if ses_full is None:
        ses_full = np.full(values.size, se)

    def law(w, expected=True):
        return _law_of_max(
            np.where(contends, centre + w * (values - centre), values), counts, n, ses_full, contends, expected
        )

    def solve(f, fallback):
        f = _remembered(f)
        if f(0.0) >= 0:
            return None, fallback
        if f(1.0) <= 0:
            return 1.0, float(values.max())
        w = optimize.brentq(f, 0.0, 1.0, xtol=1e-7)
        return w, float(centre + w * (values.max() - centre))

    if counts[contends].sum() == 1:  # the best alone: no shrinkage moves it (the law does not depend on w)
        w_est, estimate, lower = 1.0, *_alone(best, values, counts, ses_full, contends, n, alpha)
    else:
        w_est, estimate = solve(lambda w: law(w)[0] - best, identical.estimate)
        _, lower = solve(lambda w: law(w, expected=False)[1](best) - alpha / 2, identical.lower)
    return AdjustedSota(
        best,
        estimate,
        min(lower, estimate),
        identical.method,
        m,
        alpha,
        n,
        identical.standard_error,
        "nonidentical",
        w_est,
    )


def _law_of_max(thetas, counts, n, ses, contends, expected: bool):
    """(E[θ̂_max], P(θ̂_max >= x)) of entries at ``thetas``: binomial on ``n`` trials, else normal with ``ses``
    (its grid spread by the contenders' largest)."""
    if n is not None:
        return _binomial_max(np.clip(thetas, 1e-12, 1 - 1e-12), counts, n)
    return _normal_max(thetas, ses, counts, expected, spread=float(ses[contends].max()))


def _alone(best, values, counts, ses, contends, n, alpha) -> tuple[float, float]:
    """(estimate, lower bound) when the best entry alone contends (every other entry is beyond the reach of its
    12 standard deviations): the others at their observed scores, the best's own accuracy t solved for
    E[θ̂_max](t) = best and for P(θ̂_max >= best; t) = α/2 (eq. 8 with one unknown)."""
    top = int(np.flatnonzero(contends)[0])
    sd = np.sqrt(best * (1 - best) / n) + 1.0 / n if n is not None else float(ses[top])

    def law(t, expected=True):
        return _law_of_max(np.where(np.arange(values.size) == top, t, values), counts, n, ses, contends, expected)

    low, high = best - 12 * sd, best
    if n is not None:
        low, high = max(low, 1e-12), min(high, 1 - 1e-12)

    def root(f) -> float:
        f = _remembered(f)
        return low if f(low) >= 0 else (high if f(high) <= 0 else float(optimize.brentq(f, low, high, xtol=1e-12)))

    estimate = root(lambda t: law(t)[0] - best)
    lower = root(lambda t: law(t, expected=False)[1](best) - alpha / 2)
    return estimate, lower


# --------------------------------------------------------------------------- dependent entries
#: Cells (leader counts x follower counts) up to which the dependent law is computed exactly.
_DEPENDENT_EXACT_CELLS = 50_000
#: Standard deviations kept on each side of a binomial (the mass beyond is below 1e-15).
_WIDTH = 8.0


def _window(lo: float, hi: float, sd: float, top: int) -> np.ndarray:
    """Integers from ``lo - _WIDTH sd`` to ``hi + _WIDTH sd``, within [0, top]."""
    return np.arange(max(0, int(np.floor(lo - _WIDTH * sd - 1))), min(top, int(np.ceil(hi + _WIDTH * sd + 1))) + 1)


def _dependent_grids(theta: float, n: int, rho: float):
    """The leader's counts K, the followers' kept (A) and gained (B) counts given K, and the cells."""
    p1, p0 = theta + rho * (1 - theta), theta * (1 - rho)  # P(Y_j = 1 | Y_0 = 1), P(Y_j = 1 | Y_0 = 0)
    k = _window(n * theta, n * theta, np.sqrt(n * theta * (1 - theta)), n)
    a = _window(k[0] * p1, k[-1] * p1, np.sqrt(k[-1] * p1 * (1 - p1)), int(k[-1]))
    b = _window((n - k[-1]) * p0, (n - k[0]) * p0, np.sqrt((n - k[0]) * p0 * (1 - p0)), int(n - k[0]))
    return p1, p0, k, a, b


def _binom_pmf(x: np.ndarray, trials: np.ndarray, p: float, log_factorial: np.ndarray) -> np.ndarray:
    """Binomial pmf from a table of log k! (0 <= p <= 1; 0 outside 0..trials): many times faster than scipy's.

    At p = 0 or p = 1, ``xlogy``/``xlog1py`` take 0·log 0 as 0, so the pmf is exact there: at a dependence
    ρ within rounding of 1, P(Y_j = 1 | Y_0 = 1) = θ + ρ(1 - θ) rounds to 1.0, where x·log1p(-p) gave NaN.
    """
    x, trials = np.broadcast_arrays(x, trials)
    inside = (x >= 0) & (x <= trials)
    xs, ts = np.where(inside, x, 0), np.where(inside, trials, 0)
    if 0.0 < p < 1.0:  # the common case: log p and log(1 - p) once, not per cell
        powers = xs * np.log(p) + (ts - xs) * np.log1p(-p)
    else:
        powers = special.xlogy(xs, p) + special.xlog1py(ts - xs, -p)
    log = log_factorial[ts] - log_factorial[xs] - log_factorial[ts - xs] + powers
    return np.where(inside, np.exp(log), 0.0)


def _dependent_law(theta: float, m: int, rho: float, *, n: int | None = None, se: float | None = None):
    """(E[θ̂_max], x -> P(θ̂_max >= x)) of m entries of accuracy θ correlated at ρ with a latent leader.

    Binomial (``n``): Møllersen & Holsbø's eq. 10 exactly, conditioning on the leader's
    correct count K ~ Bin(n, θ): an entry then gets ``Bin(K, p1) + Bin(n - K, p0)``
    right (one FFT convolution for all K) and ``P(max <= c) = Σ_K P(K) P(C <= c | K)^m``;
    at ρ = 1 the maximum is the leader's count. Its Gaussian analogue (``se``, or
    ``s = sqrt(θ(1-θ)/n)`` when the exact grid would exceed ``_DEPENDENT_EXACT_CELLS``):
    ``θ + s(ρ Z_0 + sqrt(1-ρ²) Z_j)``, integrated over Z_0.
    """
    if n is not None and rho >= 1.0:
        return theta, lambda x: float(stats.binom.sf(np.ceil(x * n - 1e-9) - 1, n, theta))
    if n is not None:
        p1, p0, k, a, b = _dependent_grids(theta, n, rho)
        if k.size * (a.size + b.size) <= _DEPENDENT_EXACT_CELLS:
            wk = stats.binom.pmf(k, n, theta)
            log_factorial = special.gammaln(np.arange(n + 1) + 1.0)
            pa = _binom_pmf(a[None, :], k[:, None], p1, log_factorial)
            pb = _binom_pmf(b[None, :], (n - k)[:, None], p0, log_factorial)
            conv = np.clip(signal.fftconvolve(pa, pb, axes=1), 0.0, None)
            cdf = np.minimum(np.cumsum(conv, axis=1) / conv.sum(axis=1, keepdims=True), 1.0)
            with np.errstate(divide="ignore"):
                cdf_max = np.minimum(np.exp(m * np.log(cdf)).T @ (wk / wk.sum()), 1.0)
            c0 = int(a[0] + b[0])  # P(max <= c) = 0 below c0 (to 1e-15)
            expected = (c0 + float(np.sum(1.0 - cdf_max))) / n

            def exceed_exact(x):
                c = int(np.ceil(x * n - 1e-9)) - 1 - c0  # P(max >= x) = 1 - P(max <= ceil(xn) - 1)
                return 1.0 if c < 0 else (0.0 if c >= cdf_max.size else float(1.0 - cdf_max[c]))

            return expected, exceed_exact
        se = float(np.sqrt(theta * (1 - theta) / n))
    spread = np.sqrt(max(0.0, 1.0 - rho * rho))
    expected = theta + spread * expected_max_normal(m) * se

    def exceed(x):
        t = (x - theta) / se
        if spread < 1e-6:
            return float(stats.norm.sf(t))
        z = np.linspace(-9.0, 9.0, int(np.clip(np.ceil(72.0 * max(rho, 1e-3) / spread), 1201, 200_001)))
        inner = np.exp(m * special.log_ndtr((t - rho * z) / spread))
        return float(1.0 - integrate.trapezoid(stats.norm.pdf(z) * inner, z))

    return expected, exceed


def _adjusted_dependent(best, m, n, se, alpha, rho) -> AdjustedSota:
    """The dependent form of :func:`adjusted_sota` (eq. 10): equal accuracies θ, correlation ρ."""
    if n is None:  # a location family: θ - best is a fixed quantile of the standardized law
        law = _dependent_law(0.0, m, rho, se=1.0)
        estimate = best - law[0] * se
        q = optimize.brentq(lambda t: law[1](t) - alpha / 2, -40.0, 40.0, xtol=1e-12)
        return AdjustedSota(
            best, float(estimate), float(best - q * se), "normal", m, alpha, None, se, "dependent", None, rho
        )
    eps = 1e-12
    # both roots lie below best, within a few standard deviations of the maximum of m: bracket them there
    near = max(eps, best - 12.0 * np.sqrt(max(best * (1 - best), 1.0 / n) / n) - 2.0 / n)

    def root(f):
        f = _remembered(f)
        lo, hi = (near, best) if eps < near < best < 1.0 - eps and f(near) < 0 < f(best) else (eps, 1.0 - eps)
        if f(lo) >= 0:
            return 0.0
        if f(hi) <= 0:
            return 1.0
        return float(optimize.brentq(f, lo, hi, xtol=1e-10))

    estimate = root(lambda theta: _dependent_law(theta, m, rho, n=n)[0] - best)
    lower = 0.0 if best <= 0 else root(lambda theta: _dependent_law(theta, m, rho, n=n)[1](best) - alpha / 2)
    return AdjustedSota(best, estimate, min(lower, estimate), "binomial", m, alpha, n, None, "dependent", None, rho)


def _outcome_dependence_iv(outcomes) -> np.ndarray:
    try:
        x = np.asarray(outcomes, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`outcomes` must be an (entries, examples) array of per-example outcomes.") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"`outcomes` must be 2-D, (entries, examples >= 2) (got shape {x.shape}).")
    if not np.all(np.isfinite(x)):
        raise ValueError("`outcomes` contains NaN or inf.")
    return x


def outcome_dependence(outcomes) -> tuple[float, int]:
    """Dependence of entries scored on one test set, and how many distinct outcome vectors they have.

    Parameters
    ----------
    outcomes : array_like, shape (entries, examples)
        Each entry's per-example outcomes (correctness, or a loss), averaged over its files.

    Returns
    -------
    (rho, distinct) : (float, int)
        ``rho`` in [0, 1], the estimated correlation of an entry's outcomes with the
        leading classifier of eq. 10 (for :func:`adjusted_sota`'s ``rho``); ``distinct``
        the number of distinct outcome vectors (identical ones are one classifier, to
        be counted once in m).

    Raises
    ------
    ValueError
        If ``outcomes`` is not a finite 2-D array with at least 2 examples.

    Notes
    -----
    Møllersen & Holsbø, §4.3: entries independent given the leader's outcomes and
    correlated with them at ρ correlate pairwise at ``ρ²`` (the covariance of two
    entries is that of their conditional means, ``ρ² σ_j σ_k``). So
    ``ρ̂ = sqrt(max(0, r̄))`` with r̄ the mean Pearson correlation over pairs of distinct,
    non-constant outcome vectors, computed in O(entries · examples) as
    ``(|Σ_j z_j|² - E) / (E(E - 1))`` with z_j the standardized vectors of unit norm.
    Fewer than two such vectors: ρ̂ = 0 (independence, the largest adjustment).
    Rows are deduplicated first (:func:`distinct_rows`, in the order of their digests), so
    the entries' order does not matter.

    Examples
    --------
    >>> y = np.random.default_rng(0).random(500) < 0.8
    >>> rho, distinct = outcome_dependence(np.stack([y, y, y]))
    >>> distinct
    1
    """
    x = _outcome_dependence_iv(outcomes)
    x = x[distinct_rows(x)]
    centred = x - x.mean(axis=1, keepdims=True)
    norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
    z = centred[norms > 1e-12 * np.sqrt(x.shape[1])] / norms[norms > 1e-12 * np.sqrt(x.shape[1]), None]
    e = z.shape[0]
    if e < 2:
        return 0.0, int(x.shape[0])
    total = z.sum(axis=0)
    r_mean = (float(total @ total) - e) / (e * (e - 1))
    # a mean correlation within rounding of 0 is 0: uncorrelated outcomes gave r̄ = ±1e-16 as their sum's rounding
    # fell, so ρ̂ = sqrt(eps) = 1.5e-8 for an error rate and 0 for its accuracy (a board and its mirror showed
    # different ρ, and the dependent form where the other had none: a property hunt's finding)
    if r_mean <= e * TIE_RELATIVE:
        r_mean = 0.0
    return float(np.sqrt(min(1.0, max(0.0, r_mean)))), int(x.shape[0])


def distinct_rows(x: np.ndarray) -> np.ndarray:
    """Index of one row of each distinct row of a 2-D array, ordered by the rows' SHA-256 digests.

    Equal rows have equal digests (``-0.0`` is read as ``0.0``); the digests make the
    result independent of the rows' order in O(rows x columns), where ``np.unique(axis=0)``
    sorts the rows column by column.
    """
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64) + 0.0)
    first: dict[bytes, int] = {}
    for i, row in enumerate(x):
        first.setdefault(hashlib.sha256(memoryview(row)).digest(), i)
    return np.array([first[d] for d in sorted(first)], dtype=np.int64)
