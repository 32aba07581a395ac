"""Multiplicity-adjusted state of the art (Møllersen & Holsbø).

With m entries scored on one test set of n examples, the best observed accuracy is the
sample maximum of m noisy estimates: an optimistic estimate of the best entry's true
accuracy. Under independent entries of accuracy θ_j the errors of entry j are
``X_j ~ Bin(n, 1 - θ_j)`` and the best accuracy is ``θ̂_max = (n - Z)/n`` with
``Z = min_j X_j``.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special, stats

from ._types import AdjustedSota, SotaDistribution
from ._validation import as_generator, check_int, check_open_unit, check_real
from .boon import expected_max_normal

__all__ = [
    "adjusted_sota",
    "sota_distribution",
    "sota_distribution_dependent",
    "sota_distribution_nonidentical",
    "sota_exceedance",
]


def _check_theta(theta, name="theta") -> float:
    try:
        return check_open_unit(theta, name)
    except ValueError:
        raise ValueError(
            f"`{name}` must be an accuracy strictly between 0 and 1 (got {theta!r})."
        ) from None


def _check_thetas(thetas, name="thetas") -> np.ndarray:
    try:
        arr = np.asarray(thetas, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be an array of accuracies.") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array (got shape {arr.shape}).")
    if not np.all((arr > 0) & (arr < 1)):
        bad = np.flatnonzero(~((arr > 0) & (arr < 1)))[0]
        raise ValueError(
            f"`{name}` must hold accuracies strictly between 0 and 1 "
            f"(index {bad} is {arr[bad]!r})."
        )
    return arr


def _log_sf(z: np.ndarray, n: int, p_err) -> np.ndarray:
    """``log P(X > z)`` for ``X ~ Bin(n, p_err)``, accurate when the sf is near 1."""
    cdf = stats.binom.cdf(z, n, p_err)
    sf = stats.binom.sf(z, n, p_err)
    with np.errstate(divide="ignore"):
        return np.where(cdf < 0.5, np.log1p(-cdf), np.log(sf))


def _from_cdf_of_min(cdf_z: np.ndarray, m: int, n: int, alpha: float, method: str):
    """SotaDistribution from ``F_Z(z) = P(Z <= z)``, z = 0..n."""
    pmf_z = np.diff(cdf_z, prepend=0.0)
    pmf_z = np.clip(pmf_z, 0.0, None)
    pmf = pmf_z[::-1].copy()  # accuracy (n - z)/n ascending: index k = n - z
    pmf /= pmf.sum()
    accuracy = np.arange(n + 1) / n
    expected = float(pmf @ accuracy)
    sd = float(np.sqrt(pmf @ (accuracy - expected) ** 2))
    cum = np.cumsum(pmf)
    lower = float(np.searchsorted(cum, (alpha / 2) * (1 - 1e-12)) / n)
    upper = float(np.searchsorted(cum, (1 - alpha / 2) * (1 - 1e-12)) / n)
    return SotaDistribution(expected, sd, lower, upper, accuracy, pmf, m, n, alpha, method)


# --------------------------------------------------------------------------- identical
def _sota_distribution_iv(m, n, theta, alpha):
    return (
        check_int(m, "m", minimum=1),
        check_int(n, "n", minimum=1),
        _check_theta(theta),
        check_open_unit(alpha, "alpha"),
    )


def sota_distribution(m, n, theta, *, alpha=0.05) -> SotaDistribution:
    """Distribution of the best accuracy among m identical independent entries.

    Parameters
    ----------
    m : int
        Number of entries scored on the test set, ``m >= 1``.
    n : int
        Number of test examples, ``n >= 1``.
    theta : float
        True accuracy of every entry, in (0, 1).
    alpha : float, default 0.05
        ``[lower, upper]`` are the ``alpha/2`` and ``1 - alpha/2`` quantiles.

    Returns
    -------
    SotaDistribution
        ``expected`` = E[θ̂_max], ``sd``, ``lower``, ``upper`` (the
        multiplicity-adjusted limits), the support ``accuracy`` and its ``pmf``;
        ``exceedance(x)`` gives P(θ̂_max >= x).

    Raises
    ------
    ValueError
        If ``m`` or ``n`` is not a positive integer, or ``theta``/``alpha`` is
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
    m, n, theta, alpha = _sota_distribution_iv(m, n, theta, alpha)
    z = np.arange(n + 1)
    cdf_z = -np.expm1(m * _log_sf(z, n, 1.0 - theta))
    return _from_cdf_of_min(cdf_z, m, n, alpha, "exact")


