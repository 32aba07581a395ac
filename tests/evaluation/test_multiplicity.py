"""p-value adjustment: Holm (1979), Bonferroni, Benjamini–Hochberg (1995)."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from evaluation.stats import adjust_pvalues


def test_holm_reference_values():
    np.testing.assert_allclose(adjust_pvalues([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
@pytest.mark.parametrize("seed", range(5))
def test_matches_statsmodels(ours, theirs, seed):
    rng = np.random.default_rng(seed)
    p = rng.random(37) ** 3
    p[:3] = p[3]  # ties
    np.testing.assert_allclose(adjust_pvalues(p, ours), multipletests(p, method=theirs)[1], rtol=1e-12)


def test_none_returns_a_copy():
    p = np.array([0.2, 0.01])
    out = adjust_pvalues(p, "none")
    np.testing.assert_array_equal(out, p)
    out[0] = 1.0
    assert p[0] == 0.2


def test_shape_kept_and_nan_ignored():
    m = np.array([[np.nan, 0.01, 0.04], [0.01, np.nan, 0.03], [0.04, 0.03, np.nan]])
    upper = np.triu(np.ones((3, 3), bool), 1)
    only_upper = np.where(upper, m, np.nan)
    out = adjust_pvalues(only_upper)
    assert out.shape == (3, 3)
    assert np.isnan(out[~upper]).all()
    np.testing.assert_allclose(out[upper], multipletests([0.01, 0.04, 0.03], method="holm")[1])


def test_all_nan_and_empty():
    assert np.isnan(adjust_pvalues([np.nan, np.nan])).all()
    assert adjust_pvalues([]).shape == (0,)


def test_monotone_and_capped():
    p = np.linspace(0.001, 0.9, 50)
    for method in ("holm", "bonferroni", "bh"):
        out = adjust_pvalues(p, method)
        assert np.all(out >= p) and np.all(out <= 1)
        assert np.all(np.diff(out) >= 0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: adjust_pvalues([0.1], "sidak"), r"`method` must be one of 'holm', 'bonferroni', 'bh', 'none'"),
        (lambda: adjust_pvalues([0.1, 1.5]), r"`p` must hold p-values in \[0, 1\]"),
        (lambda: adjust_pvalues(["a"]), r"`p` must be an array of p-values"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
