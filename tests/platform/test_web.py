"""HTML pages: rendering, hosting through the form, submitting through the form, permissions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from django import forms
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from evaluation.seeds import SOURCES
from leaderboard.models import Challenge, Membership, PredictionFile, Run, Submission, Team, TeamInvitation
from leaderboard.services.dispatch import EXECUTE_RUN, SCORE_SUBMISSION
from leaderboard.services.teams import team_personal_for
from leaderboard.web.upload_stash import STASH_DIR, in_units

from .factories import PASSWORD, csv_bytes, digits_challenge, digits_frame, label_predictions

pytestmark = pytest.mark.django_db

RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return train.y[:1]\n"


def media_files(media: Path) -> list[Path]:
    """Stored files, not the uploads kept between two posts of a refused form (``stash_files``)."""
    stash = Path(media) / STASH_DIR
    return sorted(p for p in Path(media).rglob("*") if p.is_file() and stash not in p.parents)


def stash_files(media: Path) -> list[Path]:
    folder = Path(media) / STASH_DIR
    return sorted(folder.iterdir()) if folder.exists() else []


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="text/csv")


def challenge_form_data(**overrides) -> dict:
    data = {
        "title": "Digits from the web",
        "description": "A test.",
        "metric": "accuracy",
        "direction": "",
        "visibility": "public",
        "allow_predictions": "on",
        "daily_quota": 5,
        "total_quota": 100,
        "k_runs": 5,
        "boo_n": 3,
        "gamma": 0.75,
        "alpha": 0.05,
        "bootstrap_resamples": 1000,
        "ranking_statistic": "mean",
        "correction": "holm",
        "master_seed": 11,
        "randomize_sources": list(SOURCES),
        "split_scheme": "oob",
        "stratify": "on",
        "test_fraction": 0.5,
        "hpo_mode": "fixed",
        "hpo_method": "random",
        "hpo_budget": 10,
        "device": "cpu",
        "run_time_limit_s": 600,
        "run_memory_limit_mb": 4096,
        "id_column": "id",
        "label_column": "label",
        "test_column": "is_test",
        "dataset": upload("digits.csv", csv_bytes(digits_frame(n_rows=120))),
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def scored_submission(challenge, user, *, log="", error="", status="scored") -> Submission:
    team = team_personal_for(user=user)
    submission = Submission.objects.create(
        challenge=challenge,
        team=team,
        submitted_by=user,
        kind="predictions",
        method_name="Handmade entry",
        status=status,
        runs_expected=2,
    )
    scored = status == "scored"
    for index in range(2):
        Run.objects.create(
            submission=submission,
            index=index,
            status="succeeded" if scored else "queued",
            test_score=0.9 + index / 100 if scored else None,
            seeds={"contestant_file": index},
            split_id="hidden-test",
            log=log,
            error_message=error,
        )
    return submission


# ------------------------------------------------------------------ pages render


def test_pages_render(client, challenge, alice):
    challenge, _ = challenge
    submission = scored_submission(challenge, alice)
    home = client.get("/")
    assert home.status_code == 200 and challenge.title in home.content.decode()
    page = client.get(challenge.get_absolute_url()).content.decode()
    assert "Leaderboard" in page and "Handmade entry" in page and "0.9050" in page  # mean of 0.90 and 0.91
    assert reverse("challenge-download", args=[challenge.slug, "train"]) in page
    assert "hidden_labels" not in page  # the link is for hosts only
    assert "Log in</a> or" in page  # no form for anonymous visitors
    assert client.get(submission.get_absolute_url()).status_code == 200
    for url in ("/signup/", "/login/"):
        assert client.get(url).status_code == 200
    assert client.get("/challenges/new/").status_code == 302  # login required
    assert client.get("/teams/").status_code == 302


def test_signup_logs_in_with_a_personal_team(client):
    response = client.post(
        "/signup/", {"username": "carol", "password1": "pale-horse-57-x", "password2": "pale-horse-57-x"}
    )
    assert response.status_code == 302
    carol = User.objects.get(username="carol")
    assert Team.objects.filter(is_personal=True, membership__user=carol).count() == 1
    assert "carol" in client.get("/").content.decode()


def test_login_and_logout(client, alice):
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/").context["user"].username == "alice"
    assert client.post("/logout/").status_code == 302
    assert not client.get("/").context["user"].is_authenticated


# ------------------------------------------------------------------ hosting


def test_host_form_creates_a_challenge(client, alice, media):
    client.force_login(alice)
    form = client.get("/challenges/new/").content.decode()
    assert 'name="randomize_sources" value="split"' in form and "checked" in form
    response = client.post("/challenges/new/", challenge_form_data(slug="web-digits"))
    assert response.status_code == 302, response.context["form"].errors
    challenge = Challenge.objects.get(slug="web-digits")
    # A draft first: the host checks the data on the preview, then publishes.
    assert response["Location"] == reverse("challenge-preview", args=[challenge.slug])
    assert challenge.visibility == "private"
    assert challenge.higher_is_better is True  # the metric's default direction
    assert list(challenge.hosts.all()) == [alice]
    assert challenge.dataset.n_test == 36 and challenge.k_runs == 5
    assert sorted(challenge.randomize_sources) == sorted(SOURCES)
    assert len(media_files(media)) == 3  # train, test inputs, hidden labels
    preview = client.get(response["Location"])
    assert preview.context["preview"].n_test == 36 and preview.context["preview"].n_train == challenge.dataset.n_train
    assert sum(test for _, _, test in preview.context["preview"].balance) == 36  # class balance of the test rows
    assert preview.context["plan"].k_noether > 0 and "data-preview-rows" in preview.content.decode()
    planned = client.get(
        response["Location"], {"entries": 5, "gamma": 0.75, "alpha": 0.05, "power": 0.95, "run_minutes": 2}
    )
    assert planned.context["plan"].k_noether == 48 and "8.0 worker hours" in planned.content.decode()
    # the button offers what the board itself asks for (its decision rule), not Noether's figure beside it
    plan, page = planned.context["plan"], planned.content.decode()
    assert plan.k_board == max(plan.k_decision, plan.k_boo_n or 0) > plan.k_noether
    assert f'name="k_runs" value="{plan.k_board}"' in page and f"Use k = {plan.k_board} for this challenge" in page
    client.post(response["Location"], {"action": "use_k", "k_runs": plan.k_board})
    client.post(response["Location"], {"action": "publish"})
    challenge.refresh_from_db()
    assert challenge.visibility == "public" and challenge.k_runs == plan.k_board
    # ... and at that k the board asks for no more runs for a decision at its own size
    from evaluation.stats import runs_needed

    assert runs_needed(5, gamma=0.75, alpha=0.05, beta=0.05).for_power <= challenge.k_runs


def test_preview_is_for_hosts_only(client, challenge, alice):
    challenge, _ = challenge
    url = reverse("challenge-preview", args=[challenge.slug])
    client.force_login(alice)
    assert client.get(url).status_code == 403
    assert client.post(url, {"action": "publish"}).status_code == 403
    assert client.get("/challenges/plan/", {"entries": 1}).context["plan"] is None  # a form error, no plan


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"label_column": "digit"}, None, "digit"),
        ({"dataset": upload("digits.csv", b"id,pixel_0,label,is_test\n1,3,7,maybe\n2,4,1,0\n")}, None, "maybe"),
        ({"direction": "lower"}, "direction", "contradicts"),
        ({"test_dataset": upload("test.csv", csv_bytes(digits_frame(n_rows=20)))}, "test_column", "not both"),
        ({"allow_predictions": None}, "allow_predictions", "Allow predictions, recipes, or both."),
        ({"k_runs": 0}, "k_runs", "greater than or equal to 1"),
    ],
)
def test_host_form_rejects_bad_input_and_stores_nothing(client, alice, media, overrides, field, message):
    client.force_login(alice)
    before = media_files(media)
    response = client.post("/challenges/new/", challenge_form_data(**overrides))
    assert response.status_code == 200
    form = response.context["form"]
    errors = [e for errors in form.errors.values() for e in errors] if field is None else form.errors[field]
    assert any(message in error for error in errors), form.errors
    assert escape(message) in response.content.decode()
    assert Challenge.objects.count() == 0
    assert media_files(media) == before


def test_host_edits_settings_and_frozen_fields_stay(client, challenge, host, alice):
    challenge, frame = challenge
    url = reverse("challenge-edit", args=[challenge.slug])
    client.force_login(alice)
    assert client.get(url).status_code == 403
    client.force_login(host)
    form = client.get(url).context["form"]
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name)
        if isinstance(field, forms.BooleanField):
            data.update({name: "on"} if value else {})
        elif value is not None:
            data[name] = value
    assert data["daily_quota"] == challenge.phases.get().daily_quota  # the only phase's, shown on the form
    data.update(title="Renamed digits", boo_n=4, daily_quota=2)
    response = client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    challenge.refresh_from_db()
    assert challenge.title == "Renamed digits" and challenge.boo_n == 4
    assert challenge.phases.get().daily_quota == 2
    scored_submission(challenge, alice)
    page = client.get(url)
    assert page.context["form"].fields["master_seed"].disabled
    data.update(master_seed=999, title="Again")
    assert client.post(url, data).status_code == 302
    challenge.refresh_from_db()
    assert challenge.master_seed == 7 and challenge.title == "Again"  # a disabled field keeps its value


# ------------------------------------------------------------------ submitting


def test_submission_form_accepts_predictions(client, challenge, alice, queued, django_capture_on_commit_callbacks):
    challenge, frame = challenge
    client.force_login(alice)
    page = client.get(challenge.get_absolute_url()).content.decode()
    assert 'type="file" name="files"' in page and "multiple" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            challenge.get_absolute_url(),
            {
                "method_name": "Two seeds",
                "description": "",
                "kind": "predictions",
                "team": team_personal_for(user=alice).pk,
                "files": [
                    upload("a.csv", label_predictions(frame, seed=1)),
                    upload("b.csv", label_predictions(frame, correct_fraction=0.8, seed=2)),
                ],
            },
        )
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == submission.get_absolute_url()
    assert submission.runs.count() == 2 and submission.method_name == "Two seeds"
    assert queued.ids(SCORE_SUBMISSION) == [submission.pk]
    detail = client.get(submission.get_absolute_url()).content.decode()
    assert f'data-progress-url="/api/submissions/{submission.pk}/"' in detail and "progress.js" in detail
    assert "Two seeds" in client.get(challenge.get_absolute_url()).content.decode()  # my submissions


def test_submission_form_accepts_a_recipe(client, challenge, alice, queued, django_capture_on_commit_callbacks):
    challenge, _ = challenge
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            challenge.get_absolute_url(),
            {
                "method_name": "Recipe",
                "kind": "recipe",
                "team": team_personal_for(user=alice).pk,
                "recipe": upload("recipe.py", RECIPE),
                "hyperparameters": '{"C": 0.5}',
            },
        )
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert submission.kind == "recipe" and submission.hyperparameters == {"C": 0.5}
    assert submission.runs.count() == challenge.k_runs
    assert sorted(queued.ids(EXECUTE_RUN)) == sorted(submission.runs.values_list("pk", flat=True))


def _bad_submissions(frame):
    test = frame[frame.is_test == 1]
    good = label_predictions(frame)
    ids = test.id.to_numpy().copy()
    ids[0] = "img-9999"
    unknown = csv_bytes(pd.DataFrame({"id": ids, "prediction": test.label.to_numpy()}))
    return {
        "no file": ({"kind": "predictions"}, "files", "Upload at least one predictions file."),
        "unknown id": ({"kind": "predictions", "files": [upload("p.csv", unknown)]}, "files", "img-9999"),
        "empty file": (
            {"kind": "predictions", "files": [upload("p.csv", good), upload("empty.csv", b"")]},
            "files",
            "empty.csv: the file is empty",
        ),
        "empty recipe": ({"kind": "recipe", "recipe": upload("r.py", b"")}, "recipe", "r.py: the recipe file is empty"),
        "too many files": (
            {"kind": "predictions", "files": [upload(f"p{i}.csv", good) for i in range(6)]},
            "files",
            "at most 5",
        ),
        "empty method": (
            {"kind": "predictions", "method_name": "  ", "files": [upload("p.csv", good)]},
            "method_name",
            "required",
        ),
        "recipe syntax": (
            {"kind": "recipe", "recipe": upload("r.py", b"def fit_predict(:\n")},
            "recipe",
            "syntax error on line 1",
        ),
        "recipe without entry point": (
            {"kind": "recipe", "recipe": upload("r.py", b"x = 1\n")},
            "recipe",
            "fit_predict",
        ),
        "hyperparameters not JSON": (
            {"kind": "recipe", "recipe": upload("r.py", RECIPE), "hyperparameters": "{C: 1"},
            "hyperparameters",
            "Not valid JSON",
        ),
        "hyperparameters too large": (  # refused on its text, before it is parsed
            {
                "kind": "recipe",
                "recipe": upload("r.py", RECIPE),
                "hyperparameters": '{"x": [' + "[]," * 30_000 + "[]]}",
            },
            "hyperparameters",
            "the hyperparameters take 88 kb as json; the limit is 64 kb.",
        ),
        "hyperparameters nested too deeply": (  # a RecursionError was a 500
            {"kind": "recipe", "recipe": upload("r.py", RECIPE), "hyperparameters": "[" * 60_000},
            "hyperparameters",
            "nested too deeply",
        ),
        "hyperparameters a list": (
            {"kind": "recipe", "recipe": upload("r.py", RECIPE), "hyperparameters": "[1]"},
            "hyperparameters",
            "JSON object",
        ),
    }


@pytest.mark.parametrize("case", list(_bad_submissions(digits_frame())))
def test_submission_form_errors_name_the_problem(client, challenge, alice, media, case):
    challenge, frame = challenge
    client.force_login(alice)
    data, field, message = _bad_submissions(frame)[case]
    before = media_files(media)
    response = client.post(
        challenge.get_absolute_url(), {"method_name": "Bad", "team": team_personal_for(user=alice).pk, **data}
    )
    # More files than k are stopped while they stream (upload_handlers): 400, the form shows why.
    assert response.status_code == (400 if case == "too many files" else 200)
    errors = response.context["form"].errors
    assert any(message.lower() in error.lower() for error in errors.get(field, [])), errors
    assert Submission.objects.count() == 0 and PredictionFile.objects.count() == 0
    # Nothing stored, except the recipe kept (in the temporary area) when only the hyperparameters were wrong
    # (issue 25: a browser cannot re-fill a file input; tests/platform/test_kaggle_habits.py).
    assert media_files(media) == before
    assert len(stash_files(media)) == (1 if field == "hyperparameters" else 0)


def test_closed_challenge_and_foreign_team_are_form_errors(client, challenge, alice, bob):
    challenge, frame = challenge
    client.force_login(alice)
    bobs_team = team_personal_for(user=bob)
    response = client.post(
        challenge.get_absolute_url(),
        {
            "method_name": "x",
            "kind": "predictions",
            "team": bobs_team.pk,
            "files": [upload("p.csv", label_predictions(frame))],
        },
    )
    assert "team" in response.context["form"].errors  # not one of alice's teams
    challenge.phases.update(closes_at=timezone.now() - timezone.timedelta(hours=1))
    assert "does not accept submissions now" in client.get(challenge.get_absolute_url()).content.decode()
    response = client.post(
        challenge.get_absolute_url(),
        {
            "method_name": "x",
            "kind": "predictions",
            "team": team_personal_for(user=alice).pk,
            "files": [upload("p.csv", label_predictions(frame))],
        },
    )
    assert "The main phase closed at" in response.content.decode()
    assert Submission.objects.count() == 0


def test_anonymous_post_goes_to_login(client, challenge):
    challenge, _ = challenge
    response = client.post(challenge.get_absolute_url(), {"method_name": "x"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_quota_is_a_form_error(client, host, alice):
    challenge, frame = digits_challenge(host, daily_quota=1)
    client.force_login(alice)
    data = {"method_name": "x", "kind": "predictions", "team": team_personal_for(user=alice).pk}
    client.post(challenge.get_absolute_url(), {**data, "files": [upload("p.csv", label_predictions(frame))]})
    response = client.post(challenge.get_absolute_url(), {**data, "files": [upload("p.csv", label_predictions(frame))]})
    assert "used its 1 submissions of the last 24 hours" in response.content.decode()
    assert Submission.objects.count() == 1


# ------------------------------------------------------------------ permissions


def test_private_challenge_is_404_for_strangers(client, host, alice):
    challenge, _ = digits_challenge(host, visibility="private")
    submission = scored_submission(challenge, host)
    urls = [
        challenge.get_absolute_url(),
        reverse("challenge-download", args=[challenge.slug, "train"]),
        submission.get_absolute_url(),
        reverse("challenge-edit", args=[challenge.slug]),
    ]
    assert client.get(urls[0]).status_code == 404
    client.force_login(alice)
    for url in urls:
        assert client.get(url).status_code == 404, url
    assert challenge.title not in client.get("/").content.decode()
    client.force_login(host)
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert challenge.title in client.get("/").content.decode()


def test_a_private_challenges_host_pages_are_404_for_strangers_as_an_unknown_slug(client, host, alice):
    """Its phases, scoring program and bundle pages say nothing of it to a stranger: a 404, as for a slug that
    names no challenge, not a 403 'Only the challenge's hosts can ...' that tells it exists."""
    challenge, _ = digits_challenge(host, visibility="private")
    client.force_login(alice)
    for name in ("challenge-phases", "challenge-scoring-program", "challenge-bundle-export"):
        response = client.get(reverse(name, args=[challenge.slug]))
        assert client.get(reverse(name, args=["no-such-challenge"])).status_code == 404, name
        assert response.status_code == 404 and "hosts" not in response.content.decode(), name
    client.force_login(host)
    for name in ("challenge-phases", "challenge-scoring-program", "challenge-bundle-export"):
        assert client.get(reverse(name, args=[challenge.slug])).status_code in (200, 302), name


