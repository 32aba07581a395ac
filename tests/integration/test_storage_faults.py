"""Entries started while the object store refuses connections are scored once it is back (issue 22).

A real Celery worker reaches moto's S3 server through a port on which nothing listens at first
(connections refused: botocore's EndpointConnectionError); the web stores the entries directly.
After the outage a forwarding proxy opens on that port. Before, such entries failed for good
("platform error: EndpointConnectionError"); now the tasks retry with backoff, the claims do not
count the storage faults, and both entries end scored.
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from leaderboard.models import Submission
from leaderboard.services.submissions import UploadedFile, submission_create_predictions, submission_create_recipe
from tests.conftest import ROOT, database_url, start_worker, wait_for
from tests.platform.factories import digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

OUTAGE_S = 8


class Forwarder:
    """A TCP proxy from ``port`` to ``target``, opened when the outage ends."""

    def __init__(self, port: int, target: tuple[str, int]):
        self.target, self.threads, self.sockets = target, [], []
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(64)
        self._spawn(self._accept)

    def _spawn(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _accept(self):
        while True:
            try:
                client = self.server.accept()[0]
                upstream = socket.create_connection(self.target)
            except OSError:
                return
            self.sockets += [client, upstream]
            self._relay(client, upstream)

    def _relay(self, client, upstream):
        self._spawn(self._pipe, client, upstream)
        self._spawn(self._pipe, upstream, client)

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.server.close()
        for sock in self.sockets:
            sock.close()
        for thread in self.threads:
            thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_entries_started_during_a_storage_outage_are_scored_after_it(s3_storage, redis_server, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "web-media"
    host, alice, bob = make_user("host"), make_user("alice"), make_user("bob")
    challenge, frame = digits_challenge(host, k_runs=2)
    port = _free_port()  # nothing listens: the worker's store refuses connections
    worker = start_worker(
        broker_url=redis_server.url,
        database=database_url(settings.DATABASES["default"]),
        node="storage-outage-worker",
        queues="scoring,cpu",
        concurrency=2,
        env={
            **s3_storage.env(),
            "VARBOARD_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "VARBOARD_MEDIA_ROOT": str(tmp_path / "worker-media"),
        },
    )
    forwarder = None
    try:
        entries = [
            submission_create_predictions(
                challenge=challenge,
                user=alice,
                method_name="predictions",
                files=[UploadedFile("p.csv", label_predictions(frame))],
            ),
            submission_create_recipe(
                challenge=challenge,
                user=bob,
                method_name="recipe",
                recipe=UploadedFile("trivial.py", (ROOT / "examples" / "recipes" / "trivial.py").read_bytes()),
            ),
        ]
        ids = [entry.pk for entry in entries]
        deadline = time.monotonic() + OUTAGE_S
        while time.monotonic() < deadline:  # the outage: nothing may end for good
            assert not Submission.objects.filter(pk__in=ids, status="failed").exists(), worker.tail()
            time.sleep(0.5)
        target = urlsplit(s3_storage.endpoint)
        forwarder = Forwarder(port, (target.hostname, target.port))
        ended_outage = time.monotonic()
        wait_for(
            lambda: Submission.objects.filter(pk__in=ids, status__in=("scored", "failed")).count() == 2,
            timeout=120,
            interval=0.3,
            message=worker.tail,
        )
        recovery_s = time.monotonic() - ended_outage
    finally:
        worker.stop()
        if forwarder is not None:
            forwarder.close()
    statuses = dict(Submission.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert statuses == {ids[0]: "scored", ids[1]: "scored"}, (statuses, worker.tail())
    assert Submission.objects.get(pk=ids[0]).runs.get().test_score == 1.0
    assert recovery_s < 120
    print(f"storage outage of {OUTAGE_S} s: both entries scored {recovery_s:.1f} s after it ended")
