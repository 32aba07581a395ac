"""The statistical leaderboard pages: the challenge page and the compare page, through the test client.

The numbers a page shows are checked against :func:`evaluation.report.build_report` called
directly on the runs the test wrote, not against the page's own report.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from evaluation import stats
from evaluation.report import EntryRuns, build_report, section_pairs
from leaderboard.models import Challenge, Run, Submission
from leaderboard.services.reports import report_settings
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from leaderboard.services.teams import team_personal_for

from .factories import csv_bytes, digits_challenge, make_user, regression_challenge

pytestmark = pytest.mark.django_db

EXPLAINED = ("runs", "interval", "boon", "spread", "groups", "rank", "pab", "sota", "noether")


# ------------------------------------------------------------------ helpers (also used by tests/browser)
def write_entry(
    challenge: Challenge,
    user,
    method_name: str,
    scores,
    *,
    kind: str = "recipe",
    status: str = "scored",
    runs_expected: int | None = None,
) -> Submission:
    """A submission whose run i scored ``scores[i]``, written directly as succeeded runs."""
    submission = Submission.objects.create(
        challenge=challenge,
        team=team_personal_for(user=user),
        submitted_by=user,
        kind=kind,
        method_name=method_name,
        status=status,
        runs_expected=runs_expected or len(scores),
    )
    Run.objects.bulk_create(
        Run(
            submission=submission,
            index=i,
            status="succeeded",
            test_score=float(score),
            seeds={"init": i},
            split_id=f"split-{i}",
        )
        for i, score in enumerate(scores)
    )
    return submission


def expected_report(challenge: Challenge, submissions: list[Submission]) -> dict:
    """The report of these submissions' runs, from ``evaluation`` itself, keyed by submission id."""
    entries = []
    for s in submissions:
        runs = list(s.runs.filter(status="succeeded").order_by("index"))
        entries.append(
            EntryRuns(
                s.pk,
                s.method_name,
                s.team.name,
                s.kind,
                s.runs_expected,
                np.array([r.index for r in runs]),
                np.array([r.test_score for r in runs]),
            )
        )
    report = build_report(entries, report_settings(challenge=challenge))
    return {"rows": {row["submission_id"]: row for row in report["entries"]}, "report": report}


def known_board(host, users):
    """A recipe challenge with a tie at the top, a clearly worse entry and a one-run entry.

    ``Strong`` and ``Twin`` have identical runs (P = 0.5: one group, rank "=1"); ``Weak`` loses
    all 10 paired runs to both (its own group); ``Single`` has one run (too few to compare).
    """
    challenge, _ = digits_challenge(host, title="Known board", k_runs=10, bootstrap_resamples=500)
    rng = np.random.default_rng(5)
    strong = 0.95 + 0.004 * rng.standard_normal(10)
    weak = 0.80 + 0.004 * rng.standard_normal(10)
    subs = [
        write_entry(challenge, users[0], "Strong", strong),
        write_entry(challenge, users[1], "Twin", strong),
        write_entry(challenge, users[0], "Weak", weak),
        write_entry(challenge, users[1], "Single", [0.97], runs_expected=10, status="running"),
    ]
    return challenge, subs


class PageParser(HTMLParser):
    """Leaderboard rows (``tr[data-submission]``: text of each ``td[data-*]``), links and sources."""

    def __init__(self):
        super().__init__()
        self.rows: dict[int, dict[str, str]] = {}
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()
        self._row = None
        self._cell = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("src", "srcset", "href", "action", "xlink:href", "poster", "data"):
            if attrs.get(name) is not None:
                self.urls.append((tag, name, attrs[name]))
        if tag == "tr" and "data-submission" in attrs:
            self._row = self.rows.setdefault(int(attrs["data-submission"]), {})
        elif tag == "td" and self._row is not None:
            keys = [k for k in attrs if k.startswith("data-")]
            self._cell, self._text = (keys[0] if keys else None), []

    def handle_endtag(self, tag):
        if tag == "td" and self._row is not None and self._cell:
            self._row[self._cell] = " ".join("".join(self._text).split())
            self._cell = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._cell:
            self._text.append(data)


def parse(html: str) -> PageParser:
    parser = PageParser()
    parser.feed(html)
    return parser


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]


