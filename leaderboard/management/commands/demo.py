"""``manage.py demo [--wait] [--timeout 600]``: a demo site with real entries, built through the services.

Idempotent: users, challenges and submissions that exist already are reused, never duplicated.

What it creates
---------------
- Users ``host`` (staff; may create and edit challenges in the admin), ``alice`` and ``bob``,
  each with the password ``varboard-demo`` and a personal team.
- Challenge ``digits``, "Handwritten digits (8×8)": scikit-learn's bundled digits (no download),
  a stratified 30 % held out as hidden test rows, half of them on the public board and half on
  the private board, accuracy, predictions and recipes, k = 10, Boo_3 (shown without an interval,
  which needs 10n = 30 runs: a short demo), master seed 2026.
  Created with ``challenge_create`` like the web form.
- Two phases: ``development`` (scored on the public rows only; closed once its entry is in)
  and ``final`` (both boards, open). In development alice submits her logistic regression at
  5 seeds (5 files = 5 runs); in the final phase she submits it again at 5 other seeds (version
  2 of the entry), bob submits 3-nearest neighbours, majority class and a "probed" entry that
  is right on exactly the public rows (as if mined from the public board, wrong-footed on the
  private rows), all baselines trained on the public training rows and predicting the public
  test inputs (the files a contestant downloads). Submitted with
  ``submission_create_predictions`` like the web form, so they are queued on the Celery
  ``scoring`` queue.
- Recipe entries in the final phase, when ``examples/recipes/`` has them: alice's
  ``logistic_regression.py``, bob's ``torch_mlp.py`` (k runs each, on the ``cpu`` queue).
- The host then reveals the private board: the page shows both boards and the shake-up (the
  probed entry falls).
- Two closed challenges holding the published per-run results of Bajgar et al. (2018) from
  ``examples/data/boon-runs`` (skipped when absent): one entry each, whose runs are the
  published runs, written directly as succeeded runs and labelled as imported. The two
  models were evaluated on different tasks, so they are not put on one leaderboard.
- Beyond one leaderboard (``_demo_beyond.py``): a second task ``wine`` with the same two
  recipes, the suite ``small-tabular`` of ``digits`` and ``wine``, a variance study of
  alice's logistic-regression recipe (k = 5 per source: split, init, search), and the results-only challenge
  ``imported-digit-classifiers`` imported from ``examples/data/imports``.
"""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ...choices import SUBMISSION_ENDED, RunStatus, SplitScheme, SubmissionKind, SubmissionStatus, TestRows, Visibility
from ...models import Challenge, EntryProvenance, Run, Submission, Team
from ...services.boards import board_public_mask
from ...services.challenges import DatasetUpload, challenge_create, challenge_reveal
from ...services.dataset_files import dataset_frame, dataset_hidden_labels
from ...services.phases import phase_create, phase_default, phase_update
from ...services.registrations import registration_register
from ...services.reports import report_request
from ...services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe
from ...services.teams import team_personal_for
from . import _demo_beyond as beyond

