"""The demo beyond one leaderboard: a second task, a suite, a variance study, imported results.

Called by ``manage.py demo`` (``demo.py``); every step goes through the services and reuses
what exists, so the demo stays idempotent.

- Challenge ``wine``, "Wine cultivars (13 features)": scikit-learn's bundled wine data (178
  rows, no download), 30 % hidden test rows, accuracy, k = 6 runs per recipe and Boo_2 (the mean's
  intervals from 6 runs; Boo_2's needs 10n = 20 and a rank interval 16, so the board shows Boo_2 and the
  ranks without one and says why: a short demo), open to prediction files too: the demo's board a new user can submit to
  (``digits``'s final phase has closed). alice's and bob's recipes run there too, under the same
  method names as on ``digits``.
- Suite ``small-tabular``: ``digits`` and ``wine``; its board aggregates the two recipes
  across both tasks (IQM, probability of improvement, Bayesian signed-rank test).
- A variance study of alice's logistic-regression recipe on ``digits``: k = 5 runs varying
  the split, the initialisation and the hyperparameter search alone, then all jointly with
  and without the search (25 short runs on the ``cpu`` queue).
- Challenge ``imported-digit-classifiers``: results only; four classifiers' per-instance
  outcomes from ``examples/data/imports`` (a generic CSV, an lm-evaluation-harness log, a
  solved-id list), compared instance by instance.
"""

from __future__ import annotations

import csv
import io

import numpy as np
from django.conf import settings

from ...choices import Visibility
from ...models import Challenge, EntryProvenance, Submission, Suite, VarianceStudy
from ...services.challenges import DatasetUpload, challenge_create
from ...services.results_import import ImportFile, challenge_create_results_only, results_import_create
from ...services.suites import suite_create
from ...services.variance_studies import variance_study_create

WINE_SLUG = "wine"
SUITE_SLUG = "small-tabular"
IMPORTED_SLUG = "imported-digit-classifiers"
STUDY_K = 5
STUDY_SOURCES = ["split", "init", "hpo"]
IMPORTS_DIR = settings.BASE_DIR / "examples" / "data" / "imports"

WINE_DESCRIPTION = """\
Tell three wine cultivars apart from 13 chemical measurements (scikit-learn's copy of the UCI \
wine data, 178 wines). 30 % of the wines, stratified, are the hidden test set. Submit a \
prediction file (the sample file shows its format) or a recipe: the server trains each recipe 6 \
times on out-of-bootstrap splits. With digits, it is one of the two tasks of the suite “Small \
tabular classification”."""

IMPORTED_DESCRIPTION = """\
Results produced elsewhere and imported, not run on this server: four scikit-learn classifiers' \
outcome on each of the 540 test images of the digits data, from a generic CSV, an \
lm-evaluation-harness style per-sample log and a list of solved ids (examples/data/imports). \
The entries are compared instance by instance (exact McNemar test); their accuracies get Wilson \
intervals."""


def wine_csv(seed: int) -> bytes:
    """scikit-learn's wine data as CSV: id, 13 features, label, is_test (stratified 30 % test rows)."""
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    data = load_wine()
    X, y = data.data, data.target
    _, test = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=seed)
    is_test = np.isin(np.arange(len(y)), test).astype(int)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", *[name.replace("/", "_") for name in data.feature_names], "label", "is_test"])
    for i in range(len(y)):
        writer.writerow([f"wine-{i:03d}", *np.round(X[i], 4), y[i], is_test[i]])
    return buffer.getvalue().encode("utf-8")


def wine_challenge(host, seed: int, say) -> Challenge:
    existing = Challenge.objects.filter(slug=WINE_SLUG).first()
    if existing is not None:
        say(f"reusing challenge {WINE_SLUG}")
        return existing
    challenge = challenge_create(
        created_by=host,
        slug=WINE_SLUG,
        title="Wine cultivars (13 features)",
        description=WINE_DESCRIPTION,
        dataset=DatasetUpload(
            data=wine_csv(seed), filename="wine.csv", id_column="id", label_column="label", test_column="is_test"
        ),
        metric="accuracy",
        allow_predictions=True,
        allow_recipes=True,
        k_runs=6,
        boo_n=2,
        master_seed=seed,
        daily_quota=10,
        total_quota=100,
        visibility=Visibility.PUBLIC,
    )
    say(
        f"created challenge {WINE_SLUG}: {challenge.dataset.n_train} training rows, "
        f"{challenge.dataset.n_test} hidden test rows"
    )
    return challenge


