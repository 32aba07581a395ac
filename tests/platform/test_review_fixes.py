"""Holes found in review: quotas across teams, cancel refunds, stuck scoring, settings that no longer fit
the dataset, spreadsheet formulas in exports, unbounded recomputations, staff reach in the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from leaderboard.models import Run, Submission
from leaderboard.services import scoring
from leaderboard.services.challenges import challenge_update
from leaderboard.services.errors import NotAllowed, ServiceError
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_cancel, submission_create_predictions
from leaderboard.services.teams import team_create

from .factories import PASSWORD, digits_challenge, label_predictions, make_user

pytestmark = pytest.mark.django_db


def predictions(challenge, user, frame, **kwargs):
    return submission_create_predictions(
        challenge=challenge,
        user=user,
        method_name=kwargs.pop("name", "entry"),
        files=[UploadedFile("p.csv", label_predictions(frame))],
        **kwargs,
    )


def test_more_teams_do_not_buy_more_submissions(host, alice):
    challenge, frame = digits_challenge(host, daily_quota=2, total_quota=0)
    extra = [team_create(name=f"alice-team-{i}", creator=alice) for i in range(2)]
    predictions(challenge, alice, frame, team_id=extra[0].pk)
    # issue 21: a person takes part in a challenge with one team only, so another team is refused outright
    with pytest.raises(NotAllowed, match="one team per challenge"):
        predictions(challenge, alice, frame, team_id=extra[1].pk)
    with pytest.raises(NotAllowed, match="one team per challenge"):
        predictions(challenge, alice, frame)


def test_cancelling_refunds_only_what_never_ran(host, alice, bob):
    challenge, frame = digits_challenge(host)
    untouched = predictions(challenge, alice, frame)
    assert not submission_cancel(submission=untouched, user=alice).counts_toward_quota
    started = predictions(challenge, bob, frame)
    Run.objects.filter(submission=started).update(status="succeeded", test_score=0.9)
    Submission.objects.filter(pk=started.pk).update(status="running")
    started.refresh_from_db()
    assert submission_cancel(submission=started, user=bob).counts_toward_quota  # its scores were seen


def test_an_unexpected_scoring_error_fails_the_run_instead_of_looping(host, alice, monkeypatch):
    challenge, frame = digits_challenge(host)
    submission = predictions(challenge, alice, frame)

    def broken(*args, **kwargs):  # a library's message may quote the hidden labels: the run's must not
        raise ValueError("y_true holds the labels [7 3 9 1]")

    monkeypatch.setattr("leaderboard.services.scoring.score_predictions", broken)
    submission = submission_score(submission_id=submission.pk)
    run = submission.runs.get()
    assert submission.status == "failed" and not submission.counts_toward_quota
    assert run.status == "failed" and "platform error while scoring: ValueError" in run.error_message
    assert "[7 3 9 1]" not in run.error_message and "not charged" in run.error_message


@pytest.mark.parametrize("broken", [0, 1])
def test_a_platform_fault_on_one_file_does_not_refund_the_file_that_scored(host, alice, monkeypatch, broken):
    """Two files, one failed by the platform: the other one's score is readable, so the submission still
    counts, whichever was scored first (a refund made every such submission a free probe past the quotas: an
    attacker's finding)."""
    challenge, frame = digits_challenge(host, k_runs=2)
    submission = submission_create_predictions(
        challenge=challenge,
        user=alice,
        method_name="two files",
        files=[UploadedFile(f"p{i}.csv", label_predictions(frame)) for i in range(2)],
    )
    real = scoring._score_one

    def second_breaks(submission, run, *args, **kwargs):
        if run.index == broken:
            raise ValueError("a platform bug")
        return real(submission, run, *args, **kwargs)

    monkeypatch.setattr("leaderboard.services.scoring._score_one", second_breaks)
    submission = submission_score(submission_id=submission.pk)
    runs = list(submission.runs.order_by("index"))
    assert sorted(r.status for r in runs) == ["failed", "succeeded"] and runs[1 - broken].test_score is not None
    assert "not charged to your quota unless another run of this submission is scored" in runs[broken].error_message
    assert submission.status == "scored" and submission.counts_toward_quota


@pytest.mark.parametrize(
    "change, message",
    [
        ({"metric": "rmse", "higher_is_better": False}, "does not fit this dataset's class labels"),
        ({"metric": "roc_auc"}, "exactly 2 classes"),
    ],
)
def test_settings_must_keep_fitting_the_dataset(host, change, message):
    challenge, _ = digits_challenge(host)
    with pytest.raises(ServiceError, match=message):
        challenge_update(challenge=challenge, user=host, **change)


@pytest.mark.parametrize("scheme", ["oob", "fixed"])
def test_every_challenge_needs_hidden_test_rows_recipes_included(host, scheme):
    """Recipe runs are tested on rows whose labels nobody downloaded, under either split scheme."""
    from leaderboard.models import Challenge
    from leaderboard.services.challenges import DatasetUpload, challenge_create

    from .factories import csv_bytes, digits_frame

    pool = digits_frame(80).drop(columns="is_test")
    with pytest.raises(ServiceError, match="needs hidden test rows, whose labels contestants never see"):
        challenge_create(
            created_by=host,
            title="Pool only",
            metric="accuracy",
            allow_predictions=False,
            allow_recipes=True,
            split_scheme=scheme,
            dataset=DatasetUpload(data=csv_bytes(pool), filename="p.csv", id_column="id", label_column="label"),
        )
    assert not Challenge.objects.exists()


def test_csv_exports_neutralise_spreadsheet_formulas(host):
    evil = make_user("evil")
    challenge, frame = digits_challenge(host)
    submission = predictions(challenge, evil, frame, name='=HYPERLINK("http://x","click")')
    submission_score(submission_id=submission.pk)
    text = APIClient().get(f"/api/challenges/{challenge.slug}/runs/?format=csv").content.decode()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text


def test_recomputations_with_overrides_are_cached_and_throttled(host, alice, monkeypatch):
    from django.core.cache import cache
    from rest_framework.throttling import ScopedRateThrottle

    # DRF reads the rates once, at import (VARBOARD_RECOMPUTE_RATE in settings.py sets them).
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"report_recompute": "2/min"})

    cache.clear()
    challenge, frame = digits_challenge(host)
    submission_score(submission_id=predictions(challenge, alice, frame).pk)
    client = APIClient()
    url = f"/api/challenges/{challenge.slug}/leaderboard/"
    assert client.get(url, {"n": 2}).status_code == 200
    assert client.get(url, {"n": 2}).status_code == 200  # cached: not counted
    assert client.get(url, {"n": 4}).status_code == 200  # (the challenge's own n is 3)
    response = client.get(url, {"n": 5})
    assert response.status_code == 429 and "Too many recomputations" in response.json()["detail"]
    assert client.get(url).status_code == 200  # the challenge's own settings are never throttled
    cache.clear()


