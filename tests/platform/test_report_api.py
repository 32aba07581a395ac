"""Report endpoints: leaderboard (JSON, CSV, overrides, cache), compare, sota; runs built directly in the DB."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

from evaluation import stats
from evaluation.report import derive_seed, section_pairs
from leaderboard.api.report_views import MICRO_CACHE
from leaderboard.models import Report, Run, Submission, Team
from leaderboard.services.challenges import challenge_update

from .factories import digits_challenge, kish_trials, make_user

pytestmark = pytest.mark.django_db

RECIPE, PREDICTIONS, MEAN, BOO, PAIRS = 1, 2, 1, 2, 3  # derive_seed codes of evaluation.report
RNG = np.random.default_rng(5)
RECIPE_SCORES = {
    "resnet": 0.80 + 0.01 * RNG.standard_normal(6),
    "mlp": 0.70 + 0.01 * RNG.standard_normal(6),
    "svm": 0.78 + 0.01 * RNG.standard_normal(6),
}
OUTCOMES = {"good": (RNG.random((2, 72)) < 0.9).astype(float), "poor": (RNG.random((1, 72)) < 0.6).astype(float)}


@pytest.fixture
def microcache(settings):
    settings.VARBOARD = {**settings.VARBOARD, "LEADERBOARD_MICROCACHE_S": 60}
    MICRO_CACHE.clear()
    yield
    MICRO_CACHE.clear()


def add_entry(challenge, user, method, kind, scores, *, status="scored", outcomes=None, valid=None):
    team, _ = Team.objects.get_or_create(name=f"team-{method}")
    submission = Submission.objects.create(
        challenge=challenge,
        team=team,
        submitted_by=user,
        kind=kind,
        method_name=method,
        status=status,
        runs_expected=len(scores),
    )
    Run.objects.bulk_create(
        [
            Run(
                submission=submission,
                index=i,
                status="succeeded",
                test_score=float(score),
                valid_score=None if valid is None else float(valid[i]),
                outcomes=None if outcomes is None else Run.pack_outcomes(outcomes[i]),
            )
            for i, score in enumerate(scores)
        ]
    )
    return submission


@pytest.fixture
def board():
    """A challenge with three recipes, a one-run recipe, two prediction entries and a cancelled one."""
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    ids = {name: add_entry(challenge, host, name, "recipe", scores).pk for name, scores in RECIPE_SCORES.items()}
    ids["lonely"] = add_entry(challenge, host, "lonely", "recipe", [0.99]).pk
    for name, outcomes in OUTCOMES.items():
        ids[name] = add_entry(challenge, host, name, "predictions", outcomes.mean(axis=1), outcomes=outcomes).pk
    add_entry(challenge, host, "withdrawn", "predictions", [0.5], status="cancelled", outcomes=np.zeros((1, 72)))
    return challenge, ids


def get(url, **params):
    return APIClient().get(url, params)


def test_leaderboard_matches_stats(board):
    challenge, ids = board
    body = get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    rows = {row["method_name"]: row for row in body["entries"]}
    assert [row["method_name"] for row in body["entries"]] == ["resnet", "svm", "mlp", "lonely", "good", "poor"]
    assert "withdrawn" not in rows
    for name, scores in RECIPE_SCORES.items():
        ci = stats.bootstrap_interval(
            scores, "mean", n_resamples=200, confidence_level=0.95, rng=derive_seed(7, RECIPE, MEAN, ids[name])
        )
        row = rows[name]
        assert row["mean"]["estimate"] == pytest.approx(scores.mean())
        assert (row["mean"]["low"], row["mean"]["high"]) == pytest.approx((ci.low, ci.high))
        assert row["boo_n"]["estimate"] == pytest.approx(stats.boo_n(scores, 3))
        needed = stats.runs_needed(3, gamma=challenge.gamma, alpha=challenge.alpha).for_power  # 3 compared recipes
        # mlp is told apart from both others (a letter of its own): more runs decide nothing more (issue 23, row 12)
        expected = 0 if name == "mlp" else needed - 6
        assert row["runs_succeeded"] == 6 and row["k_runs"] == 6 and row["runs_needed_for_decision"] == expected
    assert not set(rows["mlp"]["groups"]) & set(rows["resnet"]["groups"] + rows["svm"]["groups"])
    assert rows["resnet"]["rank"] == 1 and rows["resnet"]["groups"].startswith("a")
    assert rows["lonely"]["too_few_runs"] and rows["lonely"]["rank"] is None
    tb = stats.paired_test_bootstrap(
        files=[OUTCOMES["good"], OUTCOMES["poor"]], n_resamples=200, rng=derive_seed(7, PREDICTIONS, PAIRS)
    )
    assert rows["good"]["mean"]["low"] == pytest.approx(tb.low[0], abs=1e-6)
    assert rows["good"]["mean"]["source"] == "test examples and files"
    assert rows["good"]["runs_succeeded"] == 2
    assert [s["kind"] for s in body["sections"]] == ["recipe", "predictions"]
    assert "comparisons" not in body["sections"][0]


def test_leaderboard_is_served_from_the_cache(board, django_assert_max_num_queries):
    challenge, _ = board
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    first = get(url)
    computed = Report.objects.get(challenge=challenge).computed_at
    with django_assert_max_num_queries(1):  # the challenge joined to its report row; the bytes from the cache
        again = get(url)
    assert again.content == first.content and Report.objects.get(challenge=challenge).computed_at == computed
    assert APIClient().get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_anonymous_reads_come_from_the_microcache(board, microcache, django_assert_num_queries):
    challenge, _ = board
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    first = get(url)
    with django_assert_num_queries(0):
        again = get(url)
    assert again.content == first.content and again["ETag"] == first["ETag"]
    assert APIClient().get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    signed_in = APIClient()
    signed_in.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user=challenge.hosts.first())[1]}")
    # Signed-in readers skip it: their token (knox also reads the user's other tokens to purge expired ones),
    # then challenge and report.
    with django_assert_num_queries(3):
        assert signed_in.get(url).content == first.content
    csv_response = get(url, format="csv")
    assert csv_response["Content-Type"].startswith("text/csv")  # the query string is part of the key


def test_leaderboard_csv_has_one_row_per_entry(board):
    challenge, _ = board
    response = get(f"/api/challenges/{challenge.slug}/leaderboard/", format="csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response.streaming
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(table) == 6 and table[0]["method_name"] == "resnet"
    assert {"mean.estimate", "mean.low", "boo_n.high", "groups"} <= set(table[0])
    # no entry here shows a rank interval (recipes: 6 paired runs < 16; predictions: one file on 72 examples < 500,
    # predrule23): the column is there, empty
    assert "rank_interval" in set(table[0]) and not any(row["rank_interval"] for row in table)


def test_overrides_recompute_on_the_fly_without_caching(board):
    challenge, _ = board
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    get(url)
    body = get(url, n=2, statistic="boo_n", gamma=0.8).json()
    assert body["overrides"] == {"n": 2, "statistic": "boo_n", "gamma": 0.8}
    resnet = next(row for row in body["entries"] if row["method_name"] == "resnet")
    assert resnet["boo_n"]["n"] == 2
    assert resnet["boo_n"]["estimate"] == pytest.approx(stats.boo_n(RECIPE_SCORES["resnet"], 2))
    assert body["settings"]["noether_n"] == stats.noether_sample_size(0.8, 0.05, 0.05)
    assert Report.objects.get(challenge=challenge).data["settings"]["boo_n"] == 3
    assert get(url, n=3).json()["overrides"] == {}  # equal to the challenge's: the cached report


@pytest.mark.parametrize(
    "params, field",
    [
        ({"gamma": 0.4}, "gamma"),
        ({"alpha": 0}, "alpha"),
        ({"n": 0}, "n"),
        ({"statistic": "max"}, "statistic"),
        ({"n": "five"}, "n"),
    ],
)
def test_bad_parameters_are_named(board, params, field):
    challenge, _ = board
    response = get(f"/api/challenges/{challenge.slug}/leaderboard/", **params)
    assert response.status_code == 400 and field in response.json()["errors"]


def test_compare_one_pair_both_ways(board):
    challenge, ids = board
    url = f"/api/challenges/{challenge.slug}/compare/"
    ab = get(url, a=ids["resnet"], b=ids["mlp"]).json()
    ba = get(url, a=ids["mlp"], b=ids["resnet"]).json()
    assert ab["comparison"]["a"] == ids["resnet"] and ba["comparison"]["a"] == ids["mlp"]
    assert ab["comparison"]["p"] == pytest.approx(1 - ba["comparison"]["p"])
    assert ab["comparison"]["low"] == pytest.approx(1 - ba["comparison"]["high"])
    assert ab["comparison"]["p"] == stats.prob_outperform(RECIPE_SCORES["resnet"], RECIPE_SCORES["mlp"], paired=True)
    assert ab["a"]["method_name"] == "resnet" and ab["section"] == "recipe"
    lonely = get(url, a=ids["resnet"], b=ids["lonely"]).json()
    assert lonely["comparison"] is None and "at least 2" in lonely["reason"]
    assert get(url, a=ids["resnet"], b=ids["good"]).status_code == 400
    assert get(url, a=ids["resnet"], b=999_999).status_code == 404
    missing = get(url, a=ids["resnet"])
    assert missing.status_code == 400 and "b" in missing.json()["errors"]


def test_sota_counts_every_scored_entry(board):
    challenge, ids = board
    body = get(f"/api/challenges/{challenge.slug}/sota/").json()
    sota = {s["kind"]: s for s in body["sota"]}
    best = OUTCOMES["good"].mean(axis=1).mean()
    trials = kish_trials(OUTCOMES["good"])  # the trials the best entry's own interval reads, at most its 72 examples
    expected = stats.adjusted_sota(best, 4, n=trials, estimates=[best, OUTCOMES["poor"].mean()])
    # m counts every scored file (good: 2, poor: 1), the cancelled entry's too: it was scored on the test set.
    assert sota["predictions"]["m"] == 4
    assert sota["predictions"]["method"] == "binomial" and sota["predictions"]["n"] == trials
    assert sota["predictions"]["estimate"] == pytest.approx(expected.estimate)
    assert sota["predictions"]["bound"] == pytest.approx(expected.lower)
    assert sota["recipe"]["method"] == "normal" and sota["recipe"]["m"] == 4
    assert sota["recipe"]["raw"] == pytest.approx(RECIPE_SCORES["resnet"].mean())


def test_the_state_of_the_art_says_which_entry_beats_its_own():
    """Issue 23 (a statistician's hunt): the state of the art is the highest mean, so where a verdict on P(A>B) shows
    another entry above it, the banner called an entry the board shows beaten "the best entry". The API and the
    page now say who beats it (``sota.beaten_by``)."""
    from django.test import Client

    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=30, boo_n=3, bootstrap_resamples=200, master_seed=7)
    x = 0.70 + 0.01 * np.random.default_rng(1).standard_normal(30)
    crashy = add_entry(challenge, host, "crashy", "recipe", x + np.where(np.arange(30) < 3, 0.2, -0.005))
    steady = add_entry(challenge, host, "steady", "recipe", x)
    board = get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    (section,) = [s for s in board["sections"] if s["kind"] == "recipe"]
    assert section["entries"] == [steady.pk, crashy.pk] and section["leader_group"] == [steady.pk]
    sota = {s["kind"]: s for s in get(f"/api/challenges/{challenge.slug}/sota/").json()["sota"]}["recipe"]
    assert sota["submission_id"] == crashy.pk and sota["beaten_by"] == [steady.pk]
    assert section["sota"]["beaten_by"] == [steady.pk]
    text = " ".join(Client().get(challenge.get_absolute_url()).content.decode().split())
    assert "The highest mean of 2 evaluations on this test data, crashy, scores" in text
    assert "Yet steady beats crashy on P(A&gt;B)" in text and "The best of 2 evaluations" not in text
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    assert "beaten_by" in schema["Sota"]["properties"]


def test_changed_settings_are_picked_up_and_private_boards_hidden(board):
    challenge, _ = board
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    assert get(url).json()["settings"]["boo_n"] == 3
    host = challenge.hosts.first()
    challenge = challenge_update(challenge=challenge, user=host, boo_n=4, visibility="private")
    assert get(url).status_code == 404
    client = APIClient()
    client.force_authenticate(host)
    assert client.get(url).json()["settings"]["boo_n"] == 4


def test_settings_the_decision_rule_cannot_use_give_a_clear_error(board):
    challenge, _ = board
    type(challenge).objects.filter(pk=challenge.pk).update(gamma=1.0)  # the model allows it; the rule does not
    response = get(f"/api/challenges/{challenge.slug}/leaderboard/")
    assert response.status_code == 400 and "gamma" in response.json()["detail"]


def test_schema_documents_the_report_endpoints():
    paths = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for path, params in (
        ("leaderboard", {"n", "gamma", "alpha", "statistic", "format"}),
        ("compare", {"a", "b"}),
        ("sota", {"alpha"}),
    ):
        operation = paths[f"/api/challenges/{{slug}}/{path}/"]["get"]
        assert params <= {p["name"] for p in operation["parameters"]}, path
        assert "application/json" in operation["responses"]["200"]["content"]


def test_compare_computes_a_pair_the_sparse_report_did_not_store():
    """14 recipes: entries 12 places apart are neither neighbours (5 each side) nor the leader's pair."""
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=200, master_seed=7)
    rng = np.random.default_rng(1)
    scores = {f"m{i:02d}": 0.80 - 0.002 * i + 0.01 * rng.standard_normal(6) for i in range(14)}
    ids = {name: add_entry(challenge, host, name, "recipe", s).pk for name, s in scores.items()}
    data = get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    order = [row["submission_id"] for row in data["entries"]]
    a, b = order[1], order[13]
    stored = section_pairs(Report.objects.get(challenge=challenge).data["sections"][0], {v: k for k, v in ids.items()})
    assert "comparisons" not in data["sections"][0] and "comparison_table" not in data["sections"][0]
    assert not any({pair["a"], pair["b"]} == {a, b} for pair in stored)
    url = f"/api/challenges/{challenge.slug}/compare/"
    body = get(url, a=a, b=b).json()
    names = {v: k for k, v in ids.items()}
    assert body["comparison"]["a"] == a and body["reason"] is None
    assert body["comparison"]["p"] == stats.prob_outperform(scores[names[a]], scores[names[b]], paired=True)
    dense = stats.pairwise_comparisons(
        np.stack([scores[n] for n in sorted(scores)]),
        n_resamples=10,
        alpha=challenge.alpha,
        gamma=challenge.gamma,
        correction=challenge.correction,
    )
    i, j = sorted(scores).index(names[a]), sorted(scores).index(names[b])
    assert body["comparison"]["pvalue_raw"] == pytest.approx(dense.pvalue_raw[i, j])
    assert body["comparison"]["pvalue"] >= dense.pvalue[i, j] - 1e-12  # one of the 91 pairs, never less adjusted


