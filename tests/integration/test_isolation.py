"""Recipe isolation through the real worker path: a Celery worker process, the database, the broker.

Every hostile recipe of examples/hostile/ is submitted as a recipe entry and executed by a
real worker, once running as root and once as uid 1000, the Docker image's unprivileged
``varboard`` user. The worker holds what an attacker wants: secrets in its environment,
the database credentials, a media folder with every team's files and the hidden labels.
Each run fails or finds nothing, nothing of it survives, and the worker goes on.

Also here: the fail-closed refusal (a worker that cannot isolate does not consume the
recipe queues), the explicit unsandboxed override and how it is shown, and the label
lookup that scored 1.0 before test rows came from hidden rows only.

The uid-1000 worker runs Debian's /usr/bin/python3.11 -S with the venv's site-packages and
the repository on PYTHONPATH: the machine's own interpreter lies under the 0700 /root, out
of reach of that uid (see tests/recipes/unprivileged.py). Its media folder is owned by uid
1000 and mode 0700, as in the image.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import (
    ROOT,
    WorkerProcess,
    celery_pointed_at,
    database_url,
    die_with_parent,
    redis_broker_url,
    wait_for,
)
from tests.recipes.hostile_cases import DAEMON_MARKER, SHM_TOKEN, cases, make_host_files
from tests.recipes.unprivileged import PYTHON, WORKER_UID, needs_worker_uid

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUEUE = "isolation-test"  # the session's own worker never consumes it
CANARIES = {
    "DJANGO_SECRET_KEY": "worker-secret-key-6a0f3e",
    "VARBOARD_RUNNER_TOKEN": "runner-token-1d77c2",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-9b41e0",
}
EXAMPLES = ROOT / "examples"


def start_worker(
    *, name: str, queues: str, media: Path, as_uid: int | None = None, extra_env=None, concurrency: int = 1
) -> WorkerProcess:
    """A Celery worker on the test database and this run's Redis database, as root or as ``as_uid``."""
    from django.conf import settings

    name = f"{name}-{os.getpid()}"  # never confused with a worker another test run left behind
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": redis_broker_url(),
        "PYTHONUNBUFFERED": "1",
        "VARBOARD_MEDIA_ROOT": str(media),
        "VARBOARD_VAR_DIR": str(media.parent / "var"),
        **CANARIES,
        **(extra_env or {}),
    }
    python, prefix = [sys.executable], []
    if as_uid is not None:
        python = [PYTHON, "-S"]
        prefix = ["setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups"]
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    command = [
        *prefix,
        *python,
        "-m",
        "celery",
        "-A",
        "leaderboard",
        "worker",
        "-Q",
        queues,
        "-c",
        str(concurrency),
        "--loglevel=INFO",
        "-n",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
    ]
    log_path = media.parent / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    worker = WorkerProcess(process, f"{name}@{socket.gethostname()}", redis_broker_url(), log_path)
    try:
        wait_for(
            worker.ping, timeout=90, interval=0.5, message=lambda: f"{worker.name} to answer; its log:\n{worker.tail()}"
        )
    except BaseException:
        worker.stop()
        raise
    return worker


@pytest.fixture(autouse=True)
def publish_to_redis():
    """This process's Celery app publishes to (and pings through) this run's Redis database meanwhile."""
    with celery_pointed_at(redis_broker_url(), {"visibility_timeout": 3600}):
        yield


@pytest.fixture
def worker_media(settings):
    """The media folder of the test process and its workers: owned by uid 1000, mode 0700, as in the image.

    Made directly under /tmp: pytest's own temporary folders are 0700 root, out of uid 1000's reach.
    """
    tmp_path = Path(tempfile.mkdtemp(prefix="varboard-isolation-"))
    tmp_path.chmod(0o711)
    media = tmp_path / "media"
    media.mkdir(mode=0o700)
    (tmp_path / "var").mkdir(mode=0o700)
    for folder in (media, tmp_path / "var"):
        os.chown(folder, WORKER_UID, WORKER_UID)
    settings.MEDIA_ROOT = media
    yield media
    shutil.rmtree(tmp_path, ignore_errors=True)


