"""Benchmark the statistical report: recomputation, and the cached leaderboard under load.

Prints figures; not a test. Targets (issue 5): recomputing the report of 100 entries x 50
runs in <= 3 s; the leaderboard endpoint, served from the cache to 50 concurrent clients
on loopback, at p50 <= 50 ms and p99 <= 250 ms with no errors. Every figure is shown
next to a reference measured in the same run:

* the pure report (``evaluation.report.build_report``) next to the naive loop of one
  ``stats.compare`` call per pair, which the vectorised ``pairwise_comparisons`` replaces;
* the full recomputation (one query, the report, saving the JSON) next to its parts;
* the cached endpoint under load next to one client alone, the first (cache-cold)
  request, and a request recomputed on the fly (``?n=`` differing from the challenge).

The server is gunicorn (sync workers, one per CPU) on 127.0.0.1 over a temporary
PostgreSQL database when one answers on 127.0.0.1:5432 (as in production), else a
temporary SQLite file (``--database-url`` to choose). The load comes from ``wrk`` when
installed, else from a bounded Python thread pool. The cached endpoint is loaded twice:
with the process-local micro-cache for anonymous readers off (the Django cache of the
rendered bytes and one query per request), then on (1 s, no query). Run from the
repository root::

    .venv/bin/python benchmarks/bench_report.py            # defaults: 100 x 50, B = 2000
    .venv/bin/python benchmarks/bench_report.py --quick    # 20 x 10, B = 200, 3 s of load
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    """(best wall time of ``repeat`` calls, last result)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def synthetic_scores(entries: int, runs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Test and validation scores, (entries, runs): close entries, so groups overlap."""
    rng = np.random.default_rng(seed)
    test = 0.70 + 0.15 * np.arange(entries)[:, None] / entries + 0.01 * rng.standard_normal((entries, runs))
    return test, test + 0.005 * rng.standard_normal((entries, runs))


# ----------------------------------------------------------------------------- pure part
def bench_pure(args) -> None:
    from evaluation import stats
    from evaluation.report import EntryRuns, ReportSettings, build_report

    test, valid = synthetic_scores(args.entries, args.runs)
    entries = [
        EntryRuns(i + 1, f"method-{i}", f"team-{i}", "recipe", args.runs, np.arange(args.runs), test[i], valid=valid[i])
        for i in range(args.entries)
    ]
    settings = ReportSettings(n_resamples=args.resamples, k_runs=args.runs, boo_n=5, master_seed=1)
    seconds, report = timed(lambda: build_report(entries, settings), repeat=2)
    pairs = args.entries * (args.entries - 1) // 2
    print(
        f"build_report ({args.entries} entries x {args.runs} runs, B={args.resamples}): {seconds:.3f} s "
        f"(target <= 3 s); {len(json.dumps(report)) / 1e6:.2f} MB of JSON, {pairs} comparisons"
    )
    vector, _ = timed(lambda: stats.pairwise_comparisons(test, paired=True, n_resamples=args.resamples, rng=1))
    sample = min(pairs, args.naive_pairs)
    iu, ju = np.triu_indices(args.entries, 1)

    def naive():
        for i, j in zip(iu[:sample], ju[:sample]):
            stats.compare(test[i], test[j], paired=True, n_resamples=args.resamples, rng=1)

    loop, _ = timed(naive)
    print(
        f"  all pairs, vectorised pairwise_comparisons: {vector:.3f} s; reference, naive loop of compare(): "
        f"{loop:.3f} s for {sample} pairs -> {loop * pairs / sample:.1f} s for {pairs} "
        f"({loop * pairs / sample / vector:.0f}x slower)"
    )


# --------------------------------------------------------------------------- Django part
BENCH_SETTINGS = """from leaderboard.settings import *  # noqa: F401,F403
import os as _os

VARBOARD = {**VARBOARD, "LEADERBOARD_MICROCACHE_S": float(_os.environ.get("BENCH_MICROCACHE_S", "0"))}
"""
POSTGRES = ("127.0.0.1", 5432)


def postgres_database(create: bool) -> str:
    """Create (or drop) this run's PostgreSQL database; returns its URL."""
    import psycopg

    name = f"varboard_bench_{os.getpid()}"
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True) as conn:
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')
        else:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def django_setup(var_dir: Path, database_url: str | None) -> dict:
    """Settings for this process and the server: a temporary var/, the given database."""
    (var_dir / "bench_settings.py").write_text(BENCH_SETTINGS)
    sys.path.insert(0, str(var_dir))
    env = {
        "DJANGO_SETTINGS_MODULE": "bench_settings",
        "PYTHONPATH": f"{var_dir}{os.pathsep}{ROOT}",
        "VARBOARD_VAR_DIR": str(var_dir),
        "VARBOARD_MEDIA_ROOT": str(var_dir / "media"),
        "DJANGO_DEBUG": "false",
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def populate(args) -> int:
    from django.contrib.auth.models import User

    from leaderboard.models import Challenge, Run, Submission, Team

    host = User.objects.create_user("bench-host", password="a-long-benchmark-password")
    challenge = Challenge.objects.create(
        slug=f"bench-{os.getpid()}",
        title="Report benchmark",
        created_by=host,
        metric="accuracy",
        higher_is_better=True,
        allow_recipes=True,
        k_runs=args.runs,
        boo_n=5,
        bootstrap_resamples=args.resamples,
        master_seed=1,
    )
    test, valid = synthetic_scores(args.entries, args.runs)
    teams = Team.objects.bulk_create([Team(name=f"bench-team-{os.getpid()}-{i}") for i in range(args.entries)])
    submissions = Submission.objects.bulk_create(
        [
            Submission(
                challenge=challenge,
                team=team,
                submitted_by=host,
                kind="recipe",
                method_name=f"method-{i}",
                status="scored",
                runs_expected=args.runs,
            )
            for i, team in enumerate(teams)
        ]
    )
    Run.objects.bulk_create(
        [
            Run(submission=s, index=r, status="succeeded", test_score=float(test[i, r]), valid_score=float(valid[i, r]))
            for i, s in enumerate(submissions)
            for r in range(args.runs)
        ],
        batch_size=1000,
    )
    return challenge.pk


def bench_recompute(challenge_id: int) -> None:
    from evaluation.report import build_report
    from leaderboard.models import Challenge
    from leaderboard.services.reports import report_entries, report_recompute, report_settings

    seconds, report = timed(lambda: report_recompute(challenge_id=challenge_id, force=True), repeat=2)
    challenge = Challenge.objects.get(pk=challenge_id)
    gather, (entries, ever) = timed(lambda: report_entries(challenge=challenge))
    settings = report_settings(challenge=challenge, m_total_recipes=ever["recipe"])
    build, _ = timed(lambda: build_report(entries, settings))
    print(
        f"report_recompute (query + report + save): {seconds:.3f} s (target <= 3 s); parts: one query "
        f"{gather:.3f} s, build_report {build:.3f} s, rest (hash, JSON, save) {seconds - gather - build:.3f} s"
    )
    cached, _ = timed(lambda: report_recompute(challenge_id=challenge_id), repeat=3)
    print(f"  reference: report_recompute with unchanged inputs (version hash only): {cached:.3f} s")


# ----------------------------------------------------------------------------- the server
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(env: dict, port: int, workers: int) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "leaderboard.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "sync",
        "--preload",
        "--backlog",
        "512",
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited: {server.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not start within 60 s")


def get(port: int, path: str) -> tuple[int, float, int]:
    """(status, seconds, bytes) of one GET on a fresh connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - start
    connection.close()
    return response.status, elapsed, len(body)


def wrk_load(url: str, clients: int, duration: int) -> dict:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{clients}", f"-d{duration}s", "--latency", url],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    ).stdout

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "tool": "wrk",
        "p50": ms("50%"),
        "p90": ms("90%"),
        "p99": ms("99%"),
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "errors": errors + (int(non2xx.group(1)) if non2xx else 0),
    }


def python_load(port: int, path: str, clients: int, duration: int) -> dict:
    """Fallback load generator: ``clients`` threads, each with one keep-alive connection."""
    stop = time.monotonic() + duration
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            with lock:
                latencies.append(time.perf_counter() - start)
                errors[0] += not ok

    with ThreadPoolExecutor(max_workers=clients) as pool:
        for _ in range(clients):
            pool.submit(client)
    values = np.array(latencies) * 1e3
    return {
        "tool": "python threads",
        "p50": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "p99": float(np.percentile(values, 99)),
        "rps": len(values) / duration,
        "requests": len(values),
        "errors": errors[0],
    }


def bench_endpoint(args, env: dict, challenge_id: int) -> None:
    from leaderboard.models import Challenge

    slug = Challenge.objects.get(pk=challenge_id).slug
    path = f"/api/challenges/{slug}/leaderboard/"
    database = "PostgreSQL" if "postgres" in env.get("DATABASE_URL", "") else "SQLite"
    for micro in (0, 1):
        port = free_port()
        server = start_server({**env, "BENCH_MICROCACHE_S": str(micro)}, port, args.workers)
        try:
            status, cold, size = get(port, path)
            assert status == 200, status
            for _ in range(4 * args.workers):  # every worker process fills its own caches
                get(port, path)
            single = [get(port, path)[1] * 1e3 for _ in range(30)]
            layer = "micro-cache on (1 s, no query)" if micro else "micro-cache off (Django cache + 1 query)"
            print(
                f"leaderboard endpoint, {layer}: {size / 1e3:.0f} kB of JSON, gunicorn {args.workers} sync "
                f"workers, {database}; first request (cache cold) {cold * 1e3:.0f} ms; one client alone p50 "
                f"{statistics.median(single):.1f} ms"
            )
            if shutil.which("wrk") and not args.python_load:
                load = wrk_load(f"http://127.0.0.1:{port}{path}", args.clients, args.duration)
            else:
                load = python_load(port, path, args.clients, args.duration)
            verdict = "met" if load["p50"] <= 50 and load["p99"] <= 250 and load["errors"] == 0 else "MISSED"
            print(
                f"  {args.clients} concurrent clients for {args.duration} s ({load['tool']}): p50 "
                f"{load['p50']:.1f} ms, p90 {load['p90']:.1f} ms, p99 {load['p99']:.1f} ms, "
                f"{load['rps']:.0f} requests/s, {load['requests']} requests, {load['errors']} errors "
                f"(target p50 <= 50 ms, p99 <= 250 ms: {verdict}; load average now "
                f"{os.getloadavg()[0]:.2f})"
            )
            if not micro:
                status, fly, _ = get(port, path + "?n=3")
                assert status == 200, status
                print(f"  reference: the same request recomputed on the fly (?n=3, not cached): {fly * 1e3:.0f} ms")
        finally:
            os.killpg(server.pid, 15)
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn worker processes")
    parser.add_argument("--naive-pairs", type=int, default=500, help="pairs timed in the naive reference loop")
    parser.add_argument(
        "--database-url",
        default="auto",
        help="auto (default): a temporary PostgreSQL database when 127.0.0.1:5432 answers, "
        "else SQLite; sqlite: a temporary SQLite file; or a URL",
    )
    parser.add_argument("--python-load", action="store_true", help="use the Python load generator, not wrk")
    parser.add_argument("--quick", action="store_true", help="20 x 10, B = 200, 3 s of load")
    args = parser.parse_args()
    if args.quick:
        args.entries, args.runs, args.resamples, args.duration, args.naive_pairs = 20, 10, 200, 3, 100
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
        f"Python {sys.version.split()[0]}, numpy {np.__version__}"
    )
    bench_pure(args)
    var_dir = Path(tempfile.mkdtemp(prefix="varboard-bench-"))
    url, temporary_postgres = args.database_url, False
    if url == "auto":
        try:
            with socket.create_connection(POSTGRES, timeout=1):
                url, temporary_postgres = postgres_database(create=True), True
        except OSError:
            url = None
    elif url == "sqlite":
        url = None
    try:
        env = django_setup(var_dir, url)
        challenge_id = populate(args)
        bench_recompute(challenge_id)
        bench_endpoint(args, env, challenge_id)
    finally:
        if temporary_postgres:
            from django.db import connections

            connections.close_all()
            postgres_database(create=False)
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