def suite(host, challenges: list[Challenge], say) -> Suite:
    existing = Suite.objects.filter(slug=SUITE_SLUG).first()
    if existing is not None:
        say(f"reusing suite {SUITE_SLUG}")
        return existing
    made = suite_create(
        created_by=host,
        slug=SUITE_SLUG,
        title="Small tabular classification",
        challenges=challenges,
        description="Two small classification tasks; the recipes are aggregated across both.",
    )
    say(f"created suite {SUITE_SLUG} of {', '.join(c.slug for c in challenges)}")
    return made


def variance_study(challenge: Challenge, host, say) -> VarianceStudy | None:
    entry = Submission.objects.filter(
        challenge=challenge, kind="recipe", method_name="Logistic regression (recipe)", team__name="alice"
    ).first()
    if entry is None:
        say("skipping the variance study: no logistic-regression recipe entry")
        return None
    existing = VarianceStudy.objects.filter(submission=entry).first()
    if existing is not None:
        say(f"reusing the variance study of {entry.method_name!r}")
        return existing
    study = variance_study_create(submission=entry, user=host, k_runs=STUDY_K, sources=STUDY_SOURCES)
    say(
        f"started a variance study of {entry.method_name!r}: {study.runs.count()} runs "
        f"({', '.join(STUDY_SOURCES)} one at a time, then jointly)"
    )
    return study


def imported_results(host, say) -> Challenge | None:
    if not (IMPORTS_DIR / "digits_models.csv").exists():
        say(f"skipping the imported results: {IMPORTS_DIR} is absent")
        return None
    existing = Challenge.objects.filter(slug=IMPORTED_SLUG).first()
    if existing is not None:
        say(f"reusing challenge {IMPORTED_SLUG}")
        return existing
    challenge = challenge_create_results_only(
        created_by=host,
        slug=IMPORTED_SLUG,
        title="Imported results: digit classifiers",
        description=IMPORTED_DESCRIPTION,
        metric="accuracy",
    )
    instances = (IMPORTS_DIR / "instances.txt").read_text().split()
    common = dict(
        challenge=challenge,
        user=host,
        team_name="scikit-learn baselines",
        source=EntryProvenance.Source.SELF_REPORTED,
        link="https://scikit-learn.org/",
    )
    for name, model, format in (
        ("digits_models.csv", None, "csv"),
        ("samples_svm.jsonl", "SVM, RBF kernel", "lm-eval-jsonl"),
        ("solved_tree.json", "Decision tree", "solved-ids"),
    ):
        results_import_create(
            files=[ImportFile(name, (IMPORTS_DIR / name).read_bytes(), model)],
            format=format,
            instances=instances,
            **common,
        )
    say(f"created challenge {IMPORTED_SLUG} with 4 imported models on {len(instances)} instances")
    return challenge


def wait_for_study(study: VarianceStudy | None, timeout: float, say) -> None:
    """Wait until the study's runs have ended (``--wait``), reporting progress."""
    import time

    from django.core.management.base import CommandError

    if study is None:
        return
    deadline, last = time.monotonic() + max(timeout, 0.0), None
    while True:
        study.refresh_from_db()
        ended = study.runs.filter(status__in=("succeeded", "failed")).count()
        line = f"variance study: {ended}/{study.runs.count()} runs ended ({study.get_status_display().lower()})"
        if line != last:
            say(line)
            last = line
        if study.status in (VarianceStudy.Status.DONE, VarianceStudy.Status.FAILED):
            return
        if time.monotonic() >= deadline:
            raise CommandError(
                f"timed out waiting for the variance study ({line}). Is a Celery worker running on "
                "the cpu queue? Start one with `python3 dev.py worker`."
            )
        time.sleep(2)
