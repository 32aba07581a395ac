"""Adjustment of p-values for multiple comparisons."""

from __future__ import annotations

import numpy as np

from ._validation import check_choice

__all__ = ["adjust_pvalues"]

METHODS = ("holm", "bonferroni", "bh", "none")


def _adjust_pvalues_iv(p, method):
    method = check_choice(method, "method", METHODS)
    try:
        arr = np.array(p, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`p` must be an array of p-values.") from None
    finite = arr[~np.isnan(arr)]
    if np.any((finite < 0) | (finite > 1)):
        raise ValueError("`p` must hold p-values in [0, 1] (NaN entries are ignored).")
    return arr, method


def adjust_pvalues(p, method="holm", family_size=None) -> np.ndarray:
    """Adjust a family of p-values for multiplicity.

    Parameters
    ----------
    p : array_like, any shape
        p-values in [0, 1]. NaN entries (e.g. the diagonal of a pairwise matrix) are
        not part of the family and stay NaN. For a symmetric pairwise matrix pass the
        upper triangle only, so each unordered pair counts once.
    method : {"holm", "bonferroni", "bh", "none"}, default "holm"
        Holm's step-down (family-wise error rate), Bonferroni (FWER), Benjamini–
        Hochberg step-up (false discovery rate), or no adjustment.
    family_size : int, optional
        M, the size of the family when ``p`` holds only some of its p-values (a sparse
        board compares some pairs of its M): the same as padding ``p`` with M - len(p)
        p-values of 1, which sort last. Default: the number of non-NaN p-values.

    Returns
    -------
    ndarray
        Adjusted p-values, same shape as ``p``, capped at 1.

    Raises
    ------
    ValueError
        If ``method`` is unknown or ``p`` holds values outside [0, 1].

    Notes
    -----
    With the M non-NaN p-values sorted ascending, ``p_(1) <= ... <= p_(M)``:

    * Holm (1979): ``p̃_(i) = max_{j <= i} min(1, (M - j + 1) p_(j))``;
    * Bonferroni: ``p̃_i = min(1, M p_i)``;
    * Benjamini & Hochberg (1995): ``p̃_(i) = min_{j >= i} min(1, M p_(j) / j)``.

    These equal ``statsmodels.stats.multitest.multipletests`` with methods
    ``"holm"``, ``"bonferroni"`` and ``"fdr_bh"``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    Scandinavian Journal of Statistics 6, 65–70.
    Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate. JRSS B
    57, 289–300.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    arr, method = _adjust_pvalues_iv(p, method)
    out = arr.copy()
    mask = ~np.isnan(arr)
    values = arr[mask]
    m = values.size if family_size is None else max(int(family_size), values.size)
    if values.size == 0 or method == "none":
        return out
    if method == "bonferroni":
        out[mask] = np.minimum(1.0, values * m)
        return out
    order = np.argsort(values, kind="stable")
    sorted_p = values[order]
    rank = np.arange(1, values.size + 1)
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * sorted_p))
    else:  # bh
        adjusted = np.minimum.accumulate(np.minimum(1.0, m * sorted_p / rank)[::-1])[::-1]
    result = np.empty(values.size)
    result[order] = adjusted
    out[mask] = result
    return out
