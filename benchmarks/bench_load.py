"""Load benchmark of the web tier: 50 clients per endpoint, with and without the cache, on gunicorn.

Prints figures; not a test. Set-up (as in production, on 127.0.0.1): a PostgreSQL cluster of
its own (``initdb`` in a temporary folder on a free port, so that it can be stopped without
touching anyone else's), a Redis of its own as cache (``CACHE_URL``) and broker, gunicorn started
from ``gunicorn_web.conf.py`` (the production settings: worker class, workers, threads,
timeouts), a challenge of ``--entries`` x ``--runs`` scored runs. The clients are Python
threads of this process, each with one keep-alive connection (no wrk here: the figures include
the load generator's own CPU on the same cores, so they are pessimistic).

For each server configuration, and for each of the three reads a board gets most -- the
leaderboard JSON (``/api/challenges/<slug>/leaderboard/``, anonymous), the challenge page
(``/c/<slug>/``, anonymous) and the submission list (``/api/submissions/``, with a token) --
it prints, in the same run:

* reference: one client alone, p50 (what a request costs with no queueing);
* ``--clients`` clients on that endpoint alone for ``--duration`` seconds: p50, p90, p99,
  requests/s and error rate, and whether the target (board JSON and page: p99 <= 300 ms, no
  error) is met.

The configurations: the production settings with the cache (Redis ``CACHE_URL`` and the 1 s
micro-cache of anonymous reads) and without it (``CACHE_URL=dummycache://``, micro-cache off);
with ``--compare-workers`` also other gunicorn shapes with the cache (sync workers, as before;
gthread with more threads), which is how the production settings were chosen. The load
average is printed before and after each configuration: figures taken while the cores are
shared are not the idle machine's.

``--outage`` adds the earlier part: the same 3 requests in turn under load for
``--outage-duration`` seconds, PostgreSQL crashed (``pg_ctl stop -m immediate``) after
``--outage-at`` seconds and started again ``--down`` seconds later: the answers by status (503
with Retry-After is the designed answer while it is down; a 500 would be a bug) and the time to
recover.

Run from the repository root (as root, the cluster runs as the ``postgres`` user)::

    .venv/bin/python benchmarks/bench_load.py                     # 50 clients, 20 s per endpoint
    .venv/bin/python benchmarks/bench_load.py --duration 60       # the acceptance run (idle machine)
    .venv/bin/python benchmarks/bench_load.py --compare-workers   # + sync / gthread shapes
    .venv/bin/python benchmarks/bench_load.py --outage            # + a 1 s PostgreSQL crash
    .venv/bin/python benchmarks/bench_load.py --quick             # 20 clients, 5 s
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import ROOT, django_setup, populate  # noqa: E402

sys.path.insert(0, str(ROOT))
from dev import ThrowawayPostgres, ThrowawayRedis, free_port  # noqa: E402


@dataclass
class Answer:
    path: str
    started: float  # time.monotonic()
    seconds: float
    status: int | str  # an HTTP status, or "connection error"


def load(port: int, paths: dict[str, dict], clients: int, duration: float, during=None) -> list[Answer]:
    """``clients`` threads send requests in turn through ``paths`` (path -> headers) for ``duration`` seconds.

    ``during(start)``, when given, runs in this thread while the load goes on (e.g. an outage).
    """
    stop = time.monotonic() + duration
    answers: list[Answer] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine, i, order = [], number, list(paths)
        while time.monotonic() < stop:
            path = order[i % len(order)]
            i += 1
            start = time.monotonic()
            try:
                connection.request("GET", path, headers=paths[path])
                response = connection.getresponse()
                response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
            except (OSError, http.client.HTTPException):
                status = "connection error"
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine.append(Answer(path, start, time.monotonic() - start, status))
        connection.close()
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    if during is not None:
        during(started)
    for thread in threads:
        thread.join(duration + 60)
    return answers


def summary(answers: list[Answer], seconds: float) -> str:
    latencies = np.array([a.seconds for a in answers]) * 1e3
    errors = sum(a.status != 200 for a in answers)
    p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
    return (
        f"{len(answers)} requests, {len(answers) / seconds:.0f}/s, p50 {p50:.1f} ms, p90 {p90:.1f} ms, "
        f"p99 {p99:.1f} ms, errors {errors} ({100 * errors / max(len(answers), 1):.2f} %)"
    )


def report(label: str, answers: list[Answer], seconds: float, names: dict[str, str]) -> None:
    print(f"{label}: {summary(answers, seconds)}")
    for path, name in names.items():
        print(f"  {name:<18} {summary([a for a in answers if a.path == path], seconds)}")


def outage_figures(answers: list[Answer], crashed: float, back: float) -> str:
    statuses = Counter(a.status for a in answers)
    failed = [a for a in answers if a.status != 200]
    last_failure = max((a.started + a.seconds for a in failed), default=crashed)
    first_failure = min((a.started + a.seconds for a in failed), default=crashed)
    server_errors = sum(v for k, v in statuses.items() if isinstance(k, int) and k >= 500 and k != 503)
    return (
        f"answers by status {dict(sorted(statuses.items(), key=str))}; {len(failed)} failed "
        f"({100 * len(failed) / len(answers):.2f} %), of which 5xx other than 503: {server_errors}; "
        f"first failed answer {first_failure - crashed:+.2f} s after the crash, last one "
        f"{last_failure - crashed:.2f} s after it; successes unbroken from {max(last_failure - back, 0):.2f} s "
        f"after PostgreSQL was back (it was down {back - crashed:.2f} s)"
    )


# ----------------------------------------------------------------------------- the server
#: gunicorn shapes compared with --compare-workers (all with the cache): (label, environment for gunicorn_web.conf.py).
WORKER_SHAPES = [
    ("sync, 2 workers (the earlier default)", {"GUNICORN_WORKER_CLASS": "sync", "WEB_CONCURRENCY": "2"}),
    (
        "gthread, 2 workers x 8 threads",
        {"GUNICORN_WORKER_CLASS": "gthread", "WEB_CONCURRENCY": "2", "GUNICORN_THREADS": "8"},
    ),
    (
        "gthread, 4 workers x 4 threads",
        {"GUNICORN_WORKER_CLASS": "gthread", "WEB_CONCURRENCY": "4", "GUNICORN_THREADS": "4"},
    ),
]
WITH_CACHE = {"BENCH_MICROCACHE_S": "1"}  # CACHE_URL (Redis) is set in main()
WITHOUT_CACHE = {"CACHE_URL": "dummycache://", "BENCH_MICROCACHE_S": "0"}
TARGET_P99_MS = 300


def start_gunicorn(env: dict, port: int) -> subprocess.Popen:
    """gunicorn with the production settings of ``gunicorn_web.conf.py`` (``env`` may override them)."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        str(ROOT / "gunicorn_web.conf.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        "leaderboard.wsgi:application",
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


