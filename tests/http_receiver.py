"""Real servers on 127.0.0.1 for the webhook tests (unit and end-to-end).

``Receiver`` stands in for a webhook receiver; ``Listener`` for an internal service that a webhook
must never reach: it only counts (and holds open) the connections made to it.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A real HTTP server on 127.0.0.1 that records what it is sent and answers the statuses queued in it.

    ``paths`` records each request's target (an absolute URL when it is used as a proxy);
    ``location`` is sent as the ``Location`` header of every answer when set (a redirect).
    """

    def __init__(self):
        self.requests: list[tuple[dict, bytes]] = []
        self.paths: list[str] = []
        self.statuses: list[int] = []
        self.location: str | None = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                receiver.paths.append(self.path)
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 204)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/varboard"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Listener:
    """A TCP socket listening on 127.0.0.1 that counts the connections it accepts and never answers."""

    def __init__(self):
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._closed.is_set():
            try:
                connection, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            self._held.append(connection)

    def connections(self, settle_s: float = 0.3) -> int:
        """The connections accepted so far, after ``settle_s`` for one still in the backlog to be accepted."""
        threading.Event().wait(settle_s)
        return self.accepted

    def close(self):
        self._closed.set()
        self._thread.join(timeout=5)
        for connection in self._held:
            connection.close()
        self._sock.close()
