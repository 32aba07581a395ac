"""Issue 21 (part): on a real worker, a study run stores its public-part score, and before the reveal an
anonymous reader's study is the one computed on the public part; the host reads it on all hidden rows."""

from __future__ import annotations

import pytest
import requests

from evaluation.stats.variance_study import variance_study
from leaderboard.models import StudyRun
from tests.conftest import wait_for
from tests.integration.test_recipes_e2e import RECIPES, login, post_recipe
from tests.platform.factories import digits_challenge, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def block_sds(study_id: int, field: str) -> dict:
    blocks: dict[str, list[float]] = {}
    for block, score in StudyRun.objects.filter(study_id=study_id).values_list("block", field):
        blocks.setdefault(block, []).append(score)
    r = variance_study(blocks, confidence_level=0.95)
    return {**dict(zip(r.sources, r.sd)), "all": r.total_sd}


def shown_sds(body: dict) -> dict:
    return {**{row["source"]: row["sd"] for row in body["result"]["sources"]}, "all": body["result"]["total"]["sd"]}


def test_a_worker_study_shows_anonymous_readers_the_public_part_only(live_server, celery_worker_process):
    host = make_user("host")
    make_user("alice")
    # Scored by log loss, continuous: a run's public-part mean equals its all-rows mean only by a coincidence of
    # measure zero, whatever rows the salted public draw (services.boards.board_draw_mask) and the entry's primary
    # key (the study's seed: services.variance_studies._study_seed) give it. By accuracy a run ties whenever both
    # parts score the same fraction: with the 72 hidden rows cut 39/33 only at 2/3 or all right, else often.
    challenge, _ = digits_challenge(host, k_runs=2, master_seed=9, hpo_budget=2, public_fraction=0.5, metric="log_loss")
    entry = post_recipe(
        live_server.url, login(live_server.url, "alice"), challenge.slug, RECIPES / "logistic_regression.py", "logreg"
    )
    headers = login(live_server.url, "host")
    created = requests.post(
        f"{live_server.url}/api/challenges/{challenge.slug}/variance-studies/",
        headers=headers,
        json={"submission": entry, "k_runs": 3, "sources": ["split"]},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    study_id = created.json()["id"]
    url = f"{live_server.url}/api/variance-studies/{study_id}/"

    def done():  # anonymous: the study is readable once its entry is (scored: selectors.submissions_readable)
        response = requests.get(url, timeout=10)
        if response.status_code == 404:
            return None
        body = response.json()
        return body if body["status"] in ("done", "failed") else None

    anonymous = wait_for(done, timeout=300, message=celery_worker_process.tail)
    assert anonymous["status"] == "done", anonymous
    runs = StudyRun.objects.filter(study_id=study_id)
    assert runs.count() > 0 and not runs.filter(public_score__isnull=True).exists()
    # the public part is not all the rows: every run's public score differs from its score on all of them
    assert all(abs(r.public_score - r.test_score) > 1e-9 for r in runs), list(runs.values("public_score", "test_score"))
    public, all_rows = block_sds(study_id, "public_score"), block_sds(study_id, "test_score")
    assert shown_sds(anonymous) == pytest.approx(public, abs=1e-12) and anonymous["scores"] == "public part"
    hosted = requests.get(url, headers=headers, timeout=10).json()
    assert shown_sds(hosted) == pytest.approx(all_rows, abs=1e-12) and hosted["scores"] == "all hidden rows"