def test_hidden_labels_are_for_hosts_only(client, challenge, host, alice):
    challenge, frame = challenge
    url = reverse("challenge-download", args=[challenge.slug, "hidden_labels"])
    assert client.get(url).status_code == 403
    client.force_login(alice)
    assert client.get(url).status_code == 403
    for part in ("train", "test_inputs", "sample_submission"):
        response = client.get(reverse("challenge-download", args=[challenge.slug, part]))
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), part
    test_inputs = client.get(reverse("challenge-download", args=[challenge.slug, "test_inputs"])).getvalue().decode()
    assert "label" not in test_inputs.splitlines()[0]
    client.force_login(host)
    assert url in client.get(challenge.get_absolute_url()).content.decode()
    response = client.get(url)
    assert response.status_code == 200
    hidden = response.getvalue().decode()  # streamed (test_download_bounds)
    assert "label" in hidden.splitlines()[0] and frame[frame.is_test == 1].id.iloc[0] in hidden
    assert client.get(reverse("challenge-download", args=[challenge.slug, "nonsense"])).status_code == 404


def test_submission_page_hides_logs_from_other_users(client, challenge, host, alice, bob):
    challenge, _ = challenge
    submission = scored_submission(challenge, alice, log="step 1\nSECRET-LOG-LINE", error="a run-level message")
    client.force_login(alice)
    own = client.get(submission.get_absolute_url()).content.decode()
    assert "SECRET-LOG-LINE" in own and "a run-level message" in own
    client.force_login(host)
    assert "SECRET-LOG-LINE" in client.get(submission.get_absolute_url()).content.decode()
    for user in (bob, None):
        client.logout()
        if user is not None:
            client.force_login(user)
        other = client.get(submission.get_absolute_url()).content.decode()
        assert "0.9000" in other and "SECRET-LOG-LINE" not in other and "a run-level message" not in other


