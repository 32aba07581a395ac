"""One rule for "the database is away or read-only for now: try again later".

A PostgreSQL that restarts or fails over first drops every connection (``OperationalError``,
``InterfaceError``), then, while the standby is not yet promoted or an operator set
``default_transaction_read_only``, takes reads and refuses every write with SQLSTATE 25006, which psycopg
raises as ``ReadOnlySqlTransaction`` and Django as an ``InternalError``. Both pass; neither is a bug of the
request or of the task. The web answers them 503 with ``Retry-After`` (``leaderboard.ops.unavailable``), the
tasks retry them with backoff (``tasks.platform_task``), a run's result is kept and stored again
(``services.lifecycle.run_store_retrying``) and a lease is renewed at the next beat (``services.heartbeats``):
all by :func:`database_away`, so that none of them can leave a read-only database out again.

It imports Django's errors only: the web's ops layer, the services and the tasks all import it, without a cycle.
"""

from __future__ import annotations

from django.db import InterfaceError, InternalError, OperationalError

#: PostgreSQL's SQLSTATE for a write in a read-only transaction (psycopg's ``ReadOnlySqlTransaction``).
READ_ONLY_SQLSTATE = "25006"

#: The classes an unreachable or read-only database raises: what an ``except`` clause (or Celery's
#: ``autoretry_for``, which takes classes only) catches before :func:`database_away` decides; an
#: ``InternalError`` is the database away only when it is the read-only one.
DATABASE_AWAY_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError, InternalError)


def database_read_only(exc: BaseException | None) -> bool:
    """The database refused a write because it is read-only for now (SQLSTATE 25006)."""
    return isinstance(exc, InternalError) and getattr(exc.__cause__, "sqlstate", None) == READ_ONLY_SQLSTATE


def database_away(exc: BaseException | None) -> bool:
    """The database is unreachable or read-only for now: nothing was stored, try again later."""
    return isinstance(exc, (OperationalError, InterfaceError)) or database_read_only(exc)
