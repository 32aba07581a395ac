"""Issue 26, several metrics on one board: the primary metric alone ranks; each secondary metric is shown on every
row with its mean and interval (computed as the primary's), carried by the API, the CSV, the submission detail
and bundles, published under the same feedback rules, and the private part stays hidden until the reveal."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, f1_score

from leaderboard.models import Run
from leaderboard.services.boards import board_public_mask
from leaderboard.services.challenges import challenge_reveal, challenge_update
from leaderboard.services.dataset_files import dataset_hidden_labels
from leaderboard.services.errors import ServiceError
from leaderboard.services.reports import report_current

from .factories import digits_challenge, make_user
from .test_boards import client_for, submit

pytestmark = pytest.mark.django_db

SECONDARY = ["macro_f1", "balanced_accuracy"]


def _outcomes(name: str, truth: np.ndarray, guess: np.ndarray) -> np.ndarray:
    """Per-example outcomes written out from their definitions (not evaluation.metrics): the mean is the metric."""
    n, correct = len(truth), (truth == guess).astype(float)
    if name == "balanced_accuracy":
        classes = np.unique(truth)
        count = {c: np.sum(truth == c) for c in classes}
        return correct * n / (len(classes) * np.array([count[t] for t in truth]))
    classes = np.union1d(truth, guess)  # macro F1: D_k = 2 TP_k + FP_k + FN_k of the true class
    tp = {c: np.sum((truth == c) & (guess == c)) for c in classes}
    fp = {c: np.sum((truth != c) & (guess == c)) for c in classes}
    fn = {c: np.sum((truth == c) & (guess != c)) for c in classes}
    denominators = np.array([2 * tp[t] + fp[t] + fn[t] for t in truth])
    return correct * 2 * n / (len(classes) * denominators)


def _expected(name: str, truth: np.ndarray, guess: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """(score, low, high): the score by scikit-learn, the interval as Student's t over the test examples."""
    score = f1_score(truth, guess, average="macro") if name == "macro_f1" else balanced_accuracy_score(truth, guess)
    x = _outcomes(name, truth, guess)
    assert x.mean() == pytest.approx(score)
    half = stats.t.ppf(1 - alpha / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return score, max(x.mean() - half, x.min(), 0.0), min(x.mean() + half, x.max(), 1.0)


def _guesses(truth: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    wrong = np.array([str((int(t) + 1 + rng.integers(3)) % 10) for t in truth])
    return np.where(rng.random(truth.size) < fraction, truth, wrong)


@pytest.fixture
def three_entries(host):
    challenge, _ = digits_challenge(host, secondary_metrics=SECONDARY, bootstrap_resamples=200, title="Several")
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    guesses = {"good": _guesses(truth, 0.9, 1), "fair": _guesses(truth, 0.7, 2), "poor": _guesses(truth, 0.45, 3)}
    for (name, guess), user in zip(guesses.items(), ("ann", "ben", "cid")):
        submit(challenge, make_user(user), guess, name)
    return challenge, truth, guesses


def test_the_primary_ranks_and_every_row_shows_each_secondary_mean_and_interval(three_entries):
    challenge, truth, guesses = three_entries
    data = report_current(challenge=challenge).data
    assert [row["method_name"] for row in data["entries"]] == ["good", "fair", "poor"]  # by accuracy
    assert data["settings"]["secondary_metrics"] == [
        {"name": "macro_f1", "label": "Macro F1", "higher_is_better": True},
        {"name": "balanced_accuracy", "label": "Balanced accuracy", "higher_is_better": True},
    ]
    for row in data["entries"]:
        assert [value["name"] for value in row["secondary"]] == SECONDARY
        for value in row["secondary"]:
            score, low, high = _expected(value["name"], truth, guesses[row["method_name"]])
            assert value["mean"]["estimate"] == pytest.approx(score, rel=1e-9)
            assert value["mean"]["low"] == pytest.approx(low, rel=1e-5)
            assert value["mean"]["high"] == pytest.approx(high, rel=1e-5)
            assert value["mean"]["method"] == "Student t over test examples" and value["runs"] == 1
    run = Run.objects.get(submission__method_name="fair")
    assert run.extra_scores["test"]["macro_f1"] == pytest.approx(f1_score(truth, guesses["fair"], average="macro"))
    assert set(Run.unpack_extra_outcomes(run.extra_outcomes)) >= {"test/macro_f1", "test/balanced_accuracy"}


def test_the_api_the_csv_the_page_and_the_submission_carry_the_secondary_metrics(three_entries):
    challenge, truth, guesses = three_entries
    client = client_for(make_user("reader"))
    body = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert [m["name"] for m in body["secondary_metrics"]] == SECONDARY
    stored = {row["submission_id"]: row["secondary"] for row in report_current(challenge=challenge).data["entries"]}
    for entry in body["entries"]:
        assert entry["secondary"] == stored[entry["submission_id"]]
    streamed = client.get(f"/api/challenges/{challenge.slug}/leaderboard/?format=csv").streaming_content
    text = b"".join(streamed).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    good = next(row for row in rows if row["method_name"] == "good")
    score, low, high = _expected("macro_f1", truth, guesses["good"])
    assert float(good["secondary.macro_f1.mean.estimate"]) == pytest.approx(score)
    assert float(good["secondary.macro_f1.mean.low"]) == pytest.approx(low, rel=1e-5)
    assert good["secondary.balanced_accuracy.higher_is_better"] == "True"
    page = client.get(reverse("challenge-detail", kwargs={"slug": challenge.slug})).content.decode()
    assert "Macro F1 ↑" in page and page.count('data-secondary="balanced_accuracy"') == 3
    sid = body["entries"][0]["submission_id"]
    detail = client.get(f"/api/submissions/{sid}/").json()
    assert [(v["name"], v["label"], v["higher_is_better"]) for v in detail["secondary"]] == [
        ("macro_f1", "Macro F1", True),
        ("balanced_accuracy", "Balanced accuracy", True),
    ]
    assert detail["secondary"][0]["mean"] == {k: stored[sid][0]["mean"][k] for k in ("estimate", "low", "high")}
    assert detail["runs"][0]["secondary_scores"]["macro_f1"] == pytest.approx(score)


def test_secondary_private_numbers_stay_hidden_until_the_reveal(host):
    challenge, _ = digits_challenge(
        host, secondary_metrics=["macro_f1"], public_fraction=0.5, bootstrap_resamples=200, title="Hidden"
    )
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    public = board_public_mask(dataset=challenge.dataset)
    base = _guesses(truth, 0.7, 4)
    wrong = np.array([str((int(t) + 1) % 10) for t in truth])
    alice, bob = make_user("alice"), make_user("bob")
    a = submit(challenge, alice, np.where(public, base, truth), "right in private")
    b = submit(challenge, bob, np.where(public, base, wrong), "wrong in private")
    public_f1 = f1_score(truth[public], base[public], average="macro")
    client = client_for(alice)
    assert client.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").status_code == 403
    body = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    # identical on the public rows, so identical published numbers: nothing of the private rows shows
    shown = [entry["secondary"][0]["mean"] for entry in body["entries"]]
    assert shown[0] == shown[1] and shown[0]["estimate"] == pytest.approx(public_f1)
    for sid in (a.pk, b.pk):
        detail = client.get(f"/api/submissions/{sid}/").json()
        assert detail["secondary"][0]["mean"]["estimate"] == pytest.approx(public_f1)
        assert detail["runs"][0]["secondary_scores"] == {"macro_f1": pytest.approx(public_f1)}
    runs = client.get(f"/api/challenges/{challenge.slug}/runs/").json()
    runs = runs.get("results", runs)
    assert all(run["secondary_scores"] == {"macro_f1": pytest.approx(public_f1)} for run in runs)
    challenge_reveal(challenge=challenge, user=host)
    body = client.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
    private = {e["method_name"]: e["secondary"][0]["mean"]["estimate"] for e in body["entries"]}
    private_rows = ~public
    assert private["right in private"] == pytest.approx(1.0)
    assert private["wrong in private"] == pytest.approx(
        f1_score(truth[private_rows], wrong[private_rows], average="macro")
    )


@pytest.mark.parametrize("feedback", ["rounded", "ladder"])
def test_secondary_numbers_are_published_as_the_primary(host, feedback):
    challenge, _ = digits_challenge(
        host, secondary_metrics=["macro_f1"], feedback=feedback, feedback_digits=2, bootstrap_resamples=200
    )
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    submission = submit(challenge, make_user("alice"), _guesses(truth, 0.8, 6), "m")
    client = client_for(make_user("reader"))
    entry = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()["entries"][0]
    mean = entry["secondary"][0]["mean"]
    detail = client.get(f"/api/submissions/{submission.pk}/").json()
    if feedback == "rounded":
        assert mean["estimate"] == round(f1_score(truth, _guesses(truth, 0.8, 6), average="macro"), 2)
        # one file: its interval came from each test row's outcome, which a rounded board withholds, as the primary's
        assert (mean["low"], mean["high"]) == (None, None)
        assert detail["runs"][0]["secondary_scores"]["macro_f1"] == mean["estimate"]
    else:
        assert (mean["estimate"], mean["low"], mean["high"]) == (None, None, None)
        assert detail["secondary"][0]["mean"]["estimate"] is None
        assert detail["runs"][0]["secondary_scores"] == {"macro_f1": None}


@pytest.mark.parametrize(
    "secondary, message",
    [
        (["roc_auc"], "takes label predictions"),
        (["log_loss"], "takes label predictions"),
        (["accuracy"], "listed twice"),
        (["macro_f1", "macro_f1"], "listed twice"),
        (["bleu"], "unknown metric"),
    ],
)
def test_secondary_metrics_must_fit_the_primary_and_the_dataset(host, secondary, message):
    with pytest.raises(ServiceError, match=message) as caught:
        digits_challenge(host, secondary_metrics=secondary)
    assert caught.value.field == "secondary_metrics"


def test_secondary_metrics_are_set_by_the_api_and_freeze_at_the_first_submission(host):
    challenge, _ = digits_challenge(host)
    client = client_for(host)
    response = client.patch(
        f"/api/challenges/{challenge.slug}/", {"secondary_metrics": ["balanced_accuracy"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["secondary_metrics"] == ["balanced_accuracy"]
    response = client.patch(f"/api/challenges/{challenge.slug}/", {"secondary_metrics": ["roc_auc"]}, format="json")
    assert response.status_code == 400 and "label predictions" in response.content.decode()
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    submit(challenge, make_user("alice"), truth, "m")
    with pytest.raises(ServiceError, match="cannot change once submissions exist"):
        challenge_update(challenge=challenge, user=host, secondary_metrics=["macro_f1"])
