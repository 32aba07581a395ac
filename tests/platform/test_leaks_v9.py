"""What the surfaces changed on 1 December told others (a ninth attack): the suites list, the streamed bundle export
and the dataset preview, the Boo_n ``picked_on`` mark and the coverage notes, and the final ticks.

Each test builds two worlds that differ only in something the reader may not open (a suite with a private task, a
hidden entry, another team's final choice) and asserts the reader's answers are the same, or asserts who gets what.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Run, Submission, Suite
from leaderboard.services.moderation import submission_moderate
from leaderboard.services.reports import report_recompute
from leaderboard.services.submissions import submission_finals_choose
from leaderboard.services.teams import team_personal_for

from .factories import PASSWORD, digits_challenge, make_user, stored_recipe

pytestmark = pytest.mark.django_db

CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"|csrftoken=[^;"]*|nonce="[^"]*"')


def _web(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def _body(response) -> tuple[int, bytes]:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, CSRF.sub(b"", content)


def _suite(slug: str, user, *challenges) -> Suite:
    suite = Suite.objects.create(slug=slug, title=f"Suite {slug}", created_by=user)
    suite.challenges.set(challenges)
    return suite


def test_a_suite_with_a_task_the_reader_may_not_open_moves_no_answer(host, alice, monkeypatch):
    """Anonymous, a contestant and the host of another private challenge read the same list, pages, counts, API and
    challenge page whether or not a suite groups the public tasks with a private one."""
    monkeypatch.setattr("leaderboard.web.beyond.SUITES_PER_PAGE", 1)
    first, _ = digits_challenge(host, title="Open task")
    second, _ = digits_challenge(host, title="Other open task")
    secret, _ = digits_challenge(host, title="Secret task", visibility="private")
    other_host = make_user("otherhost")
    theirs, _ = digits_challenge(other_host, title="Their private task", visibility="private")
    _suite("open-pair", host, first, second)
    _suite("open-again", host, second, first)  # two pages of one: the pages' count is shown
    urls = [
        "/suites/",
        "/suites/?page=1",
        "/suites/?page=2",
        "/suites/?page=3",
        "/suites/secret-suite/",
        f"/c/{first.slug}/",
        "/api/suites/",
        "/api/suites/?page=2",
        "/api/suites/secret-suite/",
        "/api/suites/open-pair/",
        "/suites/open-pair/",
    ]
    readers = {"anonymous": None, "alice": alice, "other host": other_host}

    def answers():
        return {
            (name, url): _body((_api if url.startswith("/api/") else _web)(user).get(url))
            for name, user in readers.items()
            for url in urls
        }

    before = answers()
    _suite("secret-suite", host, first, secret)
    _suite("secret-two", other_host, first, second, secret, theirs)  # the other host may open `theirs`, not `secret`
    after = answers()
    for key in before:
        assert after[key] == before[key], key
    assert before[("anonymous", "/suites/?page=3")][0] == 404
    assert b"(2 suites)" in before[("alice", "/suites/")][1]
    listed = "".join(_web(host).get(f"/suites/?page={n}").content.decode() for n in (1, 2, 3))
    assert "secret-suite" in listed  # the control: its hosts may open it
    assert "secret-two" not in listed  # the host of `secret` may not open `theirs` either


def test_the_bundle_and_the_preview_are_the_hosts_only(host, alice, monkeypatch):
    challenge, _ = digits_challenge(host, title="Bundled")
    hidden, _ = digits_challenge(host, title="Hidden bundle", visibility="private")
    other_host = make_user("otherhost")
    digits_challenge(other_host, title="Theirs")
    for user in (None, alice, other_host):
        web, api = _web(user), _api(user)
        public = {
            "web bundle": web.get(f"/c/{challenge.slug}/bundle/"),
            "api bundle": api.get(f"/api/challenges/{challenge.slug}/bundle/"),
            "preview": web.get(f"/c/{challenge.slug}/preview/"),
            "preview post": web.post(f"/c/{challenge.slug}/preview/", {"action": "publish"}),
        }
        private = {
            "web bundle": web.get(f"/c/{hidden.slug}/bundle/"),
            "api bundle": api.get(f"/api/challenges/{hidden.slug}/bundle/"),
            "preview": web.get(f"/c/{hidden.slug}/preview/"),
        }
        for name, response in {**public, **private}.items():
            status, body = _body(response)
            assert not body.startswith(b"PK"), (user, name)  # no zip
            assert status in ((302,) if user is None and name != "api bundle" else (401, 403, 404)), (
                user,
                name,
                status,
            )
        if user is not None:
            assert all(_body(r)[0] == 404 for r in private.values()), user  # a private challenge: as if none
            assert all(_body(r)[0] == 403 for r in public.values()), user
            assert b"Only the challenge&#x27;s hosts" in _body(public["web bundle"])[1]
    assert not challenge.audit_entries.filter(action="bundle_exported").exists()  # nothing was exported
    opened = []
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: opened.append(real(*a, **k)) or opened[-1])

    response = _web(host).get(f"/c/{challenge.slug}/bundle/")
    assert response.status_code == 200 and response.streaming
    content = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(content)) as bundle:
        names = bundle.namelist()
        assert any("hidden_labels" in n for n in names), names
    chunks = _api(host).get(f"/api/challenges/{challenge.slug}/bundle/")
    next(iter(chunks.streaming_content))  # the client reads a chunk, then goes away: the server closes the response
    request_finished.disconnect(close_old_connections)  # as the test client does: the test's connection stays
    try:
        chunks.close()
    finally:
        request_finished.connect(close_old_connections)
    assert challenge.audit_entries.filter(action="bundle_exported").count() == 2
    assert len(opened) == 2 and all(f.closed for f in opened)  # unnamed temporary files: gone with their handles


def _recipe(challenge, user, name, scores, valid=None):
    submission = stored_recipe(challenge, user, name, runs_expected=len(scores), scores=scores)
    if valid is not None:
        for run, value in zip(submission.runs.order_by("index"), valid):
            Run.objects.filter(pk=run.pk).update(valid_score=value)
    return submission


@pytest.mark.parametrize("feedback", ["ladder", "rounded"])
@pytest.mark.parametrize("hidden_state", ["moderated", "queued", "cancelled", "shown"])
def test_the_picked_on_note_and_the_coverage_notes_count_no_hidden_entry(host, alice, bob, feedback, hidden_state):
    """Boo_2 board: a shown recipe entry picked on validation, beside it (or not) bob's entry of 3 runs and no
    validation scores that nobody else may open: the published settings (boo_n_picked_note, coverage, boo_n_warning)
    and rows are the same."""
    extra = {"ladder_margin": 0.05} if feedback == "ladder" else {"feedback_digits": 2}
    challenge, _ = digits_challenge(
        host,
        title="Notes",
        feedback=feedback,
        split_scheme="fixed",
        ranking_statistic="boo_n",
        boo_n=2,
        k_runs=20,
        **extra,
    )
    scores = [0.7 + 0.01 * (i % 5) for i in range(20)]
    _recipe(challenge, alice, "shown", scores, valid=scores)

    def published():
        report_recompute(challenge_id=challenge.pk, force=True)
        board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
        keep = ("boo_n_picked_note", "coverage", "boo_n_warning")
        rows = [(r["method_name"], r["runs_succeeded"], r["boo_n"]) for r in board["entries"]]
        return {k: board["settings"].get(k) for k in keep}, rows

    before = published()
    hidden = _recipe(challenge, bob, "hidden", [0.9, 0.91, 0.92])
    if hidden_state == "moderated":
        submission_moderate(submission=hidden, user=host, state="hidden", reason="copied")
    else:
        Submission.objects.filter(pk=hidden.pk).update(status=hidden_state)
        if hidden_state == "queued":
            Run.objects.filter(submission=hidden).update(status="queued", test_score=None)
    if hidden_state == "shown":  # the control: an entry anyone may open moves the notes
        after = published()
        assert after != before, after
        # the rounded board publishes Boo_n and its note; the Ladder publishes neither, nor any note about them
        assert bool(after[0]["boo_n_picked_note"]) == (feedback == "rounded"), after
        if feedback == "ladder":
            assert after[0] == {"boo_n_picked_note": None, "coverage": [], "boo_n_warning": None}
        return
    assert APIClient().get(f"/api/submissions/{hidden.pk}/").status_code == 404
    assert published() == before


def test_another_team_s_final_choice_is_neither_read_nor_changed(host, alice, bob):
    challenge, _ = digits_challenge(host, title="Finals", public_fraction=0.5, final_entries=1)
    mine = stored_recipe(challenge, alice, "alice's", runs_expected=2, scores=[0.8, 0.8])
    theirs = stored_recipe(challenge, bob, "bob's", runs_expected=2, scores=[0.7, 0.7])
    Run.objects.filter(submission__in=[mine, theirs]).update(public_score=0.75)
    alice_team = team_personal_for(user=alice)
    bob_team = team_personal_for(user=bob)

    def bob_reads():
        web = _web(bob)
        return {
            "page": _body(web.get(f"/c/{challenge.slug}/")),
            "submission": _body(web.get(f"/submissions/{mine.pk}/")),
            "api": _body(_api(bob).get(f"/api/submissions/{mine.pk}/")),
            "list": _body(_api(bob).get(f"/api/challenges/{challenge.slug}/submissions/")),
        }

    before = bob_reads()
    assert {key: status for key, (status, _) in before.items()} == dict.fromkeys(before, 200)
    submission_finals_choose(challenge=challenge, team=alice_team, user=alice, submission_ids=[mine.pk])
    after = bob_reads()
    for key in before:
        assert after[key] == before[key], key
    # bob cannot change alice's choice: not his team (404 before anything), nor her submission through his team
    web = _web(bob)
    assert web.post(f"/c/{challenge.slug}/finals/", {"team": alice_team.pk, "final": []}).status_code == 404
    refused = web.post(f"/c/{challenge.slug}/finals/", {"team": bob_team.pk, "final": [mine.pk]}, follow=True)
    unknown = web.post(f"/c/{challenge.slug}/finals/", {"team": bob_team.pk, "final": [10**6]}, follow=True)
    said = [str(m) for m in refused.context["messages"]]
    said_unknown = [str(m).replace(str(10**6), str(mine.pk)) for m in unknown.context["messages"]]
    assert said == said_unknown, (said, said_unknown)
    mine.refresh_from_db()
    assert mine.selected_for_final