PASSWORD = "varboard-demo"
DIGITS_SLUG = "digits"
SEED = 2026
RECIPES_DIR = settings.BASE_DIR / "examples" / "recipes"
# A copy of ../shared/data/boon-runs (Apache-2.0, IBM 2018) ships in the repository.
BOON_DIR = settings.BASE_DIR / "examples" / "data" / "boon-runs"
HOST_PERMISSIONS = [
    "add_challenge",
    "change_challenge",
    "view_challenge",
    "add_phase",  # the Phase rows of the challenge's admin page (README, "Phases")
    "change_phase",
    "view_phase",
    "view_dataset",
    "view_submission",
    "view_run",
    "view_report",
]

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
BOON_CITATION = (
    "Bajgar, Kadlec & Kleindienst (2018), A Boo(n) for Evaluating Architecture Performance, ICML; "
    "per-run results released in obajgar/boon (Apache-2.0, IBM 2018)."
)
BOON_LINK = "https://github.com/obajgar/boon"
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
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="where the site will be served, for the printed links"
        )
        parser.add_argument(
            "--no-recipes",
            action="store_true",
            help="submit no recipe entries (for a machine whose workers cannot sandbox recipes)",
        )

    def handle(
        self,
        *args,
        wait: bool = False,
        timeout: float = 600.0,
        base_url: str = "http://127.0.0.1:8000",
        no_recipes: bool = False,
        **options,
    ):
        base_url = base_url.rstrip("/")
        users = {name: self._user(name, staff=name == "host") for name in ("host", "alice", "bob")}
        challenge = self._digits_challenge(users["host"])
        for name in ("alice", "bob"):
            registration_register(challenge=challenge, user=users[name], accept_rules=True)
        self._prediction_entries(challenge, alice=users["alice"], bob=users["bob"], host=users["host"])
        wine = beyond.wine_challenge(users["host"], SEED, self.stdout.write)  # beyond one board: _demo_beyond.py
        study = None
        if no_recipes:
            self.stdout.write(self.style.WARNING("skipping the recipe entries and the variance study (--no-recipes)"))
        else:
            self._recipe_entries(challenge, alice=users["alice"], bob=users["bob"])
            self._recipe_entries(wine, alice=users["alice"], bob=users["bob"])
            study = beyond.variance_study(challenge, users["host"], self.stdout.write)
        if challenge.private_revealed_at is None:
            challenge_reveal(challenge=challenge, user=users["host"])
            self.stdout.write("revealed the private board of digits")
        beyond.suite(users["host"], [challenge, wine], self.stdout.write)
        beyond.imported_results(users["host"], self.stdout.write)
        self._published_runs(users["host"])
        if wait:
            started = time.monotonic()
            self._wait([challenge, wine], timeout)
            if study is not None:
                beyond.wait_for_study(study, timeout - (time.monotonic() - started), self.stdout.write)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo ready: {base_url}/c/{DIGITS_SLUG}/"))
        self.stdout.write(
            f"Also: the suite {base_url}/suites/{beyond.SUITE_SLUG}/, the variance studies "
            f"{base_url}/c/{DIGITS_SLUG}/variance-studies/ and imported results "
            f"{base_url}/c/{beyond.IMPORTED_SLUG}/."
        )
        self.stdout.write(
            f"Log in as host, alice or bob with the password {PASSWORD!r} (host may also use {base_url}/admin/)."
        )
        self.stdout.write(
            f"digits has closed its final phase; to submit, use {base_url}/c/{beyond.WINE_SLUG}/ "
            "(prediction files or recipes)."
        )

    # ------------------------------------------------------------------ users

    def _user(self, username: str, *, staff: bool):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
        user.set_password(PASSWORD)
        user.is_staff = user.is_staff or staff
        user.save()
        if staff:
            user.user_permissions.add(
                *Permission.objects.filter(content_type__app_label="leaderboard", codename__in=HOST_PERMISSIONS)
            )
        team_personal_for(user=user)
        self.stdout.write(f"{'created' if created else 'reusing'} user {username} (password {PASSWORD})")
        return user

    # ------------------------------------------------------------------ the digits challenge

    def _digits_challenge(self, host) -> Challenge:
        """The digits challenge (created once), its development phase open."""
        existing = Challenge.objects.filter(slug=DIGITS_SLUG).first()
        if existing is not None:
            self.stdout.write(f"reusing challenge {DIGITS_SLUG}")
            return existing
        challenge = challenge_create(
            created_by=host,
            slug=DIGITS_SLUG,
            dataset=DatasetUpload(
                data=digits_csv(), filename="digits.csv", id_column="id", label_column="label", test_column="is_test"
            ),
            title="Handwritten digits (8×8)",
            description=DIGITS_DESCRIPTION,
            metric="accuracy",
            allow_predictions=True,
            allow_recipes=True,
            k_runs=10,
            boo_n=3,
            master_seed=SEED,
            daily_quota=10,
            total_quota=100,
            visibility=Visibility.PUBLIC,
            public_fraction=0.5,
            rules="Predict from the published inputs only; one account per person.",
        )
        phase_update(
            phase=challenge.phases.get(),
            user=host,
            name="development",
            test_rows=TestRows.PUBLIC,
            opens_at=timezone.now() - timezone.timedelta(days=14),
        )
        self.stdout.write(
            f"created challenge {DIGITS_SLUG}: {challenge.dataset.n_train} training rows, "
            f"{challenge.dataset.n_test} hidden test rows (half on the private board)"
        )
        return challenge

    def _start_final_phase(self, challenge: Challenge, host) -> None:
        """Close the development phase and open the final one (both boards), once."""
        if challenge.phases.filter(name="final").exists():
            return
        now = timezone.now()
        phase_update(phase=challenge.phases.get(name="development"), user=host, closes_at=now)
        phase_create(
            challenge=challenge,
            user=host,
            name="final",
            order=1,
            opens_at=now,
            daily_quota=10,
            total_quota=100,
            test_rows=TestRows.ALL,
            auto_reveal=True,
        )
        self.stdout.write("closed the development phase; the final phase is open")

    def _submit_once(self, challenge: Challenge, user, method_name: str, create, version: int = 1) -> None:
        team = team_personal_for(user=user)
        if Submission.objects.filter(challenge=challenge, team=team, method_name=method_name).count() >= version:
            suffix = f" (version {version})" if version > 1 else ""
            self.stdout.write(f"reusing {user.username}'s entry {method_name!r}{suffix}")
            return
        submission = create(team)
        self.stdout.write(
            f"{user.username} submitted {method_name!r} ({submission.get_kind_display().lower()}, "
            f"{submission.runs_expected} run{'s' if submission.runs_expected != 1 else ''})"
        )

    def _prediction_entries(self, challenge: Challenge, *, alice, bob, host) -> None:
        baselines = DigitsBaselines(challenge)
        logreg = (
            "Logistic regression (5 seeds)",
            "L2 logistic regression on pixels/16, each seed fitted on its own random 80 % of the training rows.",
        )
        development = [
            (
                alice,
                *logreg,
                1,
                lambda: [(f"logreg-seed{seed}.csv", baselines.logistic_regression(seed)) for seed in range(5)],
            )
        ]
        final = [
            (
                alice,
                *logreg,
                2,
                lambda: [(f"logreg-seed{seed}.csv", baselines.logistic_regression(seed)) for seed in range(5, 10)],
            ),
            (
                bob,
                "3-nearest neighbours",
                "k-NN (k = 3, Euclidean) on the raw pixels.",
                1,
                lambda: [("knn3.csv", baselines.nearest_neighbours(3))],
            ),
            (
                bob,
                "Majority class",
                "Predicts the most frequent training class for every image.",
                1,
                lambda: [("majority.csv", baselines.majority())],
            ),
            (
                bob,
                "Probed public labels",
                "Right on exactly the public board's rows, as if their labels had been "
                "mined from exact public scores; the majority class elsewhere. The private board shows what it is "
                "worth.",
                1,
                lambda: [("probed.csv", baselines.probed())],
            ),
        ]
        for phase_entries in (development, final):
            if phase_entries is final:
                self._start_final_phase(challenge, host)
            for user, method_name, description, version, make_files in phase_entries:

                def create(team, user=user, method_name=method_name, description=description, make_files=make_files):
                    files = [UploadedFile(name=name, data=data) for name, data in make_files()]
                    return submission_create_predictions(
                        challenge=challenge,
                        user=user,
                        method_name=method_name,
                        description=description,
                        files=files,
                        team_id=team.pk,
                    )

                self._submit_once(challenge, user, method_name, create, version)

    def _recipe_entries(self, challenge: Challenge, *, alice, bob) -> None:
        first = RECIPES_DIR / "logistic_regression.py"
        if not first.exists():
            self.stdout.write(self.style.WARNING(f"skipping recipe entries: no {first}"))
            return
        entries = [
            (alice, "logistic_regression.py", "Logistic regression (recipe)"),
            (bob, "torch_mlp.py", "MLP in PyTorch (recipe)"),
        ]
        for user, filename, method_name in entries:
            path = RECIPES_DIR / filename
            if not path.exists():
                self.stdout.write(self.style.WARNING(f"skipping {method_name!r}: no {path}"))
                continue

            def create(team, user=user, path=path, method_name=method_name):
                return submission_create_recipe(
                    challenge=challenge,
                    user=user,
                    method_name=method_name,
                    team_id=team.pk,
                    description=f"examples/recipes/{path.name}, retrained by the server k times.",
                    recipe=UploadedFile(name=path.name, data=path.read_bytes()),
                    hyperparameters={},
                )

            self._submit_once(challenge, user, method_name, create)

    # ------------------------------------------------------------------ published runs (Bajgar et al. 2018)

    def _published_runs(self, host) -> None:
        if not BOON_DIR.is_dir():
            self.stdout.write(self.style.WARNING(f"skipping the published-runs challenges: {BOON_DIR} is absent"))
            return
        for spec in BOON_CHALLENGES:
            if Challenge.objects.filter(slug=spec["slug"]).exists():
                self.stdout.write(f"reusing challenge {spec['slug']}")
                self._cite_published(Submission.objects.filter(challenge__slug=spec["slug"]))
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
                slug=spec["slug"],
                title=spec["title"],
                description=spec["what"] + "\n" + BOON_SOURCE,
                created_by=host,
                metric="accuracy",
                higher_is_better=True,
                allow_predictions=False,
                allow_recipes=True,
                k_runs=len(runs),
                boo_n=5,
                split_scheme=SplitScheme.FIXED,
                randomize_sources=["init", "data_order"],
                visibility=Visibility.PUBLIC,
            )
            challenge.hosts.add(host)
            phase_default(
                challenge=challenge,
                opens_at=datetime(2018, 7, 10, tzinfo=UTC),
                closes_at=datetime(2018, 7, 15, tzinfo=UTC),
            )
            team, _ = Team.objects.get_or_create(name="Bajgar, Kadlec & Kleindienst (2018)")
            submission = Submission.objects.create(
                challenge=challenge,
                team=team,
                submitted_by=host,
                kind=SubmissionKind.RECIPE,
                method_name=spec["method_name"],
                status=SubmissionStatus.SCORED,
                runs_expected=len(runs),
                counts_toward_quota=False,
                started_at=now,
                finished_at=now,
                description=f"Imported from {spec['file']} (published runs; not run on this server).",
            )
            Run.objects.bulk_create(
                [
                    Run(
                        submission=submission,
                        index=index,
                        seeds={"published_run": run_id},
                        split_id="published",
                        status=RunStatus.SUCCEEDED,
                        valid_score=valid,
                        test_score=test,
                        device="published",
                        started_at=now,
                        finished_at=now,
                    )
                    for index, (run_id, valid, test) in enumerate(runs)
                ]
            )
            self._cite_published([submission])

    @staticmethod
    def _cite_published(submissions) -> None:
        """Mark the imported entries as published runs with their citation (idempotent: older demos get it too)."""
        for submission in submissions:
            _, created = EntryProvenance.objects.get_or_create(
                submission=submission,
                defaults={"source": EntryProvenance.Source.PUBLISHED, "link": BOON_LINK, "note": BOON_CITATION},
            )
            if created:  # the cached report carries each entry's provenance
                report_request(challenge_id=submission.challenge_id)

    # ------------------------------------------------------------------ --wait

    def _wait(self, challenges: list[Challenge], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while True:
            submissions = Submission.objects.filter(challenge__in=challenges).annotate(
                ended=Count("runs", filter=Q(runs__status__in=(RunStatus.SUCCEEDED, RunStatus.FAILED))),
                total=Count("runs"),
            )
            rows = list(submissions.values("pk", "method_name", "status", "ended", "total"))
            scored = sum(r["status"] == SubmissionStatus.SCORED for r in rows)
            failed = sum(r["status"] == SubmissionStatus.FAILED for r in rows)
            line = (
                f"scored {scored}/{len(rows)} submissions, {sum(r['ended'] for r in rows)}/"
                f"{sum(r['total'] for r in rows)} runs" + (f", {failed} failed" if failed else "")
            )
            if line != last:
                self.stdout.write(line)
                last = line
            pending = [r for r in rows if r["status"] not in SUBMISSION_ENDED]
            if not pending:
                if failed:
                    self.stdout.write(
                        self.style.WARNING(
                            f"{failed} submission(s) failed; their pages show why: "
                            + ", ".join(
                                f"/submissions/{r['pk']}/" for r in rows if r["status"] == SubmissionStatus.FAILED
                            )
                        )
                    )
                return
            if time.monotonic() >= deadline:
                still = "; ".join(
                    f"{r['method_name']!r} ({r['status']}, {r['ended']}/{r['total']} runs)" for r in pending
                )
                raise CommandError(
                    f"timed out after {timeout:.0f} s; still waiting for: {still}. Is a Celery "
                    "worker running on the scoring and cpu queues? Start one with "
                    "`python3 dev.py worker`."
                )
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
        dataset = self.dataset = challenge.dataset
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
        return self._csv([self._most_frequent()] * len(self.test_ids))

    def _most_frequent(self) -> str:
        values, counts = np.unique(self.y, return_counts=True)
        return values[np.argmax(counts)]

    def probed(self) -> bytes:
        """What label mining on an exact public board yields: the public rows' labels, nothing else."""
        public = board_public_mask(dataset=self.dataset)
        truth = dataset_hidden_labels(dataset=self.dataset)
        return self._csv(np.where(public, truth, self._most_frequent()))


def read_published_runs(path: Path) -> list[tuple[int, float, float]]:
    """(run, valid, test) rows of a boon-runs CSV."""
    with path.open(newline="") as handle:
        return [(int(row["run"]), float(row["valid"]), float(row["test"])) for row in csv.DictReader(handle)]
