"""The leaderboard in headless Chromium: what a reader sees, and a contestant's upload from form to table.

Screenshots of every step are saved under ``test-artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By

from leaderboard.models import Submission
from leaderboard.services.reports import report_current
from tests.platform.factories import PASSWORD, digits_challenge, label_predictions, make_user
from tests.platform.test_leaderboard_pages import assert_row_matches, expected_report, known_board

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
# The majority class, slowly: with 2 worker processes, runs 0 and 1 end together and run 2 RECIPE_SLEEP_S seconds
# later, so the page shows the bar part-way. That window is the sleep, whatever the load, while the page's poll comes
# every 2 s plus its request's time, which grows with the load: with a 3 s sleep, beside four CPU burners, the window
# was 3.1 s (the runs' finish times) and the page showed 2 runs, then 3, 2.4 s apart; polls a second slower and it
# could go from 0 runs to 3 and fail `assert partway`.
RECIPE_SLEEP_S = 8
SLOW_RECIPE = f"""\
import time

import numpy as np


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    time.sleep({RECIPE_SLEEP_S})
    values, counts = np.unique(train.y, return_counts=True)
    return np.full(len(test_inputs.X), values[np.argmax(counts)])
"""

# Every leaderboard row's cells that carry a data-* attribute, as the browser renders their text.
ROWS_JS = """
return Array.from(document.querySelectorAll('table.leaderboard tr[data-submission]')).map(tr => [
  tr.dataset.submission,
  Object.fromEntries(Array.from(tr.querySelectorAll('td'))
    .map(td => [td.getAttributeNames().find(n => n.startsWith('data-')), td.innerText.replace(/\\s+/g, ' ').trim()])
    .filter(([name]) => name))]);
"""


@pytest.fixture
def driver(live_server, selenium_driver):
    """The session's Chromium; afterwards on a blank page, so no script polls the server of the next test."""
    yield selenium_driver
    selenium_driver.get("about:blank")


def screenshot(driver, name: str) -> Path:
    """The whole page (not just the window) as ``test-artifacts/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width, height = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
    )
    path = SCREENSHOTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


# The progress card of the submission page, read in one script in the page's own thread, with whether it is the
# server's drawing of an ended submission: progress.js moves the card in place while runs end, and when its poll sees
# the end it writes "Scored" into the card and then reloads the page, so a test that read the updated card and then
# looked again could find the page gone (an element handle taken before the reload points at nothing).
PROGRESS_JS = """
const card = document.querySelector('.progress-card');
const bar = card && card.querySelector('.bar'), status = card && card.querySelector('[data-status]');
if (!bar || !status) return null;
return {finished: bar.getAttribute('aria-valuenow'), status: status.innerText.trim(),
        fill: card.querySelector('.bar-fill').getAttribute('style'),
        text: card.querySelector('[data-progress-text]').innerText.trim(),
        rows: [...document.querySelectorAll('[data-run-status]')].map(cell => cell.innerText.trim()),
        drawn: document.readyState === 'complete' && !card.hasAttribute('data-progress-url')};
