"""Reads by id of a submission the reader may not open (``selectors.submissions_readable``): an attacker's findings.

A stored board keeps the row of an entry a host hid, or its team cancelled, until it is recomputed (debounced, or
kept while a recomputation fails): compare, the compare page and the history served it by id, run scores included.
Variance studies named and opened unreadable submissions; a removed host kept receiving the challenge's webhooks;
the run detail told an unreadable submission from a missing one; the final-selection form redirected anywhere.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Run, Submission

from .factories import PASSWORD, digits_challenge, stored_recipe

pytestmark = pytest.mark.django_db

SECRET = [0.81234567, 0.8287654321, 0.8398765432]


def logged_in(user) -> APIClient:
    client = APIClient()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _board(host, alice, bob, **fields):
    """A challenge whose stored public board shows bob's secret entry and alice's entry."""
    from leaderboard.services.reports import report_recompute

    challenge, _ = digits_challenge(host, title="Readable attack", **fields)
    secret = stored_recipe(challenge, bob, "bob secret", runs_expected=3, scores=SECRET)
    mine = stored_recipe(challenge, alice, "alice", runs_expected=3, scores=[0.7, 0.71, 0.72])
    report_recompute(challenge_id=challenge.pk, force=True)
    return challenge, secret, mine


@pytest.mark.parametrize("how", ["cancelled", "hidden"])
def test_compare_does_not_open_an_entry_hidden_or_cancelled_since_the_board_was_stored(host, alice, bob, how):
    """Cancelled, or hidden by a host: ``/api/submissions/{id}/`` answers 404 and ``/runs/`` leaves its runs out,
    but ``/compare/?a=ID`` serves its row from the stored report, ``run_scores`` included, until the next
    recomputation (queued, debounced; forever if that recomputation fails)."""
    from leaderboard.services.moderation import submission_moderate

    challenge, secret, mine = _board(host, alice, bob)
    if how == "cancelled":
        Submission.objects.filter(pk=secret.pk).update(status="cancelled")  # as submission_cancel, mid-run
    else:
        submission_moderate(submission=secret, user=host, state="hidden", reason="copied code")
    reader = logged_in(alice)
    assert reader.get(f"/api/submissions/{secret.pk}/").status_code == 404
    runs = reader.get(f"/api/challenges/{challenge.slug}/runs/").json()["results"]
    assert secret.pk not in {run["submission"] for run in runs}
    response = reader.get(f"/api/challenges/{challenge.slug}/compare/", {"a": secret.pk, "b": mine.pk})
    assert response.status_code == 404, (response.status_code, response.json().get("a", {}).get("run_scores"))
    hosts = logged_in(host).get(f"/api/challenges/{challenge.slug}/compare/", {"a": secret.pk, "b": mine.pk})
    assert hosts.status_code == 200  # the hosts still read every row of their board


@pytest.mark.parametrize("how", ["cancelled", "hidden"])
def test_the_compare_page_and_the_history_do_not_open_it_either(host, alice, bob, how):
    from leaderboard.services.moderation import submission_moderate

    challenge, secret, mine = _board(host, alice, bob)
    if how == "cancelled":
        Submission.objects.filter(pk=secret.pk).update(status="cancelled")
    else:
        submission_moderate(submission=secret, user=host, state="hidden", reason="copied code")
    reader = logged_in(alice)
    page = reader.get(f"/c/{challenge.slug}/compare/", {"a": secret.pk, "b": mine.pk})
    body = page.content.decode()
    history = reader.get(f"/c/{challenge.slug}/history/", {"entry": secret.pk})
    leaked = [s for s in ("bob secret", "0.8123") if s in body]
    assert not leaked and history.status_code == 404, (page.status_code, leaked, history.status_code)


def test_compare_with_an_override_does_not_open_a_running_entry_by_id(host, alice, bob):
    """``?n=`` (any override) rebuilds the report from the runs as they are now: a submission of bob still running,
    whose first run has just scored, is on no stored board and 404 to alice; compare served it by id with its run
    scores. (The overridden board lists it: it is the board the next recomputation stores, seconds later.)"""
    challenge, _, mine = _board(host, alice, bob)
    running = stored_recipe(challenge, bob, "bob new idea", runs_expected=3, scores=[0.9345678])
    Submission.objects.filter(pk=running.pk).update(status="running")
    Run.objects.create(submission=running, index=1, status="running", seeds={"split": 1}, split_id="s1")
    reader = logged_in(alice)
    assert reader.get(f"/api/submissions/{running.pk}/").status_code == 404
    response = reader.get(f"/api/challenges/{challenge.slug}/compare/", {"a": running.pk, "b": mine.pk, "n": 2})
    assert response.status_code == 404, response.json()


def test_variance_studies_of_a_submission_the_reader_may_not_open_are_not_shown(host, alice, bob):
    """A host studies bob's recipe entry (still running, then hidden): anyone lists the study with the
    submission's id and method name, and opens it by id."""
    from leaderboard.services.moderation import submission_moderate
    from leaderboard.services.submissions import UploadedFile, submission_create_recipe
    from tests.conftest import ROOT

    recipe = ROOT / "examples" / "recipes" / "logistic_regression.py"
    challenge, _ = digits_challenge(host, title="Study attack")
    entry = submission_create_recipe(
        challenge=challenge,
        user=bob,
        method_name="bob unpublished trick",
        recipe=UploadedFile(name=recipe.name, data=recipe.read_bytes()),
    )
    created = logged_in(host).post(
        f"/api/challenges/{challenge.slug}/variance-studies/",
        {"submission": entry.pk, "k_runs": 2, "sources": ["split"]},
        format="json",
    )
    assert created.status_code == 201, created.content
    submission_moderate(submission=entry, user=host, state="hidden", reason="copied code")
    for reader in (logged_in(alice), APIClient()):
        assert reader.get(f"/api/submissions/{entry.pk}/").status_code in (401, 404)
        studies = reader.get(f"/api/challenges/{challenge.slug}/variance-studies/").json()["results"]
        detail = reader.get(f"/api/variance-studies/{created.json()['id']}/")
        page = reader.get(f"/c/{challenge.slug}/variance-studies/").content.decode()
        shown = [(s["submission"], s["method_name"]) for s in studies]
        assert not shown and detail.status_code == 404 and "bob unpublished trick" not in page, (
            shown,
            detail.status_code,
        )
    hosts = logged_in(host).get(f"/api/challenges/{challenge.slug}/variance-studies/").json()["results"]
    assert [s["submission"] for s in hosts] == [entry.pk]


