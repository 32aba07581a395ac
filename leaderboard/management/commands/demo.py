"""``manage.py demo [--wait] [--timeout 600]``: a demo site with real entries, built through the services.

Idempotent: users, challenges and submissions that exist already are reused, never duplicated.

What it creates
---------------
- Users ``host`` (staff; may create and edit challenges in the admin), ``alice`` and ``bob``,
  each with the password ``varboard-demo`` and a personal team.
- Challenge ``digits``, "Handwritten digits (8×8)": scikit-learn's bundled digits (no download),
  a stratified 30 % held out as hidden test rows, accuracy, predictions and recipes, k = 10,
  Boo_5, master seed 2026. Created with ``challenge_create`` like the web form.
- Prediction entries made by baselines trained on the public training rows and predicting
  the public test inputs (the files a contestant downloads): alice's logistic regression at
  5 seeds (5 files = 5 runs), bob's 3-nearest neighbours and majority class (1 file each).
  Submitted with ``submission_create_predictions`` like the web form, so they are queued on
  the Celery ``scoring`` queue.
- Recipe entries, when ``examples/recipes/`` has them: alice's ``logistic_regression.py``,
  bob's ``torch_mlp.py`` (k runs each, on the ``cpu`` queue).
- Two closed challenges holding the published per-run results of Bajgar et al. (2018) from
  ``examples/data/boon-runs`` (skipped when absent): one entry each, whose runs are the
  published runs, written directly as succeeded runs and labelled as imported. The two
  models were evaluated on different tasks, so they are not put on one leaderboard.
"""

from __future__ import annotations

import csv
import io
import time
from datetime import datetime, timezone as dt_timezone
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ...choices import RunStatus, SplitScheme, SubmissionKind, SubmissionStatus, Visibility
from ...models import Challenge, Run, Submission, Team
from ...selectors import dataset_frame
from ...services.challenges import DatasetUpload, challenge_create
from ...services.reports import report_request
from ...services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe
from ...services.teams import team_personal_for

PASSWORD = "varboard-demo"
DIGITS_SLUG = "digits"
SEED = 2026
RECIPES_DIR = settings.BASE_DIR / "examples" / "recipes"
# A copy of ../shared/data/boon-runs (Apache-2.0, IBM 2018) ships in the repository.
BOON_DIR = settings.BASE_DIR / "examples" / "data" / "boon-runs"
ENDED = (SubmissionStatus.SCORED, SubmissionStatus.FAILED, SubmissionStatus.CANCELLED)
HOST_PERMISSIONS = ["add_challenge", "change_challenge", "view_challenge", "view_dataset", "view_submission",
                    "view_run", "view_report"]

DIGITS_DESCRIPTION = """\
Classify 8×8 images of handwritten digits (0–9). Each row is one image: 64 pixel intensities \
(pixel_0 … pixel_63, 0–16) and its label. The data is scikit-learn's copy of the UCI ML \
handwritten digits test set (1,797 images); 30 % of it, stratified by class, is held out as the \
hidden test set.

Submit predictions for the test inputs (one file, or one file per seed you ran: each file is a \
run), or a training recipe that the server runs 10 times on out-of-bootstrap splits with paired \
seeds. The leaderboard reports the spread of the runs, not only the best one."""

BOON_CHALLENGES = [
    {
        "slug": "boon-resnet32-cifar100",
        "file": "resnet32_cifar100.csv",
        "title": "Published runs: ResNet-32 on CIFAR-100",
        "method_name": "ResNet-32 (74 published runs)",
        "what": "ResNet-32 on CIFAR-100 with fixed hyperparameters; runs differ by random initialisation and "
                "data shuffling. The paper reports a mean test accuracy of 68.41 % (sd 0.67 %).",
    },
    {
        "slug": "boon-asreader-cbt-cn",
        "file": "asreader_cbt_cn_fixed.csv",
        "title": "Published runs: AS Reader on CBT common nouns",
        "method_name": "AS Reader (370 published runs)",
        "what": "The Attention Sum Reader on the Children's Book Test (common nouns) with fixed "
                "hyperparameters. Many runs share a validation accuracy (ties). The paper reports a mean "
                "test accuracy of 63.16 % (sd 0.94 %).",
    },
]
BOON_SOURCE = """\

These are imported published results, not runs made on this server: the validation and test accuracy \
of the best-validation checkpoint of every training run, from the data released with Bajgar, Kadlec & \
Kleindienst, "A Boo(n) for Evaluating Architecture Performance" (ICML 2018), repository obajgar/boon, \
Apache License 2.0 (copyright IBM Corporation 2018). There is no dataset to download and the challenge \
takes no submissions; it shows what Boo_n and the run distribution say about one architecture."""