def test_staff_hosts_see_only_their_own_reports_and_no_teams(host, client):
    other_host = make_user("otherhost")
    digits_challenge(other_host, title="Someone else's", visibility="private")
    mine, _ = digits_challenge(host, title="Mine")
    host.is_staff = True
    host.save()
    host.user_permissions.add(*Permission.objects.filter(codename__in=["view_report", "view_team", "change_team"]))
    from leaderboard.services.reports import report_recompute

    report_recompute(challenge_id=mine.pk)
    client.login(username=host.username, password=PASSWORD)
    page = client.get("/admin/leaderboard/report/").content.decode()
    assert "Mine" in page and "Someone else" not in page
    assert client.get("/admin/leaderboard/team/").status_code == 403


def test_strangers_do_not_see_a_submission_description_or_submitter(host, alice, bob, client):
    challenge, frame = digits_challenge(host)
    submission = predictions(challenge, alice, frame, description="secret trick: ensembling 40 models")
    submission_score(submission_id=submission.pk)
    client.login(username=bob.username, password=PASSWORD)
    assert "secret trick" not in client.get(f"/submissions/{submission.pk}/").content.decode()
    body = APIClient()
    body.login(username=bob.username, password=PASSWORD)
    data = body.get(f"/api/submissions/{submission.pk}/").json()
    assert "description" not in data and "submitted_by" not in data


def test_the_one_team_refusal_speaks_to_the_submitter(host, alice, bob):
    """carol, submitting for Owls, was told "alice takes part ... Submit with “alice” there": a team she is not in.
    Her own entry is named first, to her ("You take part ... Submit with “carol”"), and another member's
    conflict is named without advising a team the submitter cannot use."""
    from leaderboard.services.teams import invitation_decide, team_invite

    challenge, frame = digits_challenge(host)
    carol = make_user("carol")
    predictions(challenge, alice, frame, name="alice alone")
    owls = team_create(name="Owls", creator=alice)
    invitation_decide(invitation=team_invite(team=owls, user=bob, invited_by=alice), user=bob, accept=True)
    with pytest.raises(NotAllowed) as refused:
        predictions(challenge, bob, frame, team_id=owls.pk)
    assert "alice takes part" in str(refused.value) and "Submit with “alice”" not in str(refused.value)
    predictions(challenge, carol, frame, name="carol alone")
    invitation_decide(invitation=team_invite(team=owls, user=carol, invited_by=alice), user=carol, accept=True)
    with pytest.raises(NotAllowed) as refused:
        predictions(challenge, carol, frame, team_id=owls.pk)
    message = str(refused.value)
    assert message.startswith("You take part in “Digits test” with the team “carol” already"), message
    assert message.endswith("Submit with “carol” there.")
