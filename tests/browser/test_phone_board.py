"""The challenge page on a phone (360 px) and a desktop (1400 px), in headless Chromium (issue 25).

A board of eight recipe entries with public and private scores (so the Public/Private switch shows) is
opened at each width. At 360 px the first leaderboard row starts within the first 700 px; at every
width each chart's text is drawn at 11 CSS px or more (its computed font size times the scale its
SVG is drawn at, so a chart shrunk to fit counts as small text), no page scrolls sideways, no table
scrolls sideways at 1400 px, and axe finds no violation at all. ``python -m pytest tests/browser/test_phone_board.py -m browser -s`` prints
the figures.
"""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.models import Run
from leaderboard.web import charts
from tests.browser.test_leaderboard_browser import screenshot
from tests.browser.test_pages_browser import AXE_RUN, log_in
from tests.platform.factories import digits_challenge, make_user, stored_recipe
from tests.platform.test_leaderboard_pages import known_board

PHONE, DESKTOP = 360, 1400
FIRST_ROW_MAX_PX = 700
MIN_TEXT_PX = 11.0
# Every <text> of every chart (all <details> opened first): its font size as drawn, i.e. the computed
# size times the scale of its user space on the screen (getScreenCTM: viewBox scaling, rotations).
CHART_TEXT = """
document.querySelectorAll('details').forEach(d => d.open = true);
return Array.from(document.querySelectorAll('figure.chart svg text')).filter(t => t.getClientRects().length)
  .map(t => { const m = t.getScreenCTM();
              return [parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), t.textContent]; });
"""
# Every forest plot on screen (after the <details> are opened): its drawn width, its box's, and its names.
FORESTS = """
return Array.from(document.querySelectorAll('figure.chart.forest svg')).filter(s => s.getClientRects().length)
  .map(s => [s.getBoundingClientRect().width, s.parentElement.clientWidth,
             Array.from(s.querySelectorAll('g.entry text')).map(t => t.textContent)]);
"""
# Every box that scrolls sideways (after the <details> are opened): its class, whether it overflows, and whether
# the hint of scroll-hint.js stands before it.
SCROLL_BOXES = """
const done = arguments[arguments.length - 1];  // after the toggle events of the opened <details> have run
setTimeout(() => done(Array.from(document.querySelectorAll('.chart-scroll, .table-wrap, .table.pairs, .preview-table-wrap'))
  .filter(b => b.getClientRects().length)
  .map(b => [b.className, b.scrollWidth - b.clientWidth > 2,
             !!(b.previousElementSibling && b.previousElementSibling.classList.contains('scroll-hint'))])), 300);
"""
# The challenge page's tabs: how far their bar scrolls sideways, the width of a vertical scroll bar in it (the tabs
# overlap its border by 2 px: a scroll container showed one at 1400 px), and the tabs not wholly on the screen.
TABS = """
const nav = document.querySelector('[data-tabs]');
return {overflow: nav.scrollWidth - nav.clientWidth, scrollbar: nav.offsetWidth - nav.clientWidth,
        tabs: Array.from(nav.querySelectorAll('a')).map(a => a.textContent),
        outside: Array.from(nav.querySelectorAll('a')).filter(a => { const r = a.getBoundingClientRect();
          return r.left < 0 || r.right > document.documentElement.clientWidth; }).map(a => a.textContent)};
"""
LAYOUT = """
const row = document.querySelector('table.leaderboard tbody tr[data-submission]');
return {rowTop: row.getBoundingClientRect().top + window.scrollY,
        scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth};
"""
NAMES = [
    "ResNet-50 with mixup and label smoothing",
    "Gradient boosting",
    "Logistic regression (baseline)",
    "Random forest, 500 trees",
    "k-nearest neighbours",
    "Small CNN",
    "SVM with an RBF kernel",
    "Majority",
]


def phone_board(host, users):
    """Eight recipe entries, ten runs each, scored on a public and a private part of the test rows."""
    challenge, _ = digits_challenge(
        host,
        title="Phone board",
        k_runs=10,
        boo_n=3,
        bootstrap_resamples=200,
        public_fraction=0.5,
        description="Recognise handwritten digits from 8 by 8 pixel images. Every recipe is retrained ten times on "
        "resampled rows, so the board shows how much each method's score moves by chance, which entries "
        "the data can tell apart, and the expected best of three runs.",
    )
    rng = np.random.default_rng(25)
    for i, name in enumerate(NAMES):
        user = users[i % len(users)]
        submission = stored_recipe(challenge, user, name, 10)
        centre = 0.97 - 0.02 * i
        scores = centre + 0.01 * rng.standard_normal((3, 10))
        Run.objects.bulk_create(
            Run(
                submission=submission,
                index=r,
                status="succeeded",
                test_score=float(scores[0, r]),
                public_score=float(scores[1, r]),
                private_score=float(scores[2, r]),
                seeds={"init": r},
                split_id=f"split-{r}",
            )
            for r in range(10)
        )
    return challenge