def assert_row_matches(shown: dict[str, str], row: dict) -> None:
    """The row's rank, letters, mean/Boo_n and their intervals, rank interval, as the report has them."""
    name = row["method_name"]
    assert shown["data-rank"] == (row["rank_display"] or "—"), name
    assert shown["data-groups"] == row["groups"], name
    assert shown["data-runs"].startswith(f"{row['runs_succeeded']}/{row['runs_expected']}"), name
    for key, cell in (("mean", "data-mean"), ("boo_n", "data-boon")):
        stat = row[key]
        expected = [stat["estimate"]] + ([stat["low"], stat["high"]] if stat["low"] is not None else [])
        if key == "boo_n" and row["boo_n_unbiased"]["estimate"] is not None:  # shown under the paper's
            expected.append(row["boo_n_unbiased"]["estimate"])
        assert numbers(shown[cell]) == pytest.approx(expected, abs=6e-5), (name, key, shown[cell])
    interval = row["rank_interval"]
    if interval is None:
        assert shown["data-rank-interval"] == "—"
    else:
        want = str(interval["low"]) if interval["low"] == interval["high"] else f"{interval['low']}–{interval['high']}"
        assert shown["data-rank-interval"] == want, name


@pytest.fixture(autouse=True)
def no_enqueue(monkeypatch, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def host():
    return make_user("host")


@pytest.fixture
def users():
    return [make_user("alice"), make_user("bob")]


# ------------------------------------------------------------------ the challenge page
def test_challenge_page_shows_the_report_of_the_runs(client, host, users):
    challenge, subs = known_board(host, users)
    expected = expected_report(challenge, subs)
    response = client.get(challenge.get_absolute_url())
    assert response.status_code == 200
    html = response.content.decode()
    page = parse(html)

    assert set(page.rows) == {s.pk for s in subs}
    for sub in subs:
        assert_row_matches(page.rows[sub.pk], expected["rows"][sub.pk])
    strong, twin, weak, single = (expected["rows"][s.pk] for s in subs)
    # The data really has the shape this test is about: a tie, two groups, an excluded entry.
    assert (strong["rank_display"], twin["rank_display"], weak["rank_display"]) == ("=1", "=1", "3")
    assert strong["groups"] == twin["groups"] == "a" and weak["groups"] == "b"
    assert single["too_few_runs"] and not single["compared"]
    assert "too few runs" in page.rows[subs[3].pk]["data-runs"]
    needed = stats.runs_needed(3).for_power - 10  # the rule's runs for a board of 3 compared entries
    assert f"needs {needed} more for a decision" in page.rows[subs[0].pk]["data-runs"]
    assert "Not compared: 1 run: at least 2 are needed to compare" in html
    # at k = 10 a mean board shows no rank interval (rank23: from 16 runs; it quoted 96.3 %, flagged with its range
    # 90.5-96.3 % over board shapes) and says why, with the coverage below the rule; nothing else is flagged
    assert "data-coverage" in html and "an interval is flagged where it covers outside 93–97 %" not in html
    assert "No rank interval: k = 10 &lt; 16: no rank interval on a board ranked by the mean" in html
    # and its account of the design does not say how the rank intervals it withholds resample the runs
    assert "each pair on the seeds both entries have." in html and "rank intervals resample" not in html
    assert "81.4-93.2 % at k = 5-15 on 30 entries 0.001 apart" in html and "rank 96.3 %" not in html
    assert "intervals at k = 10 runs:" in html  # the board's own k is tabulated: quoted as it is
    assert "up to the runs available, at most 20." in html
    # Every entry the board shows links to its page, which every reader may open: the running one's too (its runs
    # so far are on the board; selectors.submissions_readable)
    assert f'href="/submissions/{subs[0].pk}/"' in html and f'href="/submissions/{subs[3].pk}/"' in html
    assert Client().get(f"/submissions/{subs[3].pk}/").status_code == 200

    # Charts: forest plot, heatmap (cells link to the compare page), strip plot, Boo_n curves, per entry.
    for chart in ("forest-recipe", "heatmap-recipe", "strip-recipe", "boon-recipe", f"boon-recipe-{subs[0].pk}"):
        assert f"{chart}-title" in page.ids, chart
    assert html.count('class="cell"') == 3 * 2  # 3 compared entries
    assert f"/c/{challenge.slug}/compare/?a={subs[0].pk}&amp;b={subs[2].pk}" in html
    # Decided pairs: both top entries beat Weak, and nothing else is decided.
    decided = html.split("data-decided", 1)[1].split("</table>", 1)[0]
    assert decided.count("<tr>") == 3 and decided.count(">Weak<") == 2

    # The state-of-the-art banner: raw best, adjusted estimate, bound, m, and the sentence.
    sota = expected["report"]["sections"][0]["sota"]
    for key in ("raw", "estimate", "bound"):
        assert f"data-sota-{key}>{sota[key]:.4f}<" in html
    assert "data-sota-m>3<" in html and sota["duplicates"] == 1  # Twin repeats Strong's runs: counted once
    text = " ".join(html.split())
    # with Twin counted once, being the best of Strong, Weak and Single costs nothing visible at four digits
    assert f"{sota['raw']:.4f}" == f"{sota['estimate']:.4f}"
    assert (
        f"Being picked as the best of 3 costs nothing visible at four digits here: the multiplicity-adjusted estimate "
        f"is also <strong>{sota['estimate']:.4f}</strong>, and the true accuracy of the best method is at least "
        f"<strong>{sota['bound']:.4f}</strong> with 97.5 % confidence."
    ) in text
    assert "Training recipes (seed-paired runs on out-of-bootstrap splits)" in html

    # Every statistic is explained, and the data can be downloaded.
    assert {f"explain-{name}" for name in EXPLAINED} <= page.ids and "How to read this" in html
    assert f"/api/challenges/{challenge.slug}/leaderboard/?format=csv" in html
    assert f"/api/challenges/{challenge.slug}/runs/?format=csv" in html


def test_both_sections_and_the_prediction_entries_design(client, host, users):
    challenge, subs = known_board(host, users)
    write_entry(challenge, users[0], "Uploaded labels", [0.9, 0.91], kind="predictions")  # no per-example outcomes
    html = client.get(challenge.get_absolute_url()).content.decode()
    assert html.index("Training recipes (seed-paired") < html.index("Predictions (paired bootstrap over the hidden")
    assert "no per-example outcomes stored" in html
    assert "0.9050" in html  # its mean over the two files


def test_empty_leaderboard(client, host):
    challenge, _ = digits_challenge(host)
    html = client.get(challenge.get_absolute_url()).content.decode()
    assert "No scored entries yet." in html
    assert "<svg" not in html and "data-sota" not in html
    assert 'id="how-to-read"' in html


@pytest.mark.parametrize(
    "runs, quoted",
    [
        (40, "at k = 30 runs (the simulated k nearest below this board's 40):"),
        (3, "at k = 5 runs (the simulated k closest to this board's 3):"),
    ],
)
@pytest.mark.parametrize("k_runs", [10, 40])
def test_the_coverage_note_says_when_it_quotes_another_k_than_the_boards(client, host, users, runs, quoted, k_runs):
    """Found by a new user: a 370-run board said "at k = 30" and a k = 3 board "at k = 5", as if they were theirs.
    The board's k is the runs its entries have, not the challenge's k_runs (stats17: entries of 10 runs at k = 40
    read "at k = 30 runs (the simulated k nearest below this board's 40)")."""
    challenge, _ = digits_challenge(host, title="Runs board", k_runs=k_runs, bootstrap_resamples=200)
    rng = np.random.default_rng(5)
    for user, name, centre in ((users[0], "A", 0.9), (users[1], "B", 0.8)):
        write_entry(challenge, user, name, centre + 0.004 * rng.standard_normal(runs), runs_expected=runs)
    html = client.get(challenge.get_absolute_url()).content.decode()
    assert quoted in html


def test_a_report_that_cannot_be_computed_is_a_notice_not_an_error(client, host, users):
    challenge, _ = known_board(host, users)
    Challenge.objects.filter(pk=challenge.pk).update(gamma=1.0)  # the decision rule needs gamma < 1
    response = client.get(challenge.get_absolute_url())
    assert response.status_code == 200
    assert "The leaderboard cannot be computed" in response.content.decode()


def test_pages_have_no_external_urls(client, host, users):
    challenge, subs = known_board(host, users)
    pages = [
        challenge.get_absolute_url(),
        f"/c/{challenge.slug}/compare/?a={subs[0].pk}&b={subs[2].pk}",
        f"/c/{challenge.slug}/compare/",
        "/",
        subs[0].get_absolute_url(),
    ]
    for url in pages:
        html = client.get(url).content.decode()
        found = parse(html).urls
        assert found, url
        external = [
            (tag, name, value)
            for tag, name, value in found
            if urlsplit(value).scheme or urlsplit(value).netloc or value.startswith("//")
        ]
        assert not external, (url, external)
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", html), url  # no remote fonts or images in styles
    css = open(finders.find("varboard/style.css")).read()
    assert "//" not in css.replace("/*", "").replace("*/", "")


def test_a_loss_is_bounded_from_above(client, host, users):
    challenge, _, _ = regression_challenge(host, k_runs=5)
    subs = [
        write_entry(challenge, users[0], "Small error", [1.0, 1.1, 0.9, 1.05, 0.95]),
        write_entry(challenge, users[1], "Large error", [2.0, 2.1, 1.9, 2.05, 1.95]),
    ]
    html = " ".join(client.get(challenge.get_absolute_url()).content.decode().split())
    sota = expected_report(challenge, subs)["report"]["sections"][0]["sota"]
    assert "Mean ↓" in html and "<dt>Upper bound</dt>" in html
    assert sota["bound_side"] == "upper"
    assert (
        f"the true rmse of the best method is at most <strong>{sota['bound']:.4f}</strong> with 97.5 % confidence"
    ) in html


def test_the_boo_n_curves_caption_follows_the_board_s_direction(client, host, users):
    """A host's review: on a loss board every Boo_n curve falls as n grows (the best of more runs is lower), and
    the caption explained a falling curve as validation luck; there the sign of luck is a curve that rises."""
    loss, _, _ = regression_challenge(host, k_runs=5)
    write_entry(loss, users[0], "Small error", [1.0, 1.1, 0.9, 1.05, 0.95])
    write_entry(loss, users[1], "Large error", [2.0, 2.1, 1.9, 2.05, 1.95])
    html = " ".join(client.get(loss.get_absolute_url()).content.decode().split())
    assert "Why a curve can fall" not in html
    assert "Lower is better here, so a curve falls as n grows. Why one can rise:" in html
    assert "its expected test score can rise above the mean" in html


def test_pages_show_no_hidden_labels_and_no_logs(client, host, users):
    """The leaderboard and compare pages of a scored regression challenge, for anyone."""
    challenge, frame, hidden = regression_challenge(host)
    test = frame[frame.is_test == 1]
    ids = []
    for user, shift in zip(users, (0.0, 0.5)):
        table = test[["id"]].assign(prediction=9000.0 + shift)
        sub = submission_create_predictions(
            challenge=challenge,
            user=user,
            method_name=f"constant {shift}",
            files=[UploadedFile("p.csv", csv_bytes(table))],
        )
        submission_score(submission_id=sub.pk)
        Run.objects.filter(submission=sub).update(log="SECRET-LOG-LINE", error_message="SECRET-ERROR")
        ids.append(sub.pk)
    for viewer in (client, None):
        if viewer is None:
            client.force_login(users[1])
            viewer = client
        for url in (challenge.get_absolute_url(), f"/c/{challenge.slug}/compare/?a={ids[0]}&b={ids[1]}"):
            html = viewer.get(url).content.decode()
            assert "constant 0.0" in html and "constant 0.5" in html, url
            assert not [label for label in hidden if label in html], url
            assert "SECRET-" not in html, url


# ------------------------------------------------------------------ the compare page
def test_compare_page_explains_one_comparison(client, host, users):
    challenge, subs = known_board(host, users)
    strong, weak = subs[0], subs[2]
    section = expected_report(challenge, subs)["report"]["sections"][0]
    pair = next(
        p
        for p in section_pairs(section, {s.pk: s.method_name for s in subs})
        if {p["a"], p["b"]} == {strong.pk, weak.pk}
    )
    html = client.get(f"/c/{challenge.slug}/compare/?a={strong.pk}&b={weak.pk}").content.decode()
    assert 'data-verdict="a_better"' in html and "Strong is better" in html
    p, low, high = (
        pair[k] if pair["a"] == strong.pk else 1 - pair[j] for k, j in (("p", "p"), ("low", "high"), ("high", "low"))
    )
    assert f"data-p>{p:.3f}<" in html and f"[{low:.3f}, {high:.3f}]" in html
    # The interval is labelled with the level it is drawn at, the pair's multiplicity-adjusted one (the API's
    # `level`, the board's pair table), not the board's confidence (a review found "95 % interval" at 98.3 %).
    assert pair["level"] > 0.95
    assert f"{100 * pair['level']:.3g} % interval <span data-interval>[{low:.3f}, {high:.3f}]" in html
    assert 'id="strip-compare-title"' in html and 'id="boon-compare-title"' in html
    # The p-value is named by the test the board ran (pair["method"]): paired runs, Wilson's score test.
    assert pair["method"] == "wilson"
    assert "Wilson&#x27;s score test of P(A&gt;B) = ½ on the paired runs" in html and "sign test" not in html
    # Seen from the other side: the same verdict, in words, for B.
    html = client.get(f"/c/{challenge.slug}/compare/?a={weak.pk}&b={strong.pk}").content.decode()
    assert 'data-verdict="b_better"' in html and "Strong is better" in html
    # The tie.
    html = client.get(f"/c/{challenge.slug}/compare/?a={strong.pk}&b={subs[1].pk}").content.decode()
    assert 'data-verdict="not_significant"' in html and "cannot be told apart" in html


@pytest.mark.parametrize(
    "query, status, message",
    [
        ("", 200, None),
        ("?a=1", 400, "Choose two entries of this leaderboard."),
        ("?a=x&b=2", 400, "Choose two entries of this leaderboard."),
        ("?a={strong}&b={strong}", 200, "Choose two different entries."),
        ("?a={strong}&b={single}", 200, "Single (bob) is not compared: 1 run: at least 2 are needed to compare"),
        ("?a={strong}&b={pred}", 200, "they are scored on different test data"),
    ],
)
def test_compare_page_refuses_what_it_cannot_compare(client, host, users, query, status, message):
    challenge, subs = known_board(host, users)
    pred = write_entry(challenge, users[0], "Uploaded labels", [0.9, 0.91], kind="predictions")
    query = query.format(strong=subs[0].pk, single=subs[3].pk, pred=pred.pk)
    response = client.get(f"/c/{challenge.slug}/compare/{query}")
    assert response.status_code == status
    html = response.content.decode()
    assert "<select" in html  # the page always offers the choice
    if message:
        assert message in html
    else:
        assert "data-problem" not in html and "data-verdict" not in html
    # the compare API's link only for a pair (with none it answered 400), and no entry cards for one entry twice
    pair_chosen = query not in ("", "?a=1", "?a=x&b=2") and message != "Choose two different entries."
    assert ("data-compare-api" in html) == pair_chosen
    assert ('data-entry="A"' in html) == ("data-compare-api" in html)


def test_compare_page_of_a_private_challenge_is_404(client, host, users):
    challenge, _ = known_board(host, users)
    Challenge.objects.filter(pk=challenge.pk).update(visibility="private")
    assert client.get(f"/c/{challenge.slug}/compare/").status_code == 404


#: What a page loads (not where its links lead): these attributes on any tag, and ``href`` on these tags.
LOADING_ATTRIBUTES = ("src", "srcset", "data", "poster", "xlink:href")
LOADING_HREF_TAGS = ("link", "use", "image", "script", "base")


def off_site_loads(html: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value) of everything ``html`` would load from a host other than the site's."""
    found = [
        (tag, name, value)
        for tag, name, value in parse(html).urls
        if name in LOADING_ATTRIBUTES or (name == "href" and tag in LOADING_HREF_TAGS)
    ]
    urls = [(tag, name, url.strip().split(" ")[0]) for tag, name, value in found for url in value.split(",")]
    off = [
        (tag, name, url)
        for tag, name, url in urls
        if url.startswith("//") or urlsplit(url).netloc not in ("", "testserver")
    ]
    off += [("style", "url()", m) for m in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)", html)]
    return off


def test_no_page_loads_anything_from_another_host(client, host, users):
    """Every page (anonymous, contestant, host; the host's form, preview and planner; the imported challenge with
    its citation link) loads only from the site itself: links to a source may leave it, loads may not."""
    from leaderboard.models import EntryProvenance

    challenge, subs = known_board(host, users)
    other, _ = digits_challenge(host, title="Another challenge")
    EntryProvenance.objects.create(
        submission=subs[0], source="published", link="https://example.org/paper", note="Someone et al. (2018)"
    )
    slug = challenge.slug
    pages = [
        "/",
        "/login/",
        "/signup/",
        "/challenges/plan/",
        f"/c/{slug}/",
        f"/c/{slug}/compare/",
        f"/c/{slug}/compare/?a={subs[0].pk}&b={subs[2].pk}",
        subs[0].get_absolute_url(),
        "/api/docs/",
        f"/c/{other.slug}/",
    ]
    host_pages = [
        "/challenges/new/",
        f"/c/{slug}/",
        f"/c/{slug}/preview/",
        f"/c/{slug}/edit/",
        f"/c/{slug}/audit/",
        "/teams/",
        "/account/tokens/",
        subs[0].get_absolute_url(),
    ]
    seen = {}
    for user, urls in ((None, pages), (host, host_pages)):
        if user is not None:
            client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            seen[url] = off_site_loads(response.content.decode())
    assert "https://example.org/paper" in client.get(f"/c/{slug}/").content.decode()  # the citation is a link ...
    assert {url: off for url, off in seen.items() if off} == {}  # ... and nothing is loaded from elsewhere
    for name in ("varboard/style.css", "varboard/pages.css"):
        css = open(finders.find(name)).read()
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", css) and "@import" not in css, name


@pytest.mark.parametrize("estimate,equal", [(0.99999, True), (0.9512, False)])
def test_the_sota_sentence_claims_no_overstatement_it_does_not_show(estimate, equal):
    """Found by a new user: 'that number overstates ... the multiplicity-adjusted estimate is 1.0000' beside the best
    observed 1.0000, and 'the best of 13 entries' on a section of 4 (m counts every evaluation: files, versions)."""
    from django.template.loader import render_to_string

    sota = {"raw": 1.0, "estimate": estimate, "bound": 0.9, "m": 13, "best": "Probe", "bound_side": "lower"}
    context = {
        "section": {"kind": "predictions", "sota": sota, "entries": []},
        "board": {"sota_confidence_pct": 97.5, "confidence_pct": 95},
        "settings": {},
        "metric": "accuracy",
    }
    text = " ".join(render_to_string("leaderboard/_section.html", context).split())
    assert "The best of 13 evaluations on this test data, Probe, scores 1.0000." in text
    assert ("overstates" not in text) == equal
    assert ("the multiplicity-adjusted estimate is also <strong>1.0000</strong>" in text) == equal


def test_the_home_page_counts_entries_as_the_board_does(client, host):
    """Found by a new user: the home page said 7 entries (every scored submission), the challenge page 6 (an
    entry's versions count once)."""
    from leaderboard.services.reports import report_recompute

    from .factories import digits_challenge, make_user, stored_recipe

    challenge, _ = digits_challenge(host, title="Counted", bootstrap_resamples=200)
    ann, ben = make_user("ann"), make_user("ben")
    stored_recipe(challenge, ann, "m", 5, [0.8, 0.81, 0.79, 0.8, 0.82])
    stored_recipe(challenge, ann, "m", 5, [0.81, 0.82, 0.8, 0.81, 0.83])  # version 2 of the same entry
    stored_recipe(challenge, ben, "n", 5, [0.7, 0.71, 0.69, 0.7, 0.72])
    cara = stored_recipe(challenge, make_user("cara"), "o", 5, [0.6, 0.61, 0.59, 0.6, 0.62])
    cara.status = "running"  # some runs scored, others still running: on the board, so counted (a reviewer's case)
    cara.save(update_fields=["status"])
    stored_recipe(challenge, make_user("dan"), "p", 5)  # no run scored yet: not on the board
    report_recompute(challenge_id=challenge.pk)
    home = client.get("/").content.decode()
    row = home[home.index(challenge.get_absolute_url()) :].split("</tr>")[0]
    assert re.findall(r'<td class="num"[^>]*>(\d+)</td>', row) == ["3"]
    page = client.get(challenge.get_absolute_url()).content.decode()
    assert '<span class="fact-label">Entries</span> 3' in page


def test_pages_name_the_scoring_program_s_metric(client, host):
    """Found by a new host: with a scoring program ranking by its own metric, the submission page's runs said
    'Public accuracy' and the home page 'Accuracy' (the metric that only fixes the file format)."""
    from .factories import digits_challenge, make_user, stored_recipe

    challenge, _ = digits_challenge(host, title="Costed", bootstrap_resamples=200)
    primary = {"name": "cost", "label": "Cost-weighted error", "higher_is_better": False, "primary": True}
    Challenge.objects.filter(pk=challenge.pk).update(program_metrics=[primary])
    sub = stored_recipe(challenge, make_user("eve"), "m", 3, [0.2, 0.21, 0.19])
    home = client.get("/").content.decode()
    assert "Cost-weighted error" in home[home.index(challenge.get_absolute_url()) :].split("</tr>")[0]
    from .test_api import client_for

    host_client = client_for(host)
    page = host_client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "cost-weighted error</th>" in page and "accuracy</th>" not in page


def test_a_submission_of_several_rmse_files_shows_the_board_s_pooled_score(client, host, users):
    """A reviewer's finding: the board showed files of RMSE 1 and 3 pooled (√5), the API and the pages
    their mean (2), and the final pick ranked by that mean. One rule now: Metric.pool_files."""
    from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
    from leaderboard.services.entries import entry_versions, ranking_value

    challenge, _, _ = regression_challenge(host, k_runs=2)
    ids = dataset_test_ids(dataset=challenge.dataset)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(float)
    files = [UploadedFile(f"p{e}.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": truth + e}))) for e in (1, 3)]
    sub = submission_create_predictions(challenge=challenge, user=users[0], method_name="two files", files=files)
    submission_score(submission_id=sub.pk)
    client.force_login(users[0])
    shown = client.get(f"/api/submissions/{sub.pk}/").json()["score"]
    board = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"][0]
    assert shown == pytest.approx(5**0.5, rel=1e-9) and board["mean"]["estimate"] == pytest.approx(shown, rel=1e-9)
    version = entry_versions(challenge=challenge)[sub.pk]
    assert ranking_value(challenge, version) == pytest.approx(-(5**0.5), rel=1e-9)  # oriented: lower is better


