"""What races the reveal of the private board, which closes the competition under the challenge's row lock.

* A final-entry choice is decided under that lock, so it lands before the reveal or is refused; never after
  it (the team would pick its final entries knowing the private scores). Two threads, each with its own
  PostgreSQL connection.
* A submission checked against an open phase just before the reveal is checked again under that lock, so it
  is refused rather than scored after the reveal (its private score would be public at once).
"""

from __future__ import annotations

import threading

import pandas as pd
import pytest
from django.db import connection

from leaderboard.models import Submission
from leaderboard.services import submissions
from leaderboard.services.challenges import challenge_reveal
from leaderboard.services.dataset_files import dataset_test_ids
from leaderboard.services.errors import ChallengeClosed
from leaderboard.services.teams import team_personal_for

from .factories import csv_bytes, digits_challenge

pytestmark = pytest.mark.django_db(transaction=True)


def _in_thread(target, log: list, done: str):
    def body():
        try:
            target()
            log.append(done)
        except ChallengeClosed:
            log.append(f"{done} refused")
        finally:
            connection.close()  # the thread's own connection

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["one entry", "the whole choice"])
def test_a_final_choice_racing_the_reveal_lands_before_it_or_is_refused(host, alice, monkeypatch, how):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL's row locks (SQLite locks the whole file)")
    challenge, _ = digits_challenge(host, title="Race", public_fraction=0.5, final_entries=1)
    team = team_personal_for(user=alice)
    entry = Submission.objects.create(
        challenge=challenge, team=team, submitted_by=alice, kind="predictions", method_name="m", status="scored"
    )
    checked, go = threading.Event(), threading.Event()
    candidate = submissions._check_final_candidate

    def paused_after_the_reveal_check(*args, **kwargs):  # the choice has looked at the reveal; it waits here
        checked.set()
        assert go.wait(30)
        return candidate(*args, **kwargs)

    monkeypatch.setattr(submissions, "_check_final_candidate", paused_after_the_reveal_check)
    log: list[str] = []
    if how == "one entry":
        choose = lambda: submissions.submission_select_final(submission=entry, user=alice)  # noqa: E731
    else:
        choose = lambda: submissions.submission_finals_choose(  # noqa: E731
            challenge=challenge, team=team, user=alice, submission_ids=[entry.pk]
        )
    chooser = _in_thread(choose, log, "chosen")
    try:
        assert checked.wait(30), "the choice never reached its check"
        revealer = _in_thread(lambda: challenge_reveal(challenge=challenge, user=host), log, "revealed")
        revealer.join(1.5)  # a reveal that does not wait for the choice lands now, in the middle of it
        reveal_waited = revealer.is_alive()
    finally:
        go.set()
        chooser.join(30)
    revealer.join(30)
    assert not chooser.is_alive() and not revealer.is_alive()
    assert sorted(log) == ["chosen", "revealed"], log
    assert reveal_waited, "the reveal landed between the choice's check and its save"
    challenge.refresh_from_db()
    assert challenge.private_revealed_at is not None
    assert Submission.objects.get(pk=entry.pk).selected_for_final  # chosen before the reveal: it stands


def test_after_the_reveal_no_final_entry_can_be_chosen_or_dropped(host, alice):
    challenge, _ = digits_challenge(host, title="Revealed", public_fraction=0.5, final_entries=1)
    team = team_personal_for(user=alice)
    entry = Submission.objects.create(
        challenge=challenge, team=team, submitted_by=alice, kind="predictions", method_name="m", status="scored"
    )
    submissions.submission_select_final(submission=entry, user=alice)
    challenge_reveal(challenge=challenge, user=host)
    for attempt in (
        lambda: submissions.submission_select_final(submission=entry, user=alice, selected=False),
        lambda: submissions.submission_finals_choose(challenge=challenge, team=team, user=alice, submission_ids=[]),
    ):
        with pytest.raises(ChallengeClosed, match="final selections are locked"):
            attempt()
    assert Submission.objects.get(pk=entry.pk).selected_for_final


RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return train.y[:1]\n"


@pytest.mark.parametrize("kind", ["predictions", "recipe"])
def test_a_submission_checked_just_before_the_reveal_is_refused_after_it(host, alice, monkeypatch, kind):
    challenge, _ = digits_challenge(host, title="Closing", public_fraction=0.5)
    real = submissions.team_for_submission

    def revealed_meanwhile(**kwargs):  # after the phase was found open, before anything is stored
        challenge_reveal(challenge=challenge, user=host)
        return real(**kwargs)

    monkeypatch.setattr(submissions, "team_for_submission", revealed_meanwhile)
    with pytest.raises(ChallengeClosed):
        if kind == "predictions":
            ids = dataset_test_ids(dataset=challenge.dataset)
            data = csv_bytes(pd.DataFrame({"id": ids, "prediction": ["0"] * len(ids)}))
            submissions.submission_create_predictions(
                challenge=challenge, user=alice, method_name="late", files=[submissions.UploadedFile("p.csv", data)]
            )
        else:
            submissions.submission_create_recipe(
                challenge=challenge, user=alice, method_name="late", recipe=submissions.UploadedFile("r.py", RECIPE)
            )
    assert not Submission.objects.filter(challenge=challenge).exists()
