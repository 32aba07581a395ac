"""Load benchmark: 50 concurrent clients on gunicorn, then what a 1 s database outage costs.

Prints figures; not a test. Set-up (as in production, on 127.0.0.1): a PostgreSQL cluster of
its own (``initdb`` in a temporary folder on a free port, so that it can be stopped without
touching anyone else's), a Redis of its own as cache (``CACHE_URL``) and broker, gunicorn with
2 sync workers and the production micro-cache (1 s), a challenge of ``--entries`` x ``--runs``
scored runs. The clients are Python threads, each with one keep-alive connection, cycling
through three requests: the leaderboard JSON (``/api/challenges/<slug>/leaderboard/``), the
challenge page (``/c/<slug>/``) and the submission API (``/api/submissions/<id>/`` with a
token).

Measured, in this order, in the same run:

* reference: ``--clients`` clients for ``--duration`` seconds on a healthy stack: p50, p90,
  p99 latency and error rate, overall and per request;
* outage: the same load for ``--outage-duration`` seconds, during which PostgreSQL is crashed
  (``pg_ctl stop -m immediate``) after ``--outage-at`` seconds and started again 1 s later: the
  answers by status (503 with Retry-After is the designed answer while it is down; a 500 would
  be a bug), the time from the crash to the last failed answer, and from PostgreSQL being back
  to the first of an unbroken run of successes.

Run from the repository root (as root, the cluster runs as the ``postgres`` user)::

    .venv/bin/python benchmarks/bench_load.py            # 50 clients, 15 s + 20 s
    .venv/bin/python benchmarks/bench_load.py --quick    # 20 clients, 5 s + 10 s
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import ROOT, django_setup, populate, start_server  # noqa: E402

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
    return (f"{len(answers)} requests, {len(answers) / seconds:.0f}/s, p50 {p50:.1f} ms, p90 {p90:.1f} ms, "
            f"p99 {p99:.1f} ms, errors {errors} ({100 * errors / max(len(answers), 1):.2f} %)")


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
    return (f"answers by status {dict(sorted(statuses.items(), key=str))}; {len(failed)} failed "
            f"({100 * len(failed) / len(answers):.2f} %), of which 5xx other than 503: {server_errors}; "
            f"first failed answer {first_failure - crashed:+.2f} s after the crash, last one "
            f"{last_failure - crashed:.2f} s after it; successes unbroken from {max(last_failure - back, 0):.2f} s "
            f"after PostgreSQL was back (it was down {back - crashed:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=15, help="seconds of reference load")
    parser.add_argument("--outage-duration", type=float, default=20, help="seconds of load around the outage")
    parser.add_argument("--outage-at", type=float, default=5, help="seconds into that load when PostgreSQL crashes")
    parser.add_argument("--down", type=float, default=1.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the challenge")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--quick", action="store_true", help="20 clients, 5 s + 10 s")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.duration, args.outage_duration, args.outage_at = 20, 5, 10, 3
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
          f"Python {sys.version.split()[0]}")
    var_dir = Path(tempfile.mkdtemp(prefix="varboard-bench-load-"))
    cluster, redis, server = ThrowawayPostgres(), ThrowawayRedis(), None
    try:
        cluster.init()
        redis.start()
        import psycopg

        with psycopg.connect(cluster.url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE varboard")
        database = cluster.url.rsplit("/", 1)[0] + "/varboard"
        env = django_setup(var_dir, database)
        env.update(CACHE_URL=redis.url.rsplit("/", 1)[0] + "/1", CELERY_BROKER_URL=redis.url,
                   BENCH_MICROCACHE_S="1", DJANGO_LOG_LEVEL="ERROR")
        challenge_id = populate(args)
        from django.db import connections
        from leaderboard.services.accounts import token_create

        from leaderboard.models import Challenge, Submission

        challenge = Challenge.objects.get(pk=challenge_id)
        submission = Submission.objects.filter(challenge=challenge).first()
        token = token_create(user=challenge.created_by)[1]
        connections.close_all()
        names = {f"/api/challenges/{challenge.slug}/leaderboard/": "leaderboard JSON",
                 f"/c/{challenge.slug}/": "challenge page",
                 f"/api/submissions/{submission.pk}/": "submission API"}
        # Readers of the board and the page are anonymous; the submission API is read with a token.
        paths = {path: {} for path in names}
        paths[f"/api/submissions/{submission.pk}/"] = {"Authorization": f"Token {token}"}
        port = free_port()
        server = start_server(env, port, args.workers)
        load(port, paths, 4, 2)  # warm every worker's caches
        print(f"gunicorn {args.workers} sync workers, PostgreSQL {cluster.port} (own cluster), Redis cache, "
              f"micro-cache 1 s; {args.clients} clients, {args.entries} entries x {args.runs} runs")

        for path, name in names.items():
            alone = load(port, {path: paths[path]}, 1, 2)
            print(f"  reference, one client alone, {name:<18} p50 "
                  f"{np.percentile([a.seconds for a in alone], 50) * 1e3:.1f} ms ({len(alone)} requests)")
        answers = load(port, paths, args.clients, args.duration)
        report(f"{args.clients} clients, {args.duration:g} s", answers, args.duration, names)

        moments = {}

        def outage(started: float) -> None:
            time.sleep(max(args.outage_at - (time.monotonic() - started), 0))
            moments["crashed"] = time.monotonic()
            cluster.stop("immediate")
            time.sleep(args.down)
            cluster.start()
            moments["back"] = time.monotonic()

        answers = load(port, paths, args.clients, args.outage_duration, during=outage)
        report(f"with a {args.down:g} s PostgreSQL crash {args.outage_at:g} s in, {args.outage_duration:g} s",
               answers, args.outage_duration, names)
        print(f"  outage: {outage_figures(answers, moments['crashed'], moments['back'])}")
        print(f"load average now {os.getloadavg()[0]:.2f}")
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
        redis.close()
        cluster.close()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
