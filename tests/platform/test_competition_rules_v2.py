"""Issue 21 (part): suites before the reveal, reveal closes the competition, rescore never mixes metrics,
test rows in a fixed shuffled order, one team per person per challenge. Black box through the REST API;
the scoring task is called in-process where the worker would run it (tests/integration runs the worker)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Run
from leaderboard.services.boards import board_public_mask
from leaderboard.services.challenges import DatasetUpload, challenge_create
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.reports import report_recompute
from leaderboard.services.scoring import submission_score

from .factories import PASSWORD, csv_bytes, days_ahead, digits_challenge, digits_frame, make_user

pytestmark = pytest.mark.django_db

RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return None\n"


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def post_predictions(client, challenge, labels, name="m", team=None):
    ids = dataset_test_ids(dataset=challenge.dataset)
    data = {
        "method_name": name,
        "files": [SimpleUploadedFile("p.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": list(labels)})))],
    }
    if team is not None:
        data["team"] = team
    return client.post(f"/api/challenges/{challenge.slug}/submissions/", data, format="multipart")


def scored(response, challenge) -> int:
    """The worker's part: score the submission and publish the boards."""
    assert response.status_code == 202, response.content
    submission_score(submission_id=response.json()["id"])
    report_recompute(challenge_id=challenge.pk)
    return response.json()["id"]


def split_predictions(challenge, public_correct: float, private_correct: float) -> np.ndarray:
    """Right on the first ``public_correct`` of the public rows and ``private_correct`` of the private ones."""
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    public = board_public_mask(dataset=challenge.dataset)
    wrong = np.array([str((int(t) + 1) % 10) for t in truth])
    out = wrong.copy()
    for part, fraction in ((public, public_correct), (~public, private_correct)):
        rows = np.flatnonzero(part)
        right = rows[: int(round(fraction * len(rows)))]
        out[right] = truth[right]
    return out


# ------------------------------------------------------------------ suites before the reveal
@pytest.mark.parametrize("feedback", ["ladder", "rounded"])
def test_a_suite_shows_what_the_boards_show_until_the_reveal(host, alice, feedback):
    tasks = [
        digits_challenge(
            host,
            title=f"Suite task {i}",
            public_fraction=0.5,
            feedback=feedback,
            feedback_digits=1,
            ladder_margin=0.1,
            bootstrap_resamples=100,
            split_scheme="fixed",  # the host's η (recipe resamples raise it: test_ladder_resamples.py)
        )[0]
        for i in range(2)
    ]
    contestant = client_for(alice)
    exact_all_rows = []
    for task, (pub, priv) in zip(tasks, ((0.87, 0.2), (0.93, 0.4))):
        sid = scored(post_predictions(contestant, task, split_predictions(task, pub, priv), name="probe"), task)
        run = Run.objects.get(submission_id=sid)
        assert abs(run.test_score - run.public_score) > 0.2  # the hidden rows' score is far from the public one
        exact_all_rows.append(run.test_score)
    created = client_for(host).post(
        "/api/suites/", {"title": "Two", "normalization": "none", "challenges": [t.slug for t in tasks]}, format="json"
    )
    assert created.status_code == 201, created.content
    slug = created.json()["slug"]
    shown = []
    for task in tasks:
        board = client_for().get(f"/api/challenges/{task.slug}/leaderboard/").json()
        shown.append(board["entries"][0]["mean"]["estimate"])
    suite = client_for().get(f"/api/suites/{slug}/").json()
    entry = suite["entries"][0]
    assert entry["mean"]["estimate"] == pytest.approx(np.mean(shown), abs=1e-9)
    assert abs(entry["mean"]["estimate"] - np.mean(exact_all_rows)) > 0.2  # no private row reaches the suite
    assert all(s == round(s, 1) for s in shown)  # the boards show grid / rounded values
    assert all("public part" in task["scores"] for task in suite["tasks"])
    for task in tasks:
        assert client_for(host).post(f"/api/challenges/{task.slug}/reveal/").status_code == 200
    revealed = client_for().get(f"/api/suites/{slug}/").json()
    assert revealed["entries"][0]["mean"]["estimate"] == pytest.approx(np.mean(exact_all_rows), abs=1e-9)
    assert all("revealed" in task["scores"] for task in revealed["tasks"])