def test_unscored_submission_is_404_for_others(client, challenge, alice, bob):
    challenge, _ = challenge
    submission = scored_submission(challenge, alice, status="queued")
    client.force_login(bob)
    assert client.get(submission.get_absolute_url()).status_code == 404
    client.force_login(alice)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "0 / 2 runs finished" in page and "data-progress-url" in page


def test_cancel_a_queued_submission(client, challenge, alice, bob):
    challenge, _ = challenge
    submission = scored_submission(challenge, alice, status="queued")
    url = reverse("submission-cancel", args=[submission.pk])
    client.force_login(bob)
    assert client.post(url).status_code == 404  # another team's queued entry: as if none (test_leaks_v3)
    submission.refresh_from_db()
    assert submission.status == "queued"  # bob may not
    client.force_login(alice)
    client.post(url)
    submission.refresh_from_db()
    assert submission.status == "cancelled"


# ------------------------------------------------------------------ teams


def test_teams_page_creates_a_team_and_invites_members_who_must_accept(client, alice, bob):
    client.force_login(alice)
    page = client.get("/teams/").content.decode()
    assert "personal" in page
    assert client.post("/teams/", {"action": "create", "create-name": "Lab"}).status_code == 302
    lab = Team.objects.get(name="Lab")
    response = client.post("/teams/", {"action": "invite", "member-team": lab.pk, "member-username": "nobody"})
    assert "There is no user named “nobody”." in response.content.decode()
    assert (
        client.post("/teams/", {"action": "invite", "member-team": lab.pk, "member-username": "bob"}).status_code == 302
    )
    assert not Membership.objects.filter(team=lab, user=bob).exists()  # not without bob's consent
    invitation = TeamInvitation.objects.get(team=lab, invitee=bob)
    assert client.post(f"/invitations/{invitation.pk}/", {"action": "accept"}).status_code == 302
    assert not Membership.objects.filter(team=lab, user=bob).exists()  # alice cannot accept for bob
    client.force_login(bob)
    assert "invites you to <strong>Lab</strong>" in client.get("/account/").content.decode()
    assert client.post(f"/invitations/{invitation.pk}/", {"action": "accept"}).status_code == 302
    assert Membership.objects.filter(team=lab, user=bob).exists()
    client.force_login(alice)
    response = client.post("/teams/", {"action": "create", "create-name": "Lab"})
    assert "exists already" in response.content.decode()
    assert "Lab" in client.get("/teams/").content.decode()


