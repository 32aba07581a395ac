"""Upload bounds benchmark (issue 22): time to refusal and the web process's peak memory.

Prints figures; not a test. Set-up, all in a temporary folder (nothing shared touched):
SQLite, local media, the file-system broker; a user with a token and a challenge with a
few hundred test rows. For each case a fresh gunicorn (1 sync worker, 127.0.0.1, a free
port) is started, so its worker's peak resident memory (``VmHWM`` in
``/proc/<worker>/status``) belongs to that one request; the client streams the multipart
body from a file on disk, so the client's memory is not the server's.

Cases, in one run:

* ``wide_csv``: a 15 MB dataset CSV with 1.5 M columns (``POST /api/challenges/``);
* ``parquet_960mb``: a 7 MB Parquet dataset decoding to 960 MB (4 M rows of 30 int64 columns);
* ``parquet_bomb``: a Parquet file of a few MB decoding to 8 GB (10^9 zeros);
* ``rows_2m``: a prediction CSV of 2 M rows (19 MB; ``POST .../submissions/``);
* ``files_40``: 40 prediction files of 19 MB (760 MB in one request);
* ``ok_csv``: a valid 15 MB dataset (10 columns, 200,000 rows), accepted: parsed, checked,
  split and written by a child under ``RLIMIT_AS``; the web worker only streams the parts;
* ``ok_predictions``: a valid 15 MB prediction file (1.55 M rows) for a challenge with 1.55 M
  test rows (created in the set-up, in ~20 s), accepted;
* reference ``idle``: a GET of the challenge list: the worker's footprint with no upload.

Each line ends with the targets of issue 22: a refusal in under 1 s, and the web worker's
peak resident memory under 300 MB (for every case, accepted or not).

Run from the repository root::

    .venv/bin/python benchmarks/bench_uploads.py
    .venv/bin/python benchmarks/bench_uploads.py --case wide_csv   # one case
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ["idle", "wide_csv", "parquet_960mb", "parquet_bomb", "rows_2m", "files_40", "ok_csv", "ok_predictions"]
ACCEPTED = ("idle", "ok_csv", "ok_predictions")
TARGET_MB, TARGET_S = 300, 1.0
BIG_TEST_ROWS = 1_550_000

SETUP = r"""
import json, sys
sys.path.insert(0, ".")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
from knox.models import AuthToken
from tests.platform.factories import digits_challenge
user = User.objects.create_user("bench", password="x")
challenge, _ = digits_challenge(user, k_runs=5)
big = None
if "--big" in sys.argv:  # a challenge whose test set takes a 15 MB prediction file
    from leaderboard.services.challenges import DatasetUpload, challenge_create
    rows = b"".join(b"r%d,%d,%d\n" % (i, i % 2, i >= 1000) for i in range(%(rows)d + 1000))
    upload = DatasetUpload(data=b"id,label,is_test\n" + rows, filename="big.csv", id_column="id",
                           label_column="label", test_column="is_test")
    big = challenge_create(created_by=user, dataset=upload, title="Big test set", metric="accuracy",
                           k_runs=1, allow_predictions=True).slug
