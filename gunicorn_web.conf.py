"""gunicorn settings of the web tier (``gunicorn -c gunicorn_web.conf.py leaderboard.wsgi:application``).

Chosen by measurement with ``benchmarks/bench_load.py --compare-workers`` (README, "Scaling the web
tier"): with the production micro-cache the anonymous board JSON and page are served from memory,
so a request is short and mostly waits on I/O (the database, Redis, the socket); threads then serve
50 keep-alive clients where sync workers, one request each, queue them behind one another.
Not named ``gunicorn.conf.py`` on purpose: gunicorn loads that name from the working directory by
itself, and the runner services (``gunicorn execution.service:app``, hour-long requests) must not get
the web tier's 30 s timeout.

Each value can be overridden from the environment (``WEB_CONCURRENCY``, ``GUNICORN_THREADS``,
``GUNICORN_WORKER_CLASS``, ``GUNICORN_TIMEOUT``) or on the command line.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
# One process per core; the threads overlap the waits on PostgreSQL and Redis.
workers = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 2))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A request that holds a worker 30 s is a bug or a hung dependency (the store, the database):
# the worker is replaced rather than the web tier starved (the clients' timeouts are shorter still).
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 30
keepalive = 5
backlog = 2048
# No periodic recycling (max_requests): at ~500 cached answers a second a worker would restart every
# few seconds, and each restart (Django's import, on busy cores) stalled its clients for 2-8 s.
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-")