def stop_gunicorn(server: subprocess.Popen | None) -> None:
    if server is not None and server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def shape_of(env: dict) -> str:
    """What gunicorn_web.conf.py makes of ``env``: worker class, workers, threads."""
    merged = {**os.environ, **env}
    klass = merged.get("GUNICORN_WORKER_CLASS", "gthread")
    workers = merged.get("WEB_CONCURRENCY", str(os.cpu_count() or 2))
    threads = merged.get("GUNICORN_THREADS", "4") if klass == "gthread" else "1"
    return f"{klass}, {workers} workers x {threads} threads"


# ----------------------------------------------------------------------------- one configuration
def endpoint_line(name: str, answers: list[Answer], seconds: float, alone_ms: float, target: bool) -> str:
    latencies = np.array([a.seconds for a in answers]) * 1e3
    errors = sum(a.status != 200 for a in answers)
    p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
    verdict = ""
    if target:
        met = p99 <= TARGET_P99_MS and errors == 0
        verdict = f"; target p99 <= {TARGET_P99_MS} ms, no error: {'met' if met else 'MISSED'}"
    return (
        f"  {name:<16} alone p50 {alone_ms:6.1f} ms | {len(answers) / seconds:5.0f} req/s, p50 {p50:6.1f} ms, "
        f"p90 {p90:6.1f} ms, p99 {p99:6.1f} ms, max {latencies.max():6.0f} ms, errors {errors} ({100 * errors / max(len(answers), 1):.2f} %)"
        f"{verdict}"
    )


def bench_configuration(label: str, env: dict, paths: dict, names: dict, args) -> dict:
    """Start gunicorn with ``env``, load each endpoint alone; print and return {name: (p50, p99, errors)}."""
    port = free_port()
    server = start_gunicorn(env, port)
    figures = {}
    try:
        load(port, paths, 8, 3)  # every worker and thread: connections, caches, templates
        print(f"{label} [{shape_of(env)}] (load average {os.getloadavg()[0]:.2f})")
        for path, name in names.items():
            alone = load(port, {path: paths[path]}, 1, 2)
            answers = load(port, {path: paths[path]}, args.clients, args.duration)
            print(
                endpoint_line(
                    name,
                    answers,
                    args.duration,
                    float(np.median([a.seconds for a in alone]) * 1e3),
                    target=name != "submission list",
                ),
                flush=True,
            )
            latencies = np.array([a.seconds for a in answers]) * 1e3
            figures[name] = (
                float(np.percentile(latencies, 50)),
                float(np.percentile(latencies, 99)),
                sum(a.status != 200 for a in answers),
            )
    finally:
        stop_gunicorn(server)
    return figures


