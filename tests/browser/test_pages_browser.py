"""The pages people use, in headless Chromium at a desktop (1400 px) and a phone (400 px) width.

For the challenge page, the host's form and preview, and a submission page: no sideways scroll,
the key actions in the first screenful, nothing loaded from another host, and no serious or
critical accessibility violation found by axe-core (fetched from the npm registry, its sha512
checked: ``tests/browser/conftest.py``). Screenshots go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from leaderboard.models import EntryProvenance
from tests.browser.test_leaderboard_browser import off_site_requests, screenshot
from tests.platform.factories import make_user
from tests.platform.test_leaderboard_pages import known_board

WIDTHS = (1400, 400)
SERIOUS = ("serious", "critical")
AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(result => done(result.violations.map(v => ({
  id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))));
"""
LAYOUT = """
const first = sel => { const el = document.querySelector(sel); if (!el) return null;
  const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, shown: r.width > 0 && r.height > 0}; };
return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
        innerHeight: window.innerHeight, actions: arguments[0].map(first)};
"""


def log_in(driver, base: str, user) -> None:
    """Log in through Django's session cookie (the form itself is tested elsewhere)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    driver.get(base + "/login/")
    driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


def check_page(driver, base: str, path: str, name: str, actions: list[str], axe_source: str) -> list[str]:
    """Open ``path`` at each width; return the problems found (empty: none)."""
    problems = []
    for width in WIDTHS:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        driver.get(base + path)
        layout = driver.execute_script(LAYOUT, actions)
        if layout["scrollWidth"] > layout["innerWidth"]:
            problems.append(f"{name} at {width} px scrolls sideways: {layout['scrollWidth']} > {layout['innerWidth']}")
        for selector, box in zip(actions, layout["actions"]):
            if box is None or not box["shown"] or not 0 <= box["top"] < layout["innerHeight"]:
                problems.append(f"{name} at {width} px: {selector} is not in the first screenful ({box})")
        problems += [f"{name}: loads {url}" for url in off_site_requests(driver, base)]
        driver.execute_script(axe_source)
        for v in driver.execute_async_script(AXE_RUN):
            if v["impact"] in SERIOUS:
                problems.append(f"{name} at {width} px: axe {v['impact']} {v['id']} ({v['help']}) at {v['nodes']}")
        screenshot(driver, f"pages-{name}-{width}")
    return problems


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pages_at_desktop_and_phone_widths(live_server, driver, axe_source):
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, subs = known_board(host, users)
    EntryProvenance.objects.create(
        submission=subs[2], source="published", link="https://example.org/paper", note="Someone et al. (2018)"
    )
    base, slug = live_server.url, challenge.slug
    problems = check_page(driver, base, "/", "home", ["h1", "table.challenges"], axe_source)
    problems += check_page(
        driver,
        base,
        f"/c/{slug}/",
        "challenge-anonymous",
        ["[data-action=join]", "[data-action=data]", "[data-tabs]"],
        axe_source,
    )
    log_in(driver, base, users[0])
    problems += check_page(
        driver, base, f"/c/{slug}/", "challenge-contestant", ["[data-action=submit]", "[data-action=data]"], axe_source
    )
    problems += check_page(driver, base, subs[0].get_absolute_url(), "submission", ["h1", "[data-status]"], axe_source)
    log_in(driver, base, host)
    problems += check_page(driver, base, "/challenges/new/", "host-form", ["h1", "#id_title"], axe_source)
    problems += check_page(
        driver, base, f"/c/{slug}/preview/", "host-preview", ["[data-actions]", "[data-n-test]"], axe_source
    )
    problems += check_page(
        driver, base, "/challenges/plan/?entries=5&run_minutes=2", "planner", ["[data-plan]"], axe_source
    )
    problems += check_page(driver, base, f"/c/{slug}/audit/", "audit", ["h1"], axe_source)
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_leaderboard_keeps_priority_columns_on_a_phone(live_server, driver):
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, subs = known_board(host, users)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    driver.get(live_server.url + challenge.get_absolute_url())
    row = driver.find_element(By.CSS_SELECTOR, f"tr[data-submission='{subs[0].pk}']")
    shown = {
        cell.get_attribute("class").split()[0] if cell.get_attribute("class") else "": cell.is_displayed()
        for cell in row.find_elements(By.TAG_NAME, "td")
    }
    assert row.find_element(By.CSS_SELECTOR, "[data-rank]").is_displayed()
    assert row.find_element(By.CSS_SELECTOR, "[data-mean]").is_displayed()
    assert row.find_element(By.CSS_SELECTOR, "[data-boon]").is_displayed()
    assert not row.find_element(By.CSS_SELECTOR, "[data-rank-interval]").is_displayed(), shown
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    assert not driver.find_element(By.ID, "how-to-read").get_attribute("open")  # explanations: one click away
    toggle = driver.find_element(By.CSS_SELECTOR, "#section-recipe [data-all-columns]")
    toggle.click()
    assert row.find_element(By.CSS_SELECTOR, "[data-rank-interval]").is_displayed()  # the rest on demand ...
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")  # ... inside


def docs_rendered(driver, base: str, path: str, selector: str, timeout: float = 60) -> bool:
    """Whether the JavaScript API docs at ``path`` drew ``selector`` (ReDoc: the operations' headings)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base + path)
    try:
        WebDriverWait(driver, timeout).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, selector))
        )
    except Exception:  # noqa: BLE001 - selenium's TimeoutException: not drawn
        return False
    return True


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_account_pages_and_api_docs_at_desktop_and_phone_widths(live_server, driver, axe_source):
    """The profile with its tokens, teams and invitations, password reset, log-in, webhooks and the API docs."""
    from leaderboard.services.accounts import token_create
    from leaderboard.services.teams import team_create, team_invite

    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, _ = known_board(host, users)
    token_create(user=users[0])
    team = team_create(name="Tensor Tamers", creator=users[0])
    team_invite(team=team, user=users[1], invited_by=users[0])
    base = live_server.url
    problems = check_page(driver, base, "/login/", "login", ["h1", "form"], axe_source)
    problems += check_page(driver, base, "/password-reset/", "password-reset", ["h1", "form"], axe_source)
    log_in(driver, base, users[0])
    problems += check_page(driver, base, "/account/", "account", ["h1"], axe_source)
    problems += check_page(driver, base, "/teams/", "teams", ["h1"], axe_source)
    log_in(driver, base, users[1])
    problems += check_page(driver, base, "/account/", "account-invited", ["h1"], axe_source)
    log_in(driver, base, host)
    problems += check_page(driver, base, f"/c/{challenge.slug}/webhooks/", "webhooks", ["h1"], axe_source)
    assert problems == [], "\n".join(problems)
    assert docs_rendered(driver, base, "/api/redoc/", "[data-section-id^='operation']"), "ReDoc drew no operation"
    assert off_site_requests(driver, base) == []
    screenshot(driver, "pages-api-redoc-1400")
    assert docs_rendered(driver, base, "/api/docs/", ".opblock"), "Swagger UI drew no operation"
    assert off_site_requests(driver, base) == []
    screenshot(driver, "pages-api-swagger-1400")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_suite_page_fits_a_phone(live_server, driver, axe_source):
    """Found by a new user: the suite's tables, one column per task, made the page 531 px wide at 400 px."""
    from leaderboard.models import Suite
    from tests.platform.factories import digits_challenge
    from tests.platform.test_beyond import add_entry

    host = make_user("host")
    rng = np.random.default_rng(4)
    tasks = []
    for title in ("Handwritten digits", "Handwritten digits, rotated", "Handwritten digits, noisy"):
        task, _ = digits_challenge(host, title=title)
        for name, mean in (("strong baseline", 0.8), ("weak baseline", 0.6), ("middle baseline", 0.7)):
            add_entry(task, host, name, "recipe", mean + 0.01 * rng.standard_normal(5))
        tasks.append(task)
    suite = Suite.objects.create(slug="small-tabular", title="Small tabular", created_by=host)
    suite.challenges.set(tasks)
    problems = check_page(
        driver, live_server.url, "/suites/small-tabular/", "suite", ["h1", "[data-suite]"], axe_source
    )
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_new_token_fits_a_phone(live_server, driver, wait_for):
    """Found by a new user: the new token's secret, 64 characters that never break, made the account page 544 px
    wide on a phone, right after "Create a token"."""
    alice = make_user("alice")
    base = live_server.url
    log_in(driver, base, alice)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    driver.get(base + "/account/")
    driver.find_element(By.CSS_SELECTOR, "form[action$='#tokens'] button[type=submit]").click()
    # the click returns before the next page has loaded (CI once looked for the secret on the form's page)
    secret = wait_for(
        lambda: driver.find_elements(By.CSS_SELECTOR, "[data-new-token] pre"), timeout=30, message="the new token"
    )[0]
    layout = driver.execute_script(LAYOUT, [])
    assert layout["scrollWidth"] <= layout["innerWidth"], layout
    assert len(secret.text.replace("\n", "")) == 64  # the whole secret is shown, wrapped
    screenshot(driver, "pages-account-new-token-390")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_long_unbroken_words_wrap_on_a_phone(live_server, driver, tmp_path, wait_for):
    """Found by a new user: words with no break that a user typed widened the page on a 390 px phone: a prediction
    file's name in the form's error (715 px), a search that matched nothing (589 px), an entry's name in its page's
    title."""
    from leaderboard.models import Submission

    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, subs = known_board(host, users)
    Submission.objects.filter(pk=subs[0].pk).update(method_name="resnet50_mixup_labelsmoothing_cosine_lr_seed_sweep_v2")
    long_file = tmp_path / ("predictions_from_my_experiment_tracker_run_2026_11_30_seed_0000001" + ".csv")
    long_file.write_text("id,pred\nx,1\n")
    base = live_server.url
    log_in(driver, base, users[0])
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    problems = []

    def wide(name: str) -> None:
        layout = driver.execute_script(LAYOUT, [])
        if layout["scrollWidth"] > layout["innerWidth"]:
            problems.append(f"{name}: {layout['scrollWidth']} > {layout['innerWidth']}")

    driver.get(base + f"/c/{challenge.slug}/?q=averyveryverylongsearchtermwithoutanyspacesatallxxxxxxxxxx")
    wide("a search that matches nothing")
    driver.get(base + subs[0].get_absolute_url())
    wide("an entry's page")
    driver.get(base + challenge.get_absolute_url())
    form = driver.find_element(By.CSS_SELECTOR, "form[enctype='multipart/form-data']")
    form.find_element(By.NAME, "method_name").send_keys("long file")
    form.find_element(By.CSS_SELECTOR, "input[name=kind][value=predictions]").click()
    form.find_element(By.NAME, "files").send_keys(str(long_file))
    driver.execute_script("arguments[0].click()", form.find_element(By.CSS_SELECTOR, "[type=submit]"))
    # the answer is a new page: wait for it rather than read the form that was just submitted, and read the forms' text
    # in one script (a form found on the page being left is gone by the time its text is asked for: a stale element)
    forms_text = """
      return Array.from(document.querySelectorAll("form[enctype='multipart/form-data']")).map(f => f.innerText).join(' ');
    """
    wait_for(
        lambda: "missing prediction column" in driver.execute_script(forms_text),
        timeout=30,
        message=lambda: f"the form's error; the forms say: {driver.execute_script(forms_text)}",
    )
    wide("the submission form's error")
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_long_unbroken_entry_name_does_not_make_the_board_scroll_at_desktop_width(live_server, driver):
    """Found by a new user: an entry named "resnet50_mixup_labelsmoothing_cosine_lr_seed_sweep_v2" widened the Entry
    column to 465 px, and the leaderboard scrolled sideways at 1400 px (1202 px in a 1105 px box)."""
    from leaderboard.models import Submission

    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, subs = known_board(host, users)
    name = "resnet50_mixup_labelsmoothing_cosine_lr_seed_sweep_v2_with_a_longer_suffix"
    Submission.objects.filter(pk=subs[0].pk).update(method_name=name)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    driver.get(live_server.url + challenge.get_absolute_url())
    box = driver.find_element(By.CSS_SELECTOR, ".table-wrap:has(table.leaderboard)")
    assert name in box.text.replace("\n", "")
    overflow = driver.execute_script("return arguments[0].scrollWidth - arguments[0].clientWidth", box)
    assert overflow <= 2, overflow


@pytest.mark.browser
def test_the_progress_script_rounds_a_run_s_score_as_the_page_does(live_server, driver, wait_for):
    """Found by the twelfth session: the server drew a run's score with the pages' rule (``number``: half-way to the
    even digit) and progress.js, updating the row as the run ended, with ``toFixed`` (the binary value): 0.00015 read
    0.0001 from the script against 0.0002 before it, and 1e18 all its digits against 1.0000e+18."""
    from leaderboard.web.numbers import number

    driver.get(live_server.url + "/")
    driver.execute_script(
        "const s = document.createElement('script'); s.src = arguments[0]; document.head.appendChild(s);",
        live_server.url + "/static/varboard/progress.js",
    )
    wait_for(lambda: driver.execute_script("return typeof window.varboardScore === 'function'"), timeout=30)
    values = [0.42445, 0.57555, 0.00015, 0.8123, 0.81235, -0.25, 12345.6789, 1e18, 1.23e-5, 0.0, 999999999.5]
    values += [k / 20000 for k in range(2, 20000, 97)]
    printed = driver.execute_script("return arguments[0].map(v => window.varboardScore(v));", values)
    assert printed == [number(v, 4) for v in values]
