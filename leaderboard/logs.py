"""Logs that say which submission and run they are about.

:func:`log_context` binds ``submission_id`` and ``run_id`` for a block (a context variable, so
concurrent requests and tasks do not mix them up); :class:`ContextFilter` puts them on every
record. ``VARBOARD_LOG_FORMAT=json`` (the production default) writes one JSON object per line
(python-json-logger) with those ids as fields, for a log collector; ``plain`` (the development
default) writes readable lines with ``[submission=3 run=12]`` after the logger's name.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

IDS = ("submission_id", "run_id")
# The default is never mutated: log_context sets a new dict.
_context: contextvars.ContextVar[dict] = contextvars.ContextVar("varboard_log_context", default={})  # noqa: B039


@contextmanager
def log_context(**ids: int | None) -> Iterator[None]:
    """Within the block, log records carry ``ids`` (``submission_id=``, ``run_id=``) too."""
    token = _context.set({**_context.get(), **{key: value for key, value in ids.items() if value is not None}})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Adds the bound ids to each record (an ``extra=`` given to the call wins).

    ``readable``: also an ``ids`` attribute, `` [submission=3 run=12]`` or empty, for plain formats.
    """

    def __init__(self, readable: bool = False):
        super().__init__()
        self.readable = readable

    def filter(self, record: logging.LogRecord) -> bool:
        bound = _context.get()
        for key in IDS:
            if getattr(record, key, None) is None:
                setattr(record, key, bound.get(key))
        if self.readable:
            shown = [
                f"{key.removesuffix('_id')}={getattr(record, key)}" for key in IDS if getattr(record, key) is not None
            ]
            record.ids = f" [{' '.join(shown)}]" if shown else ""
        return True


def logging_config(*, fmt: str, level: str) -> dict:
    """The ``LOGGING`` setting: ``fmt`` is ``plain`` or ``json``."""
    formatters = {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s%(ids)s: %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s %(submission_id)s %(run_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "leaderboard.logs.ContextFilter", "readable": fmt == "plain"}},
        "formatters": {fmt: formatters[fmt]},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": fmt, "filters": ["context"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"django.db.backends": {"level": "WARNING"}},
    }
