"""A bundle export and a label correction do not parse the dataset's stored parts in the web process, and a host's
dataset preview keeps none of them parsed.

Both are host requests on a dataset whose parts are uploads of up to ``VARBOARD_MAX_DATASET_MB``. The export parsed
the three parts as text columns, wrote them out again as CSV, and built the zip in memory (and the parsed parts
stayed in the process's cache); the label correction parsed the training rows and test inputs whole and wrote them
out again as CSV, only to hash them for the dataset's new version. Measured with tracemalloc in the web process (the
child that checks the labels is a forked process, not traced here).
"""

from __future__ import annotations

import hashlib
import io
import tracemalloc
import zipfile

import pandas as pd
import pytest
from django.test import Client

from leaderboard.services.dataset_files import dataset_test_ids
from leaderboard.services.rescoring import challenge_rescore

from . import test_download_bounds
from .factories import csv_bytes
from .test_download_bounds import MB, stored_digest

large_challenge = test_download_bounds.large_challenge  # the fixture: stored training rows and test inputs of 16 MB

pytestmark = pytest.mark.django_db


def traced_peak(action) -> tuple[object, float]:
    """What ``action()`` returns and the peak of traced memory while it ran, in MB."""
    tracemalloc.start()
    try:
        return action(), tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


def streamed_digest(client: Client, url: str) -> str:
    """The SHA-256 of the body of a GET of ``url`` by ``client``, through the handler and every middleware (not the
    test client's OpenAPI check, which reads a streamed body whole), hashed as it is read."""
    response = client.handler(client._base_environ(PATH_INFO=url, REQUEST_METHOD="GET"))
    assert response.status_code == 200, response
    digest = hashlib.sha256()
    for chunk in response.streaming_content if response.streaming else [response.content]:
        digest.update(chunk)
    del response
    return digest.hexdigest()


@pytest.mark.parametrize("url", ["/c/{slug}/bundle/", "/api/challenges/{slug}/bundle/"])
def test_a_bundle_export_streams_the_stored_parts(large_challenge, host, url):
    challenge, _ = large_challenge
    client = Client()
    client.force_login(host)
    client.get("/api/")  # the first request's imports and caches
    path = url.format(slug=challenge.slug)
    _, peak = traced_peak(lambda: streamed_digest(client, path))
    assert peak < 8, f"{peak:.0f} MB traced for an export of two 16 MB parts"
    response = client.get(path)
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        for part, field in (("train", "train_file"), ("test_inputs", "test_inputs_file")):
            stored = getattr(challenge.dataset, field)
            assert hashlib.sha256(archive.read(f"data/{part}.csv")).hexdigest() == stored_digest(stored)


def test_a_label_correction_hashes_the_stored_parts_without_parsing_them(large_challenge, host):
    challenge, rows = large_challenge
    dataset = challenge.dataset
    ids = dataset_test_ids(dataset=dataset)
    assert len(ids) == rows
    labels = csv_bytes(pd.DataFrame({"id": ids, "label": [str(i % 10) for i in range(rows)]}))
    _, peak = traced_peak(lambda: challenge_rescore(challenge=challenge, user=host, hidden_labels=("l.csv", labels)))
    dataset.refresh_from_db()
    with dataset.hidden_labels_file.open("rb") as handle:
        assert handle.read() == labels
    version = hashlib.sha256()
    for field in (dataset.train_file, dataset.test_inputs_file):
        with field.open("rb") as handle:
            version.update(handle.read() + b"\0")
    version.update(labels)
    assert dataset.version == version.hexdigest()  # a hash of the data as stored, as at the upload
    # the labels (about a megabyte) and the test ids are held; the 16 MB parts are not
    assert peak < 4 * len(labels) / MB + rows * 120 / MB + 4, f"{peak:.0f} MB traced for parts of 16 MB"


def test_a_host_s_dataset_preview_keeps_no_parsed_training_rows(large_challenge, host):
    """The preview page parsed the training rows as text columns through ``dataset_frame``, whose cache kept them for
    good (32 MB of pandas' Arrow strings for 16 MB of training rows, per dataset version, up to 32 datasets); only the
    preview itself (a few rows and per-column counts) is kept now. Arrow's pool is what holds the strings: counted by
    ``pyarrow.total_allocated_bytes``, which tracemalloc does not see."""
    import pyarrow as pa

    challenge, _ = large_challenge
    client = Client()
    client.force_login(host)
    held = pa.total_allocated_bytes()
    page = client.get(f"/c/{challenge.slug}/preview/")
    assert page.status_code == 200 and "tr0" in page.content.decode()  # the first training row
    kept = (pa.total_allocated_bytes() - held) / MB
    assert kept < 2, f"{kept:.0f} MB of parsed training rows kept after the preview of 16 MB of them"
