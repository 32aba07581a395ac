"""Issue 22: uploads refused by their header or footer before anything is parsed.

The wide CSV below (1.5 M columns, 15 MB) took the web process to 20 GB before; here it
must be refused from its header line, naming the limit. That nothing was parsed or decoded is
shown by readers that fail if they are called, not by a wall-clock bound (the timings of a
refusal are in benchmarks/bench_uploads.py).
"""

from __future__ import annotations

import io
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluation.io.read import TableError, check_columns, check_lines, read_table

MB = 1024 * 1024


def wide_csv(columns: int) -> bytes:
    header = b",".join(b"c%d" % i for i in range(columns))
    return header + b"\n" + b",".join([b"1"] * columns) + b"\n"


def _never_called(what: str):
    def fail(*args, **kwargs):
        raise AssertionError(f"{what} was called")

    return fail


def test_csv_with_one_and_a_half_million_columns_is_refused_from_its_header(monkeypatch):
    from evaluation.io import read

    monkeypatch.setattr(read, "_read_csv", _never_called("the CSV parser"))
    data = wide_csv(1_500_000)
    assert len(data) > 14 * MB
    with pytest.raises(TableError, match=r"dataset\.csv: the file has 1,500,000 columns; the limit is 10,000 columns"):
        read_table(data, filename="dataset.csv", max_bytes=100 * MB)


def test_csv_at_the_column_limit_is_read():
    df = read_table(wide_csv(50), filename="d.csv", max_bytes=MB, max_columns=50)
    assert df.shape == (1, 50)


def test_quoted_commas_do_not_count_as_columns():
    df = read_table(b'id,"a,b,c"\n1,2\n', filename="d.csv", max_bytes=MB, max_columns=2)
    assert list(df.columns) == ["id", "a,b,c"]
    with pytest.raises(TableError, match="has 3 columns; the limit is 2 columns"):
        read_table(b'id,"a,b",c\n1,2,3\n', filename="d.csv", max_bytes=MB, max_columns=2)


def test_header_line_longer_than_the_bound_is_refused():
    data = b"x" * (256 * 4 + 1) + b",y\n1,2\n"
    bound = r"the header line is 1,027 bytes long; a file of at most 4 columns .* may have a header of 1,024 bytes"
    with pytest.raises(TableError, match=bound):
        check_columns(data, filename="d.csv", max_columns=4)
    # a 2 MB file of one line (a new user's upload): said, and the limit named as the upload's, not the format's
    with pytest.raises(TableError, match=r"not its format's.*The file is a single line"):
        check_columns(b"x" * 2_000_000, filename="p.csv", max_columns=14)


def parquet_bytes(table: pa.Table, **kwargs) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **kwargs)
    return buffer.getvalue()


def test_wide_parquet_is_refused_from_its_footer():
    data = parquet_bytes(pa.table({f"c{i}": [1] for i in range(2_000)}))
    with pytest.raises(TableError, match="the file has 2,000 columns; the limit is 1,000 columns"):
        read_table(data, filename="d.parquet", max_bytes=100 * MB, max_columns=1_000)


def test_parquet_decoding_to_960_mb_is_refused_from_its_footer(monkeypatch):
    # 120 M int64 zeros: 960 MB decoded, a few hundred kilobytes on disk.
    column = pa.array([0] * 1_000_000, type=pa.int64())
    table = pa.table({"x": pa.chunked_array([column] * 120)})
    data = parquet_bytes(table, compression="zstd", row_group_size=10_000_000)
    assert len(data) < 10 * MB
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", _never_called("a batch read"))
    monkeypatch.setattr(pq.ParquetFile, "read", _never_called("a whole-file read"))
    with pytest.raises(TableError, match="once decompressed; the limit is"):
        read_table(data, filename="bomb.parquet", max_bytes=10 * MB, max_rows=200_000_000)


