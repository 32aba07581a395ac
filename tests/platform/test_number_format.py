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
EXTREME = {1e18: "1.0000e+18", -2.5e12: "-2.5000e+12", 1.23e-5: "1.2300e-05", 1e9: "1.0000e+09"}


def _page(value) -> str:
    return Template("{{ x|number:4 }}").render(Context({"x": value}))


def test_ordinary_figures_print_as_floatformat_did_and_extreme_ones_in_scientific_notation():
    for value in ORDINARY:
        assert _page(value) == floatformat(value, 4), value
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