class Command(BaseCommand):
    help = "Create the demo users, challenges and submissions (idempotent); --wait until they are scored."

    def add_arguments(self, parser):
        parser.add_argument("--wait", action="store_true", help="wait until every demo submission has ended")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait with --wait (600)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000",
                            help="where the site will be served, for the printed links")

    def handle(self, *args, wait: bool = False, timeout: float = 600.0, base_url: str = "http://127.0.0.1:8000",
               **options):
        base_url = base_url.rstrip("/")
        users = {name: self._user(name, staff=name == "host") for name in ("host", "alice", "bob")}
        challenge = self._digits_challenge(users["host"])
        self._prediction_entries(challenge, alice=users["alice"], bob=users["bob"])
        self._recipe_entries(challenge, alice=users["alice"], bob=users["bob"])
        self._published_runs(users["host"])
        if wait:
            self._wait(challenge, timeout)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo ready: {base_url}/c/{DIGITS_SLUG}/"))
        self.stdout.write(f"Log in as host, alice or bob with the password {PASSWORD!r} "
                          f"(host may also use {base_url}/admin/).")

    # ------------------------------------------------------------------ users

    def _user(self, username: str, *, staff: bool):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username,
                                                   defaults={"email": f"{username}@example.org"})
        user.set_password(PASSWORD)
        user.is_staff = user.is_staff or staff
        user.save()
        if staff:
            user.user_permissions.add(*Permission.objects.filter(content_type__app_label="leaderboard",
                                                                  codename__in=HOST_PERMISSIONS))
        team_personal_for(user=user)
        self.stdout.write(f"{'created' if created else 'reusing'} user {username} (password {PASSWORD})")
        return user

    # ------------------------------------------------------------------ the digits challenge

    def _digits_challenge(self, host) -> Challenge:
        existing = Challenge.objects.filter(slug=DIGITS_SLUG).first()
        if existing is not None:
            self.stdout.write(f"reusing challenge {DIGITS_SLUG}")
            return existing
        challenge = challenge_create(
            created_by=host, slug=DIGITS_SLUG,
            dataset=DatasetUpload(data=digits_csv(), filename="digits.csv", id_column="id", label_column="label",
                                  test_column="is_test"),
            title="Handwritten digits (8×8)", description=DIGITS_DESCRIPTION, metric="accuracy",
            allow_predictions=True, allow_recipes=True, k_runs=10, boo_n=5, master_seed=SEED,
            daily_quota=10, total_quota=100, visibility=Visibility.PUBLIC)
        self.stdout.write(f"created challenge {DIGITS_SLUG}: {challenge.dataset.n_train} training rows, "
                          f"{challenge.dataset.n_test} hidden test rows")
        return challenge

    def _submit_once(self, challenge: Challenge, user, method_name: str, create) -> None:
        team = team_personal_for(user=user)
        if Submission.objects.filter(challenge=challenge, team=team, method_name=method_name).exists():
            self.stdout.write(f"reusing {user.username}'s entry {method_name!r}")
            return
        submission = create(team)
        self.stdout.write(f"{user.username} submitted {method_name!r} ({submission.get_kind_display().lower()}, "
                          f"{submission.runs_expected} run{'s' if submission.runs_expected != 1 else ''})")

    def _prediction_entries(self, challenge: Challenge, *, alice, bob) -> None:
        baselines = DigitsBaselines(challenge)
        entries = [
            (alice, "Logistic regression (5 seeds)",
             "L2 logistic regression on pixels/16, each seed fitted on its own random 80 % of the training rows.",
             lambda: [(f"logreg-seed{seed}.csv", baselines.logistic_regression(seed)) for seed in range(5)]),
            (bob, "3-nearest neighbours", "k-NN (k = 3, Euclidean) on the raw pixels.",
             lambda: [("knn3.csv", baselines.nearest_neighbours(3))]),
            (bob, "Majority class", "Predicts the most frequent training class for every image.",
             lambda: [("majority.csv", baselines.majority())]),
        ]
        for user, method_name, description, make_files in entries:
            def create(team, user=user, method_name=method_name, description=description, make_files=make_files):
                files = [UploadedFile(name=name, data=data) for name, data in make_files()]
                return submission_create_predictions(challenge=challenge, user=user, method_name=method_name,
                                                     description=description, files=files, team_id=team.pk)

            self._submit_once(challenge, user, method_name, create)

    def _recipe_entries(self, challenge: Challenge, *, alice, bob) -> None:
        try:
            import leaderboard.services.recipes  # noqa: F401  (the recipe runner and its sandbox)
        except ImportError as exc:
            self.stdout.write(self.style.WARNING(f"skipping recipe entries: the recipe runner does not import ({exc})"))
            return
        first = RECIPES_DIR / "logistic_regression.py"
        if not first.exists():
            self.stdout.write(self.style.WARNING(f"skipping recipe entries: no {first}"))
            return
        entries = [(alice, "logistic_regression.py", "Logistic regression (recipe)"),
                   (bob, "torch_mlp.py", "MLP in PyTorch (recipe)")]
        for user, filename, method_name in entries:
            path = RECIPES_DIR / filename
            if not path.exists():
                self.stdout.write(self.style.WARNING(f"skipping {method_name!r}: no {path}"))
                continue

            def create(team, user=user, path=path, method_name=method_name):
                return submission_create_recipe(
                    challenge=challenge, user=user, method_name=method_name, team_id=team.pk,
                    description=f"examples/recipes/{path.name}, retrained by the server k times.",
                    recipe=UploadedFile(name=path.name, data=path.read_bytes()), hyperparameters={})

            self._submit_once(challenge, user, method_name, create)

    # ------------------------------------------------------------------ published runs (Bajgar et al. 2018)

    def _published_runs(self, host) -> None:
        if not BOON_DIR.is_dir():
            self.stdout.write(self.style.WARNING(f"skipping the published-runs challenges: {BOON_DIR} is absent"))
            return
        for spec in BOON_CHALLENGES:
            if Challenge.objects.filter(slug=spec["slug"]).exists():
                self.stdout.write(f"reusing challenge {spec['slug']}")
                continue
            path = BOON_DIR / spec["file"]
            if not path.exists():
                self.stdout.write(self.style.WARNING(f"skipping {spec['slug']}: {path} is absent"))
                continue
            runs = read_published_runs(path)
            self._import_published(host, spec, runs)
            self.stdout.write(f"created challenge {spec['slug']} with {len(runs)} imported published runs")

    def _import_published(self, host, spec: dict, runs: list[tuple[int, float, float]]) -> None:
        """A closed challenge with one entry whose runs are the published ones (no dataset, no submissions)."""
        now = timezone.now()
        with transaction.atomic():
            challenge = Challenge.objects.create(
                slug=spec["slug"], title=spec["title"], description=spec["what"] + "\n" + BOON_SOURCE,
                created_by=host, metric="accuracy", higher_is_better=True, allow_predictions=False,
                allow_recipes=True, k_runs=len(runs), boo_n=5, split_scheme=SplitScheme.FIXED,
                randomize_sources=["init", "data_order"], visibility=Visibility.PUBLIC,
                opens_at=datetime(2018, 7, 10, tzinfo=dt_timezone.utc),
                closes_at=datetime(2018, 7, 15, tzinfo=dt_timezone.utc))
            challenge.hosts.add(host)
            team, _ = Team.objects.get_or_create(name="Bajgar, Kadlec & Kleindienst (2018)")
            submission = Submission.objects.create(
                challenge=challenge, team=team, submitted_by=host, kind=SubmissionKind.RECIPE,
                method_name=spec["method_name"], status=SubmissionStatus.SCORED, runs_expected=len(runs),
                counts_toward_quota=False, started_at=now, finished_at=now,
                description=f"Imported from {spec['file']} (published runs; not run on this server).")
            Run.objects.bulk_create([
                Run(submission=submission, index=index, seeds={"published_run": run_id}, split_id="published",
                    status=RunStatus.SUCCEEDED, valid_score=valid, test_score=test, device="published",
                    started_at=now, finished_at=now)
                for index, (run_id, valid, test) in enumerate(runs)])
            report_request(challenge_id=challenge.pk)

    # ------------------------------------------------------------------ --wait

    def _wait(self, challenge: Challenge, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while True:
            submissions = (Submission.objects.filter(challenge=challenge)
                           .annotate(ended=Count("runs", filter=Q(runs__status__in=(RunStatus.SUCCEEDED,
                                                                                     RunStatus.FAILED))),
                                     total=Count("runs")))
            rows = list(submissions.values("pk", "method_name", "status", "ended", "total"))
            scored = sum(r["status"] == SubmissionStatus.SCORED for r in rows)
            failed = sum(r["status"] == SubmissionStatus.FAILED for r in rows)
            line = (f"scored {scored}/{len(rows)} submissions, {sum(r['ended'] for r in rows)}/"
                    f"{sum(r['total'] for r in rows)} runs" + (f", {failed} failed" if failed else ""))
            if line != last:
                self.stdout.write(line)
                last = line
            pending = [r for r in rows if r["status"] not in ENDED]
            if not pending:
                if failed:
                    self.stdout.write(self.style.WARNING(
                        f"{failed} submission(s) failed; their pages show why: "
                        + ", ".join(f"/submissions/{r['pk']}/" for r in rows
                                    if r["status"] == SubmissionStatus.FAILED)))
                return
            if time.monotonic() >= deadline:
                still = "; ".join(f"{r['method_name']!r} ({r['status']}, {r['ended']}/{r['total']} runs)"
                                  for r in pending)
                raise CommandError(f"timed out after {timeout:.0f} s; still waiting for: {still}. Is a Celery "
                                   "worker running on the scoring and cpu queues? Start one with "
                                   "`python3 dev.py worker`.")
            time.sleep(2)


# ---------------------------------------------------------------------- data and baselines


def digits_csv() -> bytes:
    """scikit-learn's digits as CSV: id, pixel_0..pixel_63, label, is_test (stratified 30 % test rows)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X, y = digits.data.astype(int), digits.target.astype(int)
    _, test_idx = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=SEED)
    is_test = np.zeros(len(y), dtype=int)
    is_test[test_idx] = 1
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", *(f"pixel_{j}" for j in range(X.shape[1])), "label", "is_test"])
    for i in range(len(y)):
        writer.writerow([i, *X[i], y[i], is_test[i]])
    return buffer.getvalue().encode("utf-8")


class DigitsBaselines:
    """Baselines fitted on the challenge's public training rows, predicting its public test inputs."""

    def __init__(self, challenge: Challenge):
        dataset = challenge.dataset
        self.id_column = dataset.id_column
        train = dataset_frame(dataset=dataset, part="train")
        test = dataset_frame(dataset=dataset, part="test_inputs")
        self.X = train[dataset.feature_columns].to_numpy(dtype=float)
        self.y = train[dataset.label_column].to_numpy(dtype=str)
        self.X_test = test[dataset.feature_columns].to_numpy(dtype=float)
        self.test_ids = test[dataset.id_column].tolist()

    def _csv(self, predictions) -> bytes:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([self.id_column, "prediction"])
        writer.writerows(zip(self.test_ids, predictions))
        return buffer.getvalue().encode("utf-8")

    def logistic_regression(self, seed: int) -> bytes:
        from sklearn.linear_model import LogisticRegression

        rng = np.random.default_rng(seed)
        rows = rng.choice(len(self.y), size=int(0.8 * len(self.y)), replace=False)
        model = LogisticRegression(max_iter=2000).fit(self.X[rows] / 16.0, self.y[rows])
        return self._csv(model.predict(self.X_test / 16.0))

    def nearest_neighbours(self, k: int) -> bytes:
        from sklearn.neighbors import KNeighborsClassifier

        return self._csv(KNeighborsClassifier(n_neighbors=k).fit(self.X, self.y).predict(self.X_test))

    def majority(self) -> bytes:
        values, counts = np.unique(self.y, return_counts=True)
        return self._csv([values[np.argmax(counts)]] * len(self.test_ids))


def read_published_runs(path: Path) -> list[tuple[int, float, float]]:
    """(run, valid, test) rows of a boon-runs CSV."""
    with path.open(newline="") as handle:
        return [(int(row["run"]), float(row["valid"]), float(row["test"])) for row in csv.DictReader(handle)]
