"""A variance study's runs execute on a real worker, through the leaderboard's run machinery."""

from __future__ import annotations

import pytest
import requests

from leaderboard.models import VarianceStudy
from leaderboard.services import variance_studies
from tests.conftest import wait_for
from tests.integration.test_recipes_e2e import RECIPES, login, post_recipe
from tests.platform.factories import digits_challenge, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: The study's master seed is derived from its entry's primary key (services.variance_studies._study_seed), and
#: the submission sequence stands wherever the tests before this one left it, so the study's draws changed with
#: the lane's contents: in the full integration lane the entry was 97, and 101 once the hostile cases fd_flood and
#: orphan_cpu added a submission each to both of test_isolation's workers. Scored by accuracy on 72 hidden rows,
#: 101's joint block (three splits, the same searched C) scored 62/72 three times (22's: 61/72): sd 0 and no
#: FixHOptEst ratio, a tie of a discrete metric, no fault. The board is scored by log loss, continuous, where runs
#: on other splits do not tie; the seed is pinned to the one entry 101 gets, the case that tied.
#: The seed is pinned, not the pk: setting the sequence back (setval) would make later tests' submissions reuse
#: ids of earlier ones, which a stale task or a cached id of the session's worker would then mistake for theirs.
ENTRY_PK = 101


@pytest.fixture
def study_seed_of_entry_101(monkeypatch) -> int:
    """Every study created in this process (the live server's thread) gets the seed of an entry whose id is 101."""
    real = variance_studies._study_seed
    pinned = real(9, ENTRY_PK)
    monkeypatch.setattr(
        variance_studies, "_study_seed", lambda challenge_seed, submission_id: real(challenge_seed, ENTRY_PK)
    )
    return pinned


def test_a_study_runs_on_the_worker_and_reports_the_sd_by_source(
    live_server, celery_worker_process, study_seed_of_entry_101
):
    host = make_user("host")
    make_user("alice")
    challenge, _ = digits_challenge(host, k_runs=2, master_seed=9, hpo_budget=2, metric="log_loss")
    entry = post_recipe(
        live_server.url, login(live_server.url, "alice"), challenge.slug, RECIPES / "logistic_regression.py", "logreg"
    )
    headers = login(live_server.url, "host")
    created = requests.post(
        f"{live_server.url}/api/challenges/{challenge.slug}/variance-studies/",
        headers=headers,
        json={"submission": entry, "k_runs": 3, "sources": ["split", "init"]},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    assert VarianceStudy.objects.get(pk=created.json()["id"]).master_seed == study_seed_of_entry_101
    url = f"{live_server.url}/api/variance-studies/{created.json()['id']}/"

    def done():  # anonymous: the study is readable once its entry is (scored: selectors.submissions_readable)
        response = requests.get(url, timeout=10)
        if response.status_code == 404:
            return None
        body = response.json()
        return body if body["status"] in ("done", "failed") else None

    body = wait_for(done, timeout=300, message=celery_worker_process.tail)
    # split, init, all (searching 2 configurations per run), all with the recipe's hyperparameters
    assert body["status"] == "done" and body["runs"] == {
        "total": 12,
        "queued": 0,
        "running": 0,
        "succeeded": 12,
        "failed": 0,
    }
    rows = {row["source"]: row for row in body["result"]["sources"]}
    assert rows["init"]["sd"] == 0.0  # lbfgs does not use the initialisation seed
    assert rows["split"]["sd"] > 0 and body["result"]["total"]["sd"] > 0, body
    assert body["result"]["fixed_hpo"] is not None, body
