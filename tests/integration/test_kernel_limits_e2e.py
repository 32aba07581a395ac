"""Issue 21's disk, memfd and warm-sandbox attacks at full scale through a real Celery worker,
as root and as uid 1000 (the image's user): a challenge's default limits (2048 MB disk,
256 MB per file), the recipes of tests/recipes/kernel_cases.py submitted as recipe entries.

Before the fix, as the issue measured them: 10 x 250 MB in a ``chmod 0300`` folder (or 12
folders of 250-character names deep) succeeded at 2.5 GB over the 2 GB limit and, as uid
1000, stayed on the host; 5 GB held through memfd_create under a 4 GB memory limit
succeeded; a warm run read the previous recipe's import list in its environment and in
/proc/1/cmdline.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from tests.recipes.kernel_cases import FILL, MEMFD, WARM_READER, WARM_WRITER
from tests.recipes.unprivileged import WORKER_UID, needs_worker_uid

from .test_isolation import _execute_in_order, _own_media, publish_to_redis, start_worker, worker_media  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUEUE = "isolation-test"  # _execute_in_order publishes there; the session's own worker never consumes it
ATTACKS = [  # (label, recipe, hyperparameters), run in this order by one worker process
    ("chmod0300", FILL, {"mode": "chmod0300", "count": 10, "mb": 250, "limit_mb": 2048}),
    ("nested", FILL, {"mode": "nested", "count": 10, "mb": 250, "limit_mb": 2048}),
    ("memfd", MEMFD, {"count": 25, "mb": 200}),
    ("warm writer", WARM_WRITER, {}),
    ("warm reader", WARM_READER, {}),
]


def _submit(challenge, user, label: str, source: str, hyperparameters: dict):
    from leaderboard.services import dispatch
    from leaderboard.services.submissions import UploadedFile, submission_create_recipe

    with mock.patch.object(dispatch, "send"):  # published by _execute_in_order, to the test queue
        return submission_create_recipe(
            challenge=challenge,
            user=user,
            method_name=label,
            recipe=UploadedFile(name="recipe.py", data=source.encode()),
            hyperparameters=hyperparameters,
        )


@pytest.fixture
def run_tmp(worker_media):  # noqa: F811
    """The worker's TMPDIR, where its runs' workspaces are made: listed after the runs."""
    folder = Path(tempfile.mkdtemp(prefix="varboard-k21-tmp-"))
    folder.chmod(0o711)
    os.chown(folder, WORKER_UID, WORKER_UID)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("as_uid", [None, pytest.param(WORKER_UID, marks=needs_worker_uid)], ids=["root", "uid1000"])
def test_kernel_limits_and_warm_imports_through_a_real_worker(as_uid, transactional_db, worker_media, run_tmp):  # noqa: F811
    from leaderboard.models import Run
    from tests.platform.factories import digits_challenge, make_user

    challenge, _ = digits_challenge(
        make_user("host"), k_runs=1, daily_quota=0, total_quota=0, run_time_limit_s=60, run_memory_limit_mb=4096
    )
    alice = make_user("alice")
    batch = [(label, _submit(challenge, alice, label, source, hp)) for label, source, hp in ATTACKS]
    _own_media(worker_media)
    worker = start_worker(
        name=f"k21-{as_uid or 'root'}",
        queues=QUEUE,
        media=worker_media,
        as_uid=as_uid,
        extra_env={"TMPDIR": str(run_tmp)},
    )
    try:
        _execute_in_order([s for _, s in batch], worker, timeout=400)
        worker.assert_alive()
    finally:
        worker.stop()
    runs = {label: Run.objects.get(submission=s) for label, s in batch}
    for label in ("chmod0300", "nested"):
        run = runs[label]
        assert run.status == "failed" and "wrote more than the 2048 MB disk limit" in run.error_message, (
            label,
            run.error_message,
            run.log[-800:],
        )
        wrote = re.search(r"\[Errno 28\] WROTE (\d+) MB", run.log)
        assert wrote and int(wrote.group(1)) <= 2048, run.log[-800:]
    assert runs["memfd"].status == "failed" and "HELD 0 MB errno 1" in runs["memfd"].log, runs["memfd"].log[-800:]
    reader = runs["warm reader"]
    assert runs["warm writer"].status == "succeeded", runs["warm writer"].error_message
    assert reader.fingerprint.get("warm_start") is True, reader.fingerprint
    seen = re.search(r"SEEN (\{.*\})", reader.log)
    assert seen and "/proc/1/cmdline" in seen.group(1), reader.log[-800:]
    assert "scipy" not in seen.group(1) and "special" not in seen.group(1), seen.group(1)
    left = [os.path.join(d, n) for d, dirs, files in os.walk(run_tmp) for n in dirs + files]
    assert left == [], left[:10]  # every workspace gone, the 0300 folders included
