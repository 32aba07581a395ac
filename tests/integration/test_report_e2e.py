"""End to end: known runs in PostgreSQL, predictions scored and the report recomputed by a real Celery
worker (queue ``scoring``), the report read over HTTP and checked against ``evaluation.stats`` directly."""

from __future__ import annotations

import numpy as np
import pytest
import requests
from django.db import connection

from evaluation import stats
from evaluation.report import derive_seed
from leaderboard.models import Report, Run, Submission, Team
from tests.conftest import wait_for
from tests.platform.factories import PASSWORD, digits_challenge, kish_trials, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RECIPE, PREDICTIONS, MEAN, PAIRS = 1, 2, 1, 3  # derive_seed codes of evaluation.report
RECIPES = {
    "wide": [0.91, 0.93, 0.92, 0.94, 0.92, 0.93],
    "deep": [0.92, 0.92, 0.93, 0.93, 0.90, 0.92],
    "tiny": [0.71, 0.74, 0.72, 0.70, 0.73, 0.72],
}


def token(base: str, username: str) -> dict:
    response = requests.post(f"{base}/api/auth/token/", data={"username": username, "password": PASSWORD}, timeout=10)
    response.raise_for_status()
    return {"Authorization": f"Token {response.json()['token']}"}


def test_report_through_the_api_matches_stats(live_server, celery_worker_process):
    assert connection.vendor == "postgresql"
    host, alice, _bob = make_user("host"), make_user("alice"), make_user("bob")
    challenge, frame = digits_challenge(host, k_runs=6, boo_n=3, bootstrap_resamples=300, master_seed=42)
    recipe_ids = {}
    for name, scores in RECIPES.items():
        team = Team.objects.create(name=f"team-{name}")
        submission = Submission.objects.create(
            challenge=challenge,
            team=team,
            submitted_by=host,
            kind="recipe",
            method_name=name,
            status="scored",
            runs_expected=6,
        )
        Run.objects.bulk_create(
            [
                Run(submission=submission, index=i, status="succeeded", test_score=score)
                for i, score in enumerate(scores)
            ]
        )
        recipe_ids[name] = submission.pk
    uploads = {"alice": [0.9, 0.85], "bob": [0.6]}
    prediction_ids = {}
    for user, fractions in uploads.items():
        files = [
            ("files", (f"seed{i}.csv", label_predictions(frame, correct_fraction=f, seed=i), "text/csv"))
            for i, f in enumerate(fractions)
        ]
        response = requests.post(
            f"{live_server.url}/api/challenges/{challenge.slug}/submissions/",
            headers=token(live_server.url, user),
            data={"method_name": f"{user}-net"},
            files=files,
            timeout=30,
        )
        assert response.status_code == 202, response.text
        prediction_ids[user] = response.json()["id"]

    def reported():  # both scored by the worker, and the worker's last recomputation includes them
        if Submission.objects.filter(pk__in=prediction_ids.values(), status="scored").count() < 2:
            return None
        report = Report.objects.filter(challenge=challenge, recompute_pending=False, computed_at__isnull=False).first()
        return report if report and len(report.data.get("entries", [])) == 5 else None

    report = wait_for(reported, timeout=120, message=celery_worker_process.tail)
    body = requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/leaderboard/", timeout=30).json()
    assert body["computed_at"].replace("Z", "+00:00") == report.computed_at.isoformat()  # served from the cache
    rows = {row["submission_id"]: row for row in body["entries"]}
    assert [row["method_name"] for row in body["entries"]] == ["wide", "deep", "tiny", "alice-net", "bob-net"]

    # Recipes: seed-paired runs.
    for name, scores in RECIPES.items():
        ci = stats.bootstrap_interval(
            scores, "mean", n_resamples=300, confidence_level=0.95, rng=derive_seed(42, RECIPE, MEAN, recipe_ids[name])
        )
        row = rows[recipe_ids[name]]
        assert row["mean"]["estimate"] == pytest.approx(np.mean(scores))
        assert (row["mean"]["low"], row["mean"]["high"]) == pytest.approx((ci.low, ci.high))
        assert row["boo_n"]["estimate"] == pytest.approx(stats.boo_n(scores, 3))
    order = sorted(recipe_ids.values())
    table = np.array([RECIPES[next(n for n, i in recipe_ids.items() if i == sid)] for sid in order])
    pairs = stats.pairwise_comparisons(table, paired=True, n_resamples=300, rng=derive_seed(42, RECIPE, PAIRS))
    groups = stats.significance_groups(pairs)
    assert rows[recipe_ids["wide"]]["groups"] == rows[recipe_ids["deep"]]["groups"] == groups[0] == groups[1]

    # Predictions: compared over the test examples stored with the runs (every file of an entry).
    outcomes = []
    for user in ("alice", "bob"):
        runs = Run.objects.filter(submission_id=prediction_ids[user]).order_by("index")
        outcomes.append(np.stack([run.outcomes_array for run in runs]).astype(float))
        assert rows[prediction_ids[user]]["runs_succeeded"] == len(uploads[user])
    first, second = sorted(prediction_ids.values())
    files = outcomes if prediction_ids["alice"] == first else outcomes[::-1]
    tb = stats.paired_test_bootstrap(files=files, n_resamples=300, rng=derive_seed(42, PREDICTIONS, PAIRS))
    alice = 0 if prediction_ids["alice"] == first else 1
    assert rows[prediction_ids["alice"]]["mean"]["low"] == pytest.approx(tb.low[alice])
    compared = requests.get(
        f"{live_server.url}/api/challenges/{challenge.slug}/compare/",
        params={"a": prediction_ids["alice"], "b": prediction_ids["bob"]},
        timeout=30,
    ).json()
    assert compared["comparison"]["p"] == pytest.approx(tb.comparisons.p[alice, 1 - alice])
    assert compared["comparison"]["verdict"] == "a_better"

    sota = {
        s["kind"]: s
        for s in requests.get(f"{live_server.url}/api/challenges/{challenge.slug}/sota/", timeout=30).json()["sota"]
    }
    best = rows[prediction_ids["alice"]]["mean"]["estimate"]
    estimates = [rows[prediction_ids[user]]["mean"]["estimate"] for user in ("alice", "bob")]
    # the trials alice's own interval reads (her 2 files), at most the test examples
    assert outcomes[0].shape[0] == 2
    trials = kish_trials(outcomes[0])
    expected = stats.adjusted_sota(best, 3, n=trials, estimates=estimates)
    # m counts every scored file (alice's 2, bob's 1): each is an evaluation on the test rows.
    assert sota["predictions"]["method"] == "binomial" and sota["predictions"]["m"] == 3
    assert sota["predictions"]["estimate"] == pytest.approx(expected.estimate)
    csv_text = requests.get(
        f"{live_server.url}/api/challenges/{challenge.slug}/leaderboard/?format=csv", timeout=30
    ).text
    assert len(csv_text.strip().splitlines()) == 1 + 5
