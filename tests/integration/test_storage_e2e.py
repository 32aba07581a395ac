"""Web and worker share no disk: every file goes through an S3-compatible object store.

The web (live_server, in this process) and a real Celery worker (a subprocess whose media
folder is empty and its own) both use moto's S3 server; a prediction entry and a recipe entry
are stored by the web, read back by the worker and scored.
"""

from __future__ import annotations

import pytest

from leaderboard.models import Submission
from leaderboard.services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe
from tests.conftest import ROOT, database_url, start_worker, wait_for
from tests.platform.factories import digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_worker_without_the_web_s_disk_scores_from_s3(s3_storage, redis_server, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "web-media"  # the web's own disk: it must stay empty
    host, alice, bob = make_user("host"), make_user("alice"), make_user("bob")
    challenge, frame = digits_challenge(host, k_runs=2)
    worker = start_worker(
        broker_url=redis_server.url,
        database=database_url(settings.DATABASES["default"]),
        node="s3-worker",
        queues="scoring,cpu",
        concurrency=2,
        env={**s3_storage.env(), "VARBOARD_MEDIA_ROOT": str(tmp_path / "worker-media")},
    )
    try:
        entries = [
            submission_create_predictions(
                challenge=challenge,
                user=alice,
                method_name="predictions",
                files=[UploadedFile("p.csv", label_predictions(frame))],
            ),
            submission_create_recipe(
                challenge=challenge,
                user=bob,
                method_name="recipe",
                recipe=UploadedFile("trivial.py", (ROOT / "examples" / "recipes" / "trivial.py").read_bytes()),
            ),
        ]
        wait_for(
            lambda: Submission.objects.filter(pk__in=[e.pk for e in entries], status="scored").count() == 2,
            timeout=120,
            interval=0.3,
            message=worker.tail,
        )
    finally:
        worker.stop()
    assert Submission.objects.get(pk=entries[0].pk).runs.get().test_score == 1.0
    for disk in ("worker-media", "web-media"):
        assert not any(path.is_file() for path in (tmp_path / disk).rglob("*")), disk
