"""Issue 24: one ``upload_limit(kind)`` for every upload (``leaderboard/limits.py``).

Before, the limits were read in a dozen places and disagreed: a recipe was refused at 512 KB while it
streamed but read up to 1 MB by its reader, a results import took 20 MB files through the API and 50 MB
ones through the web form, and the web bundle import and the web import's instance list read whatever
came, without a bound. Now the handler, the readers and the services ask the same function.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard import limits
from leaderboard.limits import KINDS, upload_limit
from leaderboard.models import Challenge, Submission
from leaderboard.services.errors import ServiceError
from leaderboard.uploads import read_recipe_upload, read_upload

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
SIZE_SETTINGS = (
    "MAX_DATASET_MB",
    "MAX_DATASET_DECODED_MB",
    "MAX_PREDICTION_MB",
    "MAX_RECIPE_KB",
    "MAX_PREDICTION_FILES",
)


def test_the_upload_size_settings_are_read_in_one_place():
    code = [
        path for folder in ("leaderboard", "tasks", "evaluation", "execution") for path in (ROOT / folder).rglob("*.py")
    ]
    named = re.compile("|".join(SIZE_SETTINGS))
    readers = {str(path.relative_to(ROOT)) for path in code if named.search(path.read_text())}
    assert readers == {"leaderboard/limits.py", "leaderboard/settings.py"}, readers


def test_every_kind_has_a_limit_named_in_its_unit(settings):
    settings.VARBOARD = {**settings.VARBOARD, "MAX_RECIPE_KB": 512, "MAX_PREDICTION_MB": 20}
    assert {kind: upload_limit(kind).label for kind in KINDS} == {
        "dataset": f"{settings.VARBOARD['MAX_DATASET_MB']} MB",
        "dataset_decoded": f"{settings.VARBOARD['MAX_DATASET_DECODED_MB']} MB",
        "prediction": "20 MB",
        "recipe": "512 KB",
        "bundle": f"{limits.BUNDLE_MB} MB",
        "manifest": f"{limits.MANIFEST_MB} MB",
        "program": f"{limits.PROGRAM_KB} KB",
        "hyperparameters": f"{limits.HYPERPARAMETERS_KB} KB",
    }
    assert upload_limit("recipe").max_bytes == 512 * 1024 and upload_limit("recipe").size(600 * 1024) == "600 KB"
    with pytest.raises(ValueError, match="no upload limit for 'notebook'; the kinds are dataset, "):
        upload_limit("notebook")


def test_a_recipe_is_refused_by_its_reader_at_the_size_the_handler_refuses(settings):
    """The reader rounded the KB limit up to whole megabytes: a 600 KB recipe passed it under a 512 KB limit."""
    settings.VARBOARD = {**settings.VARBOARD, "MAX_RECIPE_KB": 512}
    with pytest.raises(ServiceError) as refused:
        read_recipe_upload(SimpleUploadedFile("recipe.py", b"#" * 600 * 1024))
    assert (refused.value.message, refused.value.field) == ("recipe.py is 600 KB; the limit is 512 KB.", "recipe")
    assert read_recipe_upload(SimpleUploadedFile("recipe.py", b"#" * 512 * 1024)).data == b"#" * 512 * 1024


def test_a_results_import_takes_the_same_file_size_through_the_api_and_the_web(settings):
    settings.VARBOARD = {**settings.VARBOARD, "MAX_PREDICTION_MB": 1}
    with pytest.raises(ServiceError, match=r"r.csv is 1.5 MB; the limit is 1 MB."):
        read_upload(SimpleUploadedFile("r.csv", b"x" * (3 * 512 * 1024)), kind="prediction", field="files")


def test_a_web_bundle_over_its_limit_is_refused_on_the_form_while_it_streams(client, host, monkeypatch, spooled):
    """The web import read the whole upload into memory (``data["bundle"].read()``) before any check."""
    monkeypatch.setattr(limits, "BUNDLE_MB", 1)
    client.force_login(host)
    response = client.post("/challenges/new/bundle/", {"bundle": SimpleUploadedFile("big.zip", b"PK" * 1024 * 1024)})
    page = response.content.decode()
    assert response.status_code == 400 and "big.zip is larger than 1 MB; the limit is 1 MB per file." in page
    assert spooled.get("big.zip", 0) <= 1024 * 1024 + 64 * 1024  # stopped at the limit, not stored whole
    assert Challenge.objects.count() == 0


def test_a_web_results_import_file_over_the_limit_is_refused_on_the_form(client, host, settings, spooled):
    client.force_login(host)
    created = client.post(
        "/challenges/new/results-only/",
        {"title": "QA", "slug": "qa-results", "metric": "accuracy", "direction": "higher", "visibility": "private"},
    )
    assert created.status_code == 302, created.content.decode()[:500]
    before = Submission.objects.count()
    settings.VARBOARD = {**settings.VARBOARD, "MAX_PREDICTION_MB": 1}
    for field in ("files", "instances"):
        upload = {"format": "csv", "team": "Harness", "source": "self_reported"}
        upload["files"] = SimpleUploadedFile("r.csv", b"model,instance_id,correct\n")
        upload[field] = SimpleUploadedFile(f"{field}.txt", b"a,1,1\n" * 400_000)  # 2.4 MB
        response = client.post("/c/qa-results/import/", upload)
        page = response.content.decode()
        assert response.status_code == 400, page[:500]
        assert f"{field}.txt is larger than 1 MB; the limit is 1 MB per file." in page
    assert Submission.objects.count() == before
