"""Parse an uploaded table in a forked child under an address-space limit.

Parsing a valid 15 MB CSV costs pandas several times the file's size in transient
memory; done in the web process, that peak stays with the worker for its life (issue 22).
``read_table_guarded`` runs ``read_table`` in a child forked for the one file, with
``RLIMIT_AS`` set to what the child already maps plus ``memory_limit`` bytes, and sends the
frame back pickled: the parent holds the finished frame, never the parser's peak. A
child that runs out of its allowance yields a ``TableError`` naming the limit.
"""

from __future__ import annotations

import multiprocessing
import pickle
import resource

import pandas as pd

from evaluation.io.read import TableError, read_table

MB = 1024 * 1024


def _mapped_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(conn, data: bytes, memory_limit: int, kwargs: dict) -> None:
    try:
        limit = _mapped_bytes() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        result = ("ok", read_table(data, **kwargs))
    except TableError as exc:
        result = ("table", str(exc))
    except MemoryError:
        result = ("memory", "")
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it as a TableError
        result = ("table", f"the file could not be read ({type(exc).__name__}: {exc})")
    try:
        conn.send_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    except MemoryError:
        conn.send_bytes(pickle.dumps(("memory", "")))
    finally:
        conn.close()


def read_table_guarded(data: bytes, *, memory_limit: int, timeout: float = 20.0, **kwargs) -> pd.DataFrame:
    """``read_table(data, **kwargs)`` in a forked child allowed `memory_limit` more bytes.

    Raises
    ------
    TableError
        Whatever ``read_table`` raises; "the file needs more than N MB to parse; the
        limit is N MB" when the child runs out of its allowance (or dies); "the file took
        more than T s to parse" when it has not answered within `timeout` seconds (a child
        forked from a threaded web worker could also inherit a held lock: it is killed).
    """
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, data, memory_limit, kwargs), daemon=True)
    child.start()
    send.close()
    try:
        payload = receive.recv_bytes() if receive.poll(timeout) else b""
    except EOFError:
        payload = None
    finally:
        receive.close()
        if payload == b"":
            child.kill()
        child.join()
    if payload == b"":
        raise TableError(f"the file took more than {timeout:g} s to parse; the limit is {timeout:g} s.")
    if payload is None:
        kind, value = "memory", ""
    else:
        kind, value = pickle.loads(payload)
    if kind == "ok":
        return value
    if kind == "memory":
        raise TableError(f"the file needs more than {memory_limit / MB:,.0f} MB to parse; "
                         f"the limit is {memory_limit / MB:,.0f} MB.")
    raise TableError(value)
