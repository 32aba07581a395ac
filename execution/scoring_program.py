"""Run a host's scoring program in the recipes' sandbox: read its METRICS, or score one submission.

The contract a program follows is in :mod:`evaluation.scoring_programs` (and, for hosts, in
docs/scoring-programs.md). Here the program runs: its workspace holds the program
(``scoring.py``), the harness (``execution/harness/score_harness.py``, as ``harness.py``),
``inputs/spec.json`` and, to score, ``inputs/y_true.csv`` and ``inputs/y_pred.csv``; nothing
else of the machine is in view. A runner executes the workspace
(`execution.runners.configured_program_runner`): a runner service of its own in production,
which receives one call's rows and holds nothing else, or this process's sandbox. Either way
it is started with `execution.sandbox.run_sandboxed`, the recipes' isolation:
no network, a clean environment, a fresh uid (as root) or the worker's own in a user
namespace, a read-only view of only what Python needs, and the limits of ``limits``
(wall time, memory, processes, file and disk sizes, output). The JSON it writes back is
checked here, outside the sandbox, by `evaluation.scoring_programs.parse_metrics` and
`~evaluation.scoring_programs.parse_scores`.

The program sees the ground truth of the rows it scores and nothing else: never the
database credentials or other challenges' labels the scoring worker holds. Every failure raises
`~evaluation.scoring_programs.ScoringProgramError`, whose message (and ``log``) is for the
challenge's hosts only: it may quote the program's traceback and output, and with them
ground truth.

No Django here.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from evaluation.scoring_programs import (
    ProgramMetric,
    ProgramScores,
    ScoringProgramError,
    parse_metrics,
    parse_scores,
)

from .messages import log_text, shorten
from .outputs import MAX_JSON_BYTES
from .runners import LocalRunner, configured_program_runner
from .sandbox import Limits, SandboxResult, SandboxUnavailable, probe
from .workspace import HARNESS_DIR

__all__ = ["DEFAULT_LIMITS", "MAX_PROGRAM_BYTES", "read_program_metrics", "run_scoring_program"]

#: A scoring call's limits unless the caller gives others (pandas and scikit-learn fit in 2 GB).
DEFAULT_LIMITS = Limits(
    wall_time_s=300,
    memory_mb=2048,
    max_processes=16,
    max_file_mb=128,
    max_disk_mb=1024,
    max_output_bytes=200_000,
)
MAX_PROGRAM_BYTES = 1000 * 1024  # leaderboard.limits.PROGRAM_KB
PROGRAM_FILE = "scoring.py"
HARNESS_FILE = "score_harness.py"
#: The name a runner starts a workspace by (``execution.runners.LocalRunner.command``).
RUNNER_HARNESS = "harness.py"
#: The most bytes of result.json read back: what METRICS and scores with outcomes for a few metrics need
#: (a float in JSON is at most ~25 bytes). More would be a program filling the worker's memory (json.loads
#: of hundreds of MB is gigabytes of objects); past it the result is refused as unusable.
RESULT_BASE_BYTES = 64 * 1024
RESULT_BYTES_PER_ROW = 256
TRACEBACK_LINES = 20
TRACEBACK_CHARS = 2000
_LIMIT_STATUSES = ("timeout", "cpu_time", "memory", "processes", "file_size", "disk", "output_limit")
_NETWORK_ERRNOS = (101, 111, 113)  # ENETUNREACH, ECONNREFUSED, EHOSTUNREACH


def read_program_metrics(source: bytes, *, limits: Limits | None = None, runner=None) -> list[ProgramMetric]:
    """The metrics a scoring program declares: it is imported in the sandbox, ``METRICS`` read.

    ``score`` is not called. Raises `ScoringProgramError` (for the host) when the program
    cannot be imported, has no ``METRICS`` or a malformed one, or exceeds a limit;
    `execution.sandbox.SandboxUnavailable` when the sandbox cannot run (a platform failure).
    """
    files = _program_files(source)
    files["inputs/spec.json"] = json.dumps({"mode": "metrics", "id_column": "id", "y_true": {}, "y_pred": {}}).encode()
    result, _ = _run(files, limits or DEFAULT_LIMITS, runner, result_cap=RESULT_BASE_BYTES)
    return parse_metrics(result.get("metrics"))


def run_scoring_program(
    source: bytes, y_true: pd.DataFrame, y_pred: pd.DataFrame, *, limits: Limits | None = None, runner=None
) -> ProgramScores:
    """Score one submission with a host's scoring program, in the sandbox.

    Parameters
    ----------
    source : bytes
        The program's file (``str`` is taken as UTF-8).
    y_true : DataFrame
        The ground truth of the rows to score, indexed by the id column (its name: the
        index's name, else ``"id"``), with the dataset's ground-truth column(s).
    y_pred : DataFrame
        The submission's predictions for the same ids in the same order, with its
        prediction column(s) as submitted.
    limits : Limits, optional
        Default `DEFAULT_LIMITS`.
    runner : LocalRunner or RemoteRunner, optional
        Where the workspace runs; default `execution.runners.configured_program_runner`.

    Returns
    -------
    ProgramScores
        Every declared metric's score; the per-row outcomes (in ``y_true``'s order) of the
        metrics that gave them; the program's output; the sandboxed process's duration.

    Raises
    ------
    ScoringProgramError
        For the host: the program raised (its traceback's last lines quoted), exceeded a
        limit (named), declared malformed ``METRICS`` or returned unusable scores.
    ValueError
        For frames that break the preconditions above (a caller's bug).
    execution.sandbox.SandboxUnavailable
        The sandbox could not run the program (a platform failure: retry elsewhere).
    """
    id_column = _check_frames(y_true, y_pred)
    files = _program_files(source)
    files["inputs/spec.json"] = json.dumps(
        {"mode": "score", "id_column": id_column, "y_true": _column_kinds(y_true), "y_pred": _column_kinds(y_pred)}
    ).encode()
    for name, frame in (("y_true", y_true), ("y_pred", y_pred)):
        files[f"inputs/{name}.csv"] = frame.to_csv(index=True, index_label=id_column).encode("utf-8")
    limits = limits or DEFAULT_LIMITS
    result, ran = _run(files, limits, runner, result_cap=RESULT_BASE_BYTES + RESULT_BYTES_PER_ROW * len(y_true))
    log = log_text(ran)
    try:
        metrics = parse_metrics(result.get("metrics"))
        scores = parse_scores(result.get("scores"), metrics, len(y_true))
    except ScoringProgramError as exc:
        raise ScoringProgramError(str(exc), kind=exc.kind, log=log) from None
    return ProgramScores(scores=scores.scores, outcomes=scores.outcomes, log=log, duration_s=ran.duration_s)


def _program_files(source) -> dict:
    if isinstance(source, str):
        source = source.encode("utf-8")
    if not isinstance(source, bytes):
        raise ValueError(f"`source` must be bytes, got {type(source).__name__}")
    if not source.strip():
        raise ScoringProgramError("the scoring program is empty", kind="metrics")
    if len(source) > MAX_PROGRAM_BYTES:
        raise ScoringProgramError(
            f"the scoring program is {len(source):,} bytes; at most {MAX_PROGRAM_BYTES:,} are allowed", kind="metrics"
        )
    with open(os.path.join(HARNESS_DIR, HARNESS_FILE), "rb") as handle:
        harness = handle.read()
    return {PROGRAM_FILE: source, RUNNER_HARNESS: harness}


def _check_frames(y_true, y_pred) -> str:
    """The id column's name; ValueError when the frames break run_scoring_program's preconditions."""
    for name, frame in (("y_true", y_true), ("y_pred", y_pred)):
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"`{name}` must be a pandas DataFrame, got {type(frame).__name__}")
        if frame.shape[1] == 0:
            raise ValueError(f"`{name}` has no columns")
        if not all(isinstance(c, str) and c for c in frame.columns) or frame.columns.has_duplicates:
            raise ValueError(f"`{name}`'s column names must be distinct non-empty strings: {list(frame.columns)}")
    if len(y_true) == 0:
        raise ValueError("`y_true` has no rows")
    ids = y_true.index.astype(str)
    if ids.has_duplicates:
        raise ValueError("`y_true`'s index (the ids) has duplicates")
    if not ids.equals(y_pred.index.astype(str)):
        raise ValueError("`y_pred` must have the ids of `y_true`, in the same order")
    id_column = y_true.index.name if isinstance(y_true.index.name, str) and y_true.index.name else "id"
    for name, frame in (("y_true", y_true), ("y_pred", y_pred)):
        if id_column in frame.columns:
            raise ValueError(f"`{name}` has a column named like the id column ({id_column!r})")
    return id_column


def _column_kinds(frame: pd.DataFrame) -> dict:
    """Column -> how the harness reads it back: "int", "float", "bool" or "text"."""
    kinds = {}
    for column, dtype in frame.dtypes.items():
        if isinstance(dtype, np.dtype) and dtype.kind in "iu":
            kinds[column] = "int"
        elif isinstance(dtype, np.dtype) and dtype.kind == "b":
            kinds[column] = "bool"
        elif pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            kinds[column] = "float"
        else:
            kinds[column] = "text"
    return kinds


def _run(files: dict, limits: Limits, runner=None, *, result_cap: int) -> tuple[dict, SandboxResult]:
    """(the harness's result.json, the sandbox's result); ScoringProgramError when the program failed,
    `execution.sandbox.SandboxUnavailable` when the runner could not run it. A host's program never runs
    unsandboxed here, whatever ``VARBOARD_ALLOW_UNSANDBOXED`` allows recipes on a developer's laptop."""
    runner = runner or configured_program_runner()
    if isinstance(runner, LocalRunner) and not probe().ok:
        raise SandboxUnavailable(f"scoring programs never run unsandboxed: {probe().missing}")
    expected = {"result.json": result_cap, "error.json": MAX_JSON_BYTES}
    answer = runner.run(files, expected, limits, "cpu")
    ran, outputs, faults = answer.sandbox, answer.outputs, answer.faults
    error = _json(outputs.get("error.json"))
    result = _json(outputs.get("result.json"))
    if not ran.ok or error is not None or result is None:
        if "result.json" in faults and ran.ok and error is None:
            raise ScoringProgramError(
                f"the scoring program's result is unusable: {faults['result.json']}", kind="crashed", log=log_text(ran)
            )
        if "result.json" in outputs and ran.ok and error is None:  # written by the program itself, say
            raise ScoringProgramError(
                "the scoring program's result is unusable: outputs/result.json is not a JSON object (or is nested "
                "deeper than the platform reads)",
                kind="crashed",
                log=log_text(ran),
            )
        raise _failure(ran, error, limits)
    return result, ran


def _json(raw: bytes | None) -> dict | None:
    try:
        value = json.loads(raw.decode("utf-8", errors="replace")) if raw is not None else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the decoder goes
        return None
    return value if isinstance(value, dict) else None


def _trimmed(traceback: str) -> str:
    lines = [line for line in str(traceback).rstrip().splitlines() if line.strip()]
    text = "\n".join(lines[-TRACEBACK_LINES:])
    return text if len(text) <= TRACEBACK_CHARS else "…" + text[-TRACEBACK_CHARS:]


def _raised(error: dict) -> tuple[str, str]:
    """("Type: message", " (line N of scoring.py)") of the harness's error.json."""
    etype = shorten(error.get("type", "Exception"), 80)
    emsg = shorten(error.get("message", ""))
    line = error.get("line")
    where = f" (line {line} of {PROGRAM_FILE})" if isinstance(line, int) and not isinstance(line, bool) else ""
    return (f"{etype}: {emsg}" if emsg else etype), where


def _failure(ran: SandboxResult, error: dict | None, limits: Limits) -> ScoringProgramError:
    """The host's sentence for a run that ended without a usable result."""
    log = log_text(ran)
    raised, where = _raised(error) if error else ("", "")
    if ran.status in _LIMIT_STATUSES:
        detail = f" ({raised}{where})" if raised and ran.status in ("memory", "file_size") else ""
        return ScoringProgramError(f"the scoring program {ran.message}{detail}", kind="limit", log=log)
    if error:
        phase = error.get("phase")
        if error.get("type") == "MemoryError":
            message = f"the scoring program ran out of memory (limit {limits.memory_mb} MB) ({raised}{where})"
            return ScoringProgramError(message, kind="limit", log=log)
        if phase == "import":
            message = f"the scoring program failed while being imported: {raised}{where}"
        elif phase == "contract":
            return ScoringProgramError(
                f"the scoring program is incomplete: {shorten(error.get('message', ''))}", kind="metrics", log=log
            )
        elif phase == "save":
            message = f"the scoring program's result could not be saved: {raised}"
        else:
            message = f"score(y_true, y_pred) raised {raised}{where}"
        if "socket" in raised.lower() or "gaierror" in raised or any(f"[Errno {n}]" in raised for n in _NETWORK_ERRNOS):
            message += " (scoring programs have no network access)"
        traceback = _trimmed(error.get("traceback", ""))
        if traceback:
            message += "\n\nTraceback (its last lines):\n" + traceback
        return ScoringProgramError(message, kind="raised", log=log)
    if ran.status in ("killed", "error"):
        last = [line for line in ran.stderr_tail.strip().splitlines() if line.strip()]
        detail = f": {shorten(last[-1], 200)}" if last else ""
        return ScoringProgramError(f"the scoring program's process {ran.message}{detail}", kind="crashed", log=log)
    return ScoringProgramError(
        "the scoring program ended before its scores were written (did it call exit()?)", kind="crashed", log=log
    )
