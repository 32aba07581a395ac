"""Recipe submissions through the services: validation, the shared seed plan, running in the sandbox.

These call ``run_execute`` in the test process (the real sandbox, no worker); the path
through the Celery ``cpu`` queue and a real worker is in tests/integration/test_recipes_e2e.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.models import Run, Submission
from leaderboard.services.dispatch import EXECUTE_RUN
from leaderboard.services.errors import ServiceError
from leaderboard.services.lifecycle import runs_fail_stuck
from leaderboard.services.submissions import UploadedFile, submission_create_recipe
from leaderboard.worker.run_data import run_split
from leaderboard.worker.run_execution import run_execute

from .factories import digits_challenge, make_user

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def recipe(name: str) -> UploadedFile:
    folder = "hostile" if (EXAMPLES / "hostile" / name).exists() else "recipes"
    return UploadedFile(name=name, data=(EXAMPLES / folder / name).read_bytes())


def submit(challenge, user, upload, **kwargs):
    return submission_create_recipe(challenge=challenge, user=user, method_name=upload.name, recipe=upload, **kwargs)


@pytest.mark.parametrize(
    "upload, message",
    [
        (UploadedFile("r.py", b"def fit(a):\n    return a\n"), "fit_predict"),
        (UploadedFile("r.py", b"def fit_predict(:\n"), "syntax error on line 1"),
        (UploadedFile("r.txt", b"def fit_predict(a, b, c, d, e, f): pass\n"), "ending in .py"),
        (UploadedFile("r.py", b""), "empty"),
        (UploadedFile("r.py", b"\xff\xfe def"), "not UTF-8"),
        (UploadedFile("r.py", b"SEARCH_SPACE = make()\ndef fit_predict(a, b, c, d, e, f): pass\n"), "SEARCH_SPACE"),
    ],
)
def test_bad_recipes_are_rejected_and_nothing_stored(host, upload, message, settings):
    challenge, _ = digits_challenge(host)
    with pytest.raises(ServiceError, match=message):
        submit(challenge, make_user("alice"), upload)
    assert Submission.objects.count() == 0 and Run.objects.count() == 0
    stored = Path(settings.MEDIA_ROOT) / "submissions"
    assert not stored.exists() or not any(p.is_file() for p in stored.rglob("*"))


def test_prediction_only_challenge_refuses_recipes(host):
    challenge, _ = digits_challenge(host, allow_recipes=False)
    with pytest.raises(ServiceError, match="does not take training recipes"):
        submit(challenge, make_user("alice"), recipe("trivial.py"))


def test_run_i_of_every_submission_shares_seeds_and_split(host, queued, django_capture_on_commit_callbacks):
    challenge, _ = digits_challenge(host, k_runs=4, randomize_sources=["split", "init"])
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(challenge, make_user("alice"), recipe("trivial.py"))
        second = submit(challenge, make_user("bob"), recipe("logistic_regression.py"))
    # The worker draws run i's split from its seeds (the upload request does not load the data).
    a = [
        (seeds, run_split(challenge=challenge, seeds=seeds)[1].split_id)
        for seeds in first.runs.order_by("index").values_list("seeds", flat=True)
    ]
    b = [
        (seeds, run_split(challenge=challenge, seeds=seeds)[1].split_id)
        for seeds in second.runs.order_by("index").values_list("seeds", flat=True)
    ]
    assert len(a) == 4 and a == b
    assert len({split for _, split in a}) == 4  # the split is randomized: every run differs
    assert len({seeds["dropout"] for seeds, _ in a}) == 1  # not randomized: held fixed
    assert len({seeds["init"] for seeds, _ in a}) == 4
    assert queued.queues(EXECUTE_RUN) == ["cpu"] * 8


def test_gpu_challenges_go_to_the_gpu_queue_stored_at_creation(host, queued, django_capture_on_commit_callbacks):
    """The queue is decided once, when the runs are created, and stored on them (``Run.queue``, issue 24):
    the challenge's device, for recipes that declare ``NEEDS_GPU`` and recipes that do not."""
    cpu_challenge, _ = digits_challenge(host, k_runs=2)
    gpu_challenge, _ = digits_challenge(host, k_runs=2, device="gpu", title="On GPUs")
    gpu_recipe = UploadedFile("g.py", b"NEEDS_GPU = True\ndef fit_predict(a, b, c, d, e, f):\n    return None\n")
    alice = make_user("alice")
    with django_capture_on_commit_callbacks(execute=True):
        made = [
            submit(cpu_challenge, alice, recipe("trivial.py")),
            submit(gpu_challenge, alice, gpu_recipe),
            submit(gpu_challenge, alice, recipe("trivial.py")),
        ]
    assert [sorted(s.runs.values_list("queue", flat=True)) for s in made] == [["cpu"] * 2, ["gpu"] * 2, ["gpu"] * 2]
    assert queued.queues(EXECUTE_RUN) == ["cpu"] * 2 + ["gpu"] * 4


