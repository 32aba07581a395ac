"""What a new user's review of the pages in a browser found, as the HTML shows it (the layout found there:
tests/browser/test_phone_board.py)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_no_drop_down_on_the_host_form_cuts_its_choices(client, host):
    """A closed select showed "Out-of-bootstrap (Bouthillier e": long choices are radio buttons, whose labels wrap."""
    from leaderboard.web.forms import SELECT_LABEL_MAX

    client.force_login(host)
    html = client.get("/challenges/new/").content.decode()
    options = [
        option
        for select in re.findall(r"<select.*?</select>", html, re.S)
        for option in re.findall(r"<option[^>]*>([^<]*)</option>", select)
    ]
    assert options and max(len(option) for option in options) <= SELECT_LABEL_MAX, options
    for name in ("split_scheme", "hpo_mode", "board_version", "feedback"):
        assert f'type="radio" name="{name}"' in html, name
    assert "Out-of-bootstrap (Bouthillier et al. 2021, App. B)" in html