def measure(driver, url: str, width: int) -> dict:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    driver.get(url)
    layout = driver.execute_script(LAYOUT)
    texts = driver.execute_script(CHART_TEXT)  # opens every <details>: what they hold must fit too
    opened = driver.execute_script("return document.documentElement.scrollWidth")
    boxes = driver.execute_async_script(SCROLL_BOXES)
    return {
        **layout,
        "unhinted": [cls for cls, overflows, hinted in boxes if overflows and not hinted],
        "hinted": [cls for cls, overflows, hinted in boxes if overflows and hinted],
        "forests": driver.execute_script(FORESTS),
        "scrollWidth": max(layout["scrollWidth"], opened),
        "texts": texts,
        "smallest": min(size for size, _ in texts),
    }


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_board_comes_first_and_charts_read_on_a_phone(live_server, driver, axe_source):
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge = phone_board(host, users)
    url = live_server.url + challenge.get_absolute_url()
    problems = []
    for width in (PHONE, 400, DESKTOP):
        seen = measure(driver, url, width)
        small = [(round(size, 2), text) for size, text in seen["texts"] if size < MIN_TEXT_PX]
        print(
            f"\n{width} px: first row at {seen['rowTop']:.0f} px; {len(seen['texts'])} chart texts, smallest "
            f"{seen['smallest']:.2f} px, {len(small)} under {MIN_TEXT_PX:g} px"
        )
        if width == PHONE and seen["rowTop"] > FIRST_ROW_MAX_PX:
            problems.append(f"{width} px: the first leaderboard row starts {seen['rowTop']:.0f} px down")
        if small:
            problems.append(f"{width} px: {len(small)} chart texts under {MIN_TEXT_PX:g} px, e.g. {small[:3]}")
        if len(seen["forests"]) != 2:  # the board's statistic, and the other one's in its <details>
            problems.append(f"{width} px shows {len(seen['forests'])} forest plots, not 2")
        for drawn, box, names in seen["forests"]:
            if width < DESKTOP and drawn > box:  # a phone reads names and bars without scrolling the chart
                problems.append(f"{width} px: a forest plot {drawn:.0f} px wide in a {box} px box")
            if width == DESKTOP and drawn <= charts.NARROW_W:
                problems.append(f"{width} px: the phone's forest plot ({drawn:.0f} px) on a desktop")
            in_order = len(names) == len(NAMES) and all(map(str.startswith, names, (n[:15] for n in NAMES)))
            if not in_order:  # NAMES in rank order: their true centres fall 0.02 apart, 6σ of a mean of 10 runs
                problems.append(f"{width} px: a forest plot names {names}")
        if seen["unhinted"]:  # a touch screen shows no scroll bar: each box wider than the screen says so
            problems.append(f"{width} px: boxes that scroll sideways without a hint: {seen['unhinted']}")
        # A desktop shows every table whole (the decided pairs, beside the heat map, lost their last column).
        if width == DESKTOP and any("table" in cls for cls in seen["hinted"]):
            problems.append(f"{width} px: a table scrolls sideways on a desktop: {seen['hinted']}")
        if width == PHONE and not seen["hinted"]:
            problems.append(f"{width} px: no box scrolls sideways with its hint (the test no longer tests it)")
        if seen["scrollWidth"] > seen["innerWidth"]:
            problems.append(f"{width} px scrolls sideways: {seen['scrollWidth']} > {seen['innerWidth']}")
        driver.execute_script(axe_source)
        problems += [
            f"{width} px: axe {v['impact']} {v['id']} ({v['help']}) at {v['nodes']}"
            for v in driver.execute_async_script(AXE_RUN)
        ]
        screenshot(driver, f"phone-board-{width}")
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_tab_of_a_contestants_challenge_page_shows_on_a_phone(live_server, driver):
    """Found by a new user at 400 px: logged in, the fifth tab ("Rules") was scrolled off the screen, unhinted."""
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, _ = known_board(host, users)
    log_in(driver, live_server.url, users[0])
    for width in (PHONE, 400, DESKTOP):
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": False},
        )
        driver.get(live_server.url + challenge.get_absolute_url())
        tabs = driver.execute_script(TABS)
        assert "My submissions" in tabs["tabs"] and tabs["tabs"][-1] == "Rules", tabs
        assert (tabs["overflow"], tabs["scrollbar"], tabs["outside"]) == (0, 0, []), f"{width} px: {tabs}"
        screenshot(driver, f"phone-board-tabs-{width}")