print(json.dumps({"token": AuthToken.objects.create(user)[1], "slug": challenge.slug, "big": big}))
""".replace("%(rows)d", str(BIG_TEST_ROWS))


def _parquet(table) -> bytes:
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", row_group_size=50_000_000)
    return buffer.getvalue()


def dataset_file(case: str) -> tuple[str, bytes]:
    import pyarrow as pa

    if case == "wide_csv":
        columns = 1_500_000
        return "dataset.csv", (
            b"id,label,is_test,"
            + b",".join(b"c%d" % i for i in range(columns - 3))
            + b"\n"
            + b",".join([b"1"] * columns)
            + b"\n"
        )
    if case == "ok_csv":
        row = b"%d,%d,%d,0.123456,0.234567,0.345678,0.456789,0.567891,0.678912,0.789123\n"
        body = b"".join(row % (i, i % 3, i % 4 == 0) for i in range(200_000))
        return "dataset.csv", b"id,label,is_test,a,b,c,d,e,f,g\n" + body
    if case == "parquet_960mb":  # sparse ones among zeros: ~7 MB of zstd, as the 6.9 MB file
        import numpy as np

        rng = np.random.default_rng(0)
        columns = {f"c{i}": pa.array((rng.random(4_000_000) < 0.04).astype(np.int64)) for i in range(30)}
        return "dataset.parquet", _parquet(pa.table(columns))
    zeros = pa.chunked_array([pa.array([0] * 1_000_000, type=pa.int64())] * 1000)
    return "dataset.parquet", _parquet(pa.table({"x": zeros}))


def write_multipart(path: Path, fields: dict, files: list[tuple[str, str, bytes]]) -> str:
    """Write a multipart/form-data body to `path`; return its boundary."""
    boundary = uuid.uuid4().hex
    with path.open("wb") as out:
        for name, value in fields.items():
            out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        for field, filename, data in files:
            out.write(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
                f"Content-Type: application/octet-stream\r\n\r\n".encode()
            )
            out.write(data)
            out.write(b"\r\n")
        out.write(f"--{boundary}--\r\n".encode())
    return boundary


def request_for(case: str, slug: str, body: Path, big: str | None = None) -> tuple[str, str, str | None]:
    """(method, path, boundary) with the body written to `body`."""
    if case == "idle":
        return "GET", "/api/challenges/", None
    if case == "ok_predictions":
        data = b"id,prediction\n" + b"".join(b"r%d,%d\n" % (i, i % 2) for i in range(1000, BIG_TEST_ROWS + 1000))
        return (
            "POST",
            f"/api/challenges/{big}/submissions/",
            write_multipart(body, {"method_name": "m"}, [("files", "p.csv", data)]),
        )
    if case in ("rows_2m", "files_40"):
        if case == "rows_2m":  # 2 M rows, 19 MB, as in the issue
            data = b"id,prediction\n" + b"".join(b"%07d,1\n" % i for i in range(2_000_000))
        else:
            data = b"id,prediction\n" + b"x,1\n" * 4_750_000
        files = [("files", f"p{i}.csv", data) for i in range(1 if case == "rows_2m" else 40)]
        return "POST", f"/api/challenges/{slug}/submissions/", write_multipart(body, {"method_name": "m"}, files)
    name, data = dataset_file(case)
    fields = {"title": case, "metric": "accuracy", "id_column": "id", "label_column": "label", "test_column": "is_test"}
    return "POST", "/api/challenges/", write_multipart(body, fields, [("dataset", name, data)])


def post_until_answered(port: int, method: str, path: str, headers: dict, body: Path) -> tuple[int, str]:
    """Send the body, but stop as soon as the server answers (as curl does): (status, text).

    A server that refuses an upload early may answer and close while the client is still
    sending; http.client would then fail with a broken pipe and never read the answer.
    """
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=600) as sock, body.open("rb") as stream:
        sock.sendall(head.encode())
        while chunk := stream.read(1024 * 1024):
            if select.select([sock], [], [], 0)[0]:
                break  # the server has answered: stop sending
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        try:
            while data := sock.recv(65536):
                received += data
                if b"\r\n\r\n" in received and _complete(received):
                    break
        except ConnectionResetError:
            pass
    head_text, _, text = received.partition(b"\r\n\r\n")
    status = int(head_text.split()[1]) if head_text else 0
    return status, text.decode(errors="replace")


def _complete(received: bytes) -> bool:
    head, _, text = received.partition(b"\r\n\r\n")
    for line in head.decode(errors="replace").splitlines():
        if line.lower().startswith("content-length:"):
            return len(text) >= int(line.split(":")[1])
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_gunicorn(env: dict, port: int) -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "leaderboard.wsgi",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "600",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        if children:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/api/challenges/")  # also warms the worker up (imports)
                conn.getresponse().read()
                return server, int(children[0])
            except OSError:
                pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError("gunicorn did not start in 60 s")


def measure(case: str, env: dict, setup: dict, folder: Path) -> dict:
    body = folder / "body"
    method, path, boundary = request_for(case, setup["slug"], body, setup.get("big"))
    port = free_port()
    server, worker = start_gunicorn(env, port)
    try:
        before = vm_hwm_mb(worker)
        headers = {"Authorization": f"Token {setup['token']}"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        start = time.perf_counter()
        if boundary is None:
            conn.request(method, path, headers=headers)
        else:
            headers |= {
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(body.stat().st_size),
            }
            conn.close()
            status, text = post_until_answered(port, method, path, headers, body)
        if boundary is None:
            response = conn.getresponse()
            status, text = response.status, response.read().decode(errors="replace")
        elapsed = time.perf_counter() - start
        return {
            "case": case,
            "mb": body.stat().st_size / 2**20 if boundary else 0.0,
            "status": status,
            "seconds": elapsed,
            "before": before,
            "after": vm_hwm_mb(worker),
            "message": text[:100],
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
        body.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "VARBOARD_VAR_DIR": name,
            "DATABASE_URL": f"sqlite:///{name}/db.sqlite3",
            "CACHE_URL": "locmemcache://",
            "CELERY_BROKER_URL": f"filesystem://{name}",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        }
        env.pop("VARBOARD_MEDIA_ROOT", None)
        cases = [args.case] if args.case else CASES
        big = ["--big"] if "ok_predictions" in cases else []
        out = subprocess.run(
            [sys.executable, "-c", SETUP, *big], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if out.returncode:
            sys.exit(f"set-up failed:\n{out.stderr[-3000:]}")
        setup = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"targets: a refusal in under {TARGET_S:g} s; the web worker's peak RSS under {TARGET_MB} MB")
        print(
            f"{'case':<14} {'body MB':>8} {'status':>6} {'seconds':>8} {'worker VmHWM before':>20} {'after':>8}"
            f" {'targets':>8}  answer"
        )
        for case in cases:
            r = measure(case, env, setup, folder)
            fast = case in ACCEPTED or r["seconds"] < TARGET_S
            verdict = "met" if fast and r["after"] < TARGET_MB else "MISSED"
            print(
                f"{r['case']:<14} {r['mb']:>8.1f} {r['status']:>6} {r['seconds']:>8.3f} {r['before']:>17.0f} MB"
                f" {r['after']:>5.0f} MB {verdict:>8}  {r['message']}"
            )


if __name__ == "__main__":
    main()
