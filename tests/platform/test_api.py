"""REST API: hosting, downloads, submitting predictions, permissions, quotas, bad uploads."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import Challenge, PredictionFile, Run, Submission
from leaderboard.services.dispatch import SCORE_SUBMISSION
from leaderboard.services.scoring import submission_score

from .factories import PASSWORD, csv_bytes, digits_challenge, digits_frame, label_predictions, make_user

pytestmark = pytest.mark.django_db


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        response = client.post("/api/auth/token/", {"username": user.username, "password": PASSWORD})
        assert response.status_code == 200, response.content
        client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    return client


def submit(client, slug, files, method_name="logreg", **extra):
    uploads = [SimpleUploadedFile(name, data, content_type="text/csv") for name, data in files]
    return client.post(
        f"/api/challenges/{slug}/submissions/",
        {"method_name": method_name, "files": uploads, **extra},
        format="multipart",
    )


def stored_submission_files(media: Path) -> list[Path]:
    root = Path(media) / "submissions"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


# ------------------------------------------------------------------ hosting


def test_host_creates_challenge_over_api(alice):
    frame = digits_frame(120)
    response = client_for(alice).post(
        "/api/challenges/",
        {
            "title": "My digits",
            "metric": "macro_f1",
            "k_runs": 4,
            "boo_n": 2,
            "gamma": 0.8,
            "dataset": SimpleUploadedFile("d.csv", csv_bytes(frame)),
            "id_column": "id",
            "label_column": "label",
            "test_column": "is_test",
            "randomize_sources": ["split", "init"],
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["slug"] == "my-digits" and body["metric"] == "macro_f1" and body["higher_is_better"] is True
    assert body["dataset"]["n_test"] == int(120 * 0.3) and body["dataset"]["classes"] == [str(i) for i in range(10)]
    assert body["hosts"] == ["alice"] and body["randomize_sources"] == ["split", "init"]
    assert "hidden_labels" in body["downloads"]  # the host sees their own hidden labels link


def test_anonymous_cannot_host():
    response = APIClient().post("/api/challenges/", {"title": "x"}, format="multipart")
    assert response.status_code in (401, 403)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"metric": "accuracy", "higher_is_better": False}, "contradicts the metric"),
        ({"metric": "nonsense"}, "is not a valid choice"),
        ({"metric": "accuracy", "label_column": "nope"}, "nope"),
        ({"metric": "roc_auc"}, "exactly 2 classes"),
        ({"metric": "accuracy", "test_column": ""}, "hidden test rows"),
        ({"metric": "accuracy", "gamma": 0.3}, "gamma"),
    ],
)
def test_bad_challenge_is_rejected_and_nothing_stored(alice, media, fields, message):
    frame = digits_frame(60)
    data = {
        "title": "Bad",
        "dataset": SimpleUploadedFile("d.csv", csv_bytes(frame)),
        "id_column": "id",
        "label_column": "label",
        "test_column": "is_test",
        **fields,
    }
    response = client_for(alice).post("/api/challenges/", data, format="multipart")
    assert response.status_code == 400, response.content
    assert message in response.content.decode()
    assert Challenge.objects.count() == 0
    assert not any(p.is_file() for p in Path(media).rglob("*")) if Path(media).exists() else True


def test_only_hosts_change_a_challenge(challenge, alice, host):
    challenge, _ = challenge
    assert client_for(alice).patch(f"/api/challenges/{challenge.slug}/", {"k_runs": 3}).status_code == 403
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", {"k_runs": 3, "gamma": 0.8})
    assert response.status_code == 200, response.content
    assert response.json()["k_runs"] == 3 and response.json()["gamma"] == 0.8


def test_seed_settings_freeze_after_first_submission(challenge, alice, host):
    challenge, frame = challenge
    assert submit(client_for(alice), challenge.slug, [("p.csv", label_predictions(frame))]).status_code == 202
    response = client_for(host).patch(f"/api/challenges/{challenge.slug}/", {"master_seed": 99})
    assert response.status_code == 400 and "master_seed cannot change" in response.json()["detail"]


def test_private_challenge_is_invisible_to_others(host, alice):
    challenge, _ = digits_challenge(host, visibility="private", title="Secret")
    assert client_for(alice).get(f"/api/challenges/{challenge.slug}/").status_code == 404
    assert APIClient().get("/api/challenges/").json()["count"] == 0
    assert client_for(host).get(f"/api/challenges/{challenge.slug}/").status_code == 200


# ------------------------------------------------------------------ downloads


def test_public_downloads_and_hidden_labels_for_hosts_only(challenge, alice, host):
    challenge, frame = challenge
    anon = APIClient()
    base = f"/api/challenges/{challenge.slug}/data"
    train = pd.read_csv(io.BytesIO(anon.get(f"{base}/train/").getvalue()))
    test_inputs = pd.read_csv(io.BytesIO(anon.get(f"{base}/test_inputs/").getvalue()))
    sample = pd.read_csv(io.BytesIO(anon.get(f"{base}/sample_submission/").content))
    assert len(train) == (frame.is_test == 0).sum() and "label" in train.columns
    assert len(test_inputs) == (frame.is_test == 1).sum() and "label" not in test_inputs.columns
    assert "is_test" not in test_inputs.columns and "is_test" not in train.columns
    assert list(sample.columns) == ["id", "prediction"] and len(sample) == len(test_inputs)
    assert anon.get(f"{base}/hidden_labels/").status_code in (401, 403)
    assert client_for(alice).get(f"{base}/hidden_labels/").status_code == 403
    hidden = pd.read_csv(io.BytesIO(client_for(host).get(f"{base}/hidden_labels/").getvalue()))
    assert list(hidden.columns) == ["id", "label"] and len(hidden) == len(test_inputs)
    assert anon.get(f"{base}/nonsense/").status_code == 404


# ------------------------------------------------------------------ submitting and scoring


def test_submit_one_file_then_score(challenge, alice, queued, django_capture_on_commit_callbacks):
    challenge, frame = challenge
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(
            client_for(alice), challenge.slug, [("preds.csv", label_predictions(frame, correct_fraction=0.8))]
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["runs_expected"] == 1 and queued.ids(SCORE_SUBMISSION) == [body["id"]]
    submission_score(submission_id=body["id"])
    detail = client_for(alice).get(f"/api/submissions/{body['id']}/").json()
    assert detail["status"] == "scored" and detail["progress"]["fraction"] == 1.0
    truth = frame[frame.is_test == 1]
    predicted = pd.read_csv(io.BytesIO(label_predictions(frame, correct_fraction=0.8)))
    expected = (predicted.prediction.to_numpy() == truth.label.to_numpy()).mean()
    assert detail["runs"][0]["test_score"] == pytest.approx(expected)
    run = Run.objects.get(submission_id=body["id"])
    assert run.outcomes_array.shape == (len(truth),) and run.outcomes_array.mean() == pytest.approx(expected)


def test_k_files_are_k_runs_and_scoring_is_idempotent(challenge, alice):
    challenge, frame = challenge
    files = [(f"seed{i}.csv", label_predictions(frame, correct_fraction=0.7 + 0.05 * i, seed=i)) for i in range(3)]
    body = submit(client_for(alice), challenge.slug, files).json()
    submission_score(submission_id=body["id"])
    first = list(Run.objects.filter(submission_id=body["id"]).values_list("index", "test_score", "finished_at"))
    Submission.objects.filter(pk=body["id"]).update(status="running")  # as if the task were redelivered
    submission_score(submission_id=body["id"])
    again = list(Run.objects.filter(submission_id=body["id"]).values_list("index", "test_score", "finished_at"))
    assert len(first) == 3 and first == again
    assert len({score for _, score, _ in first}) == 3


def test_leaderboard_and_runs_endpoints(challenge, alice, host):
    challenge, frame = challenge
    bob = make_user("bob")
    for user, fraction in ((alice, 0.9), (bob, 0.6)):
        body = submit(
            client_for(user),
            challenge.slug,
            [("p.csv", label_predictions(frame, correct_fraction=fraction))],
            method_name=f"m-{user.username}",
        ).json()
        submission_score(submission_id=body["id"])
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert [e["team"] for e in board["entries"]] == ["alice", "bob"]
    runs = APIClient().get(f"/api/challenges/{challenge.slug}/runs/").json()
    assert runs["count"] == 2 and {r["method_name"] for r in runs["results"]} == {"m-alice", "m-bob"}
    csv_text = APIClient().get(f"/api/challenges/{challenge.slug}/runs/?format=csv").content.decode()
    table = pd.read_csv(io.StringIO(csv_text))
    assert len(table) == 2 and {"test_score", "seeds.contestant_file", "split_id"} <= set(table.columns)


def test_contestants_see_own_logs_only(challenge, alice):
    challenge, frame = challenge
    body = submit(client_for(alice), challenge.slug, [("p.csv", label_predictions(frame))]).json()
    bob = make_user("bob")
    # Not scored yet: strangers get nothing; the team sees it with details.
    assert client_for(bob).get(f"/api/submissions/{body['id']}/").status_code == 404
    assert "error_message" in client_for(alice).get(f"/api/submissions/{body['id']}/").json()
    submission_score(submission_id=body["id"])
    public = client_for(bob).get(f"/api/submissions/{body['id']}/").json()
    assert "error_message" not in public and "log" not in public["runs"][0]
    assert client_for(bob).get(f"/api/submissions/{body['id']}/runs/0/").status_code == 403
    assert client_for(alice).get(f"/api/submissions/{body['id']}/runs/0/").json()["index"] == 0
    mine = client_for(bob).get(f"/api/challenges/{challenge.slug}/submissions/").json()
    assert mine["count"] == 0


def test_anonymous_cannot_submit(challenge):
    challenge, frame = challenge
    response = submit(APIClient(), challenge.slug, [("p.csv", label_predictions(frame))])
    assert response.status_code in (401, 403) and Submission.objects.count() == 0


# ------------------------------------------------------------------ bad uploads: 400, a clear message, nothing stored


def _bad_files(frame: pd.DataFrame) -> dict[str, tuple[list[tuple[str, bytes]], str]]:
    test = frame[frame.is_test == 1]
    good = pd.DataFrame({"id": test.id.to_numpy(), "prediction": test.label.to_numpy()})

    def with_(df):
        return csv_bytes(df)

    dup = pd.concat([good, good.iloc[[3]]], ignore_index=True)
    unknown = good.copy()
    unknown.loc[5, "id"] = "img-9999"
    missing = good.iloc[:-4]
    empty_cell = good.astype(str).copy()
    empty_cell.loc[2, "prediction"] = ""
    not_class = good.astype(str).copy()
    not_class.loc[7, "prediction"] = "11"
    return {
        "latin-1": ([("p.csv", "id,prediction\nimg-0000,é\n".encode("latin-1"))], "UTF-8"),
        "empty": ([("p.csv", b"")], "p.csv: the file is empty"),
        "second file empty": ([("a.csv", with_(good)), ("empty.csv", b"")], "empty.csv: the file is empty"),
        "missing id column": ([("p.csv", with_(good.rename(columns={"id": "ident"})))], "id"),
        "missing prediction column": ([("p.csv", with_(good.rename(columns={"prediction": "pred"})))], "prediction"),
        "duplicate id": ([("p.csv", with_(dup))], good.id.iloc[3]),
        "unknown id": ([("p.csv", with_(unknown))], "img-9999"),
        "missing ids": ([("p.csv", with_(missing))], "missing"),
        "empty cell": ([("p.csv", with_(empty_cell))], "empty"),
        "label not a class": ([("p.csv", with_(not_class))], "11"),
        "binary garbage": ([("p.csv", bytes(range(256)) * 4)], "UTF-8"),
        "too many files": ([(f"p{i}.csv", with_(good)) for i in range(6)], "at most 5"),
        "second file bad": ([("a.csv", with_(good)), ("b.csv", with_(dup))], "file 2 of 2: b.csv"),
    }


@pytest.mark.parametrize("case", list(_bad_files(digits_frame()).keys()))
def test_bad_prediction_upload(challenge, alice, media, case):
    challenge, frame = challenge
    files, needle = _bad_files(frame)[case]
    response = submit(client_for(alice), challenge.slug, files)
    assert response.status_code == 400, (case, response.content)
    assert needle.lower() in response.json()["detail"].lower(), (case, response.json())
    assert Submission.objects.count() == 0 and PredictionFile.objects.count() == 0 and Run.objects.count() == 0
    assert stored_submission_files(media) == []


def test_upload_over_size_limit(challenge, alice, media, settings):
    challenge, frame = challenge
    settings.VARBOARD = {**settings.VARBOARD, "MAX_PREDICTION_MB": 1}
    big = label_predictions(frame) + b"\n" * (1024 * 1024 + 10)
    response = submit(client_for(alice), challenge.slug, [("big.csv", big)])
    assert response.status_code == 413 and "limit is 1 MB" in response.json()["detail"]
    assert Submission.objects.count() == 0 and stored_submission_files(media) == []


def test_nan_and_inf_in_probabilities_are_named(host, alice, media):
    challenge, frame = digits_challenge(host, metric="log_loss", title="Digits log loss")
    test = frame[frame.is_test == 1]
    proba = pd.DataFrame(0.1, index=range(len(test)), columns=[str(c) for c in range(10)])
    proba.insert(0, "id", test.id.to_numpy())
    for bad, needle in (("nan", "NaN"), ("inf", "inf")):
        table = proba.astype(object).copy()
        table.loc[4, "3"] = bad
        response = submit(client_for(alice), challenge.slug, [("p.csv", csv_bytes(table))])
        assert response.status_code == 400, response.content
        detail = response.json()["detail"]
        assert needle.lower() in detail.lower() and "3" in detail
    assert Submission.objects.count() == 0 and stored_submission_files(media) == []


# ------------------------------------------------------------------ quotas


def test_daily_quota_and_platform_failures_do_not_count(host, alice):
    challenge, frame = digits_challenge(host, daily_quota=1, total_quota=0, title="Quota")
    client = client_for(alice)
    first = submit(client, challenge.slug, [("p.csv", label_predictions(frame))])
    assert first.status_code == 202
    second = submit(client, challenge.slug, [("p.csv", label_predictions(frame))])
    assert second.status_code == 429 and "1 submissions of the last 24 hours" in second.json()["detail"]
    opens = timezone.now() + timedelta(seconds=int(second["Retry-After"]))
    assert re.search(r"the next slot opens at \d{4}-\d\d-\d\d \d\d:\d\d UTC\.$", second.json()["detail"])
    shown = datetime.strptime(second.json()["detail"][-21:-5], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert timedelta(0) <= shown - opens.replace(second=0, microsecond=0) <= timedelta(minutes=2)
    Submission.objects.filter(pk=first.json()["id"]).update(counts_toward_quota=False, status="failed")
    assert submit(client, challenge.slug, [("p.csv", label_predictions(frame))]).status_code == 202


def test_closed_challenge_refuses_submissions(host, alice):
    from django.utils import timezone

    now = timezone.now()
    challenge, frame = digits_challenge(
        host, title="Closed", opens_at=now - timezone.timedelta(days=2), closes_at=now - timezone.timedelta(days=1)
    )
    response = submit(client_for(alice), challenge.slug, [("p.csv", label_predictions(frame))])
    assert response.status_code == 409 and "closed" in response.json()["detail"]


def test_openapi_schema_documents_the_endpoints():
    response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/challenges/",
        "/api/challenges/{slug}/submissions/",
        "/api/challenges/{slug}/leaderboard/",
        "/api/challenges/{slug}/runs/",
        "/api/submissions/{id}/",
        "/api/auth/token/",
    ):
        assert path in paths, path
    assert APIClient().get("/api/docs/").status_code == 200


def test_an_unreachable_queue_loses_nothing_the_janitor_sends_it_later(
    challenge, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    from kombu.exceptions import OperationalError

    from leaderboard.services import dispatch
    from leaderboard.services.janitor import JanitorPass, janitor_run

    def broker_down(name, args, queue=None, countdown=None):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(dispatch, "send", broker_down)
    challenge, frame = challenge
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client_for(alice), challenge.slug, [("p.csv", label_predictions(frame))])
    assert response.status_code == 202
    body = client_for(alice).get(f"/api/submissions/{response.json()['id']}/").json()
    assert body["status"] == "queued" and body["error_message"] == ""
    submission = Submission.objects.get(pk=body["id"])
    assert submission.prediction_files.get().file.storage.exists(submission.prediction_files.get().file.name)
    # The broker is back: once the work is older than the requeue threshold, the janitor sends it.
    sent = []
    monkeypatch.setattr(dispatch, "send", lambda name, args, queue=None, countdown=None: sent.append((name, args)))
    monkeypatch.setattr(dispatch, "queue_lengths", lambda names: {name: 0 for name in names})
    submission.runs.update(enqueued_at=timezone.now() - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"] + 1))
    assert janitor_run() == JanitorPass(resent_scorings=1)
    assert sent == [("tasks.scoring.score_submission", (submission.pk,))]


def test_host_uploads_parquet_train_plus_test_inputs_and_hidden_labels_apart(alice, tmp_path):
    frame = digits_frame(90)
    train = frame[frame.is_test == 0].drop(columns="is_test")
    test = frame[frame.is_test == 1].drop(columns="is_test")
    parquet = tmp_path / "train.parquet"
    train.to_parquet(parquet)
    labels = test[["id", "label"]].sample(frac=1, random_state=0)  # any row order
    response = client_for(alice).post(
        "/api/challenges/",
        {
            "title": "Three files",
            "metric": "accuracy",
            "dataset": SimpleUploadedFile("train.parquet", parquet.read_bytes()),
            "test_dataset": SimpleUploadedFile("test_inputs.csv", csv_bytes(test.drop(columns="label"))),
            "test_labels": SimpleUploadedFile("labels.csv", csv_bytes(labels)),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["dataset"]["n_train"] == len(train) and body["dataset"]["n_test"] == len(test)
    hidden = pd.read_csv(
        io.BytesIO(client_for(alice).get(f"/api/challenges/{body['slug']}/data/hidden_labels/").getvalue()), dtype=str
    )
    expected = dict(zip(test.id, test.label.astype(str)))
    assert dict(zip(hidden.id, hidden.label)) == expected


def test_hidden_labels_that_do_not_match_the_test_inputs_are_named(alice, media):
    frame = digits_frame(90)
    train = frame[frame.is_test == 0].drop(columns="is_test")
    test = frame[frame.is_test == 1].drop(columns="is_test")
    labels = test[["id", "label"]].iloc[1:]  # one test id has no label
    response = client_for(alice).post(
        "/api/challenges/",
        {
            "title": "Mismatch",
            "metric": "accuracy",
            "dataset": SimpleUploadedFile("train.csv", csv_bytes(train)),
            "test_dataset": SimpleUploadedFile("test_inputs.csv", csv_bytes(test.drop(columns="label"))),
            "test_labels": SimpleUploadedFile("labels.csv", csv_bytes(labels)),
        },
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert "labels.csv" in response.json()["detail"] and test.id.iloc[0] in response.json()["detail"]
    assert Challenge.objects.count() == 0


def test_a_submission_mixing_two_kinds_is_refused_naming_the_part(challenge, alice, media):
    """Found by a contestant: kind=recipe with prediction files attached was taken (202) and the files dropped
    without a word. One kind per submission; nothing is stored."""
    from .factories import label_predictions

    challenge, frame = challenge
    api = client_for(alice)
    recipe = SimpleUploadedFile("r.py", b"def fit_predict(a, b, c, d, e, f):\n    return None\n")
    answer = submit(api, challenge.slug, [("p.csv", label_predictions(frame))], kind="recipe", recipe=recipe)
    assert answer.status_code == 400 and "takes no prediction files" in answer.json()["errors"]["files"][0], (
        answer.content
    )
    recipe.seek(0)
    answer = submit(api, challenge.slug, [("p.csv", label_predictions(frame))], kind="predictions", recipe=recipe)
    assert answer.status_code == 400 and "takes no recipe" in answer.json()["errors"]["recipe"][0], answer.content
    assert not Submission.objects.exists() and stored_submission_files(media) == []
