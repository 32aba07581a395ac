"""Issue 22: oversized uploads refused through the REST API before they are parsed.

Each case is the issue's measured attack (1.5 M-column dataset, 2 M-row prediction
file, 40 prediction files of 19 MB): each must answer 400 naming the limit in under a
second, store nothing, and leave the web process's peak memory where it was.
"""

from __future__ import annotations

import resource
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Challenge, Submission

from .test_api import client_for, submit

pytestmark = pytest.mark.django_db

MB = 1024 * 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def wide_csv(columns: int) -> bytes:
    header = b"id,label,is_test," + b",".join(b"c%d" % i for i in range(columns - 3))
    return header + b"\n" + b",".join([b"1"] * columns) + b"\n"


def test_dataset_with_one_and_a_half_million_columns_is_refused_in_under_a_second(alice, media):
    data = wide_csv(1_500_000)
    assert len(data) > 14 * MB
    client = client_for(alice)
    start = time.perf_counter()
    response = client.post("/api/challenges/", {
        "title": "Wide", "metric": "accuracy", "dataset": SimpleUploadedFile("dataset.csv", data),
        "id_column": "id", "label_column": "label", "test_column": "is_test",
    }, format="multipart")
    elapsed = time.perf_counter() - start
    assert response.status_code == 400, response.content
    assert "1,500,000 columns; the limit is 10,000 columns" in response.content.decode()
    assert elapsed < 1.0, elapsed
    assert Challenge.objects.count() == 0


def test_dataset_column_limit_is_a_setting(alice, settings):
    settings.VARBOARD = {**settings.VARBOARD, "MAX_DATASET_COLUMNS": 5}
    response = client_for(alice).post("/api/challenges/", {
        "title": "Six", "metric": "accuracy", "dataset": SimpleUploadedFile("d.csv", wide_csv(6)),
        "id_column": "id", "label_column": "label", "test_column": "is_test",
    }, format="multipart")
    assert response.status_code == 400
    assert "the file has 6 columns; the limit is 5 columns" in response.content.decode()


def test_prediction_file_of_two_million_rows_is_refused_by_its_row_count(challenge, alice):
    challenge, frame = challenge
    n_test = int((frame.is_test == 1).sum())
    data = b"id,prediction\n" + b"x,1\n" * 2_000_000
    before = peak_rss_mb()
    start = time.perf_counter()
    response = submit(client_for(alice), challenge.slug, [("p.csv", data)])
    elapsed = time.perf_counter() - start
    assert response.status_code == 400, response.content
    assert f"2,000,000 rows after its header; the limit is {n_test + 1000:,} rows" in response.content.decode()
    assert elapsed < 1.0, elapsed
    assert peak_rss_mb() - before < 100  # the 8 MB file, a copy or two: no parse
    assert Submission.objects.count() == 0


def test_prediction_file_with_a_few_extra_blank_lines_is_still_accepted(challenge, alice):
    from .factories import label_predictions

    challenge, frame = challenge
    response = submit(client_for(alice), challenge.slug, [("p.csv", label_predictions(frame) + b"\n" * 20)])
    assert response.status_code == 202, response.content


def test_forty_large_prediction_files_are_refused_by_their_count_before_any_is_read(challenge, alice, monkeypatch):
    challenge, _ = challenge
    import leaderboard.uploads

    reads = []
    original = leaderboard.uploads._read_bounded

    def counting_read(upload, **kwargs):
        reads.append(upload.name)
        return original(upload, **kwargs)

    monkeypatch.setattr(leaderboard.uploads, "_read_bounded", counting_read)
    data = b"id,prediction\n" + b"x,1\n" * 4_750_000  # 19 MB
    files = [(f"p{i}.csv", data) for i in range(40)]
    start = time.perf_counter()
    response = submit(client_for(alice), challenge.slug, files)
    elapsed = time.perf_counter() - start
    assert response.status_code == 400, response.content
    assert f"40 files were uploaded; this challenge takes at most {challenge.k_runs}" in response.content.decode()
    assert reads == []
    assert Submission.objects.count() == 0
    print(f"40 x 19 MB refused in {elapsed:.2f} s (client encoding included)")


def test_more_files_than_the_platform_limit_are_refused_by_count(challenge, alice, settings):
    challenge, frame = challenge
    settings.VARBOARD = {**settings.VARBOARD, "MAX_PREDICTION_FILES": 2}
    response = submit(client_for(alice), challenge.slug, [(f"p{i}.csv", b"id,prediction\n") for i in range(3)])
    assert response.status_code == 400
    assert "3 files were uploaded; the limit is 2 files per submission." in response.content.decode()


def test_accepted_prediction_files_are_read_once_each(challenge, alice, monkeypatch):
    import leaderboard.uploads

    from .factories import label_predictions

    challenge, frame = challenge
    reads = []
    original = leaderboard.uploads._read_bounded
    monkeypatch.setattr(leaderboard.uploads, "_read_bounded",
                        lambda upload, **kw: reads.append(upload.name) or original(upload, **kw))
    files = [(f"p{i}.csv", label_predictions(frame, seed=i)) for i in range(2)]
    assert submit(client_for(alice), challenge.slug, files).status_code == 202
    assert reads == ["p0.csv", "p1.csv"]


def test_uploads_over_a_megabyte_spool_to_disk(settings):
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE <= MB


def test_parquet_dataset_decoding_to_960_mb_is_refused_from_its_footer(alice):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    zeros = pa.chunked_array([pa.array([0] * 1_000_000, type=pa.int64())] * 4)
    buffer = io.BytesIO()
    pq.write_table(pa.table({f"c{i}": zeros for i in range(30)}), buffer, compression="zstd",
                   row_group_size=50_000_000)
    before = peak_rss_mb()
    start = time.perf_counter()
    response = client_for(alice).post("/api/challenges/", {
        "title": "Bomb", "metric": "accuracy", "dataset": SimpleUploadedFile("d.parquet", buffer.getvalue()),
        "id_column": "c0", "label_column": "c1", "test_column": "c2",
    }, format="multipart")
    elapsed = time.perf_counter() - start
    assert response.status_code == 400, response.content
    assert "915.5 MB once decompressed; the limit is 256 MB decompressed" in response.content.decode()
    assert elapsed < 1.0, elapsed
    assert peak_rss_mb() - before < 100  # nothing decoded
    assert Challenge.objects.count() == 0