def _sota_exceedance_iv(m, n, theta, x):
    m, n, theta, _ = _sota_distribution_iv(m, n, theta, 0.05)
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
def _sota_distribution_nonidentical_iv(n, thetas, alpha):
    return check_int(n, "n", minimum=1), _check_thetas(thetas), check_open_unit(alpha, "alpha")


def sota_distribution_nonidentical(n, thetas, *, alpha=0.05) -> SotaDistribution:
    """Distribution of the best accuracy among independent entries of different accuracy.

    Parameters
    ----------
    n : int
        Number of test examples.
    thetas : array_like, shape (m,)
        True accuracy of each entry, each in (0, 1).
    alpha : float, default 0.05
        Level of the limits.

    Returns
    -------
    SotaDistribution

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer, ``thetas`` is empty or outside (0, 1),
        or ``alpha`` is outside (0, 1).

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
    n, thetas, alpha = _sota_distribution_nonidentical_iv(n, thetas, alpha)
    values, multiplicity = np.unique(thetas, return_counts=True)
    z = np.arange(n + 1)
    log_sf = np.zeros(n + 1)
    step = max(1, (1 << 22) // (n + 1))
    for start in range(0, values.size, step):
        v = values[start:start + step, None]
        mult = multiplicity[start:start + step, None]
        log_sf += (mult * _log_sf(z[None, :], n, 1.0 - v)).sum(axis=0)
    return _from_cdf_of_min(-np.expm1(log_sf), thetas.size, n, alpha, "exact")


# --------------------------------------------------------------------------- dependent
def _sota_distribution_dependent_iv(n, thetas_or_theta, m, rho, n_sim, seed, alpha):
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
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    rng = as_generator(seed)
    alpha = check_open_unit(alpha, "alpha")
    return n, thetas, rho, n_sim, rng, alpha


def sota_distribution_dependent(
    n, thetas_or_theta, m=None, rho=0.0, *, n_sim=10_000, seed=0, alpha=0.05
) -> SotaDistribution:
    """Simulated distribution of the best accuracy among dependent entries.

    Parameters
    ----------
    n : int
        Number of test examples.
    thetas_or_theta : float or array_like, shape (m,)
        Accuracy of every entry (a single value needs ``m``), or of each entry;
        the first entry is the leading classifier.
    m : int, optional
        Number of entries (required with a single accuracy).
    rho : float, default 0
        Probability that a follower copies the leader's outcome on an example, in
        [0, 1]. 0 gives independent entries, 1 identical ones.
    n_sim : int, default 10000
        Number of simulated test sets.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Source of randomness.
    alpha : float, default 0.05
        Level of the limits.

    Returns
    -------
    SotaDistribution
        The empirical distribution of θ̂_max over ``n_sim`` simulations
        (``method="simulation"``).

    Raises
    ------
    ValueError
        On invalid ``n``, accuracies, ``m``, ``rho`` outside [0, 1], ``n_sim`` or
        ``seed``.

    Notes
    -----
    Møllersen & Holsbø, §4.1/§4.3, with the leading-classifier model of Boland,
    Proschan & Tong (1989): entry 1 (the leader) is correct on each example with
    probability θ_1, independently; on each example a follower j copies the leader's
    outcome with probability ρ and otherwise is correct with probability θ_j,
    independently. (With one θ for all, every entry keeps accuracy θ; otherwise a
    follower's marginal accuracy is ``ρθ_1 + (1-ρ)θ_j``.) Given the leader's number
    of correct answers K, follower j's count is exactly
    ``Bin(K, ρ + (1-ρ)θ_j) + Bin(n-K, (1-ρ)θ_j)``, independently across followers, so
    each simulation draws counts instead of n x m outcomes. Cost: O(n_sim · m).

    References
    ----------
    Boland, P. J., Proschan, F. & Tong, Y. L. (1989). Modelling dependence in simple
    and indirect majority systems. J. Appl. Probab. 26, 81–88.

    Examples
    --------
    >>> d = sota_distribution_dependent(3000, 0.9, 1000, 1.0, n_sim=2000)
    >>> round(d.expected, 2)  # all copy the leader: no multiplicity gain
    0.9
    """
    n, thetas, rho, n_sim, rng, alpha = _sota_distribution_dependent_iv(
        n, thetas_or_theta, m, rho, n_sim, seed, alpha
    )
    m = thetas.size
    followers = thetas[1:]
    best = np.empty(n_sim, dtype=np.int64)
    step = max(1, (1 << 22) // max(1, m))
    for start in range(0, n_sim, step):
        stop = min(n_sim, start + step)
        lead = rng.binomial(n, thetas[0], size=stop - start)
        top = lead.copy()
        if followers.size:
            k = lead[:, None]
            agree = rng.binomial(k, rho + (1 - rho) * followers[None, :])
            alone = rng.binomial(n - k, (1 - rho) * followers[None, :])
            top = np.maximum(top, (agree + alone).max(axis=1))
        best[start:stop] = top
    pmf_acc = np.bincount(best, minlength=n + 1) / n_sim
    cdf_z = np.cumsum(pmf_acc[::-1])  # Z = n - best
    return _from_cdf_of_min(cdf_z, m, n, alpha, "simulation")


# --------------------------------------------------------------------------- adjusted
def _adjusted_sota_iv(best, m, n, se, alpha):
    best = check_real(best, "best")
    m = check_int(m, "m", minimum=1)
    alpha = check_open_unit(alpha, "alpha")
    if (n is None) == (se is None):
        raise ValueError("Give exactly one of `n` (accuracy-like metric) or `se`.")
    if n is not None:
        n = check_int(n, "n", minimum=1)
        if not 0.0 <= best <= 1.0:
            raise ValueError(
                f"`best` must be an accuracy in [0, 1] when `n` is given (got {best!r})."
            )
    else:
        se = check_real(se, "se")
        if se <= 0:
            raise ValueError(f"`se` must be positive (got {se!r}).")
    return best, m, n, se, alpha


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


def adjusted_sota(best, m, *, n=None, se=None, alpha=0.05) -> AdjustedSota:
    """Debiased estimate and lower bound of the state of the art among m entries.

    Parameters
    ----------
    best : float
        Best observed score (an accuracy in [0, 1] when ``n`` is given).
    m : int
        Number of entries ever scored on this test set (not only those shown).
    n : int, optional
        Number of test examples, for an accuracy-like metric (exact binomial method).
    se : float, optional
        Standard error of the best entry's score (e.g. its bootstrap SE from
        :func:`paired_test_bootstrap`), for any metric (normal approximation).
    alpha : float, default 0.05
        The lower bound is the one-sided ``1 - alpha/2`` limit of the adjusted
        two-sided interval.

    Returns
    -------
    AdjustedSota
        ``naive`` (= best), ``estimate``, ``lower``, ``method``, ``m``.

    Raises
    ------
    ValueError
        Unless exactly one of ``n`` and ``se`` is given, or on an invalid ``best``,
        ``m``, ``n``, ``se`` or ``alpha``.

    Notes
    -----
    Binomial (Møllersen & Holsbø, §3): the estimate is the θ whose E[θ̂_max] (of m
    identical independent entries, :func:`sota_distribution`) equals ``best``
    (root found with ``scipy.optimize.brentq``); the lower bound is the θ at which
    ``P(θ̂_max >= best) = α/2``, i.e. the one-sided Clopper–Pearson bound for
    ``x = round(best · n)`` successes at level ``1 - (1 - α/2)^(1/m)``:
    ``θ_L = Beta⁻¹(a; x, n - x + 1)`` with ``a = 1 - (1 - α/2)^(1/m)``.

    Normal: ``estimate = best - E[max of m N(0,1)] · se`` and
    ``lower = best - Φ⁻¹((1 - α/2)^(1/m)) · se``.

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
    best, m, n, se, alpha = _adjusted_sota_iv(best, m, n, se, alpha)
    # a = 1 - (1 - α/2)^(1/m), computed without cancellation for large m.
    a = -np.expm1(np.log1p(-alpha / 2) / m)
    if se is not None:
        estimate = best - expected_max_normal(m) * se
        lower = best - stats.norm.isf(a) * se
        return AdjustedSota(best, float(estimate), float(lower), "normal", m, alpha, None, se)
    x = int(round(best * n))
    lower = 0.0 if x == 0 else float(special.betaincinv(x, n - x + 1, a))
    eps = 1e-12
    lo, hi = eps, 1.0 - eps
    f = lambda theta: _expected_max_accuracy(theta, m, n) - best  # noqa: E731
    if f(lo) >= 0:
        estimate = 0.0
    elif f(hi) <= 0:
        estimate = 1.0
    else:
        estimate = optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13)
    return AdjustedSota(best, float(estimate), lower, "binomial", m, alpha, n, None)
