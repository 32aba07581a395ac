"""``tests.serving.wait_until_served`` against real HTTP servers on 127.0.0.1: a slow first
answer is waited for with short requests, a server that never answers fails at the deadline
naming the last error, and an exited server fails at once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.serving import wait_until_served


class SlowServer:
    """Answers ``/health`` 200 after holding each of its first ``slow`` requests ``hold_s`` seconds."""

    def __init__(self, *, slow: int, hold_s: float):
        self.release = threading.Event()
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests += 1
                if server.requests <= slow:
                    server.release.wait(hold_s)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass  # the client gave up on this request

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/health"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def test_a_slow_first_answer_is_waited_for_with_short_requests():
    # Two requests held 3 s each: one 2-second request (the old fixture's wait) fails with ReadTimeout.
    with SlowServer(slow=2, hold_s=3.0) as server:
        started = time.monotonic()
        response = wait_until_served(server.url, deadline_s=20, request_timeout_s=0.5, interval_s=0.05)
        assert response.status_code == 200 and response.text == "ok"
        # two held requests time out, the third is answered (a fourth if a loaded server was slow to answer it)
        assert server.requests >= 3 and time.monotonic() - started < 10


def test_a_server_that_never_answers_fails_at_the_deadline_naming_the_last_error():
    with SlowServer(slow=10**6, hold_s=30.0) as server:
        started = time.monotonic()
        with pytest.raises(AssertionError, match=r"did not answer within 1\.5 s .*last: ReadTimeout") as caught:
            wait_until_served(
                server.url, deadline_s=1.5, request_timeout_s=0.4, interval_s=0.05, output=lambda: "the server's log"
            )
        assert time.monotonic() - started < 3 and caught.value.args[0].endswith("the server's log")
        assert server.requests >= 2  # it retried


def test_an_answer_that_is_not_ready_is_retried_and_named():
    with SlowServer(slow=0, hold_s=0) as server:
        with pytest.raises(AssertionError, match="last: HTTP 200: ok"):
            wait_until_served(server.url, deadline_s=0.5, interval_s=0.05, ready=lambda r: r.status_code == 204)
        assert server.requests >= 2


def test_an_exited_server_fails_at_once_with_its_output():
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(30)
    started = time.monotonic()
    with pytest.raises(AssertionError, match="exited with 3 before it answered") as caught:
        wait_until_served("http://127.0.0.1:9/", deadline_s=30, process=process, output=lambda: "its log")
    assert time.monotonic() - started < 1 and caught.value.args[0].endswith("its log")


@pytest.mark.parametrize(("deadline_s", "request_timeout_s"), [(0, 5), (60, 0), (-1, -1)])
def test_the_wait_must_be_positive(deadline_s, request_timeout_s):
    with pytest.raises(ValueError, match="`deadline_s` and `request_timeout_s` must be positive"):
        wait_until_served("http://127.0.0.1:9/", deadline_s=deadline_s, request_timeout_s=request_timeout_s)
