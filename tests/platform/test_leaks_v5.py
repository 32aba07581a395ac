"""What a contestant read about entries and teams no one else may open (a fifth attack).

* **A moderated imported entry stayed named.** A host who hid or disqualified an imported model took it off both
  boards, yet the challenge page's provenance card ("Where these results come from") still listed it, with its team,
  citation and link, to everyone; and ``GET /api/challenges/{slug}/imports/``, the hosts' import log (the web import
  page answers others 403), listed every import to anyone, naming each model and file. The card now lists the
  entries the reader may open (``selectors.submissions_readable``); the import log is the hosts' only.
* **Team ids told apart.** ``POST /api/teams/{id}/invitations/`` and the hosts' team moderation looked the team up
  before asking who asks: anyone read 404 for a team id that does not exist and 403 (or 400, "A personal team has
  exactly one member") for one that does, and so counted the site's teams and told the personal ones apart. The
  site's invitation form did the same for invitation ids (404 against a refusal). Each now answers alike.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Submission
from leaderboard.services.moderation import submission_moderate
from leaderboard.services.reports import report_recompute
from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create

pytestmark = pytest.mark.django_db

RESULTS = (
    b"model,instance_id,correct\n"
    + b"".join(f"public-model,q{i},{i % 2}\n".encode() for i in range(6))
    + b"".join(f"leaky-model,q{i},1\n".encode() for i in range(6))
)


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def imported(host):
    challenge = challenge_create_results_only(created_by=host, title="Imported board")
    results_import_create(
        challenge=challenge,
        user=host,
        files=[ImportFile("leaky-model-results.csv", RESULTS)],
        format="csv",
        note="Someone et al. (2024)",
        link="https://example.org/leaky",
    )
    leaky = Submission.objects.get(challenge=challenge, method_name="leaky-model")
    submission_moderate(submission=leaky, user=host, state="disqualified", reason="trained on the test set")
    report_recompute(challenge_id=challenge.pk, force=True)
    return challenge


def test_a_moderated_imported_entry_is_not_named_on_the_challenge_page(imported, host, alice):
    board = client_for().get(f"/api/challenges/{imported.slug}/leaderboard/").json()
    assert [row["method_name"] for row in board["entries"]] == ["public-model"]  # off the board
    for reader in (None, alice):
        client = Client()
        if reader is not None:
            client.force_login(reader)
        page = client.get(imported.get_absolute_url()).content.decode()
        assert "data-provenance-card" in page and "public-model" in page
        assert "leaky-model" not in page, "the provenance card names an entry a host disqualified"
    hosted = Client()
    hosted.force_login(host)
    assert "leaky-model" in hosted.get(imported.get_absolute_url()).content.decode()  # the hosts read every one


def test_the_import_log_is_the_hosts_only(imported, host, alice):
    url = f"/api/challenges/{imported.slug}/imports/"
    hosted = client_for(host).get(url)
    assert hosted.status_code == 200 and hosted.json()["results"][0]["models"] == ["public-model", "leaky-model"]
    for reader in (None, alice):
        answer = client_for(reader).get(url)
        assert answer.status_code in (401, 403), (answer.status_code, answer.content[:200])
        assert b"leaky" not in answer.content
    page = Client()
    page.force_login(alice)
    assert page.get(f"/c/{imported.slug}/import/").status_code == 403  # as the site's import page answers
