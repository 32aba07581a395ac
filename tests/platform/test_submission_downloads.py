"""Downloads of what was submitted (issue 26): the hosts and the submitting team get every prediction file and
recipe, streamed with its content type and name, from the page and the API; anyone else a 404; the audit log
records each download."""

from __future__ import annotations

import io
import zipfile

import pytest
from rest_framework.test import APIClient

from leaderboard.models import AuditEntry
from leaderboard.services.dataset_files import dataset_test_ids
from leaderboard.services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe

from .factories import PASSWORD, csv_bytes, make_user

pytestmark = pytest.mark.django_db

RECIPE = b"def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return train.y[:1]\n"


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def prediction_bytes(challenge, label: str) -> bytes:
    import pandas as pd

    ids = dataset_test_ids(dataset=challenge.dataset)
    return csv_bytes(pd.DataFrame({"id": ids, "prediction": [label] * len(ids)}))


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def two_files(challenge, alice):
    challenge, _ = challenge
    files = [
        UploadedFile("seed-0.csv", prediction_bytes(challenge, "1")),
        UploadedFile("seed-1.csv", prediction_bytes(challenge, "2")),
    ]
    submission = submission_create_predictions(challenge=challenge, user=alice, method_name="two", files=files)
    return challenge, submission, files


def test_the_team_and_the_hosts_download_each_file_and_the_audit_log_records_it(two_files, alice, host):
    challenge, submission, files = two_files
    for user in (alice, host):
        for url in (
            f"/api/submissions/{submission.pk}/download/?file=1",
            f"/submissions/{submission.pk}/download/?file=1",
        ):
            response = client_for(user).get(url)
            assert response.status_code == 200, url
            assert response["Content-Type"] == "text/csv"
            assert response["Content-Disposition"] == 'attachment; filename="seed-1.csv"'
            assert body(response) == files[1].data
    logged = AuditEntry.objects.filter(challenge=challenge, action="submission_downloaded")
    assert logged.count() == 4
    assert {entry.actor for entry in logged} == {alice, host}
    assert all(
        entry.details["submission"] == submission.pk and entry.details["files"] == ["seed-1.csv"] for entry in logged
    )


def test_all_files_come_as_one_zip_archive(two_files, alice):
    _, submission, files = two_files
    response = client_for(alice).get(f"/api/submissions/{submission.pk}/download/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert f'filename="submission-{submission.pk}-files.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(body(response)))
    assert {name: archive.read(name) for name in archive.namelist()} == {
        "0-seed-0.csv": files[0].data,
        "1-seed-1.csv": files[1].data,
    }


def test_anyone_else_gets_a_404(two_files, alice, bob):
    _, submission, _ = two_files
    submission.status = "scored"  # a scored submission's page is public; its files are not
    submission.save()
    assert client_for(alice).get(f"/api/submissions/{submission.pk}/download/?file=0").status_code == 200
    assert (
        f"/submissions/{submission.pk}/download/"
        in client_for(alice).get(f"/submissions/{submission.pk}/").content.decode()
    )
    for client in (client_for(bob), client_for(make_user("carol")), client_for()):
        for url in (f"/api/submissions/{submission.pk}/download/", f"/submissions/{submission.pk}/download/?file=0"):
            assert client.get(url).status_code == 404, url
        assert client.get(f"/submissions/{submission.pk}/").status_code == 200
        assert "/download/" not in client.get(f"/submissions/{submission.pk}/").content.decode()
    assert AuditEntry.objects.filter(action="submission_downloaded").count() == 1  # alice's only


def test_a_bad_file_index_is_named(two_files, alice):
    _, submission, _ = two_files
    response = client_for(alice).get(f"/api/submissions/{submission.pk}/download/?file=x")
    assert response.status_code == 400 and response.json()["field"] == "file"
    assert "file must be a prediction file's index (0 to 1); got 'x'" in response.json()["detail"]
    response = client_for(alice).get(f"/api/submissions/{submission.pk}/download/?file=7")
    assert response.status_code == 404 and "no file 7" in response.json()["detail"]


def test_a_recipe_is_downloaded_as_python_and_linked_from_the_page(challenge, alice, host):
    challenge, _ = challenge
    submission = submission_create_recipe(
        challenge=challenge, user=alice, method_name="recipe", recipe=UploadedFile("mine.py", RECIPE)
    )
    page = client_for(host).get(f"/submissions/{submission.pk}/").content.decode()
    assert f"/submissions/{submission.pk}/download/" in page
    response = client_for(alice).get(f"/api/submissions/{submission.pk}/download/")
    assert response.status_code == 200 and response["Content-Type"] == "text/x-python"
    assert response["Content-Disposition"] == f'attachment; filename="submission-{submission.pk}-recipe.py"'
    assert body(response) == RECIPE
    assert AuditEntry.objects.get(action="submission_downloaded").details["files"] == [
        f"submission-{submission.pk}-recipe.py"
    ]