def test_a_host_removed_from_a_challenge_receives_no_more_of_its_webhooks(host, alice, bob, queued):
    """Carol hosted the challenge and registered a webhook; removed from its hosts, she can no longer list or
    delete it, but her URL, signed with the secret she holds, keeps receiving every event: a failed
    submission of another team with its error message."""
    from leaderboard.models import Event, WebhookDelivery
    from leaderboard.services.notifications import event_process, submission_ended_record
    from leaderboard.services.webhooks import webhook_create

    from .factories import make_user

    carol = make_user("carol")
    challenge, _ = digits_challenge(host, title="Webhook attack")
    challenge.hosts.add(carol)
    hook = webhook_create(challenge=challenge, user=carol, url="https://93.184.216.34/hook")
    kept = webhook_create(challenge=challenge, user=host, url="https://93.184.216.35/hook")
    challenge.hosts.remove(carol)
    assert logged_in(carol).get(f"/api/challenges/{challenge.slug}/webhooks/").status_code in (403, 404)
    failed = stored_recipe(challenge, bob, "bob fails", runs_expected=1)
    Submission.objects.filter(pk=failed.pk).update(status="failed", error_message="Traceback: secret_feature_x")
    failed.refresh_from_db()
    event = submission_ended_record(submission=failed)
    event_process(event_id=event.pk)
    deliveries = WebhookDelivery.objects.filter(webhook=hook)
    payloads = [d.payload for d in deliveries]
    assert not payloads, (hook.created_by.username, hook.active, payloads)
    assert Event.objects.filter(pk=event.pk).exists()
    assert WebhookDelivery.objects.filter(webhook=kept).count() == 1  # a host's own webhook still gets it


def test_the_run_detail_answers_an_unreadable_submission_as_a_missing_one(host, alice, bob):
    """An existence oracle: 403 "Run logs are visible to ..." for a hidden submission, 404 for no submission."""
    from leaderboard.services.moderation import submission_moderate

    challenge, secret, _ = _board(host, alice, bob)
    submission_moderate(submission=secret, user=host, state="hidden", reason="copied code")
    reader = logged_in(alice)
    assert reader.get(f"/api/submissions/{secret.pk}/").status_code == 404
    seen = reader.get(f"/api/submissions/{secret.pk}/runs/0/").status_code
    assert seen == reader.get("/api/submissions/999999/runs/0/").status_code == 404, seen


def test_the_final_selection_form_redirects_only_within_the_site(host, alice):
    challenge, _ = digits_challenge(host, title="Redirects", public_fraction=0.5)
    mine = stored_recipe(challenge, alice, "alice", runs_expected=1, scores=[0.7])
    client = logged_in(alice)
    for target, expected in (("https://evil.example/x", mine.get_absolute_url()), ("/teams/", "/teams/")):
        response = client.post(f"/submissions/{mine.pk}/select/", {"selected": "true", "next": target})
        assert response.status_code == 302 and response["Location"] == expected, (target, response["Location"])
