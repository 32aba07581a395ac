"""Waiting for a server a test started (gunicorn, a runner service) to answer.

A loaded machine (two CPU burners, a suite running beside) can take seconds to answer the
first request: the server's workers import Django or probe the sandbox. One request with
a short timeout then fails the whole module at setup (``ReadTimeout`` on ``/health``).
:func:`wait_until_served` polls instead: short requests, retried on any transport error,
inside one overall deadline, and on failure it says what the last attempt got.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import requests


def wait_until_served(
    url: str,
    *,
    deadline_s: float = 60.0,
    request_timeout_s: float = 5.0,
    interval_s: float = 0.2,
    ready: Callable[[requests.Response], bool] = lambda response: True,
    process: subprocess.Popen | None = None,
    output: Callable[[], str] = lambda: "",
) -> requests.Response:
    """GET ``url`` until an answer is ``ready`` (by default: any HTTP answer); return that answer.

    Each request waits at most ``request_timeout_s`` (connect and read); a timeout, a refused
    connection or an answer that is not ``ready`` is retried every ``interval_s`` until
    ``deadline_s`` has passed since the call. A request that timed out still runs on the
    server (a worker finishing its first probe), so the next one finds it warm.

    Raises ``AssertionError`` naming the last error (or the last status) and ``output()``
    (the server's log) when the deadline passes, or at once when ``process`` has exited.
    """
    if deadline_s <= 0 or request_timeout_s <= 0:
        raise ValueError(
            f"`deadline_s` and `request_timeout_s` must be positive (got {deadline_s}, {request_timeout_s})"
        )
    deadline = time.monotonic() + deadline_s
    last = "no request made"
    while True:
        if process is not None and process.poll() is not None:
            raise AssertionError(
                f"the server of {url} exited with {process.returncode} before it answered (last: {last}):\n{output()}"
            )
        timeout = max(0.05, min(request_timeout_s, deadline - time.monotonic()))
        try:
            response = requests.get(url, timeout=timeout)
        except requests.RequestException as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if ready(response):
                return response
            last = f"HTTP {response.status_code}: {response.text[:300]}"
        if time.monotonic() + interval_s >= deadline:
            raise AssertionError(
                f"{url} did not answer within {deadline_s:g} s (requests of at most "
                f"{request_timeout_s:g} s; last: {last}):\n{output()}"
            )
        time.sleep(interval_s)