# ------------------------------------------------------------------ the reveal closes the competition
def test_the_reveal_ends_every_open_phase_and_later_submissions_are_refused(host, alice):
    challenge, _ = digits_challenge(host, title="Reveal closes", public_fraction=0.5, bootstrap_resamples=100)
    contestant = client_for(alice)
    scored(post_predictions(contestant, challenge, split_predictions(challenge, 0.5, 0.5), name="before"), challenge)
    assert client_for(alice).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 403
    revealed = client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/")
    assert revealed.status_code == 200, revealed.content
    phases = client_for(host).get(f"/api/challenges/{challenge.slug}/phases/").json()["results"]
    phases = phases["results"] if isinstance(phases, dict) else phases
    assert phases and all(p["closes_at"] for p in phases)
    after = post_predictions(contestant, challenge, split_predictions(challenge, 1.0, 1.0), name="after reveal")
    assert after.status_code == 409, after.content
    assert "closed" in after.json()["detail"]
    private = client_for().get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
    assert [row["method_name"] for row in private["entries"]] == ["before"]  # no new private score is public
    assert client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 200  # idempotent


def test_no_phase_takes_submissions_after_the_reveal(host, alice):
    """A reviewer's finding: after the reveal a host could add a phase (or reopen one), and contestants then
    submitted while everyone read the private scores; under an automatic reveal the new phase even hid the revealed
    board again. Such a phase is refused naming the reveal; a phase ended by now may still be renamed."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.services.phases import phase_update

    challenge, _ = digits_challenge(host, title="Revealed ends", public_fraction=0.5, bootstrap_resamples=100)
    assert client_for(host).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 200
    url = f"/api/challenges/{challenge.slug}/phases/"
    added = client_for(host).post(url, {"name": "late", "closes_at": days_ahead(5)}, format="json")
    assert added.status_code == 400 and added.json()["field"] == "closes_at", added.content
    assert added.json()["detail"].startswith("The private board is revealed, which ended the competition: the late")
    main = challenge.phases.get()
    reopened = client_for(host).patch(f"{url}{main.pk}/", {"closes_at": days_ahead(5)}, format="json")
    assert reopened.status_code == 400 and reopened.json()["field"] == "closes_at", reopened.content
    assert client_for(host).patch(f"{url}{main.pk}/", {"name": "development"}, format="json").status_code == 200
    assert list(challenge.phases.values_list("name", flat=True)) == ["development"]

    from .factories import stored_recipe

    automatic, _ = digits_challenge(host, title="Auto revealed", public_fraction=0.5, bootstrap_resamples=100)
    empty, _ = digits_challenge(host, title="Auto revealed, no entry", public_fraction=0.5, bootstrap_resamples=100)
    stored_recipe(automatic, alice, "entry", runs_expected=1, scores=[0.8])
    now = timezone.now()
    for revealing in (automatic, empty):
        phase_update(
            phase=revealing.phases.get(), user=host, opens_at=now - timedelta(days=2), closes_at=now, auto_reveal=True
        )
    board = f"/api/challenges/{automatic.slug}/leaderboard/?board=private"
    assert client_for(alice).get(board).status_code == 200  # revealed by its last phase's end
    more = {"name": "more", "opens_at": now, "closes_at": days_ahead(5)}
    hidden_again = client_for(host).post(f"/api/challenges/{automatic.slug}/phases/", more, format="json")
    assert hidden_again.status_code == 400 and hidden_again.json()["field"] == "closes_at", hidden_again.content
    assert client_for(alice).get(board).status_code == 200  # still revealed
    # Without an entry the automatic reveal revealed nothing: its phases may run again (a bundle's clone does)
    assert client_for(host).post(f"/api/challenges/{empty.slug}/phases/", more, format="json").status_code == 201


# ------------------------------------------------------------------ rescore never mixes metrics
def test_a_metric_change_is_refused_while_recipe_entries_exist(host, alice):
    challenge, _ = digits_challenge(host, title="Recipe metric")
    recipe = client_for(alice).post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"kind": "recipe", "method_name": "r", "recipe": SimpleUploadedFile("recipe.py", RECIPE)},
        format="multipart",
    )
    assert recipe.status_code == 202, recipe.content
    response = client_for(host).post(
        f"/api/challenges/{challenge.slug}/rescore/", {"metric": "macro_f1"}, format="multipart"
    )
    assert response.status_code == 409, response.content
    assert "mix" in response.json()["detail"] and "recipe" in response.json()["detail"]
    assert response.json()["field"] == "metric"
    assert client_for().get(f"/api/challenges/{challenge.slug}/").json()["metric"] == "accuracy"
    # the labels alone may still be corrected
    labels = pd.DataFrame(
        {"id": dataset_test_ids(dataset=challenge.dataset), "label": dataset_hidden_labels(dataset=challenge.dataset)}
    )
    fixed = client_for(host).post(
        f"/api/challenges/{challenge.slug}/rescore/",
        {"hidden_labels": SimpleUploadedFile("l.csv", csv_bytes(labels))},
        format="multipart",
    )
    assert fixed.status_code == 202, fixed.content


def test_a_metric_change_rescores_a_predictions_only_challenge(host, alice):
    challenge, _ = digits_challenge(host, title="Predictions metric")
    scored(post_predictions(client_for(alice), challenge, dataset_hidden_labels(dataset=challenge.dataset)), challenge)
    response = client_for(host).post(
        f"/api/challenges/{challenge.slug}/rescore/", {"metric": "macro_f1"}, format="multipart"
    )
    assert response.status_code == 202, response.content
    assert response.json() == {"queued": 1, "recipes_left": 0}


# ------------------------------------------------------------------ test rows in a fixed shuffled order
def label_sorted_upload() -> DatasetUpload:
    frame = digits_frame(n_rows=300).sort_values("label", kind="stable").reset_index(drop=True)
    frame["is_test"] = (np.arange(len(frame)) % 3 == 0).astype(int)
    return DatasetUpload(
        data=csv_bytes(frame), filename="sorted.csv", id_column="id", label_column="label", test_column="is_test"
    ), frame


def positional_accuracy(ids: list[str], label_of: dict[str, str]) -> float:
    """The attacker's naive reader: row j of n of a label-sorted file is class floor(10 j / n)."""
    n = len(ids)
    return float(np.mean([str(j * 10 // n) == label_of[i] for j, i in enumerate(ids)]))


def test_test_inputs_do_not_keep_the_hosts_label_sorted_order(host, alice):
    upload, frame = label_sorted_upload()
    label_of = dict(zip(frame.id, frame.label.astype(str)))
    host_order = frame.loc[frame.is_test == 1, "id"].tolist()
    assert positional_accuracy(host_order, label_of) > 0.8  # the attack works on the host's order
    challenge = challenge_create(created_by=host, dataset=upload, title="Sorted", metric="accuracy", master_seed=1)
    twin = challenge_create(created_by=host, dataset=upload, title="Sorted twin", metric="accuracy", master_seed=1)
    reader = client_for(alice)
    download = reader.get(f"/api/challenges/{challenge.slug}/data/test_inputs/")
    assert download.status_code == 200
    body = b"".join(download.streaming_content) if download.streaming else download.content
    served = pd.read_csv(pd.io.common.BytesIO(body), dtype=str)["id"].tolist()
    assert sorted(served) == sorted(host_order) and served != host_order
    assert positional_accuracy(served, label_of) < 0.3  # chance is 0.1
    again = reader.get(f"/api/challenges/{challenge.slug}/data/test_inputs/")
    assert (b"".join(again.streaming_content) if again.streaming else again.content) == body  # fixed
    assert dataset_test_ids(dataset=twin.dataset) != served  # seeded per challenge
    sample = reader.get(f"/api/challenges/{challenge.slug}/data/sample_submission/")
    assert sample.status_code == 200
    # scoring still matches predictions to their rows (by id, in any order)
    right = pd.DataFrame({"id": host_order, "prediction": [label_of[i] for i in host_order]})
    response = reader.post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "truth", "files": [SimpleUploadedFile("p.csv", csv_bytes(right))]},
        format="multipart",
    )
    sid = scored(response, challenge)
    assert Run.objects.get(submission_id=sid).test_score == 1.0


# ------------------------------------------------------------------ one team per person per challenge
def test_a_person_takes_part_in_a_challenge_with_one_team_only(host, alice):
    challenge, _ = digits_challenge(host, title="One team")
    other, _ = digits_challenge(host, title="Another challenge")
    bob = make_user("bob")
    me = client_for(alice)
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    scored(post_predictions(me, challenge, truth, name="first probe"), challenge)  # personal team
    # a fresh team per probe (the Ladder attack) cannot enter the same challenge
    fresh = me.post("/api/teams/", {"name": "probe-team-1"}, format="json")
    assert fresh.status_code == 201
    refused = post_predictions(me, challenge, truth, name="second probe", team=fresh.json()["id"])
    assert refused.status_code == 403, refused.content
    detail = refused.json()["detail"]
    assert "one team per challenge" in detail and "alice" in detail and "probe-team-1" in detail
    # the new team may enter another challenge
    assert (
        post_predictions(me, other, dataset_hidden_labels(dataset=other.dataset), team=fresh.json()["id"]).status_code
        == 202
    )
    # team switching: bob's team has entered the challenge; alice cannot join it
    theirs = client_for(bob).post("/api/teams/", {"name": "bobs"}, format="json").json()
    scored(post_predictions(client_for(bob), challenge, truth, name="bob", team=theirs["id"]), challenge)
    invited = client_for(bob).post(f"/api/teams/{theirs['id']}/invitations/", {"username": "alice"}, format="json")
    assert invited.status_code == 201
    accept = me.post(f"/api/invitations/{invited.json()['id']}/accept/")
    assert accept.status_code == 403, accept.content
    assert "one team per challenge" in accept.json()["detail"]
    assert [t["name"] for t in me.get("/api/teams/").json()["results"] if t["name"] == "bobs"] == []
    # a team whose member already takes part with another team cannot enter either
    carol = make_user("carol")
    joined = client_for(carol).post("/api/teams/", {"name": "carols"}, format="json").json()
    invitation = (
        client_for(carol).post(f"/api/teams/{joined['id']}/invitations/", {"username": "alice"}, format="json").json()
    )
    assert me.post(f"/api/invitations/{invitation['id']}/accept/").status_code == 200  # not in the challenge yet
    blocked = post_predictions(client_for(carol), challenge, truth, name="carol", team=joined["id"])
    assert blocked.status_code == 403 and "alice takes part" in blocked.json()["detail"]


def test_an_automatic_reveal_waits_until_no_phase_is_open(host, alice):
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.services.notifications import reveals_record_due
    from leaderboard.services.phases import phase_create, phase_update

    challenge, _ = digits_challenge(host, title="Auto reveal", public_fraction=0.5, bootstrap_resamples=100)
    now = timezone.now()
    development = challenge.phases.get()
    phase_update(phase=development, user=host, opens_at=now - timedelta(days=2), closes_at=now - timedelta(hours=1))
    final = phase_create(
        challenge=challenge,
        user=host,
        name="final",
        order=1,
        opens_at=now - timedelta(hours=1),
        closes_at=now + timedelta(days=1),
    )
    phase_update(phase=development, user=host, auto_reveal=True)  # a phase after it is open: nothing revealed yet
    url = f"/api/challenges/{challenge.slug}/leaderboard/?board=private"
    assert client_for(alice).get(url).status_code == 403  # the final phase is open: nothing revealed
    assert reveals_record_due() == 0
    accepted = post_predictions(client_for(alice), challenge, split_predictions(challenge, 0.5, 0.5), name="final")
    assert accepted.status_code == 202, accepted.content  # and it still takes submissions
    phase_update(phase=final, user=host, closes_at=timezone.now())
    assert client_for(alice).get(url).status_code == 200  # the last phase has ended: revealed
    assert reveals_record_due() == 1


def test_the_one_team_rule_is_checked_again_under_the_members_locks(host, alice):
    """Two first submissions racing for two teams that share a member: the second, once it holds the
    locks, sees the first (the early check in team_for_submission ran before either was stored)."""
    from django.db import transaction

    from leaderboard.models import Membership, Submission, Team
    from leaderboard.services.errors import NotAllowed
    from leaderboard.services.teams import team_for_submission, team_lock_for_entry

    challenge, _ = digits_challenge(host, title="Race")
    first, second = Team.objects.create(name="first"), Team.objects.create(name="second")
    for team in (first, second):
        Membership.objects.create(team=team, user=alice)
    assert team_for_submission(user=alice, team_id=second.pk, challenge=challenge) == second  # early check passes
    Submission.objects.create(
        challenge=challenge,
        team=first,
        submitted_by=alice,
        kind="predictions",
        method_name="won the race",
        status="scored",
    )
    with transaction.atomic(), pytest.raises(NotAllowed, match="one team per challenge"):
        team_lock_for_entry(team=second, user=alice, challenge=challenge)


def test_a_suite_leaves_out_an_entry_a_host_moderated(host, alice):
    """Found by an attack on rounded boards: a suite read every scored submission but cancelled ones, so an entry
    a host hid or disqualified (on neither board) still stood in the suite."""
    from leaderboard.services.moderation import submission_moderate

    tasks = [digits_challenge(host, title=f"Moderated task {i}", bootstrap_resamples=100)[0] for i in range(2)]
    contestant = client_for(alice)
    truth = [dataset_hidden_labels(dataset=task.dataset) for task in tasks]
    sids = [scored(post_predictions(contestant, task, labels), task) for task, labels in zip(tasks, truth)]
    created = client_for(host).post(
        "/api/suites/",
        {"title": "Moderated", "normalization": "none", "challenges": [t.slug for t in tasks]},
        format="json",
    )
    assert created.status_code == 201, created.content
    slug = created.json()["slug"]
    assert [e["method_name"] for e in client_for().get(f"/api/suites/{slug}/").json()["entries"]] == ["m"]
    from leaderboard.models import Submission

    submission_moderate(submission=Submission.objects.get(pk=sids[0]), user=host, state="hidden", reason="leak")
    report_recompute(challenge_id=tasks[0].pk)
    assert client_for().get(f"/api/suites/{slug}/").json()["entries"] == []
