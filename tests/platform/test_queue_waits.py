"""Issue 26, GPU honesty: when no worker takes the queue a challenge's submissions wait on, the page and
the API say so, and the janitor tells the hosts through the audit log (once an hour per queue)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import AuditEntry, Run
from leaderboard.services import dispatch
from leaderboard.services.janitor import janitor_run
from leaderboard.services.submissions import UploadedFile, submission_create_recipe

from .factories import digits_challenge

pytestmark = pytest.mark.django_db

RECIPE = UploadedFile("r.py", b"def fit_predict(a, b, c, d, e, f):\n    return None\n")


def test_the_page_and_the_api_say_which_queue_no_worker_takes(client, host, consumers):
    challenge, _ = digits_challenge(host, device="gpu")
    consumers["now"] = {"scoring": 1, "cpu": 2}  # no gpu worker
    gpu = "No worker is taking the gpu queue now: recipes wait, queued, until one starts."
    waits = APIClient().get(f"/api/challenges/{challenge.slug}/").json()["queue_waits"]
    assert waits == [{"queue": "gpu", "waiting": "recipes", "message": gpu}]
    page = client.get(challenge.get_absolute_url()).content.decode()
    assert f'data-queue-wait="gpu">{gpu}</p>' in page and 'data-queue-wait="scoring"' not in page

    consumers["now"] = {"scoring": 1, "cpu": 2, "gpu": 1}
    assert APIClient().get(f"/api/challenges/{challenge.slug}/").json()["queue_waits"] == []
    assert "data-queue-wait" not in client.get(challenge.get_absolute_url()).content.decode()
    consumers["now"] = None  # the workers could not be asked: nothing is claimed
    assert APIClient().get(f"/api/challenges/{challenge.slug}/").json()["queue_waits"] == []


def test_the_janitor_tells_the_hosts_once_an_hour_while_runs_wait_on_an_unattended_queue(
    host, alice, consumers, monkeypatch, settings
):
    challenge, _ = digits_challenge(host, device="gpu", k_runs=2)
    entry = submission_create_recipe(challenge=challenge, user=alice, method_name="r", recipe=RECIPE)
    stale = timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 5)
    Run.objects.filter(submission=entry).update(enqueued_at=stale)
    monkeypatch.setattr(dispatch, "queue_lengths", lambda names: {name: 2 for name in names})  # messages wait
    consumers["now"] = {"scoring": 1, "cpu": 1}
    janitor_run()
    janitor_run()  # within the hour: told once
    told = list(AuditEntry.objects.filter(challenge=challenge, action="queue_unattended"))
    assert len(told) == 1 and told[0].actor is None
    assert told[0].details == {
        "queue": "gpu",
        "submissions": [entry.pk],
        "message": ("No worker is taking the gpu queue now: recipes wait, queued, until one starts."),
    }
    api = APIClient()
    api.force_authenticate(host)
    assert api.get(f"/api/challenges/{challenge.slug}/audit/").json()["results"][0]["action"] == "queue_unattended"

    AuditEntry.objects.filter(pk=told[0].pk).update(created=timezone.now() - timedelta(hours=2))
    consumers["now"] = {"scoring": 1, "gpu": 1}  # a gpu worker came: nothing more to say
    janitor_run()
    assert AuditEntry.objects.filter(challenge=challenge, action="queue_unattended").count() == 1
    consumers["now"] = {"scoring": 1}
    janitor_run()
    assert AuditEntry.objects.filter(challenge=challenge, action="queue_unattended").count() == 2


def test_a_queued_submission_says_why_it_does_not_start(client, host, alice, consumers, monkeypatch):
    monkeypatch.setattr("leaderboard.services.dispatch.send", lambda *args, **kwargs: None)  # stays queued
    challenge, _ = digits_challenge(host, device="gpu")
    submission = submission_create_recipe(challenge=challenge, user=alice, method_name="gpu recipe", recipe=RECIPE)
    consumers["now"] = {"scoring": 1, "cpu": 2}
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get(f"/api/submissions/{submission.pk}/").json()
    assert body["status"] == "queued" and body["queue_wait"] == (
        "No worker is taking the gpu queue now: this submission's runs wait, queued, until one starts."
    )
    client.force_login(alice)
    assert "data-queue-wait" in client.get(submission.get_absolute_url()).content.decode()
    consumers["now"] = {"scoring": 1, "cpu": 2, "gpu": 1}
    assert api.get(f"/api/submissions/{submission.pk}/").json()["queue_wait"] is None
    assert "data-queue-wait" not in client.get(submission.get_absolute_url()).content.decode()


def test_a_request_never_waits_on_the_workers_inspection(monkeypatch, consumers):
    """Found by a new user: one page every 30 s took 2 s, the request that found the answer expired asked the
    workers itself. Now a reader gets the last answer (or "unknown") while one background thread asks."""
    import threading
    import time

    from django.core.cache import cache

    real = dispatch
    queue_consumers = consumers["real"]  # the module's own function, not the conftest's stand-in
    asked, release, calls = threading.Event(), threading.Event(), []

    def active_queues():
        calls.append(1)
        asked.set()
        assert release.wait(10), "the test never released the inspection"
        return {"w1": [{"name": "scoring"}, {"name": "cpu"}], "w2": [{"name": "cpu"}]}

    def stale(counts):  # an answer older than CONSUMERS_CACHE_S, in the cache and in the process
        answer = {"counts": counts, "at": time.time() - real.CONSUMERS_CACHE_S - 1}
        cache.set(real._CONSUMERS_KEY, answer)
        real._last["answer"] = answer

    def idle():  # bounded: the background inspection has ended
        for _ in range(100):
            if real._asking.acquire(blocking=False):
                real._asking.release()
                return
            time.sleep(0.05)
        raise AssertionError("the inspection never ended")

    monkeypatch.setattr(real, "_active_queues", active_queues)
    monkeypatch.setattr(real, "_last", {})
    cache.delete(real._CONSUMERS_KEY)
    try:
        assert queue_consumers() is None  # nothing known yet: "unknown", at once
        assert asked.wait(5) and not release.is_set()  # ... while the inspection is still running
        assert queue_consumers() is None and calls == [1]  # one inspection at a time
        release.set()
        idle()
        assert queue_consumers() == {"scoring": 1, "cpu": 2} and calls == [1]  # fresh: no new inspection
        # a stale answer is served as it is while one inspection runs again
        stale({"cpu": 1})
        release.clear()
        asked.clear()
        assert queue_consumers() == {"cpu": 1} and asked.wait(5) and not release.is_set()
        release.set()
        idle()
        # the janitor waits for a fresh answer when the one it finds is stale
        stale({"cpu": 1})
        assert queue_consumers(wait=True) == {"scoring": 1, "cpu": 2}
        # a cache that is down (every read misses, every write is dropped): the process keeps its answer
        monkeypatch.setattr(real.cache, "get", lambda *a, **k: None)
        monkeypatch.setattr(real.cache, "set", lambda *a, **k: None)
        before = len(calls)
        assert queue_consumers() == {"scoring": 1, "cpu": 2} and len(calls) == before  # no inspection per request
        # a broker that cannot be asked: "unknown", kept as long as an answer (not one inspection per request)
        monkeypatch.setattr(real, "_active_queues", lambda: (calls.append(1), 1 / 0))
        real._last["answer"]["at"] -= real.CONSUMERS_CACHE_S + 1
        assert queue_consumers(wait=True) is None and len(calls) == before + 1
        assert queue_consumers() is None and queue_consumers() is None and len(calls) == before + 1
    finally:
        release.set()
        cache.delete(real._CONSUMERS_KEY)
