"""``manage.py demo``: creates the demo once through the services, reruns reuse it, ``--wait`` reports."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard.management.commands.demo import BOON_DIR, PASSWORD, RECIPES_DIR
from leaderboard.models import Challenge, PredictionFile, Run, Submission

pytestmark = pytest.mark.django_db

HAS_RECIPES = (RECIPES_DIR / "logistic_regression.py").exists()
HAS_BOON = BOON_DIR.is_dir()




def snapshot() -> dict:
    return {
        "users": sorted(User.objects.values_list("username", flat=True)),
        "challenges": sorted(Challenge.objects.values_list("slug", flat=True)),
        "submissions": sorted(Submission.objects.values_list("challenge__slug", "team__name", "method_name",
                                                             "runs_expected")),
        "runs": Run.objects.count(),
    }


def run_demo(*args) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


def test_demo_creates_everything_once(queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        output = run_demo()
    first = snapshot()

    assert {"host", "alice", "bob"} <= set(first["users"])
    for name in ("host", "alice", "bob"):
        assert User.objects.get(username=name).check_password(PASSWORD)
    assert User.objects.get(username="host").is_staff

    digits = Challenge.objects.get(slug="digits")
    assert digits.title == "Handwritten digits (8×8)" and digits.metric == "accuracy"
    assert (digits.k_runs, digits.boo_n, digits.master_seed) == (10, 5, 2026)
    assert digits.allow_predictions and digits.allow_recipes
    assert digits.dataset.n_test == 540 and digits.dataset.n_train == 1257 and len(digits.dataset.feature_columns) == 64
    assert list(digits.hosts.values_list("username", flat=True)) == ["host"]

    entries = {(s.team.name, s.method_name): s for s in digits.submissions.select_related("team")}
    logreg = entries[("alice", "Logistic regression (5 seeds)")]
    assert logreg.runs.count() == 5
    assert len(set(PredictionFile.objects.filter(submission=logreg).values_list("sha256", flat=True))) == 5
    assert entries[("bob", "3-nearest neighbours")].runs.count() == 1
    assert entries[("bob", "Majority class")].runs.count() == 1
    predictions = [s.pk for s in entries.values() if s.kind == "predictions"]
    assert sorted(sid for kind, sid in queued if kind == "score") == sorted(predictions)
    if HAS_RECIPES:
        recipes = [s for s in entries.values() if s.kind == "recipe"]
        assert {s.team.name for s in recipes} == {"alice", "bob"}
        assert all(s.runs.count() == 10 for s in recipes)
        assert sorted(sid for kind, sid in queued if kind == "runs") == sorted(s.pk for s in recipes)
    if HAS_BOON:
        resnet = Challenge.objects.get(slug="boon-resnet32-cifar100")
        entry = resnet.submissions.get()
        assert entry.status == "scored" and entry.runs.filter(status="succeeded").count() == 74
        assert entry.runs.get(index=0).valid_score == pytest.approx(0.6926)
        assert "imported published results" in resnet.description
        assert Challenge.objects.get(slug="boon-asreader-cbt-cn").submissions.get().runs.count() == 370
    assert "http://127.0.0.1:8000/c/digits/" in output and PASSWORD in output

    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = run_demo()
    assert snapshot() == first
    assert queued == []
    assert "reusing challenge digits" in again


def test_wait_times_out_naming_what_is_queued():
    run_demo()
    with pytest.raises(CommandError) as excinfo:
        run_demo("--wait", "--timeout", "0")
    message = str(excinfo.value)
    assert "Logistic regression (5 seeds)" in message and "queued" in message
    assert "python3 dev.py worker" in message


def test_wait_reports_progress_until_scored():
    run_demo()
    Submission.objects.filter(challenge__slug="digits").update(status="scored")
    Run.objects.filter(submission__challenge__slug="digits").update(status="succeeded", test_score=0.9)
    total = Submission.objects.filter(challenge__slug="digits").count()
    runs = Run.objects.filter(submission__challenge__slug="digits").count()
    assert f"scored {total}/{total} submissions, {runs}/{runs} runs" in run_demo("--wait", "--timeout", "5")