def test_a_needs_gpu_recipe_is_refused_on_a_cpu_challenge(host, queued, django_capture_on_commit_callbacks):
    """Issue 26: the host chose the CPU, so a recipe asking for a GPU is refused at upload, naming why;
    nothing is stored or queued (before, its runs went to the ``gpu`` queue of a CPU challenge)."""
    cpu_challenge, _ = digits_challenge(host, k_runs=2)
    gpu_recipe = UploadedFile("g.py", b"NEEDS_GPU = True\ndef fit_predict(a, b, c, d, e, f):\n    return None\n")
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ServiceError) as caught:
        submit(cpu_challenge, make_user("alice"), gpu_recipe)
    assert str(caught.value) == (
        "g.py declares NEEDS_GPU = True, but this challenge runs recipes on CPUs only "
        "(its host chose the CPU): remove NEEDS_GPU to run on the CPU."
    )
    assert caught.value.field == "recipe"
    assert Submission.objects.count() == 0 and Run.objects.count() == 0 and queued.queues(EXECUTE_RUN) == []


@pytest.mark.slow
def test_runs_execute_once_and_reproduce_with_the_same_master_seed(host):
    challenge, _ = digits_challenge(host, k_runs=3, master_seed=11)
    subs = [submit(challenge, make_user(name), recipe("logistic_regression.py")) for name in ("alice", "bob")]
    for submission in subs:
        for run in submission.runs.all():
            assert run_execute(run_id=run.pk) is not None
    scores = [list(s.runs.order_by("index").values_list("test_score", flat=True)) for s in subs]
    assert scores[0] == scores[1]  # same recipe, same seeds and splits: identical on the CPU
    assert len(set(scores[0])) > 1  # different seeds and splits: different scores
    run = subs[0].runs.get(index=0)
    assert run.status == "succeeded" and 0.8 < run.test_score <= 1 and run.valid_score is not None
    assert run.outcomes_array is not None and run.fingerprint and run.duration_s > 0
    finished_at = run.finished_at
    assert run_execute(run_id=run.pk) is None  # a redelivered task writes nothing
    assert Run.objects.get(pk=run.pk).finished_at == finished_at
    assert Submission.objects.get(pk=subs[0].pk).status == "scored"


def test_a_recipe_error_fails_its_run_with_a_message(host):
    challenge, _ = digits_challenge(host, k_runs=2)
    submission = submit(challenge, make_user("alice"), recipe("raises.py"))
    for run in submission.runs.all():
        run_execute(run_id=run.pk)
    submission.refresh_from_db()
    run = submission.runs.get(index=0)
    assert run.status == "failed" and "raised" in run.error_message
    assert submission.status == "failed" and "2 of 2 runs failed" in submission.error_message
    assert submission.counts_toward_quota  # the recipe's own fault counts


def test_the_reaper_fails_stuck_runs_without_charging_the_quota(host):
    challenge, _ = digits_challenge(host, k_runs=1, run_time_limit_s=60)
    submission = submit(challenge, make_user("alice"), recipe("trivial.py"))
    Run.objects.filter(submission=submission).update(
        status="running", started_at=timezone.now() - timezone.timedelta(hours=2)
    )
    assert runs_fail_stuck() == 1
    submission.refresh_from_db()
    run = submission.runs.get()
    assert run.status == "failed" and "platform error" in run.error_message
    assert submission.status == "failed" and not submission.counts_toward_quota
    assert runs_fail_stuck() == 0