def test_prediction_lines_are_counted_before_parsing():
    import tracemalloc

    data = b"id,p\n" + b"a,0.5\n" * 2_000_000
    tracemalloc.start()
    try:
        with pytest.raises(TableError, match="the file has 2,000,000 rows after its header; the limit is 1,100 rows"):
            check_lines(data, filename="p.csv", max_rows=1_100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # the 12 MB file counted where it lies: neither copied nor split
    check_lines(b"id,p\na,1\nb,2", filename="p.csv", max_rows=2)  # no final newline: 2 rows


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_max_columns_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="max_columns must be a positive integer"):
        read_table(b"a\n1\n", filename="d.csv", max_bytes=MB, max_columns=bad)


# ------------------------------------------------ parsed in a child under a memory limit (evaluation/io/guarded.py)


def _numeric_csv(rows: int) -> bytes:
    return b"id,label,is_test,x,y\n" + b"".join(
        b"%d,%d,%d,%d.5,%d.25\n" % (i, i % 3, i % 5 == 0, i, i) for i in range(rows)
    )


def test_guarded_parse_returns_the_same_frame_as_a_direct_parse():
    from evaluation.io.guarded import read_table_guarded

    data = _numeric_csv(2_000)
    kwargs = dict(filename="d.csv", max_bytes=10 * MB, text_columns=["id", "label"])
    guarded = read_table_guarded(data, memory_limit=512 * MB, **kwargs)
    direct = read_table(data, **kwargs)
    assert guarded.equals(direct)
    assert list(guarded.dtypes) == list(direct.dtypes)
    assert guarded.index.tolist() == direct.index.tolist()


def test_guarded_parse_over_its_memory_limit_names_the_limit():
    from evaluation.io.guarded import read_table_guarded

    data = _numeric_csv(1_000_000)  # ~25 MB of CSV: far more than 8 MB to parse
    start = time.perf_counter()
    with pytest.raises(TableError, match=r"the file needs more than 8 MB to parse; the limit is 8 MB"):
        read_table_guarded(data, memory_limit=8 * MB, filename="d.csv", max_bytes=100 * MB)
    assert time.perf_counter() - start < 30


def test_guarded_parse_passes_table_errors_through():
    from evaluation.io.guarded import read_table_guarded

    with pytest.raises(TableError, match="the file has 6 columns; the limit is 5 columns"):
        read_table_guarded(
            b"a,b,c,d,e,f\n1,2,3,4,5,6\n", memory_limit=256 * MB, filename="d.csv", max_bytes=MB, max_columns=5
        )


def test_guarded_parse_that_does_not_answer_in_time_is_killed():
    from evaluation.io.guarded import read_table_guarded

    start = time.perf_counter()
    with pytest.raises(TableError, match=r"took more than 0.01 s to parse"):
        read_table_guarded(
            _numeric_csv(300_000), memory_limit=1024 * MB, timeout=0.01, filename="d.csv", max_bytes=100 * MB
        )
    assert time.perf_counter() - start < 5


def _arrow_pool_backend() -> str:
    import pyarrow as pa

    return pa.default_memory_pool().backend_name


def test_the_guarded_child_allocates_arrow_memory_from_the_system_allocator():
    """mimalloc's arenas are address space an RLIMIT_AS refuses: under gunicorn, a child reading
    a 7.6 MB prediction file failed with "malloc of size 640 failed" at a 1,024 MB allowance."""
    from evaluation.io.guarded import run_guarded

    assert run_guarded(_arrow_pool_backend, memory_limit=256 * MB, timeout=20) == "system"


def test_the_parsing_child_dies_with_the_web_worker_that_forked_it(tmp_path):
    """Review finding: a web worker killed mid-upload (a deploy, gunicorn's timeout) left its child parsing
    for up to VARBOARD_UPLOAD_CHECK_S with its memory allowance; PR_SET_PDEATHSIG now ends it at once."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    marker = tmp_path / "child.pid"
    script = (
        "import os, time, sys\n"
        "from evaluation.io.guarded import run_guarded\n"
        "def work(path):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        f"run_guarded(work, {str(marker)!r}, memory_limit=256 * 2**20, timeout=120)\n"
    )
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    child = None
    try:
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(marker.read_text())
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child), f"the child {child} outlived its parent"
    finally:
        parent.kill()
        parent.wait(timeout=10)
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:  # reparented to this process when the test runner is a subreaper: reap it here
                os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pass


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process: not gone and not a zombie (a killed orphan awaiting its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")