@pytest.mark.parametrize("gamma, accepted", [(0.9995, True), (0.5005, True), (0.5, False), (1.0, False)])
def test_gamma_has_one_range_in_the_planner_the_model_and_the_statistics(client, gamma, accepted):
    """The planner form once refused γ = 0.9995 (0.501-0.999) while the model took it: one rule now."""
    from django.core.exceptions import ValidationError

    from evaluation.stats import check_gamma, runs_needed
    from leaderboard.models import validate_gamma

    response = client.get(
        "/challenges/plan/", {"entries": 5, "gamma": gamma, "alpha": 0.05, "power": 0.9, "run_minutes": 1}
    )
    assert (response.context["plan"] is not None) is accepted
    if accepted:
        validate_gamma(gamma)
        assert check_gamma(gamma) == gamma and runs_needed(5, gamma=gamma).for_power >= 2
    else:
        assert "must be in (0.5, 1)" in response.content.decode()
        with pytest.raises(ValidationError, match=r"γ must be in \(0.5, 1\)"):
            validate_gamma(gamma)
        with pytest.raises(ValueError, match=r"`gamma` must be in \(0.5, 1\)"):
            runs_needed(5, gamma=gamma)


def test_a_refused_recipe_on_a_recipe_only_challenge_shows_the_same_form(client, challenge, alice, media):
    """Found by a new user: with no prediction files field, the template's ``form.files`` fell through to the
    bound uploads and printed ``<MultiValueDict: {...}>`` and the prediction files' help under the form."""
    challenge, _ = challenge
    challenge.allow_predictions = False
    challenge.save(update_fields=["allow_predictions"])
    client.force_login(alice)
    response = client.post(
        challenge.get_absolute_url(),
        {
            "method_name": "Bad",
            "kind": "recipe",
            "team": team_personal_for(user=alice).pk,
            "recipe": upload("bad_syntax.py", b"def fit_predict(:\n"),
        },
    )
    page = response.content.decode()
    assert response.status_code == 200 and Submission.objects.count() == 0
    assert "bad_syntax.py: the recipe has a syntax error on line 1" in page  # the uploaded file's name, once
    assert "MultiValueDict" not in page and "InMemoryUploadedFile" not in page
    assert "sample submission" not in page and 'name="files"' not in page and 'name="recipe"' in page


