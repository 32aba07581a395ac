"""Issue 25, "Kaggle's habits" on the web pages: "Your submissions" with score, rank, status and the final-entry
ticks saved at once; form fields that hold placeholders and keep a chosen recipe when something else is wrong;
errors in words; a badge counting pending invitations. Through Django's test client."""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from evaluation.boards import shown_submission_score
from leaderboard.models import Run, Submission
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.errors import ServiceError
from leaderboard.services.reports import report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from leaderboard.services.teams import invitation_decide, team_create, team_invite, team_personal_for
from leaderboard.web.forms import SubmissionForm, add_service_error
from leaderboard.web.upload_stash import STASH_DIR, stash_sweep

from .factories import csv_bytes, digits_challenge

pytestmark = pytest.mark.django_db

RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return train.y[:1]\n"


def submit(challenge, user, correct: int, name: str) -> Submission:
    """A predictions entry with its first ``correct`` hidden rows right, scored, and the boards recomputed."""
    truth = np.asarray(dataset_hidden_labels(dataset=challenge.dataset)).astype(str)
    labels = [t if i < correct else str((int(t) + 1) % 10) for i, t in enumerate(truth)]
    data = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "prediction": labels}))
    submission = submission_create_predictions(
        challenge=challenge, user=user, method_name=name, files=[UploadedFile("p.csv", data)]
    )
    submission_score(submission_id=submission.pk)
    report_recompute(challenge_id=challenge.pk)
    return submission


def row_of(page: str, submission: Submission) -> str:
    match = re.search(rf'<tr data-submission="{submission.pk}">(.*?)</tr>', page, re.S)
    assert match, f"no row for submission {submission.pk}"
    return match.group(1)


