"""Variance by source (Bouthillier et al. 2021, Fig. 1)."""

import numpy as np
import pytest
from scipy import stats

from evaluation.stats.variance_study import variance_study


def test_standard_deviations_shares_and_their_intervals():
    rng = np.random.default_rng(0)
    blocks = {
        "split": 0.8 + 0.02 * rng.standard_normal(10),
        "init": 0.8 + 0.005 * rng.standard_normal(12),
        "all": 0.8 + 0.021 * rng.standard_normal(15),
    }
    r = variance_study(blocks, confidence_level=0.9)
    assert r.sources == ("split", "init") and r.runs.tolist() == [10, 12]
    s = blocks["split"].std(ddof=1)
    assert r.sd[0] == pytest.approx(s)
    # scipy's chi-square quantiles, by hand: the interval of sigma for 9 degrees of freedom
    assert (r.sd_low[0], r.sd_high[0]) == pytest.approx(
        (np.sqrt(9 * s**2 / stats.chi2.ppf(0.95, 9)), np.sqrt(9 * s**2 / stats.chi2.ppf(0.05, 9)))
    )
    ratio = s**2 / blocks["all"].var(ddof=1)
    assert r.share[0] == pytest.approx(ratio)
    assert r.share_low[0] == pytest.approx(ratio / stats.f.ppf(0.95, 9, 14))
    assert r.total_sd == pytest.approx(blocks["all"].std(ddof=1)) and r.fixed_hpo_ratio is None
    assert r.standard_error[0] == pytest.approx(s / np.sqrt(18))


def test_fixed_hyperparameters_underestimate_the_variance():
    rng = np.random.default_rng(1)
    r = variance_study(
        {"split": rng.normal(0, 1, 30), "all": rng.normal(0, 2, 30), "all_fixed_hpo": rng.normal(0, 1, 30)}
    )
    assert r.fixed_hpo_ratio < 0.5 and r.fixed_hpo_low < r.fixed_hpo_ratio < r.fixed_hpo_high < 1


def test_a_block_without_variance():
    r = variance_study({"init": [0.7, 0.7, 0.7], "all": [0.7, 0.7, 0.7]})
    assert r.sd[0] == 0.0 and r.total_sd == 0.0 and np.isnan(r.share[0])
    r = variance_study({"init": [0.7, 0.7, 0.7], "all": [0.7, 0.71, 0.72]})
    assert r.share[0] == 0.0 and r.sd_high[0] == 0.0


def test_the_interval_of_a_standard_deviation_covers():
    rng = np.random.default_rng(2)
    hits = [variance_study({"init": rng.normal(0, 2.0, 10), "all": rng.normal(0, 3.0, 10)}) for _ in range(400)]
    assert 0.93 <= np.mean([h.sd_low[0] <= 2.0 <= h.sd_high[0] for h in hits]) <= 0.97
    assert 0.93 <= np.mean([h.share_low[0] <= 4 / 9 <= h.share_high[0] for h in hits]) <= 0.97


@pytest.mark.parametrize(
    "blocks, match",
    [
        ([1.0, 2.0], r"`blocks` must map each source"),
        ({"split": [1.0, 2.0]}, r"`blocks` needs the 'all' block"),
        ({"all": [1.0, 2.0], 3: [1.0, 2.0]}, r"`blocks` keys must be source names"),
        ({"all": [1.0]}, r"`blocks\['all'\]` needs at least 2 values"),
        ({"all": [1.0, np.nan]}, r"`blocks\['all'\]` contains NaN or inf"),
    ],
)
def test_errors(blocks, match):
    with pytest.raises(ValueError, match=match):
        variance_study(blocks)


def test_confidence_level_error():
    with pytest.raises(ValueError, match=r"`confidence_level` must be in \(0, 1\)"):
        variance_study({"all": [1.0, 2.0]}, confidence_level=1.5)


def test_a_spread_far_from_zero_is_kept_and_a_constant_block_has_none():
    """Found by a statistician: the zero cut-off was relative to max|x|, so runs near 1e6 with sd 1.3e-7 had sd 0,
    interval [0, 0] and a NaN share. A constant block still has exactly none."""
    rng = np.random.default_rng(2)
    noise = 1e-7 * rng.standard_normal(10)
    far = variance_study({"init": 1e6 + noise, "all": 1e6 + 2 * noise[::-1]})
    near = variance_study({"init": noise, "all": 2 * noise[::-1]})
    assert far.sd[0] == pytest.approx(near.sd[0], rel=1e-3) and far.sd[0] > 0
    constant = variance_study({"init": np.full(5, 0.1), "all": 0.1 + noise[:5]})
    assert constant.sd[0] == 0.0