def test_logout_by_get_shows_a_form_and_only_post_logs_out(client, alice):
    """Found by a new user: GET /logout/ answered a blank 405 ("This page isn't working")."""
    client.force_login(alice)
    page = client.get("/logout/")
    assert (
        page.status_code == 200 and "data-logout" in page.content.decode() and alice.username in page.content.decode()
    )
    assert client.get("/account/").status_code == 200  # a GET logs nobody out
    assert client.post("/logout/").status_code == 302
    assert client.get("/account/").status_code == 302  # to the login page
    assert "You are not logged in" in client.get("/logout/").content.decode()


# ------------------------------------------------------------------ the kept dataset files


def three_tables() -> dict:
    """The dataset as three files: training rows, the test rows' inputs, and their hidden labels."""
    frame = digits_frame(n_rows=120)
    train, test = frame[frame.is_test == 0].drop(columns="is_test"), frame[frame.is_test == 1].drop(columns="is_test")
    return {
        "dataset": csv_bytes(train),
        "test_dataset": csv_bytes(test.drop(columns="label")),
        "test_labels": csv_bytes(test[["id", "label"]]),
    }


@pytest.mark.parametrize("spooled", [False, True], ids=["in-memory", "spooled"])
def test_a_refused_host_form_keeps_the_dataset_files_for_the_next_post(client, alice, media, settings, spooled):
    """A new user's finding: refused for a label-column typo, the chosen files were gone (a browser cannot
    re-fill a file input), nothing said so, and the next post answered "This field is required.".

    ``spooled``: files over ``FILE_UPLOAD_MAX_MEMORY_SIZE`` are handed to the child that prepares the dataset as a
    copy on disk, read through the storage API (the first version asked the storage for a path: an object store
    has none, ``test_storage::test_no_code_reads_a_stored_file_by_path``)."""
    if spooled:
        settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    tables = three_tables()
    client.force_login(alice)
    files = {name: upload(f"{name}.csv", data) for name, data in tables.items()}
    form = challenge_form_data(slug="kept-files", test_column="", **files)
    refused = client.post("/challenges/new/", {**form, "label_column": "specie"})
    assert refused.status_code == 200 and Challenge.objects.count() == 0
    assert "specie" in str(refused.context["form"].errors)
    page = refused.content.decode()
    for name, data in tables.items():  # each file, its name and size, said to be kept
        assert f"{name}.csv ({in_units(len(data))}, kept; choose another to replace it)" in page, name
    assert len(stash_files(media)) == 3
    # The next post chooses no file: the kept ones are used; a new test-labels file replaces the kept one.
    again = {key: value for key, value in form.items() if key not in tables}
    relabelled = upload("labels-2.csv", tables["test_labels"])
    accepted = client.post("/challenges/new/", {**again, "test_labels": relabelled})
    assert accepted.status_code == 302, accepted.context["form"].errors
    challenge = Challenge.objects.get(slug="kept-files")
    assert challenge.dataset.n_test == 36 and challenge.dataset.n_train == 84
    assert stash_files(media) == []  # deleted once used
    # Nothing kept any more: the dataset must be chosen again.
    empty = client.post("/challenges/new/", {**again, "slug": "kept-files-2"})
    assert "This field is required." in str(empty.context["form"].errors["dataset"])