@pytest.fixture
def contest(host, alice):
    """A private-board challenge under rounded feedback, one final entry per team, alice's three entries."""
    challenge, _ = digits_challenge(
        host,
        title="Habits",
        public_fraction=0.5,
        final_entries=1,
        feedback="rounded",
        feedback_digits=2,
        daily_quota=20,
    )
    n = challenge.dataset.n_test
    entries = [submit(challenge, alice, correct, f"entry {i}") for i, correct in enumerate((n // 2, n - 3, n // 4))]
    return challenge, entries


# ------------------------------------------------------------------ "Your submissions"


def test_your_submissions_lists_published_score_public_rank_status_and_final_tick(client, contest, alice):
    challenge, entries = contest
    client.force_login(alice)
    page = client.get(challenge.get_absolute_url()).content.decode()
    board = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    ranks = {row["submission_id"]: row["rank_display"] for row in board["entries"]}
    for submission in entries:
        row = row_of(page, submission)
        exact = [run.public_score for run in Run.objects.filter(submission=submission)]
        shown = shown_submission_score(exact, "rounded", 2)
        assert re.search(rf"data-score>{shown:.4f}<", row), row  # the published (rounded) value
        assert f"{np.mean(exact):.4f}" not in row or round(np.mean(exact), 4) == round(shown, 4)
        assert re.search(rf"data-rank>{re.escape(ranks[submission.pk])}<", row), row
        assert "Scored" in row
        assert f'name="final" value="{submission.pk}"' in row and "checked" not in row
    assert "data-finals-form" in page and f'action="/c/{challenge.slug}/finals/"' in page


def test_submission_page_shows_its_rank(client, contest, alice):
    challenge, entries = contest
    client.force_login(alice)
    board = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    best = next(row for row in board["entries"] if row["submission_id"] == entries[1].pk)
    page = client.get(entries[1].get_absolute_url()).content.decode()
    assert f"data-submission-rank>{best['rank_display']}<" in page


def test_final_entries_are_saved_at_once_and_refused_beyond_the_limit(client, contest, alice):
    challenge, entries = contest
    client.force_login(alice)
    team = team_personal_for(user=alice).pk
    listed = [s.pk for s in entries]
    url = f"/c/{challenge.slug}/finals/"
    response = client.post(url, {"team": team, "final": [entries[1].pk], "listed": listed}, follow=True)
    assert "Final entries saved." in [str(m) for m in response.context["messages"]]
    assert set(Submission.objects.filter(selected_for_final=True).values_list("pk", flat=True)) == {entries[1].pk}
    assert "checked" in row_of(response.content.decode(), entries[1])
    # Two ticks where the challenge allows one: refused, in words, and nothing changes.
    response = client.post(url, {"team": team, "final": [entries[0].pk, entries[2].pk], "listed": listed}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert any("You chose 2 final entries" in m and "allows 1" in m for m in shown), shown
    assert set(Submission.objects.filter(selected_for_final=True).values_list("pk", flat=True)) == {entries[1].pk}
    # A chosen entry the page did not list stays chosen, and counts toward the limit.
    response = client.post(url, {"team": team, "final": [entries[0].pk], "listed": [entries[0].pk]}, follow=True)
    assert any("chosen earlier and not listed" in str(m) for m in response.context["messages"])
    # Un-ticking every listed one un-chooses them.
    client.post(url, {"team": team, "listed": listed})
    assert not Submission.objects.filter(selected_for_final=True).exists()


def test_someone_elses_team_cannot_choose_finals(client, contest, bob):
    challenge, entries = contest
    client.force_login(bob)
    response = client.post(
        reverse("challenge-finals", args=[challenge.slug]), {"team": entries[0].team_id, "final": [entries[0].pk]}
    )
    assert response.status_code == 404 and not Submission.objects.filter(selected_for_final=True).exists()


# ------------------------------------------------------------------ placeholders, and the kept recipe


def test_hyperparameters_box_is_empty_with_a_placeholder(client, challenge, alice):
    challenge, _ = challenge
    client.force_login(alice)
    page = client.get(challenge.get_absolute_url()).content.decode()
    box = re.search(r'<textarea name="hyperparameters"([^>]*)>(.*?)</textarea>', page, re.S)
    assert box and 'placeholder="{&quot;C&quot;: 0.5}"' in box.group(1)
    assert box.group(2).strip() == ""


def stash_files(media) -> list:
    folder = media / STASH_DIR
    return sorted(folder.iterdir()) if folder.exists() else []


def test_a_refused_form_keeps_the_recipe_and_the_resubmit_needs_no_file(client, challenge, alice, media):
    from django.core.files.uploadedfile import SimpleUploadedFile

    challenge, _ = challenge
    client.force_login(alice)
    form = {"method_name": "Kept recipe", "kind": "recipe", "team": team_personal_for(user=alice).pk}
    refused = client.post(
        challenge.get_absolute_url(),
        {**form, "recipe": SimpleUploadedFile("recipe.py", RECIPE), "hyperparameters": "{C: 0.5"},
    )
    assert refused.status_code == 200 and "Not valid JSON" in str(refused.context["form"].errors["hyperparameters"])
    assert f"recipe.py ({len(RECIPE)} bytes, kept; choose another to replace it)" in refused.content.decode()
    assert len(stash_files(media)) == 1 and Submission.objects.count() == 0
    again = client.get(challenge.get_absolute_url()).content.decode()  # still kept on the next visit
    assert f"recipe.py ({len(RECIPE)} bytes, kept; choose another to replace it)" in again
    accepted = client.post(challenge.get_absolute_url(), {**form, "hyperparameters": '{"C": 0.5}'})
    assert accepted.status_code == 302
    submission = Submission.objects.get()
    assert submission.hyperparameters == {"C": 0.5}
    with submission.recipe_file.open("rb") as handle:
        assert handle.read() == RECIPE
    assert stash_files(media) == []  # deleted once used
    # Nothing kept any more: a recipe must be chosen again.
    empty = client.post(challenge.get_absolute_url(), {**form, "method_name": "No file"})
    assert "Choose the recipe" in str(empty.context["form"].errors["recipe"])
    # A recipe the service refuses is not kept (nor one kept before it).
    bad = client.post(
        challenge.get_absolute_url(), {**form, "recipe": SimpleUploadedFile("r.py", b"def fit_predict(:\n")}
    )
    assert "syntax error" in str(bad.context["form"].errors["recipe"])
    assert stash_files(media) == [] and "(kept;" not in bad.content.decode()


def test_a_kept_recipe_swept_before_the_resubmit_asks_for_the_file_again(client, challenge, alice, media, monkeypatch):
    """Review finding: the sweep judges a file's age by its mtime, the session by its own clock; a file
    swept between the page and the post was a 500 (FileNotFoundError), now a form error."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    challenge, _ = challenge
    client.force_login(alice)
    form = {"method_name": "Kept recipe", "kind": "recipe", "team": team_personal_for(user=alice).pk}
    client.post(
        challenge.get_absolute_url(),
        {**form, "recipe": SimpleUploadedFile("recipe.py", RECIPE), "hyperparameters": "{C: 0.5"},
    )
    (kept,) = stash_files(media)
    kept.unlink()  # swept by another request's stash_put after this one's stash_get found it:
    monkeypatch.setattr("leaderboard.web.upload_stash.default_storage.exists", lambda path: True)
    again = client.post(challenge.get_absolute_url(), {**form, "hyperparameters": '{"C": 0.5}'})
    assert again.status_code == 200 and Submission.objects.count() == 0
    assert "The kept recipe.py is no longer here: choose the file again." in str(again.context["form"].errors["recipe"])
    assert "(kept;" not in again.content.decode()


def test_kept_files_are_swept_after_an_hour(media):
    old = default_storage.save(f"{STASH_DIR}/old", ContentFile(b"x"))
    new = default_storage.save(f"{STASH_DIR}/new", ContentFile(b"y"))
    assert stash_sweep(now=timezone.now() + timedelta(minutes=30)) == 0
    assert stash_sweep(now=timezone.now() + timedelta(hours=1, seconds=1)) == 2
    assert not default_storage.exists(old) and not default_storage.exists(new)


# ------------------------------------------------------------------ errors in words


def test_join_error_names_no_raw_field(client, host, alice):
    challenge, _ = digits_challenge(host, title="With rules", rules="Be kind.")
    client.force_login(alice)
    response = client.post(f"/c/{challenge.slug}/register/", {}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert shown == ["Accept the challenge's rules to take part."]


def test_service_errors_on_forms_use_the_fields_words(challenge, alice):
    challenge, _ = challenge
    form = SubmissionForm({}, challenge=challenge, teams=team_personal_for(user=alice).membership_set.none())
    form.is_valid()
    add_service_error(form, ServiceError("Name the method of this entry (method_name).", field="method_name"))
    add_service_error(form, ServiceError("Check method_name and public_fraction."))
    assert "Name the method of this entry." in form.errors["method_name"]
    assert "Check method name and public share of the hidden rows." in form.non_field_errors()


# ------------------------------------------------------------------ the invitation badge


def test_navigation_badge_counts_pending_invitations(client, alice, bob, host):
    first, second = team_create(name="Owls", creator=bob), team_create(name="Larks", creator=host)
    invitation = team_invite(team=first, user=alice, invited_by=bob)
    team_invite(team=second, user=alice, invited_by=host)
    client.force_login(alice)
    badge = re.search(r"<span[^>]*data-invitations[^>]*>(\d+)</span>", client.get("/").content.decode())
    assert badge and badge.group(1) == "2"
    invitation_decide(invitation=invitation, user=alice, accept=True)
    badge = re.search(r"<span[^>]*data-invitations[^>]*>(\d+)</span>", client.get("/").content.decode())
    assert badge and badge.group(1) == "1"
    client.force_login(bob)
    assert "data-invitations" not in client.get("/").content.decode()