def bench_outage(cluster, env: dict, paths: dict, names: dict, args) -> None:
    """The three requests in turn under load while PostgreSQL crashes for ``--down`` seconds."""
    port = free_port()
    server = start_gunicorn(env, port)
    moments = {}

    def outage(started: float) -> None:
        time.sleep(max(args.outage_at - (time.monotonic() - started), 0))
        moments["crashed"] = time.monotonic()
        cluster.stop("immediate")
        time.sleep(args.down)
        cluster.start()
        moments["back"] = time.monotonic()

    try:
        load(port, paths, 8, 3)
        answers = load(port, paths, args.clients, args.outage_duration, during=outage)
    finally:
        stop_gunicorn(server)
    report(
        f"with a {args.down:g} s PostgreSQL crash {args.outage_at:g} s in, {args.outage_duration:g} s "
        f"[{shape_of(env)}, with the cache]",
        answers,
        args.outage_duration,
        names,
    )
    print(f"  outage: {outage_figures(answers, moments['crashed'], moments['back'])}")


# ----------------------------------------------------------------------------- main
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20, help="seconds of load per endpoint and configuration")
    parser.add_argument("--compare-workers", action="store_true", help="also other gunicorn shapes (with the cache)")
    parser.add_argument("--outage", action="store_true", help="also a PostgreSQL crash under load")
    parser.add_argument("--outage-duration", type=float, default=20, help="seconds of load around the outage")
    parser.add_argument("--outage-at", type=float, default=5, help="seconds into that load when PostgreSQL crashes")
    parser.add_argument("--down", type=float, default=1.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the challenge")
    parser.add_argument("--quick", action="store_true", help="20 clients, 5 s per endpoint")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.duration, args.outage_duration, args.outage_at = 20, 5, 10, 3
    return args


def bench_paths(challenge_id: int) -> tuple[dict, dict]:
    """(path -> headers, path -> name) of the three reads; the submission list is read with a token."""
    from django.db import connections

    from leaderboard.models import Challenge
    from leaderboard.services.accounts import token_create

    challenge = Challenge.objects.get(pk=challenge_id)
    token = token_create(user=challenge.created_by)[1]
    connections.close_all()
    names = {
        f"/api/challenges/{challenge.slug}/leaderboard/": "board JSON",
        f"/c/{challenge.slug}/": "page",
        "/api/submissions/": "submission list",
    }
    paths = {path: {} for path in names}
    paths["/api/submissions/"] = {"Authorization": f"Token {token}"}
    return paths, names


def main() -> None:
    args = parse_args()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
        f"Python {sys.version.split()[0]}; {args.clients} clients per endpoint, {args.duration:g} s each"
    )
    var_dir = Path(tempfile.mkdtemp(prefix="varboard-bench-load-"))
    cluster, redis = ThrowawayPostgres(), ThrowawayRedis()
    try:
        cluster.init()
        redis.start()
        import psycopg

        with psycopg.connect(cluster.url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE varboard")
        env = django_setup(var_dir, cluster.url.rsplit("/", 1)[0] + "/varboard")
        env.update(CELERY_BROKER_URL=redis.url, DJANGO_LOG_LEVEL="ERROR", GUNICORN_ACCESSLOG="/dev/null")
        cached = {**env, **WITH_CACHE, "CACHE_URL": redis.url.rsplit("/", 1)[0] + "/1"}
        paths, names = bench_paths(populate(args))
        print(f"PostgreSQL {cluster.port} (own cluster), Redis {redis.url}; {args.entries} entries x {args.runs} runs")
        results = {
            "with the cache": bench_configuration(
                "production settings, WITH the cache (Redis + 1 s micro-cache)", cached, paths, names, args
            ),
            "without": bench_configuration(
                "production settings, WITHOUT the cache (dummycache, micro-cache off)",
                {**env, **WITHOUT_CACHE},
                paths,
                names,
                args,
            ),
        }
        if args.compare_workers:
            for label, shape in WORKER_SHAPES:
                results[label] = bench_configuration(
                    f"{label}, with the cache", {**cached, **shape}, paths, names, args
                )
        print("comparison, p99 ms (p50 ms) per endpoint:")
        for label, figures in results.items():
            print(
                f"  {label:<40} "
                + ", ".join(
                    f"{name} {p99:.0f} ({p50:.0f}){' ERRORS ' + str(e) if e else ''}"
                    for name, (p50, p99, e) in figures.items()
                )
            )
        if args.outage:
            bench_outage(cluster, cached, paths, names, args)
        print(f"load average now {os.getloadavg()[0]:.2f}")
    finally:
        redis.close()
        cluster.close()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