def test_a_dataset_file_refused_itself_is_not_kept(client, alice, media):
    client.force_login(alice)
    client.post("/challenges/new/", challenge_form_data(label_column="specie"))
    assert len(stash_files(media)) == 1
    # A new file that the service refuses (its own field's error) is not kept, nor the one kept before it.
    broken = client.post("/challenges/new/", challenge_form_data(dataset=upload("broken.csv", b"id\n")))
    assert broken.context["form"].errors["dataset"] and Challenge.objects.count() == 0
    assert stash_files(media) == [] and "kept;" not in broken.content.decode()
    without = {key: value for key, value in challenge_form_data().items() if key != "dataset"}
    assert "This field is required." in str(client.post("/challenges/new/", without).context["form"].errors["dataset"])


def test_a_kept_dataset_belongs_to_the_user_who_chose_it(client, alice, bob, media):
    from leaderboard.web.upload_stash import SESSION_KEY

    client.force_login(alice)
    form = challenge_form_data(slug="alices")
    client.post("/challenges/new/", {**form, "label_column": "specie"})
    stashed = client.session[SESSION_KEY]
    assert len(stash_files(media)) == 1
    # Bob's session is given Alice's stash reference (its token): it is not his, so it is not used.
    client.force_login(bob)
    session = client.session
    session[SESSION_KEY] = stashed
    session.save()
    without = {key: value for key, value in form.items() if key != "dataset"}
    refused = client.post("/challenges/new/", without)
    assert refused.status_code == 200 and Challenge.objects.count() == 0
    assert "This field is required." in str(refused.context["form"].errors["dataset"])
    assert "kept;" not in refused.content.decode()


def test_kept_dataset_files_are_bounded_one_per_field(client, alice, media):
    client.force_login(alice)
    for slug in ("one", "two", "three"):
        client.post("/challenges/new/", challenge_form_data(slug=slug, label_column="specie"))
    assert len(stash_files(media)) == 1  # each refused post replaced the last one's file
