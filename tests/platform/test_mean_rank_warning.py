"""A challenge ranked by the mean with fewer than 16 runs per entry is told at creation that its board will show no
rank interval (rank23: ``evaluation.report.sections.runs_for_rank_interval``), as one ranked by Boo_n below 10n is;
before, the board withheld them with no word when the settings were chosen."""

from __future__ import annotations

from leaderboard.services.challenges import challenge_settings_warnings


def test_a_mean_board_below_16_runs_is_warned_of_its_rank_intervals():
    (warning,) = challenge_settings_warnings(k_runs=10, boo_n=1, statistic="mean")
    assert warning.startswith("k = 10 runs per entry is fewer than the 16 a board ranked by the mean needs for ")
    assert "without a rank interval" in warning and warning.endswith("Raise k to 16.")
    (fixed,) = challenge_settings_warnings(k_runs=10, boo_n=1, statistic="mean", k_fixed=True)
    assert "Raise k" not in fixed
    assert challenge_settings_warnings(k_runs=16, boo_n=1, statistic="mean") == []
    assert challenge_settings_warnings(k_runs=10, boo_n=1, statistic="mean", recipes=False) == []


def test_a_boo_1_board_is_warned_alike_and_a_boo_n_board_by_its_own_rule():
    (warning,) = challenge_settings_warnings(k_runs=12, boo_n=1, statistic="boo_n")
    assert "fewer than the 16 a board ranked by the mean (Boo_1 is the mean of the runs) needs" in warning
    (boo,) = challenge_settings_warnings(k_runs=12, boo_n=2, statistic="boo_n")  # Boo_2's 10n = 20 says it
    assert "10n = 20" in boo and "rank interval" in boo


def test_a_boo_1_board_below_6_runs_is_told_of_its_rank_intervals_once_with_the_runs_they_need():
    """k = 5 on a board ranked by Boo_1: the rank intervals need 16 runs (said once); Boo_1's own warning said again
    that they were withheld, and advised raising k to 6, which would not bring them back."""
    warnings = challenge_settings_warnings(k_runs=5, boo_n=1, statistic="boo_n")
    assert sum("rank interval" in w for w in warnings) == 1, warnings
    (boo_1,) = [w for w in warnings if "Boo_1 needs" in w]
    assert boo_1.endswith('flag every entry "k < 6". Raise k to 6.'), boo_1
    (boo_5,) = challenge_settings_warnings(k_runs=10, boo_n=5, statistic="boo_n")  # Boo_5's rule is the rank's too
    assert "ranked by it, every recipe entry without a rank interval. Raise k to 50." in boo_5
