"""``manage.py demo``: creates the demo once through the services, reruns reuse it, ``--wait`` reports."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from leaderboard.management.commands._demo_beyond import IMPORTED_SLUG, IMPORTS_DIR, SUITE_SLUG
from leaderboard.management.commands.demo import BOON_DIR, PASSWORD, RECIPES_DIR
from leaderboard.models import Challenge, PredictionFile, Run, StudyRun, Submission, Suite, VarianceStudy
from leaderboard.services.dispatch import EXECUTE_RUN, EXECUTE_STUDY_RUN, SCORE_SUBMISSION

pytestmark = pytest.mark.django_db

HAS_RECIPES = (RECIPES_DIR / "logistic_regression.py").exists()
HAS_BOON = BOON_DIR.is_dir()


def snapshot() -> dict:
    return {
        "users": sorted(User.objects.values_list("username", flat=True)),
        "challenges": sorted(Challenge.objects.values_list("slug", flat=True)),
        "submissions": sorted(
            Submission.objects.values_list("challenge__slug", "team__name", "method_name", "runs_expected")
        ),
        "runs": Run.objects.count(),
        "suites": sorted(Suite.objects.values_list("slug", flat=True)),
        "study_runs": StudyRun.objects.count(),
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
    assert (digits.k_runs, digits.boo_n, digits.master_seed) == (10, 3, 2026)
    assert digits.allow_predictions and digits.allow_recipes
    assert digits.dataset.n_test == 540 and digits.dataset.n_train == 1257 and len(digits.dataset.feature_columns) == 64
    assert list(digits.hosts.values_list("username", flat=True)) == ["host"]

    entries = {(s.team.name, s.method_name): s for s in digits.submissions.select_related("team")}
    logreg = entries[("alice", "Logistic regression (5 seeds)")]
    assert logreg.runs.count() == 5
    assert len(set(PredictionFile.objects.filter(submission=logreg).values_list("sha256", flat=True))) == 5
    assert entries[("bob", "3-nearest neighbours")].runs.count() == 1
    assert entries[("bob", "Majority class")].runs.count() == 1
    predictions = list(digits.submissions.filter(kind="predictions").values_list("pk", flat=True))
    assert sorted(queued.ids(SCORE_SUBMISSION)) == sorted(predictions)
    # A development and a final phase, a private board (revealed), and a second version of alice's entry.
    assert list(digits.phases.values_list("name", "test_rows")) == [("development", "public"), ("final", "all")]
    assert digits.public_fraction == 0.5 and digits.private_revealed_at is not None
    versions = digits.submissions.filter(team__name="alice", method_name="Logistic regression (5 seeds)")
    assert sorted(versions.values_list("phase__name", flat=True)) == ["development", "final"]
    assert entries[("bob", "Probed public labels")].phase.name == "final"
    if HAS_RECIPES:
        recipes = [s for s in entries.values() if s.kind == "recipe"]
        assert {s.team.name for s in recipes} == {"alice", "bob"}
        assert all(s.runs.count() == 10 for s in recipes)
        wine = Challenge.objects.get(slug="wine")
        wine_recipes = list(wine.submissions.all())
        assert {s.method_name for s in wine_recipes} == {s.method_name for s in recipes}
        assert all(s.runs.count() == 6 for s in wine_recipes)
        assert sorted(queued.ids(EXECUTE_RUN)) == sorted(
            Run.objects.filter(submission__in=[*recipes, *wine_recipes]).values_list("pk", flat=True)
        )
        assert list(Suite.objects.get(slug=SUITE_SLUG).challenges.order_by("slug").values_list("slug", flat=True)) == [
            "digits",
            "wine",
        ]
        study = VarianceStudy.objects.get()
        assert study.submission.method_name == "Logistic regression (recipe)" and study.k_runs == 5
        assert sorted(queued.ids(EXECUTE_STUDY_RUN)) == sorted(study.runs.values_list("pk", flat=True))
        assert study.runs.count() == 5 * 5  # split, init, search alone; all with and without search
    if IMPORTS_DIR.is_dir():
        imported = Challenge.objects.get(slug=IMPORTED_SLUG)
        assert not imported.allow_recipes and imported.results_imports.count() == 3
        assert sorted(imported.submissions.values_list("method_name", flat=True)) == [
            "Decision tree",
            "Gaussian naive Bayes",
            "Random forest (200 trees)",
            "SVM, RBF kernel",
        ]
        assert all(s.provenance.source == "self_reported" for s in imported.submissions.all())
    if HAS_BOON:
        resnet = Challenge.objects.get(slug="boon-resnet32-cifar100")
        entry = resnet.submissions.get()
        assert entry.status == "scored" and entry.runs.filter(status="succeeded").count() == 74
        assert entry.runs.get(index=0).valid_score == pytest.approx(0.6926)
        assert "imported published results" in resnet.description
        assert entry.provenance.source == "published" and "Bajgar" in entry.provenance.note
        page = Client().get(resnet.get_absolute_url()).content.decode()
        assert "Where these results come from" in page and "Bajgar, Kadlec &amp; Kleindienst (2018)" in page
        assert "retrained by the server 74" not in page and ">recipe</span>" not in page  # not run here
        assert "Imported runs (published elsewhere)" in page
        assert Challenge.objects.get(slug="boon-asreader-cbt-cn").submissions.get().runs.count() == 370
    assert "http://127.0.0.1:8000/c/digits/" in output and PASSWORD in output
    assert "to submit, use http://127.0.0.1:8000/c/wine/" in output  # digits' final phase has closed
    assert Challenge.objects.get(slug="wine").allow_predictions

    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = run_demo()
    assert snapshot() == first
    assert queued.ids(SCORE_SUBMISSION) == [] and queued.ids(EXECUTE_RUN) == [] and queued.ids(EXECUTE_STUDY_RUN) == []
    assert "reusing challenge digits" in again


@pytest.mark.slow  # over 10 s: the slow lane (dev.py's TEST_LANES)
def test_wait_times_out_naming_what_is_queued():
    run_demo()
    with pytest.raises(CommandError) as excinfo:
        run_demo("--wait", "--timeout", "0")
    message = str(excinfo.value)
    assert "Logistic regression (5 seeds)" in message and "queued" in message
    assert "python3 dev.py worker" in message


def test_wait_reports_progress_until_scored():
    run_demo()
    slugs = ["digits", "wine"]
    Submission.objects.filter(challenge__slug__in=slugs).update(status="scored")
    Run.objects.filter(submission__challenge__slug__in=slugs).update(status="succeeded", test_score=0.9)
    StudyRun.objects.update(status="succeeded", test_score=0.9)
    VarianceStudy.objects.update(status="done")
    total = Submission.objects.filter(challenge__slug__in=slugs).count()
    runs = Run.objects.filter(submission__challenge__slug__in=slugs).count()
    output = run_demo("--wait", "--timeout", "5")
    assert f"scored {total}/{total} submissions, {runs}/{runs} runs" in output
    if HAS_RECIPES:
        assert "variance study: 25/25 runs ended (done)" in output


@pytest.mark.slow  # over 10 s: the slow lane (dev.py's TEST_LANES)
def test_the_demo_shows_the_shake_up_on_the_revealed_private_board():
    from rest_framework.test import APIClient

    from leaderboard.services.reports import report_recompute
    from leaderboard.services.scoring import submission_score

    run_demo()
    digits = Challenge.objects.get(slug="digits")
    for submission in digits.submissions.filter(kind="predictions"):
        submission_score(submission_id=submission.pk)
    report_recompute(challenge_id=digits.pk)
    public = APIClient().get("/api/challenges/digits/leaderboard/").json()
    private = APIClient().get("/api/challenges/digits/leaderboard/?board=private").json()
    probed_public = next(r for r in public["entries"] if r["method_name"] == "Probed public labels")
    probed_private = next(r for r in private["entries"] if r["method_name"] == "Probed public labels")
    assert probed_public["rank"] == 1 and probed_public["mean"]["estimate"] == 1.0
    assert probed_private["rank_change"] < 0 and probed_private["mean"]["estimate"] < 0.2
    page = APIClient().get("/c/digits/?board=private").content.decode()
    assert "data-rank-change" in page and "private board revealed" in page


@pytest.mark.skipif(not HAS_BOON, reason="needs ../shared/data/boon-runs")
def test_imported_challenges_say_they_take_no_submissions(queued):
    run_demo("--no-recipes")
    home = Client().get("/").content.decode()
    row = home[home.index("/c/boon-resnet32-cifar100/") :]
    row = row[: row.index("</tr>")]
    assert "imported results" in row and ">recipes<" not in row and ">predictions<" not in row
    page = Client().get("/c/boon-resnet32-cifar100/").content.decode()
    assert "imported results" in page and "training recipes" not in page and "· recipes" not in page
    rules = page[page.index('id="rules"') :]
    assert "data-imported-rules" in rules and "<dt>Opens</dt>" not in rules and "<dt>Closes</dt>" not in rules
    digits = home[home.index("/c/digits/") :]
    assert ">recipes<" in digits[: digits.index("</tr>")]