def test_the_home_page_says_which_challenges_are_closed_or_not_open_yet(client, host):
    """A new user's finding (2026-11-30): the demo's digits had closed that morning, but the list showed only a
    closing date ("2026-11-30") and nothing said that a submission would be refused."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import Phase

    from .factories import digits_challenge

    now = timezone.now()
    closed, _ = digits_challenge(host, title="Ended")
    Phase.objects.filter(challenge=closed).update(opens_at=now - timedelta(days=2), closes_at=now - timedelta(hours=1))
    later, _ = digits_challenge(host, title="Later")
    Phase.objects.filter(challenge=later).update(opens_at=now + timedelta(days=1), closes_at=now + timedelta(days=9))
    running, _ = digits_challenge(host, title="Running")
    home = client.get("/").content.decode()

    def row(challenge):
        return home[home.index(challenge.get_absolute_url()) :].split("</tr>")[0]

    assert "data-closed" in row(closed) and "data-opens-later" not in row(closed)
    assert "data-opens-later" in row(later) and "data-closed" not in row(later)
    assert "data-closed" not in row(running) and "data-opens-later" not in row(running)


def test_a_secondary_metric_without_an_interval_below_6_files_says_why_on_the_page():
    """Found by a new user (stats20): a prediction entry of 5 files showed Macro F1 with no interval and no reason,
    while the JSON gave "5 runs: no interval of the mean below 6 runs"; the mean's cell flags its own."""
    from django.template.loader import render_to_string
    from django.utils.html import escape

    from evaluation.report.rows import mean_warning

    warning = mean_warning(5)
    secondary = {"name": "macro_f1", "mean": {"estimate": 0.71, "low": None, "high": None, "warning": warning}}
    row = {"submission_id": 1, "method_name": "bob", "groups": "a", "group_letters": ["a"], "mean": {"estimate": 1.8}}
    row["secondary"] = [secondary]
    context = {
        "section": {"kind": "predictions", "sota": {"raw": None}, "entries": [row]},
        "board": {"confidence_pct": 95},
        "settings": {},
        "metric": "cost",
    }
    text = render_to_string("leaderboard/_section.html", context)
    cell = text.split('data-secondary="macro_f1"', 1)[1].split("</td>", 1)[0]
    assert "data-secondary-withheld" in cell and f'title="{escape(warning)}"' in cell
