"""A dataset's public parts are served without holding them in the web process's memory.

Anyone may download a public challenge's training rows, test inputs and sample submission; the parts are
uploads of up to ``VARBOARD_MAX_DATASET_MB`` each. A part was read whole into memory for each request (and
compressed there again: about twice its size per request), and the sample submission parsed every column of
the test inputs as text in the web process and kept that table in the process's cache (a 40 MB test set took
+100 MB of the web process, for good). Measured with tracemalloc: the peak of one request, and what it leaves.
"""

from __future__ import annotations

import gc
import hashlib
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from django.test import Client

from .factories import digits_challenge

pytestmark = pytest.mark.django_db

MB = 1024 * 1024


def grown(field, megabytes: int, prefix: str) -> int:
    """Rewrite the stored part ``field`` as ``megabytes`` of random rows with its own columns; returns the rows."""
    with open(field.path, "rb") as handle:
        columns = handle.readline().decode().strip().split(",")
    rows = megabytes * MB // (7 * len(columns))
    values = np.random.default_rng(0).integers(10**5, 10**6, size=(rows, len(columns) - 1))
    frame = pd.DataFrame(values, columns=columns[1:])
    frame.insert(0, columns[0], [f"{prefix}{i}" for i in range(rows)])
    frame.to_csv(field.path, index=False)
    return rows


@pytest.fixture
def large_challenge(host):
    """A public challenge whose stored training rows and test inputs are 16 MB each."""
    challenge, _ = digits_challenge(host)
    dataset = challenge.dataset
    grown(dataset.train_file, 16, "tr")
    rows = grown(dataset.test_inputs_file, 16, "te")
    dataset.version = "grown"
    dataset.save(update_fields=["version"])
    return challenge, rows


def measured(url: str, **headers) -> tuple[str, float]:
    """The SHA-256 of the body of an anonymous GET of ``url`` (hashed as it is read, never held whole) and the peak
    of traced memory while it is answered and read, in MB."""
    Client().get("/api/")  # the first request's imports and caches, not this one's
    gc.collect()
    tracemalloc.start()
    try:
        # through the handler and every middleware, without the test client's OpenAPI check (conftest), which
        # reads a streamed body whole to validate it
        client = Client()
        response = client.handler(client._base_environ(PATH_INFO=url, REQUEST_METHOD="GET", **headers))
        assert response.status_code == 200, response
        digest = hashlib.sha256()
        for chunk in response.streaming_content if response.streaming else [response.content]:
            digest.update(chunk)
        del response
        return digest.hexdigest(), tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


def stored_digest(field) -> str:
    with open(field.path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.mark.parametrize("encoding", ["", "gzip"])
@pytest.mark.parametrize("part", ["train", "test_inputs"])
def test_a_large_dataset_part_is_streamed_not_read_whole(large_challenge, part, encoding):
    challenge, _ = large_challenge
    field = getattr(challenge.dataset, f"{part}_file" if part == "train" else "test_inputs_file")
    body, peak = measured(f"/c/{challenge.slug}/download/{part}/", HTTP_ACCEPT_ENCODING=encoding)
    if not encoding:
        assert body == stored_digest(field)
    assert peak < 8, f"{part} ({encoding or 'identity'}): {peak:.0f} MB traced for a 16 MB part"


def test_the_api_streams_a_dataset_part_too(large_challenge):
    challenge, _ = large_challenge
    body, peak = measured(f"/api/challenges/{challenge.slug}/data/train/")
    assert body == stored_digest(challenge.dataset.train_file)
    assert peak < 8, f"{peak:.0f} MB traced for a 16 MB part"


def test_a_sample_submission_reads_only_the_test_ids(large_challenge):
    challenge, rows = large_challenge
    url = f"/c/{challenge.slug}/download/sample_submission/"
    lines = Client().get(url).content.decode().splitlines()  # its ids, in order (a first read, then measured)
    assert len(lines) == rows + 1 and lines[1].startswith("te0,") and lines[-1].startswith(f"te{rows - 1},")
    challenge.dataset.version = "grown again"  # nothing cached from the first read
    challenge.dataset.save(update_fields=["version"])
    _, peak = measured(url)
    ids = rows * 60 / MB  # the ids as Python strings, and the sample's text
    assert peak < 2 * ids + 4, f"{peak:.0f} MB traced for {rows:,} test rows of 16 MB"
