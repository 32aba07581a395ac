"""What a contestant read about others' teams and entries through refusals (a seventh attack, leaks7).

* **The one-team refusal named a team the submitter is not in.** alice and bob share Owls; bob is also in Secret, with
  carol, whose only entry to the challenge is still queued (or failed, or hidden by a host): nobody else may open it,
  and Secret is on no board. alice submitting for Owls was refused with "bob takes part in “Digits test” with the team
  “Secret” already": she read that bob is in Secret (the API lists a team's members to its members only) and that
  Secret had entered the challenge. The refusal still names the member (the rule needs it said), not the other team.
* **Any user read every team's name by its id.** The hosts' team moderation (``POST|DELETE
  /api/challenges/{slug}/teams/{id}/moderation/``) asks first who asks (tests/platform/test_leaks_v5.py), but anyone
  signed in may host a challenge of their own: there the team was looked up among all teams, and the answers were 404
  for no team and 400 naming it ("Team 'Secret' has no submission on this challenge.", "Team 'Secret' is not
  disqualified or hidden ...") for any other: every team's id and name, teams on no board and personal ones alike.
  A host's moderation now looks the team up among those with a submission on the challenge (which its hosts read),
  404 otherwise.
* **Under the Ladder a hidden entry's score came back on its submitter's next row.** bob's copied entry (0.95) was
  hidden by a host and left the board, but the Ladder's sequence of his releases still counted it: his own entry of
  0.70, submitted after it, was released at 0.95 and ranked first, on the board, the state of the art and its
  submission page. A moderated submission is on no board and in no release sequence now.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import Submission
from leaderboard.services.errors import NotAllowed
from leaderboard.services.moderation import submission_moderate
from leaderboard.services.reports import report_recompute
from leaderboard.services.results_import import challenge_create_results_only
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from leaderboard.services.teams import invitation_decide, team_create, team_invite

from .factories import digits_challenge, label_predictions, make_user, stored_recipe

pytestmark = pytest.mark.django_db


def _submit(challenge, user, frame, team, seed=0):
    return submission_create_predictions(
        challenge=challenge,
        user=user,
        method_name="entry",
        files=[UploadedFile("p.csv", label_predictions(frame, correct_fraction=0.5, seed=seed))],
        team_id=team.pk,
    )


def _join(team, user, by):
    invitation_decide(invitation=team_invite(team=team, user=user, invited_by=by), user=user, accept=True)


@pytest.mark.parametrize("state", ["queued", "failed"])
def test_the_one_team_refusal_names_no_team_the_submitter_is_not_in(host, alice, bob, state):
    challenge, frame = digits_challenge(host)
    carol = make_user("carol")
    owls = team_create(name="Owls", creator=alice)
    _join(owls, bob, alice)
    secret = team_create(name="Secret", creator=carol)
    _join(secret, bob, carol)
    hidden = _submit(challenge, carol, frame, secret)
    Submission.objects.filter(pk=hidden.pk).update(status=state)
    with pytest.raises(NotAllowed) as refused:
        _submit(challenge, alice, frame, owls, seed=1)
    message = str(refused.value)
    assert "bob takes part" in message and "one team per challenge" in message
    assert "Secret" not in message, message  # was: '... with the team “Secret” already'


def test_a_host_s_team_moderation_names_no_team_that_has_not_entered_the_challenge(alice, bob):
    mine = challenge_create_results_only(created_by=alice, title="Alice's own")  # anyone signed in may host
    secret = team_create(name="Secret", creator=bob)  # on no board anywhere
    missing = secret.pk + 1000
    client = APIClient()
    client.force_authenticate(alice)
    answers = {}
    for name, team_id in (("exists", secret.pk), ("missing", missing)):
        url = f"/api/challenges/{mine.slug}/teams/{team_id}/moderation/"
        post = client.post(url, {"state": "hidden", "reason": "x"}, format="json")
        delete = client.delete(url)
        answers[name] = tuple(
            (answer.status_code, answer.content.decode().replace(str(team_id), "<id>")) for answer in (post, delete)
        )
    assert "Secret" not in repr(answers), answers  # was 400: "Team 'Secret' has no submission on this challenge."
    assert answers["exists"] == answers["missing"], answers
    assert answers["exists"][0][0] == 404


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_hidden_entry_s_score_is_not_released_on_its_submitter_s_next_entry(host, alice, bob, cancelled):
    # η = 0.05: at least twice one of the 72 public rows' move to an accuracy (2/72), which a smaller η is raised to
    challenge, _ = digits_challenge(
        host, title="Ladder and moderation", feedback="ladder", ladder_margin=0.05, split_scheme="fixed"
    )  # the host's η: no recipe run scored on a resample (tests/platform/test_ladder_resamples.py)
    start = timezone.now()
    rival = stored_recipe(challenge, alice, "alice's", runs_expected=2, scores=[0.8, 0.8])
    copied = stored_recipe(challenge, bob, "copied", runs_expected=2, scores=[0.95, 0.95])
    own = stored_recipe(challenge, bob, "own", runs_expected=2, scores=[0.7, 0.7])
    for minutes, submission in enumerate((rival, copied, own)):
        Submission.objects.filter(pk=submission.pk).update(finished_at=start + timedelta(minutes=minutes))
    if cancelled:  # cancelled after its runs were scored: counted in bob's sequence, yet hidden by a host
        Submission.objects.filter(pk=copied.pk).update(status="cancelled")
    submission_moderate(submission=copied, user=host, state="hidden", reason="copied code")
    report_recompute(challenge_id=challenge.pk, force=True)
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    shown = {row["method_name"]: (row["rank"], row["ranking_value"]) for row in board["entries"]}
    assert shown == {"alice's": (1, 0.8), "own": (2, 0.7)}, shown  # was own: (1, 0.95), the hidden entry's score
    assert APIClient().get(f"/api/submissions/{own.pk}/").json()["score"] == 0.7
