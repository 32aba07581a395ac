"""Moderation (issue 26): a host disqualifies or hides an entry or a whole team with a reason; it leaves both
boards, its team reads the state and the reason, the audit log records it, and a restore undoes it. Through
the service, the submission page, the API and the admin's bulk actions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from leaderboard.choices import Board
from leaderboard.models import AuditEntry, Submission
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.errors import NotAllowed, ServiceError
from leaderboard.services.moderation import submission_moderate, submission_restore, team_moderate, team_restore
from leaderboard.services.reports import report_current, report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import PASSWORD, csv_bytes, digits_challenge

pytestmark = pytest.mark.django_db


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def submit(challenge, user, correct: float, name: str) -> Submission:
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    rng = np.random.default_rng(len(name))
    labels = np.where(rng.random(len(truth)) < correct, truth, "0")
    data = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "prediction": labels}))
    submission = submission_create_predictions(
        challenge=challenge, user=user, method_name=name, files=[UploadedFile("p.csv", data)]
    )
    submission_score(submission_id=submission.pk)
    return Submission.objects.get(pk=submission.pk)


def on_board(challenge, board: str = Board.PUBLIC) -> set[int]:
    report_recompute(challenge_id=challenge.pk)
    return {row["submission_id"] for row in report_current(challenge=challenge, board=board).data["entries"]}


@pytest.fixture
def entries(host, alice, bob):
    """A challenge with public and private boards; alice has two entries, bob one."""
    challenge, _ = digits_challenge(host, public_fraction=0.5, bootstrap_resamples=200, title="Moderated")
    a1, a2 = submit(challenge, alice, 0.9, "alice one"), submit(challenge, alice, 0.7, "alice two")
    b = submit(challenge, bob, 0.8, "bob's")
    return challenge, a1, a2, b


def test_a_disqualified_entry_leaves_both_boards_and_a_restore_brings_it_back(entries, host):
    challenge, a1, a2, b = entries
    assert on_board(challenge) == {a1.pk, a2.pk, b.pk}
    submission_moderate(submission=a1, user=host, state="disqualified", reason="Used the test labels.")
    assert on_board(challenge) == {a2.pk, b.pk}
    assert a1.pk not in on_board(challenge, Board.PRIVATE)
    runs = client_for().get(f"/api/challenges/{challenge.slug}/runs/").json()["results"]
    assert a1.pk not in {run["submission"] for run in runs} and b.pk in {run["submission"] for run in runs}
    entry = AuditEntry.objects.get(challenge=challenge, action="entry_disqualified")
    assert entry.actor == host and entry.details["submission"] == a1.pk
    assert entry.details["reason"] == "Used the test labels."
    submission_restore(submission=a1, user=host, reason="Appeal upheld.")
    assert on_board(challenge) == {a1.pk, a2.pk, b.pk}
    assert AuditEntry.objects.get(challenge=challenge, action="entry_restored").details["previous"] == "disqualified"


def test_a_hidden_team_leaves_the_boards_with_its_later_entries(entries, host, alice):
    challenge, a1, a2, b = entries
    team_moderate(challenge=challenge, team=a1.team, user=host, state="hidden", reason="Duplicate accounts.")
    later = submit(challenge, alice, 0.95, "alice three")
    assert on_board(challenge) == {b.pk}
    assert on_board(challenge, Board.PRIVATE) == {b.pk}
    assert AuditEntry.objects.get(action="team_hidden").details["team"] == a1.team.name
    team_restore(challenge=challenge, team=a1.team, user=host)
    assert on_board(challenge) == {a1.pk, a2.pk, b.pk, later.pk}


def test_a_disqualified_team_takes_no_more_submissions(entries, host, alice):
    challenge, a1, a2, b = entries
    team_moderate(challenge=challenge, team=a1.team, user=host, state="disqualified", reason="Shared labels.")
    with pytest.raises(NotAllowed, match=r"is disqualified from this challenge \(Shared labels\.\)"):
        submit(challenge, alice, 0.95, "alice three")
    team_restore(challenge=challenge, team=a1.team, user=host)
    assert submit(challenge, alice, 0.95, "alice three").pk


def test_only_hosts_moderate_and_a_reason_and_a_known_state_are_required(entries, host, alice):
    challenge, a1, _, _ = entries
    with pytest.raises(NotAllowed, match="Only the challenge's hosts"):
        submission_moderate(submission=a1, user=alice, state="hidden", reason="mine")
    with pytest.raises(ServiceError, match="Give a reason") as refused:
        submission_moderate(submission=a1, user=host, state="hidden", reason="  ")
    assert refused.value.field == "reason"
    with pytest.raises(ServiceError, match="state must be one of disqualified, hidden; got 'banned'"):
        submission_moderate(submission=a1, user=host, state="banned", reason="x")
    with pytest.raises(ServiceError, match="nothing to restore"):
        submission_restore(submission=a1, user=host)
    assert not Submission.objects.get(pk=a1.pk).moderation


def test_the_api_moderates_and_the_team_reads_the_reason(entries, host, alice, bob):
    challenge, a1, a2, b = entries
    url = f"/api/submissions/{a1.pk}/moderation/"
    assert client_for(bob).post(url, {"state": "hidden", "reason": "x"}, format="json").status_code == 403
    response = client_for(host).post(url, {"state": "bad", "reason": ""}, format="json")
    assert response.status_code == 400 and set(response.json()["errors"]) == {"state", "reason"}
    response = client_for(host).post(
        url, {"state": "disqualified", "reason": "Hand-labelled test rows."}, format="json"
    )
    assert response.status_code == 200 and response.json()["state"] == "disqualified"
    assert client_for(alice).get(url).json() == {**response.json(), "scope": "entry"}
    assert client_for(alice).get(url).json()["reason"] == "Hand-labelled test rows."
    for client in (client_for(bob), client_for()):  # a moderated entry is hidden from everyone else
        assert client.get(f"/api/submissions/{a1.pk}/").status_code == 404
        assert client.get(url).status_code == 404
    team_url = f"/api/challenges/{challenge.slug}/teams/{b.team_id}/moderation/"
    response = client_for(host).post(team_url, {"state": "hidden", "reason": "Spam."}, format="json")
    assert response.status_code == 200 and response.json()["team"] == b.team.name
    assert on_board(challenge) == {a2.pk}
    assert client_for(host).delete(f"{url}?reason=Appeal").json()["state"] is None
    assert client_for(host).delete(team_url).status_code == 204
    assert on_board(challenge) == {a1.pk, a2.pk, b.pk}


def test_the_host_moderates_on_the_submission_page_and_the_team_sees_why(entries, host, alice, bob):
    challenge, a1, _, _ = entries
    page = client_for(host).get(f"/submissions/{a1.pk}/").content.decode()
    assert "data-moderate" in page
    assert "data-moderate" not in client_for(alice).get(f"/submissions/{a1.pk}/").content.decode()
    response = client_for(host).post(
        f"/submissions/{a1.pk}/moderate/",
        {
            "action": "moderate",
            "state": "disqualified",
            "scope": "entry",
            "reason": "Submitted after the deadline by e-mail.",
        },
    )
    assert response.status_code == 302
    page = client_for(alice).get(f"/submissions/{a1.pk}/").content.decode()
    assert 'data-moderation="disqualified"' in page and "Submitted after the deadline by e-mail." in page
    assert client_for(bob).get(f"/submissions/{a1.pk}/").status_code == 404
    assert a1.pk not in on_board(challenge)
    client_for(alice).post(f"/submissions/{a1.pk}/moderate/", {"action": "restore", "scope": "entry"})
    assert Submission.objects.get(pk=a1.pk).moderation == "disqualified"  # a contestant cannot restore
    client_for(host).post(f"/submissions/{a1.pk}/moderate/", {"action": "restore", "scope": "entry"})
    assert Submission.objects.get(pk=a1.pk).moderation == ""
    assert a1.pk in on_board(challenge)


def test_admin_bulk_actions_disqualify_and_restore_with_a_reason(entries, host):
    challenge, a1, a2, b = entries
    root = User.objects.create_superuser("root", "root@example.org", "root-password-1")
    client = client_for()
    client.force_login(root)
    selected = {"_selected_action": [a1.pk, b.pk], "action": "disqualify_selected"}
    page = client.post("/admin/leaderboard/submission/", selected)
    assert page.status_code == 200 and 'name="reason"' in page.content.decode()
    assert not Submission.objects.exclude(moderation="").exists()  # nothing before the reason
    assert client.post("/admin/leaderboard/submission/", {**selected, "apply": "1", "reason": ""}).status_code == 200
    assert not Submission.objects.exclude(moderation="").exists()  # a reason is required
    client.post("/admin/leaderboard/submission/", {**selected, "apply": "1", "reason": "Colluded."})
    assert set(Submission.objects.filter(moderation="disqualified").values_list("pk", flat=True)) == {a1.pk, b.pk}
    assert on_board(challenge) == {a2.pk}
    assert AuditEntry.objects.filter(action="entry_disqualified", details__reason="Colluded.").count() == 2
    client.post(
        "/admin/leaderboard/submission/",
        {"_selected_action": [a1.pk], "action": "restore_selected", "apply": "1", "reason": ""},
    )
    assert on_board(challenge) == {a1.pk, a2.pk}