def test_search_mode_runs_a_seeded_search_inside_every_run(host):
    challenge, _ = digits_challenge(host, k_runs=2, hpo_mode="search", hpo_method="random", hpo_budget=3)
    submission = submit(challenge, make_user("alice"), recipe("logistic_regression.py"))
    for run in submission.runs.all():
        run_execute(run_id=run.pk)
    runs = list(submission.runs.order_by("index"))
    assert all(r.status == "succeeded" for r in runs), [r.error_message for r in runs]
    for run in runs:
        assert len(run.hpo_trials) == 3
        best = max(run.hpo_trials, key=lambda t: t["valid_score"])
        assert run.hyperparameters["C"] == best["hyperparameters"]["C"]
        assert run.valid_score == pytest.approx(best["valid_score"])
    # Each run's search is seeded by its own HPO seed: the runs try different values.
    assert runs[0].hpo_trials != runs[1].hpo_trials


def test_recipe_runs_are_scored_on_each_board_part_separately(host):
    """With a private board, each run resamples its test rows from the public and private parts apart."""
    import numpy as np

    from leaderboard.services.boards import board_public_mask
    from leaderboard.worker.run_data import recipe_data, run_test_parts

    challenge, _ = digits_challenge(host, k_runs=2, public_fraction=0.5, master_seed=5)
    submission = submit(challenge, make_user("alice"), recipe("logistic_regression.py"))
    run = submission.runs.get(index=0)
    _, split = run_split(challenge=challenge, seeds=run.seeds)
    parts = run_test_parts(challenge=challenge, split=split, phase=submission.phase)
    _, _, hidden = recipe_data(challenge=challenge)
    public_rows = hidden[board_public_mask(dataset=challenge.dataset)]
    assert parts["public"].sum() == len(public_rows) and (~parts["public"]).sum() == len(hidden) - len(public_rows)
    assert np.isin(split.test[parts["public"]], public_rows).all()
    assert run_execute(run_id=run.pk) is not None
    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    assert 0.5 < run.public_score <= 1 and 0.5 < run.private_score <= 1
    assert run.public_score != run.test_score or run.private_score == run.test_score


def test_recipe_runs_store_the_secondary_metrics_on_each_part_and_the_board_shows_them(host):
    """Issue 26: a recipe run's predictions are scored by the secondary metrics too, on the test rows and on
    each board part; the board shows their mean over runs (with the runs' bootstrap interval from 6 runs)."""
    from leaderboard.services.reports import report_recompute

    challenge, _ = digits_challenge(
        host, k_runs=2, public_fraction=0.5, master_seed=5, secondary_metrics=["macro_f1"], bootstrap_resamples=200
    )
    submission = submit(challenge, make_user("alice"), recipe("logistic_regression.py"))
    for run in submission.runs.all():
        assert run_execute(run_id=run.pk) is not None
    runs = list(submission.runs.order_by("index"))
    for run in runs:
        assert run.status == "succeeded", run.error_message
        assert set(run.extra_scores) == {"test", "public", "private"}
        assert all(0.5 < part["macro_f1"] <= 1 for part in run.extra_scores.values())
    report = report_recompute(challenge_id=challenge.pk)
    (row,) = report.data["entries"]
    (value,) = row["secondary"]
    assert value["name"] == "macro_f1" and value["runs"] == 2
    assert value["mean"]["estimate"] == pytest.approx(sum(r.extra_scores["public"]["macro_f1"] for r in runs) / 2)
    # 2 runs: the runs' interval is withheld below 6 (mean_interval_shown), with the reason and the se
    assert value["mean"]["low"] is None and value["mean"]["source"] == "runs" and "6" in value["mean"]["warning"]
    assert value["mean"]["se"] is not None
