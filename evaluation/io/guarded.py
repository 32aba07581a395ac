"""Run a memory-hungry function in a forked child under an address-space limit.

Parsing a valid 15 MB CSV costs pandas several times the file's size in transient
memory, and splitting, checking and writing the parts costs as much again; done in the
web process, that peak stays with the worker for its life (issue 22). ``run_guarded``
runs a function in a child forked for the one call, with ``RLIMIT_AS`` set to what the
child already maps plus ``memory_limit`` bytes, and sends back only its (pickled) return
value or exception: the parent never holds the work's peak. ``read_table_guarded`` is
``read_table`` run that way.
"""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import resource
import signal
from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd

from evaluation.io.read import TableError, read_table

MB = 1024 * 1024
T = TypeVar("T")


class ChildLimitExceeded(Exception):
    """The child ran out of its memory allowance (``kind == "memory"``) or of its time (``"time"``)."""

    def __init__(self, kind: str, limit: float):
        super().__init__(f"{kind} limit {limit:g} exceeded")
        self.kind, self.limit = kind, limit


def _mapped_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _use_system_allocator() -> None:
    """pyarrow's default pool (mimalloc or jemalloc) reserves address space in large arenas, which an
    ``RLIMIT_AS`` refuses outright ("malloc of size 640 failed"); the system allocator asks for what it uses."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def _die_with_parent() -> None:
    """SIGKILL this child when the thread that forked it ends (``PR_SET_PDEATHSIG``, Linux; elsewhere a
    no-op): a web worker killed mid-upload (a deploy, gunicorn's timeout) leaves no child parsing on."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(conn, func: Callable, args: tuple, kwargs: dict, memory_limit: int) -> None:
    _die_with_parent()
    # What the parent held is not the child's to collect: a finaliser run here (say, of an upload's
    # temporary file, garbage the parent has not collected yet) would act on the parent's files.
    gc.freeze()
    try:
        _use_system_allocator()
        limit = _mapped_bytes() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        result = ("ok", func(*args, **kwargs))
    except MemoryError:
        result = ("memory", None)
    except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it
        result = ("raise", exc)
    try:
        payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        payload = pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001 - an exception (or result) that does not pickle
        payload = pickle.dumps(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))
    try:
        conn.send_bytes(payload)
    finally:
        conn.close()


def run_guarded(func: Callable[..., T], /, *args: Any, memory_limit: int, timeout: float, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` computed in a forked child allowed `memory_limit` more bytes.

    The arguments reach the child by ``fork`` (nothing is copied or pickled); the return
    value comes back pickled, so it should be small (counts, names, paths).

    Raises
    ------
    ChildLimitExceeded
        ``kind="memory"`` when the child runs out of its allowance (a ``MemoryError``, or
        it died); ``kind="time"`` when it has not answered within `timeout` seconds (a child
        forked from a threaded web worker could also inherit a held lock): it is killed.
    Exception
        Whatever `func` raised, re-raised here.
    """
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, func, args, kwargs, memory_limit), daemon=True)
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
        raise ChildLimitExceeded("time", timeout)
    kind: str
    value: Any  # the result of `func`, or the exception it raised (pickled by `_child`)
    kind, value = ("memory", None) if payload is None else pickle.loads(payload)
    if kind == "ok":
        return value
    if kind == "memory":
        raise ChildLimitExceeded("memory", memory_limit)
    raise value


def limit_exceeded_message(exc: ChildLimitExceeded, name: str, what: str) -> str:
    """The message of a file whose child ran out of memory or time: "big.csv: the file needs more than
    16 MB to read; the limit is 16 MB." (`what`: "to read", "to parse", ...)."""
    if exc.kind == "time":
        return f"{name}: the file took more than {exc.limit:g} s {what}; the limit is {exc.limit:g} s."
    return f"{name}: {memory_message(what, int(exc.limit))}"


def memory_message(what: str, limit: int) -> str:
    """ "the file needs more than 8 MB to parse; the limit is 8 MB." (`what`: "to parse", ...)."""
    return f"the file needs more than {limit / MB:,.0f} MB {what}; the limit is {limit / MB:,.0f} MB."


def _read_table_in_child(data: bytes, kwargs: dict) -> pd.DataFrame:
    try:
        return read_table(data, **kwargs)
    except (TableError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - a parser's own error: the file is unreadable
        raise TableError(f"the file could not be read ({type(exc).__name__}: {exc})") from None


def read_table_guarded(data: bytes, *, memory_limit: int, timeout: float = 20.0, **kwargs) -> pd.DataFrame:
    """``read_table(data, **kwargs)`` in a forked child allowed `memory_limit` more bytes.

    Raises
    ------
    TableError
        Whatever ``read_table`` raises; "the file needs more than N MB to parse; the
        limit is N MB" when the child runs out of its allowance (or dies); "the file took
        more than T s to parse" when it has not answered within `timeout` seconds.
    """
    try:
        return run_guarded(_read_table_in_child, data, kwargs, memory_limit=memory_limit, timeout=timeout)
    except ChildLimitExceeded as exc:
        if exc.kind == "time":
            raise TableError(f"the file took more than {timeout:g} s to parse; the limit is {timeout:g} s.") from None
        raise TableError(memory_message("to parse", memory_limit)) from None
