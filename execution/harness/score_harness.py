"""Runs a host's scoring program inside the sandbox. Copied into the run's working directory.

Usage: ``score_harness.py metrics`` (import the program, report its METRICS) or
``score_harness.py score`` (also call ``score(y_true, y_pred)``); without an argument, the
``mode`` of ``inputs/spec.json`` (a runner starts every workspace as ``harness.py``, no argument).

Reads (relative to the working directory):
    scoring.py        the host's program (docs/scoring-programs.md)
    inputs/spec.json  {"mode": ..., "id_column": ..., "y_true": {column: dtype}, "y_pred": {column: dtype}},
                      dtype one of "int", "float", "bool", "text"
    inputs/y_true.csv, inputs/y_pred.csv   (score only) the id column, then the others

Writes to outputs/:
    result.json  {"metrics": METRICS, "scores": what score() returned} as plain JSON
                 (numpy numbers and arrays, pandas Series made lists; other objects a
                 "<object of type T>" string); the platform checks it outside the sandbox
    error.json   when the program failed: phase ("import", "contract": METRICS or score
                 missing, "score" or "save"), type,
                 message, line (in scoring.py), traceback (the program's frames, trimmed)

Exit status: 0 done, 1 the program failed, 3 it ran out of memory, 2 the harness's own
inputs are bad.
"""

import os
import sys

# Started with -S when the worker's own interpreter is out of the sandbox user's reach:
# the worker's site-packages come in through this variable (see execution.sandbox.python_command).
for _site_dir in filter(None, os.environ.pop("VARBOARD_SITE_PACKAGES", "").split(os.pathsep)):
    import site

    site.addsitedir(_site_dir)

import importlib.util  # noqa: E402
import json  # noqa: E402
import traceback  # noqa: E402

OUT = "outputs"
PROGRAM = "scoring.py"
HARNESS = os.path.basename(__file__)
MAX_TRACEBACK = 3000


def _write_json(name: str, payload: dict) -> None:
    tmp = os.path.join(OUT, name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
    os.replace(tmp, os.path.join(OUT, name))


def _program_traceback(exc: BaseException) -> str:
    """The traceback without the harness's and the import machinery's leading frames."""
    tb = exc.__traceback__
    while tb is not None and (
        os.path.basename(tb.tb_frame.f_code.co_filename) == HARNESS
        or tb.tb_frame.f_code.co_filename.startswith("<frozen")
    ):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return text if len(text) <= MAX_TRACEBACK else "…" + text[-MAX_TRACEBACK:]


def _fail(exc: BaseException, phase: str) -> int:
    frames = traceback.extract_tb(exc.__traceback__)
    line = next((f.lineno for f in reversed(frames) if os.path.basename(f.filename) == PROGRAM), None)
    if isinstance(exc, SyntaxError) and os.path.basename(exc.filename or "") == PROGRAM:
        line = exc.lineno
    text = _program_traceback(exc)
    sys.stderr.write(text)
    sys.stderr.flush()
    try:
        _write_json(
            "error.json",
            {
                "phase": phase,
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "line": line,
                "traceback": text,
            },
        )
    except BaseException:  # the disk may be what failed; the exit status still says it
        pass
    return 3 if isinstance(exc, MemoryError) else 1


def _plain(value, depth: int = 0):
    """`value` as JSON-able Python: numpy and pandas made plain; anything else named by its type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 3:
        return f"<object of type {type(value).__name__}>"
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    import numpy as np

    if isinstance(value, np.generic):
        return value.item() if isinstance(value.item(), (bool, int, float, str)) else _plain(value.item(), depth + 1)
    if hasattr(value, "to_numpy") and getattr(value, "ndim", None) == 1:  # a pandas Series or Index
        try:
            value = value.to_numpy()
        except Exception:
            return f"<object of type {type(value).__name__}>"
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.tolist()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, depth + 1) for v in value]
    return f"<object of type {type(value).__name__}>"


def _read(name: str, spec: dict):
    import pandas as pd

    columns = spec[name]
    kinds = {"int": "int64", "float": "float64", "bool": "bool", "text": str}
    dtype = {spec["id_column"]: str, **{c: kinds[k] for c, k in columns.items()}}
    frame = pd.read_csv(
        os.path.join("inputs", f"{name}.csv"),
        dtype=dtype,
        keep_default_na=False,
        na_values={c: [""] for c, k in columns.items() if k == "float"},
    )
    return frame.set_index(spec["id_column"])


def _load_program():
    module_spec = importlib.util.spec_from_file_location("scoring", PROGRAM)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"{PROGRAM} cannot be loaded")
    program = importlib.util.module_from_spec(module_spec)
    sys.modules["scoring"] = program
    module_spec.loader.exec_module(program)
    return program


def main(mode: str | None) -> int:
    os.makedirs(OUT, exist_ok=True)
    try:
        with open(os.path.join("inputs", "spec.json")) as fh:
            spec = json.load(fh)
        mode = mode or spec.get("mode", "score")
        if mode == "score":
            y_true, y_pred = _read("y_true", spec), _read("y_pred", spec)
        elif mode != "metrics":
            raise ValueError(f"unknown mode {mode!r}")
    except Exception as exc:
        print(f"score harness: cannot read its inputs: {exc!r}", file=sys.stderr)
        return 2
    try:
        program = _load_program()
    except BaseException as exc:
        return _fail(exc, "import")
    if not hasattr(program, "METRICS"):
        return _fail(AttributeError(f"{PROGRAM} does not define METRICS"), "contract")
    result = {"metrics": _plain(program.METRICS)}
    if mode == "score":
        score = getattr(program, "score", None)
        if not callable(score):
            return _fail(AttributeError(f"{PROGRAM} does not define a function score(y_true, y_pred)"), "contract")
        try:
            result["scores"] = _plain(score(y_true, y_pred))
        except BaseException as exc:
            return _fail(exc, "score")
    try:
        _write_json("result.json", result)
    except BaseException as exc:
        return _fail(exc, "save")
    return 0


def _exit(status: int) -> None:
    """Exit at once, skipping the interpreter's teardown (the sandbox kills what is left)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


if __name__ == "__main__":
    _exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