@pytest.fixture
def crowded():
    """60 recipes: more than one page."""
    host = make_user("host")
    challenge, _ = digits_challenge(host, k_runs=4, boo_n=2, bootstrap_resamples=100, master_seed=3)
    rng = np.random.default_rng(4)
    ids = [
        add_entry(challenge, host, f"method-{i:02d}", "recipe", 0.9 - 0.003 * i + 0.01 * rng.standard_normal(4)).pk
        for i in range(60)
    ]
    return challenge, ids


def test_leaderboard_json_is_paged_and_csv_streams_every_entry(crowded):
    challenge, ids = crowded
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    first = get(url).json()
    assert len(first["entries"]) == 50 and first["paging"]["total"] == 60 and first["paging"]["has_next"]
    order = [row["submission_id"] for row in first["entries"]]
    second = get(url, offset=50).json()
    assert len(second["entries"]) == 10 and not second["paging"]["has_next"]
    assert not set(order) & {row["submission_id"] for row in second["entries"]}
    found = get(url, q="METHOD-07").json()
    assert [row["method_name"] for row in found["entries"]] == ["method-07"] and found["paging"]["matched"] == 1
    middle = order[30]
    around = get(url, around=middle, limit=11).json()
    assert [row["submission_id"] for row in around["entries"]][5] == middle and around["paging"]["around"] == middle
    assert get(url, limit=0).status_code == 400 and "limit" in get(url, limit="x").json()["errors"]
    assert get(url, offset=-1).status_code == 400
    rows = list(csv.DictReader(io.StringIO(b"".join(get(url, format="csv").streaming_content).decode())))
    assert len(rows) == 60


def test_leaderboard_page_shows_one_page_search_and_neighbourhood(crowded, client):
    challenge, ids = crowded
    page = client.get(f"/c/{challenge.slug}/").content.decode()
    assert page.count('data-submission="') == 50 and "data-paging" in page and 'rel="next"' in page
    found = client.get(f"/c/{challenge.slug}/", {"q": "method-59"}).content.decode()
    assert found.count('data-submission="') == 1
    around = client.get(f"/c/{challenge.slug}/", {"around": ids[40], "limit": 5}).content.decode()
    assert f'data-submission="{ids[40]}"' in around and around.count('data-submission="') == 5
    assert "the neighbourhood of the entry asked for" in around
