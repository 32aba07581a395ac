"""What a phone user can read and reach (review newuser5, at 390 and 360 px in headless Chromium).

The list of challenges shows every column of each challenge without a sideways swipe, and the links and controls that
stand alone (the navigation, the challenge page's tabs, board tabs and actions, "Show every column", disclosure
summaries, the back link, the pairs' "compare" links) are at least 40 px tall, with the first leaderboard row still in
the first 700 px at 360 px (issue 25). ``python -m pytest tests/browser/test_phone_reach.py -m browser -s`` prints
the figures.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.models import Phase
from tests.browser.test_leaderboard_browser import screenshot
from tests.browser.test_pages_browser import log_in
from tests.browser.test_phone_board import FIRST_ROW_MAX_PX, phone_board
from tests.platform.factories import make_user

MIN_TAP_PX = 40
# Links and controls that stand alone on a line (links inside a sentence or a table's text are left out: WCAG 2.5.8's
# inline exception), each: [selector, text, width, height] where shown.
TARGETS = """
const selectors = ['.nav a', '.nav button', '.page-tabs a', '.board-tabs a', '.hero-actions .button', '.cols-toggle',
                   'details > summary', '.crumbs a', '.board-legend > a', '.table.pairs td a'];
document.querySelectorAll('details').forEach(d => d.open = true);
const out = [];
for (const sel of selectors) for (const el of document.querySelectorAll(sel)) {
  const r = el.getBoundingClientRect();
  if (r.width && r.height) out.push([sel, el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40), r.width, r.height]);
}
return out;
"""
FIRST_ROW = "return document.querySelector('table.leaderboard tbody tr[data-submission]').getBoundingClientRect().top"
# The challenges list: how far its box scrolls sideways, and each cell of the closed challenge's row, where it is.
CHALLENGES = """
const box = document.querySelector('.table-wrap:has(table.challenges)');
const row = Array.from(box.querySelectorAll('tbody tr')).find(tr => tr.querySelector('[data-closed]'));
return {overflow: box.scrollWidth - box.clientWidth, innerWidth: window.innerWidth,
        scrollWidth: document.documentElement.scrollWidth,
        cells: Array.from(row.cells).map(td => { const r = td.getBoundingClientRect();
          const label = getComputedStyle(td, '::before').content.replace(/^"|"$/g, '').replace(/^none$/, '');
          return [(label + td.innerText).trim().replace(/\\s+/g, ' ').slice(0, 30), r.left, r.right, r.width]; })};
"""


def width(driver, px: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": px, "height": 844, "deviceScaleFactor": 1, "mobile": False}
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_challenges_list_shows_every_column_on_a_phone(live_server, driver):
    """Found by a new user: at 390 px the home page's table was 712 px wide in a 353 px box; a phone showed the
    title, metric and "Accepts" and hid Entries, Opens and Closes (with a challenge's "closed") behind a swipe."""
    host = make_user("host")
    challenge = phone_board(host, [make_user("alice")])
    closed = timezone.now() - timedelta(days=1)
    Phase.objects.filter(challenge=challenge).update(opens_at=closed - timedelta(days=30), closes_at=closed)
    for px in (390, 360):
        width(driver, px)
        driver.get(live_server.url + "/")
        seen = driver.execute_script(CHALLENGES)
        print(f"\n{px} px: the challenges' box scrolls {seen['overflow']} px; cells {seen['cells']}")
        assert seen["overflow"] <= 2 and seen["scrollWidth"] <= seen["innerWidth"], seen
        assert len(seen["cells"]) == 6, seen
        for text, left, right, drawn in seen["cells"]:
            assert drawn > 0 and 0 <= left and right <= px, (text, left, right)
        texts = [text for text, *_ in seen["cells"]]
        # each named (the header row is hidden on a phone), the closing date with its state
        assert [text.split()[0] for text in texts[1:]] == ["Metric", "Accepts", "Entries", "Opens", "Closes"], texts
        assert texts[-1].endswith("closed"), texts
        screenshot(driver, f"phone-reach-home-{px}")
    width(driver, 1400)  # a desktop keeps the table, with its header row
    driver.get(live_server.url + "/")
    assert driver.execute_script("return document.querySelector('table.challenges thead th').offsetHeight") > 20


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_links_and_controls_are_40_px_tall_on_a_phone(live_server, driver):
    """Found by a new user at 360-390 px: the navigation's links were 21 px tall, its rows 3 px apart (logged in,
    "Log out" 3 px under "Account"); the challenge page's tabs 36 px, the board tabs 29, the actions 32, "Show every
    column" 21 with a 13 px box, every disclosure summary 20-23 px, the pairs' "compare" links 16 px."""
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge = phone_board(host, users)
    entries = list(challenge.submissions.order_by("pk"))
    base = live_server.url
    pages = [
        ("challenge", challenge.get_absolute_url()),
        ("submission", entries[0].get_absolute_url()),
        ("compare", f"/c/{challenge.slug}/compare/?a={entries[0].pk}&b={entries[1].pk}"),
        ("history", f"/c/{challenge.slug}/history/"),
        ("home", "/"),
    ]
    problems, counted = [], 0
    for who in (None, users[0], host):
        if who is not None:
            log_in(driver, base, who)
        for px in (360, 390):
            width(driver, px)
            for name, path in pages + ([("host-form", "/challenges/new/")] if who == host else []):
                driver.get(base + path)
                if name == "challenge" and who is None:
                    top = driver.execute_script(FIRST_ROW)
                    print(f"\n{px} px: the first leaderboard row at {top:.0f} px")
                    if top > FIRST_ROW_MAX_PX:
                        problems.append(f"{px} px: the first leaderboard row starts {top:.0f} px down")
                targets = driver.execute_script(TARGETS)
                counted += len(targets)
                small = [(sel, text, round(h)) for sel, text, _, h in targets if h < MIN_TAP_PX - 0.5]
                if small:
                    problems.append(f"{name} ({who or 'anonymous'}) at {px} px: {len(small)} under 40 px: {small[:6]}")
                if driver.execute_script("return document.documentElement.scrollWidth") > px:
                    problems.append(f"{name} ({who or 'anonymous'}) at {px} px scrolls sideways")
            if who is None and px == 390:
                driver.get(base + challenge.get_absolute_url())
                screenshot(driver, "phone-reach-challenge-390")
    print(f"{counted} targets measured")
    assert counted > 200, counted  # the selectors still find the page's controls
    assert problems == [], "\n".join(problems)
