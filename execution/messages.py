"""Sentences for the contestant about a failed run, and the run's log."""

from __future__ import annotations

import errno

from .sandbox import Limits, SandboxResult

__all__ = ["MAX_MESSAGE", "error_message", "log_text", "shorten", "storable"]

MAX_MESSAGE = 500


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    text = storable(" ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_message(result: SandboxResult, error: dict | None, limits: Limits) -> str:
    where = ""
    raised = ""
    if error:
        etype = shorten(error.get("type", "Exception"), 80)
        emsg = shorten(error.get("message", ""))
        line = error.get("line")
        where = f"line {line} of recipe.py" if isinstance(line, int) else ""
        raised = f"{etype}: {emsg}" if emsg else etype
    at = f", {where}" if where else ""
    errno_ = error.get("errno") if error else None

    if result.status in ("timeout", "output_limit", "processes", "disk", "cpu_time"):
        return f"the run {result.message}"
    if result.status == "memory":
        return f"the run {result.message}" + (f" ({raised}{at})" if raised else "")
    if result.status == "file_size":
        return f"the recipe tried to write a file larger than the {limits.max_file_mb} MB limit" + (
            f" ({raised}{at})" if raised else ""
        )
    if error:
        if errno_ == errno.EFBIG:
            return f"the recipe tried to write a file larger than the {limits.max_file_mb} MB limit ({raised}{at})"
        if errno_ == errno.EAGAIN and "fork" in error.get("traceback", ""):
            return f"the run reached the limit of {limits.max_processes} processes ({raised}{at})"
        if error.get("type") == "MemoryError":
            return f"the run ran out of memory (limit {limits.memory_mb} MB) ({raised}{at})"
        phase = error.get("phase")
        if phase == "import":
            return f"the recipe failed while being imported: {raised}" + (f" ({where})" if where else "")
        if phase == "save":
            return f"the recipe's predictions could not be saved: {raised}"
        note = (
            " (recipes have no network access)"
            if errno_ in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED) or "gaierror" in raised
            else ""
        )
        return f"the recipe raised {raised}" + (f" ({where})" if where else "") + note
    if result.status == "killed":
        return f"the recipe's process {result.message}"
    if result.status == "error":
        last = [line for line in result.stderr_tail.strip().splitlines() if line.strip()]
        detail = f": {shorten(last[-1], 200)}" if last else ""
        return f"the recipe's process {result.message}{detail}"
    return "the recipe exited before the harness finished (no predictions were written)"


def storable(text: str) -> str:
    """``text`` with NUL characters replaced (U+FFFD): a recipe may print any bytes, a database stores no NUL."""
    return text.replace("\x00", "\ufffd")


def log_text(result: SandboxResult) -> str:
    parts = []
    if result.stdout_tail.strip():
        parts.append("[stdout]\n" + result.stdout_tail.rstrip("\n"))
    if result.stderr_tail.strip():
        parts.append("[stderr]\n" + result.stderr_tail.rstrip("\n"))
    return storable("\n".join(parts))
