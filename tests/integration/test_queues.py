"""Each task reaches exactly the queue it is routed to, on a real Redis broker.

The worker's banner shows all three queues bound to the exchange ``scoring`` with the key
``scoring`` (Celery's default exchange for bare ``Queue("cpu")``), which reads as if Redis would
deliver every task, a recipe run included, to all three. Celery publishes a task routed to a
named queue straight to that queue: this test keeps it so, since a scoring worker must never
receive a recipe run.
"""

from __future__ import annotations

import pytest
import redis

from leaderboard.celery import app
from leaderboard.services.dispatch import EXECUTE_RUN, RECOMPUTE_REPORT, send

pytestmark = pytest.mark.integration
QUEUES = ("scoring", "cpu", "gpu")


def lengths(url: str) -> dict[str, int]:
    client = redis.Redis.from_url(url)
    return {name: client.llen(name) for name in QUEUES}


def test_a_task_lands_only_in_the_queue_it_is_routed_to(redis_server):
    with app.connection_for_write() as connection:  # what a worker does at start: declare its queues
        for queue in app.amqp.queues.values():
            queue(connection.default_channel).declare()
    send(EXECUTE_RUN, (1,), queue="cpu")
    assert lengths(redis_server.url) == {"scoring": 0, "cpu": 1, "gpu": 0}
    send(EXECUTE_RUN, (2,), queue="gpu")
    send(RECOMPUTE_REPORT, (3,))  # routed by task_routes to scoring
    assert lengths(redis_server.url) == {"scoring": 1, "cpu": 1, "gpu": 1}
