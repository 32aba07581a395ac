"""The heartbeat loop of a lease (a run's, a report recomputation's): one rule for renewing from a thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)


def renew_until_stopped(
    stop: threading.Event,
    renew: Callable[[], bool],
    *,
    on_lost: Callable[[], None],
    what: str,
    extra: dict,
    transient: Callable[[Exception], bool],
) -> None:
    """Call ``renew`` every ``VARBOARD_HEARTBEAT_S`` until ``stop`` is set, in this thread's own connection.

    ``renew`` returns False when the lease is no longer this holder's: ``on_lost`` is called and the loop ends.
    An error ``transient`` accepts (the database away) is logged and tried again at the next beat, on a new
    connection; any other ends the loop.
    """
    interval = settings.VARBOARD["HEARTBEAT_S"]
    try:
        while not stop.wait(interval):
            try:
                if not renew():
                    on_lost()
                    return
            except Exception as exc:
                if not transient(exc):
                    raise
                logger.warning("%s: could not renew its lease (%s); trying again", what, exc, extra=extra)
                connection.close()
    finally:
        connection.close()  # this thread's own connection
