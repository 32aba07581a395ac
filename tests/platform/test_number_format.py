"""A score of 1e18 printed all its digits (``1000000000000000000.0000``) on the pages and in the CLI: very large
and very small magnitudes are printed in scientific notation by one rule (``leaderboard.web.numbers``), which the
CLI applies too; ordinary scores print exactly as before."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.template.defaultfilters import floatformat

from cli.varboard_cli import _number
from leaderboard.services.reports import report_recompute

from .factories import digits_challenge, make_user, stored_recipe

ORDINARY = [0.8123, 0.81235, 0.0, 1.0, -0.25, 0.0001, 12345.6789, 999999999.5]
#: Accuracies on 20,000 test rows: every other one half-way at the fourth digit
HALF_WAY = [k / 20000 for k in range(2, 19999, 7)]  # from 1e-4: below it, scientific notation
EXTREME = {1e18: "1.0000e+18", -2.5e12: "-2.5000e+12", 1.23e-5: "1.2300e-05", 1e9: "1.0000e+09"}


def _page(value) -> str:
    return Template("{{ x|number:4 }}").render(Context({"x": value}))


def test_ordinary_figures_print_as_floatformat_did_and_extreme_ones_in_scientific_notation():
    for value in ORDINARY:
        assert _page(value) == floatformat(value, 4), value  # values not half-way print as before
    for value, shown in EXTREME.items():
        assert _page(value) == shown
    assert _page(None) == "" and _page(float("nan")) == floatformat(float("nan"), 4)


@pytest.mark.parametrize("value", [*ORDINARY, *EXTREME, 3e-5, 7.5e-5, 2e9, -1e-7])
def test_the_cli_prints_each_figure_as_the_pages_do(value):
    """The CLI (standard library only) keeps its own copy of the rule: the two must agree, ordinary values
    included (``f"{x:.4f}"`` and ``floatformat`` round 0.81235 alike here)."""
    assert _number(value) == _page(value)
    assert _number(None) == "-"


@pytest.mark.django_db
def test_the_board_prints_a_score_of_1e18_in_scientific_notation(client):
    challenge, _ = digits_challenge(make_user("host"), bootstrap_resamples=200)
    stored_recipe(challenge, make_user("ann"), "huge", 5, [1e18] * 5)
    stored_recipe(challenge, make_user("ben"), "plain", 5, [0.8123] * 5)
    report_recompute(challenge_id=challenge.pk)
    page = client.get(f"/c/{challenge.slug}/").content.decode()
    assert "1.0000e+18" in page and "1000000000000000000" not in page
    assert "0.8123" in page


def test_a_half_way_figure_prints_alike_on_the_page_in_the_cli_and_on_a_mirrored_board():
    """Found by the twelfth session: ``floatformat`` rounded the decimal repr half up (0.00015 -> "0.0002") and the
    CLI's format the binary value ("0.0001"): 5,000 of the 20,001 accuracies k/20000 printed differently, and an
    error rate of 0.57555 ("0.5756") did not mirror its accuracy of 0.42445 ("0.4245"). Both now print the value
    rounded half-way to the even digit (``evaluation.boards.shown_score``)."""
    assert _page(0.00015) == _number(0.00015) == "0.0002"
    assert _page(0.42445) == _number(0.42445) == "0.4244" and _page(0.57555) == _number(0.57555) == "0.5756"
    for value in HALF_WAY:
        page, mirrored = _page(value), _page(1 - value)
        assert page == _number(value), value
        assert round(float(page) + float(mirrored), 4) == 1.0, (value, page, mirrored)