def _own_media(media: Path) -> None:
    """Files the test process (root) stored go to the worker's uid, as the web container's would."""
    for path in [media, *media.rglob("*")]:
        os.chown(path, WORKER_UID, WORKER_UID)


def _submit(challenge, user, recipe: str, hyperparameters: dict, label: str, folder: str = "hostile"):
    from unittest import mock

    from leaderboard.services import dispatch
    from leaderboard.services.submissions import UploadedFile, submission_create_recipe

    upload = UploadedFile(name=f"{recipe}.py", data=(EXAMPLES / folder / f"{recipe}.py").read_bytes())
    with mock.patch.object(dispatch, "send"):  # published below, to this module's queue
        return submission_create_recipe(
            challenge=challenge, user=user, method_name=label, recipe=upload, hyperparameters=hyperparameters
        )


def _execute_in_order(submissions, worker: WorkerProcess, timeout: float) -> None:
    """Publish every run to the module's queue in order; wait until all ended (one worker process: FIFO)."""
    from leaderboard.models import Run
    from leaderboard.services.dispatch import EXECUTE_RUN, send

    run_ids = [run.pk for s in submissions for run in s.runs.order_by("index")]
    for run_id in run_ids:
        send(EXECUTE_RUN, (run_id,), queue=QUEUE)
    wait_for(
        lambda: Run.objects.filter(pk__in=run_ids, status__in=("succeeded", "failed")).count() == len(run_ids),
        timeout=timeout,
        interval=1,
        message=worker.tail,
    )