"""


def ended_page(state: dict | None) -> bool:
    """Whether ``state`` (``PROGRESS_JS``'s) is the page the server drew once the submission had ended."""
    return bool(state) and state["drawn"] and state["status"] in ("Scored", "Failed")


def shown_rows(driver) -> dict[int, dict[str, str]]:
    return {int(sid): cells for sid, cells in driver.execute_script(ROWS_JS)}


def off_site_requests(driver, base: str) -> list[str]:
    """Resources the page loaded from anywhere but the test server."""
    urls = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return [url for url in urls if not url.startswith(base)]


def log_in(driver, base: str, username: str, next_url: str) -> None:
    driver.get(f"{base}/login/?next={next_url}")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reader_sees_groups_intervals_and_the_forest_plot(live_server, driver, wait_for):
    host, users = make_user("host"), [make_user("alice"), make_user("bob")]
    challenge, subs = known_board(host, users)
    expected = expected_report(challenge, subs)
    driver.get(live_server.url + challenge.get_absolute_url())
    assert driver.find_element(By.CSS_SELECTOR, "#leaderboard h2").text == "Leaderboard"

    rows = shown_rows(driver)
    assert list(rows) == [s.pk for s in subs]  # Strong, Twin (tied), Weak, then the excluded one-run entry
    for sub in subs:
        assert_row_matches(rows[sub.pk], expected["rows"][sub.pk])
    assert [rows[s.pk]["data-groups"] for s in subs[:3]] == ["a", "a", "b"]
    assert [rows[s.pk]["data-rank"] for s in subs] == ["=1", "=1", "3", "—"]

    forest = driver.find_element(By.CSS_SELECTOR, "svg[aria-labelledby^='forest-recipe-title']")
    assert forest.is_displayed() and forest.size["width"] > 400
    assert len(forest.find_elements(By.CSS_SELECTOR, "rect.interval")) == 3  # the one-run entry has no interval
    assert len(forest.find_elements(By.CSS_SELECTOR, "circle.estimate")) == 4
    sota = driver.find_element(By.CSS_SELECTOR, "[data-sota]").text
    assert "multiplicity-adjusted estimate" in sota and "97.5 % confidence" in sota
    assert driver.find_element(By.ID, "how-to-read").is_displayed()
    assert off_site_requests(driver, live_server.url) == []
    screenshot(driver, "leaderboard-known-board")

    # A heatmap cell opens the page comparing its two entries.
    cell = driver.find_element(By.CSS_SELECTOR, "svg[aria-labelledby^='heatmap-recipe'] a")
    href = cell.get_attribute("href")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    cell.click()
    wait_for(lambda: "/compare/" in driver.current_url, timeout=30, message=f"a click on the cell to open {href}")
    verdict = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-verdict]"), timeout=30, message=href)[0]
    assert verdict.find_element(By.TAG_NAME, "h2").text
    assert driver.find_element(By.CSS_SELECTOR, "svg[aria-labelledby^='strip-compare-title']").is_displayed()
    screenshot(driver, "compare-from-heatmap")


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_contestant_uploads_predictions_and_watches_the_entry_arrive(
    live_server, driver, celery_worker_process, wait_for, tmp_path
):
    host, _alice = make_user("host"), make_user("alice")
    challenge, frame = digits_challenge(host, title="Browser digits")
    base = live_server.url
    log_in(driver, base, "alice", challenge.get_absolute_url())
    wait_for(lambda: driver.current_url == base + challenge.get_absolute_url(), timeout=30, message="the login")
    # the address changes before the page has loaded: wait for the board itself
    board = wait_for(lambda: driver.find_elements(By.ID, "leaderboard"), timeout=30, message="the board")[0]
    assert "No scored entries yet." in board.text
    screenshot(driver, "upload-1-empty-board")

    path = tmp_path / "my-predictions.csv"
    path.write_bytes(label_predictions(frame, correct_fraction=0.9, seed=3))
    driver.find_element(By.NAME, "method_name").send_keys("Browser upload")
    driver.find_element(By.CSS_SELECTOR, "input[name=kind][value=predictions]").click()
    driver.find_element(By.CSS_SELECTOR, "input[type=file][name=files]").send_keys(str(path))
    driver.find_element(By.CSS_SELECTOR, ".submit-form button[type=submit]").click()
    wait_for(lambda: "/submissions/" in driver.current_url, timeout=30, message="the submission page")
    submission = Submission.objects.get(method_name="Browser upload")
    assert urlsplit(driver.current_url).path == submission.get_absolute_url()
    screenshot(driver, "upload-2-submission-queued")

    def ended():  # progress.js polls the API and reloads the page once the submission has ended: that page
        state = driver.execute_script(PROGRESS_JS)
        return state if ended_page(state) else None

    card = wait_for(ended, timeout=120, interval=0.5, message=celery_worker_process.tail)
    assert card["status"] == "Scored", card
    assert card["finished"] == "1", card
    assert float(re.search(r"width:\s*([\d.]+)%", card["fill"]).group(1)) == 100, card
    assert card["text"].startswith("1 / 1 run finished"), card
    screenshot(driver, "upload-3-submission-scored")

    def entry_row():  # the report is recomputed by the worker a moment after the run is stored
        driver.get(base + challenge.get_absolute_url())
        return shown_rows(driver).get(submission.pk)

    shown = wait_for(entry_row, timeout=60, interval=1.0, message=celery_worker_process.tail)
    report = report_current(challenge=challenge).data
    row = next(r for r in report["entries"] if r["submission_id"] == submission.pk)
    assert_row_matches(shown, row)
    assert shown["data-groups"] == "a" and shown["data-rank"] == "1"
    assert row["mean"]["estimate"] == pytest.approx(Submission.objects.get(pk=submission.pk).runs.get().test_score)
    assert off_site_requests(driver, base) == []
    screenshot(driver, "upload-4-entry-on-the-board")


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_recipe_progress_bar_moves_until_every_run_is_scored(
    live_server, driver, celery_worker_process, wait_for, tmp_path
):
    host, _alice = make_user("host"), make_user("alice")
    challenge, _ = digits_challenge(host, title="Browser recipes", k_runs=3)
    base = live_server.url
    log_in(driver, base, "alice", challenge.get_absolute_url())
    wait_for(lambda: driver.current_url == base + challenge.get_absolute_url(), timeout=30, message="the login")
    wait_for(lambda: driver.find_elements(By.NAME, "method_name"), timeout=30, message="the submission form")
    driver.find_element(By.NAME, "method_name").send_keys("Majority recipe")
    driver.find_element(By.CSS_SELECTOR, "input[name=kind][value=recipe]").click()
    recipe = tmp_path / "slow_majority.py"
    recipe.write_text(SLOW_RECIPE)
    driver.find_element(By.CSS_SELECTOR, "input[type=file][name=recipe]").send_keys(str(recipe))
    driver.find_element(By.CSS_SELECTOR, ".submit-form button[type=submit]").click()
    wait_for(lambda: "/submissions/" in driver.current_url, timeout=30, message="the submission page")

    seen, partway = [], []

    # Read in one script, in the page's own thread: the page swaps its progress card as runs end,
    # and an element handle taken a moment before can point at a node already gone (Chromium then
    # answers "Node with given id does not belong to the document", not a stale-element error).
    def ended():
        state = driver.execute_script(PROGRESS_JS)
        if state is None:  # the page is reloading
            return None
        finished, rows = int(state["finished"]), state["rows"]
        if 0 < finished < 3 and not partway:
            partway.append((finished, rows.count("Succeeded")))
            screenshot(driver, "recipe-submission-running")
        seen.append(finished)
        return state if ended_page(state) else None

    card = wait_for(ended, timeout=240, interval=0.3, message=celery_worker_process.tail)
    assert card["status"] == "Scored", card
    assert card["text"].startswith("3 / 3 runs finished"), card
    assert seen == sorted(seen) and seen[-1] == 3, seen  # it only ever moves forward ...
    assert partway, seen  # ... and the page showed it part-way, without a reload,
    assert partway[0][0] == partway[0][1], partway  # with the runs table agreeing with the bar
    screenshot(driver, "recipe-submission-scored")