def _host_processes_with(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def _hostile_batch(challenge, user, host_files: dict) -> list:
    """One submission per step of every hostile case, in order (write-then-read cases stay in order)."""
    submissions = []
    for name, steps in cases(host_files).items():
        for number, step in enumerate(steps):
            submissions.append((name, _submit(challenge, user, step.recipe, step.hyperparameters, f"{name} {number}")))
    return submissions


@pytest.mark.parametrize("as_uid", [None, pytest.param(WORKER_UID, marks=needs_worker_uid)], ids=["root", "uid1000"])
def test_hostile_recipes_through_a_real_worker(as_uid, transactional_db, worker_media):
    """Each hostile run fails or finds nothing; no secret or hidden label appears anywhere a team can read."""
    from leaderboard.models import Run, Submission
    from leaderboard.services.dataset_files import dataset_frame
    from tests.platform.factories import digits_challenge, make_user

    challenge, _ = digits_challenge(
        make_user("host"), k_runs=1, daily_quota=0, total_quota=0, run_time_limit_s=10, run_memory_limit_mb=1024
    )
    host_files = make_host_files(str(worker_media.parent / "host"))
    hidden = dataset_frame(dataset=challenge.dataset, part="hidden_labels")
    hidden_lines = [f"{row.id},{row.label}" for row in hidden.itertuples()][:20]
    # read_secrets also tries the challenge's real hidden labels in the worker's media folder.
    host_files = {**host_files, "media": str(worker_media / challenge.dataset.hidden_labels_file.name)}
    alice = make_user("alice")
    batch = _hostile_batch(challenge, alice, host_files)
    trivial = _submit(challenge, alice, "trivial", {}, "trivial after the attacks", folder="recipes")
    _own_media(worker_media)
    worker = start_worker(name=f"isolation-{as_uid or 'root'}", queues=QUEUE, media=worker_media, as_uid=as_uid)
    try:
        _execute_in_order([s for _, s in batch] + [trivial], worker, timeout=400)
        worker.assert_alive()
        # answers within 30 s: one ping waits 1 s for the reply, and a worker that has just reaped the hostile
        # runs on two loaded cores may take longer (a 1.5 s stall of the worker fails a single ping)
        wait_for(worker.ping, timeout=30, interval=0.5, message="the worker to answer after the hostile runs")
    finally:
        worker.stop()
    readable = " ".join(f"{r.error_message}\n{r.log}" for r in Run.objects.filter(submission__challenge=challenge))
    for secret in [*CANARIES.values(), *hidden_lines, "PONG", "REACHED"]:
        assert secret not in readable, secret
    outcomes = {label: Submission.objects.get(pk=s.pk).runs.get() for label, s in batch}
    for name, run in outcomes.items():
        isolation = " ".join(run.isolation)
        assert "bubblewrap" in isolation and "seccomp" in isolation, (name, run.isolation, run.error_message)
        assert (f"uid {as_uid} (the worker's)" in isolation) if as_uid else ("uid 10" in isolation), run.isolation
    expected_success = {
        "daemon_escape",
        "proc_snoop",
        "signal_worker",
        "list_host",
        "posix_shm",
        "previous_run",
        "fd_flood",
    }
    for submission_label, submission in batch:
        run = Run.objects.get(submission=submission)
        if submission.method_name in ("posix_shm 1", "previous_run 1") or submission_label not in expected_success:
            assert run.status == "failed", (submission.method_name, run.log[-500:])
    assert (
        "nothing of another run in view"
        in Run.objects.get(submission__method_name="previous_run 1", submission__challenge=challenge).error_message
    )
    # Warm starts are on by default: most runs took the sandbox prepared while the run before them executed.
    warm = [run.fingerprint.get("warm_start") for run in outcomes.values()]
    assert sum(bool(w) for w in warm) >= len(warm) // 2, warm
    # Random bytes (NULs included) in the log are stored, not a database error that loses the run.
    assert (
        "output limit"
        in Run.objects.get(submission__method_name="garbage_output 0", submission__challenge=challenge).error_message
    )
    assert (
        "/dev/shm is empty"
        in Run.objects.get(submission__method_name="posix_shm 1", submission__challenge=challenge).error_message
    )
    assert Run.objects.get(submission=trivial).status == "succeeded"
    assert _host_processes_with(f"sleep {DAEMON_MARKER}") == []
    assert not [name for name in os.listdir("/dev/shm") if SHM_TOKEN in name]


def _lookup_tables(challenge) -> dict:
    """What a contestant builds from the public train.csv: id -> label and features -> label."""
    from leaderboard.services.dataset_files import dataset_frame

    train = dataset_frame(dataset=challenge.dataset, part="train")
    features = list(challenge.dataset.feature_columns)
    keys = train[features].astype(float).apply(lambda row: " ".join(f"{v:g}" for v in row), axis=1)
    return {"by_id": dict(zip(train["id"], train["label"])), "by_features": dict(zip(keys, train["label"]))}


def test_looking_labels_up_in_the_public_rows_scores_like_the_majority_class(transactional_db, worker_media):
    """The id/feature lookup that scored 1.0: now it finds the validation rows only, never a test row."""
    from leaderboard.models import Run
    from tests.platform.factories import digits_challenge, make_user

    challenge, _ = digits_challenge(make_user("host"), k_runs=3, daily_quota=0, total_quota=0)
    alice = make_user("alice")
    lookup = _submit(challenge, alice, "label_lookup", _lookup_tables(challenge), "lookup")
    baseline = _submit(challenge, alice, "trivial", {}, "majority class", folder="recipes")
    _own_media(worker_media)
    worker = start_worker(name="isolation-lookup", queues=QUEUE, media=worker_media)
    try:
        _execute_in_order([lookup, baseline], worker, timeout=180)
    finally:
        worker.stop()
    cheat = list(Run.objects.filter(submission=lookup).order_by("index"))
    honest = list(Run.objects.filter(submission=baseline).order_by("index"))
    assert all(r.status == "succeeded" for r in cheat + honest), [r.error_message for r in cheat + honest]
    for run, plain in zip(cheat, honest):
        assert run.valid_score > 0.95  # the validation rows are public: the lookup finds them
        assert run.test_score == pytest.approx(plain.test_score)  # no test row is found: the majority label
        assert "ids matched 0" in run.log
    assert pd.Series([r.test_score for r in cheat]).max() < 0.3


def test_a_worker_that_cannot_isolate_refuses_the_recipe_queues(transactional_db, worker_media):
    """Fail closed: no bubblewrap -> the cpu queue is not consumed, the log and the readiness probe say why."""
    from leaderboard.celery import app

    broken = {"VARBOARD_BWRAP": "/nonexistent/bwrap"}
    worker = start_worker(name="isolation-closed", queues="cpu,scoring", media=worker_media, extra_env=broken)
    try:
        # retried: one broadcast that the worker on a loaded machine answers after its 5 s gives no reply at all,
        # which is not "consumes nothing"
        replies = wait_for(
            lambda: app.control.inspect([worker.name], timeout=5).active_queues(),
            timeout=60,
            interval=0.5,
            message=lambda: f"{worker.name} to say which queues it consumes; its log:\n{worker.tail()}",
        )
        consumed = {queue["name"] for queue in replies.get(worker.name, [])}
        assert consumed == {"scoring"}, replies
        assert (
            "refusing to consume the recipe queues cpu: recipe runs cannot be isolated here: bubblewrap is not "
            "installed" in worker.tail(400)
        ), worker.tail()
    finally:
        worker.stop()
    probe = subprocess.run(
        [sys.executable, "-m", "execution.probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **broken},
        timeout=60,
    )
    assert probe.returncode == 1 and "isolation unavailable: bubblewrap is not installed" in probe.stdout


def test_the_unsandboxed_override_runs_and_says_so_everywhere(transactional_db, worker_media, client):
    """VARBOARD_ALLOW_UNSANDBOXED=1 (a developer's laptop): the run goes on, marked unsandboxed in the API and page."""
    from leaderboard.models import Run
    from tests.platform.factories import digits_challenge, make_user

    challenge, _ = digits_challenge(make_user("host"), k_runs=1, daily_quota=0, total_quota=0)
    alice = make_user("alice")
    submission = _submit(challenge, alice, "trivial", {}, "trivial, unsandboxed", folder="recipes")
    _own_media(worker_media)
    worker = start_worker(
        name="isolation-override",
        queues=QUEUE,
        media=worker_media,
        extra_env={"VARBOARD_BWRAP": "/nonexistent/bwrap", "VARBOARD_ALLOW_UNSANDBOXED": "1"},
    )
    try:
        _execute_in_order([submission], worker, timeout=120)
        assert "recipe runs are NOT isolated" in worker.tail() or "UNSANDBOXED" in worker.tail().upper()
    finally:
        worker.stop()
    run = Run.objects.get(submission=submission)
    assert run.status == "succeeded" and run.isolation == ["unsandboxed"]
    body = client.get(f"/api/challenges/{challenge.slug}/runs/").json()
    assert [r["sandboxed"] for r in body["results"]] == [False]
    client.force_login(alice)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "data-run-unsandboxed" in page


def test_recipe_runs_never_start_without_isolation_even_if_queued(transactional_db, worker_media):
    """A run that reaches a worker whose sandbox broke after start-up fails for the platform, never unconfined."""
    from leaderboard.models import Run, Submission
    from tests.platform.factories import digits_challenge, make_user

    challenge, _ = digits_challenge(make_user("host"), k_runs=1, daily_quota=0, total_quota=0)
    submission = _submit(challenge, make_user("alice"), "read_secrets", {"paths": ["/etc/hostname"]}, "queued")
    _own_media(worker_media)
    # The queue is not a recipe queue, so the start-up check does not apply: the per-run check must.
    worker = start_worker(
        name="isolation-per-run",
        queues=QUEUE,
        media=worker_media,
        extra_env={"VARBOARD_BWRAP": "/nonexistent/bwrap", "VARBOARD_MAX_RUN_ATTEMPTS": "1"},
    )
    try:
        _execute_in_order([submission], worker, timeout=120)
    finally:
        worker.stop()
    run = Run.objects.get(submission=submission)
    assert run.status == "failed" and run.error_message.startswith("platform error: ")
    assert "bubblewrap is not installed" in run.error_message and run.log == ""
    assert not Submission.objects.get(pk=submission.pk).counts_toward_quota
