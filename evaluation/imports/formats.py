"""Readers of the three result formats (see :mod:`evaluation.imports`)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

import numpy as np

from evaluation.io.text import check_size, decode_text, name_file, show_values
from evaluation.predictions import MAX_PREDICTION

__all__ = [
    "FORMATS",
    "ImportedResults",
    "ResultsImportError",
    "combine",
    "read_csv_results",
    "read_lm_eval_samples",
    "read_results",
    "read_solved_ids",
]

FORMATS = ("csv", "lm-eval-jsonl", "solved-ids")
#: Metrics looked for, in order, in an lm-evaluation-harness sample when none is named.
LM_EVAL_METRICS = ("acc", "exact_match", "acc_norm", "f1", "bleu", "pass@1")
_TRUE = {"1", "1.0", "true", "yes", "correct", "t", "y"}
_FALSE = {"0", "0.0", "false", "no", "incorrect", "f", "n"}


class ResultsImportError(ValueError):
    """An import is unusable; the message names the file and the line, row or field."""


#: The most results (models x instances) and instances one import holds: the dense table is allocated
#: before the outcomes fill it, so a short file naming many models and many instances (a diagonal) would
#: ask for models x instances floats (0.21 MB of CSV asked for 800 MB).
MAX_RESULTS = 10_000_000
MAX_INSTANCES = 1_000_000
#: The longest instance id: ids are stored with the import and shown by name.
MAX_ID_CHARS = 200
#: The largest magnitude of an imported score: outcomes are stored as float32 (``Run.pack_outcomes``), where 1e99
#: became inf and the board of the challenge answered "cannot be computed" for everyone; the bound of predicted
#: numbers, whose squared errors are stored the same way.
MAX_SCORE = MAX_PREDICTION


def check_table_shape(n_models: int, n_instances: int, where: str) -> None:
    """ResultsImportError when a models x instances table is past :data:`MAX_RESULTS` or :data:`MAX_INSTANCES`."""
    if n_instances > MAX_INSTANCES:
        raise ResultsImportError(f"{where}: {n_instances:,} instances; an import holds at most {MAX_INSTANCES:,}")
    if n_models * n_instances > MAX_RESULTS:
        raise ResultsImportError(
            f"{where}: {n_models:,} models x {n_instances:,} instances would be {n_models * n_instances:,} "
            f"results; an import holds at most {MAX_RESULTS:,} (each model needs a result on every instance)"
        )


@dataclass(frozen=True, eq=False)
class ImportedResults:
    """Models x instances outcomes (NaN where a model has no result), and what they are.

    ``binary``: every outcome is 0 or 1 (correct / incorrect). ``metric``: the name of
    the outcome (``"correct"``, ``"score"`` or the lm-eval metric).
    """

    models: tuple[str, ...]
    instances: tuple[str, ...]
    outcomes: np.ndarray
    binary: bool
    metric: str

    def __post_init__(self):
        self.outcomes.setflags(write=False)


def _text(data: bytes, filename: str, max_bytes: int) -> str:
    check_size(data, filename, max_bytes, ResultsImportError)
    return decode_text(data, filename, ResultsImportError)


def _outcome(cell: str, binary: bool, where: str) -> float:
    text = cell.strip().lower()
    if binary:
        if text in _TRUE:
            return 1.0
        if text in _FALSE:
            return 0.0
        raise ResultsImportError(f"{where}: `correct` must be 0/1 or true/false (got {cell!r})")
    try:
        value = float(text)
    except ValueError:
        raise ResultsImportError(f"{where}: `score` must be a number (got {cell!r})") from None
    if not np.isfinite(value):
        raise ResultsImportError(f"{where}: `score` must be finite (got {cell!r})")
    if abs(value) > MAX_SCORE:
        raise ResultsImportError(f"{where}: `score` must lie within ±{MAX_SCORE:g} (got {cell!r})")
    return value


def read_csv_results(
    data: bytes,
    *,
    filename: str = "results.csv",
    max_bytes: int = 50 << 20,
    model_column: str = "model",
    instance_column: str = "instance_id",
) -> ImportedResults:
    """A generic CSV: one row per (model, instance), with ``score`` or ``correct``.

    Rows are named as a spreadsheet counts them (the header is row 1). A model with two
    rows for one instance, a missing column or a bad value is refused naming the row.
    """
    name = name_file(filename)
    reader = csv.reader(io.StringIO(_text(data, filename, max_bytes)))
    header = [h.strip() for h in next(reader, [])]
    value_column = "correct" if "correct" in header else "score" if "score" in header else None
    missing = [c for c in (model_column, instance_column) if c not in header]
    if missing or value_column is None:
        need = missing + ([] if value_column else ["score or correct"])
        raise ResultsImportError(f"{name}: the header lacks {', '.join(need)} (it has {show_values(header)})")
    cols = {c: header.index(c) for c in (model_column, instance_column, value_column)}
    cells: dict[tuple[str, str], float] = {}
    for number, record in enumerate(reader, start=2):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) < len(header):
            raise ResultsImportError(f"{name}, row {number}: {len(record)} cells for {len(header)} columns")
        model, instance = record[cols[model_column]].strip(), record[cols[instance_column]].strip()
        if not model or not instance:
            raise ResultsImportError(f"{name}, row {number}: empty `{model_column}` or `{instance_column}`")
        if (model, instance) in cells:
            raise ResultsImportError(f"{name}, row {number}: a second result of {model!r} on {instance!r}")
        cells[(model, instance)] = _outcome(
            record[cols[value_column]], value_column == "correct", f"{name}, row {number}"
        )
    if not cells:
        raise ResultsImportError(f"{name}: no result rows")
    return _table(cells, value_column == "correct", value_column, name)


def _table(cells: dict[tuple[str, str], float], binary: bool, metric: str, where: str) -> ImportedResults:
    models = tuple(dict.fromkeys(m for m, _ in cells))
    instances = tuple(dict.fromkeys(i for _, i in cells))
    check_table_shape(len(models), len(instances), where)
    too_long = next((i for i in instances if len(i) > MAX_ID_CHARS), None)
    if too_long is not None:
        raise ResultsImportError(
            f"{where}: an instance id of {len(too_long):,} characters ({show_values([too_long[:40] + '…'])}); "
            f"the limit is {MAX_ID_CHARS}"
        )
    mi, ii = {m: k for k, m in enumerate(models)}, {i: k for k, i in enumerate(instances)}
    outcomes = np.full((len(models), len(instances)), np.nan)
    for (m, i), value in cells.items():
        outcomes[mi[m], ii[i]] = value
    binary = binary or bool(np.all(np.isin(outcomes[~np.isnan(outcomes)], (0.0, 1.0))))
    return ImportedResults(models, instances, outcomes, binary, metric)


def read_lm_eval_samples(
    data: bytes, *, model: str, filename: str = "samples.jsonl", metric: str | None = None, max_bytes: int = 200 << 20
) -> ImportedResults:
    """lm-evaluation-harness per-sample log (``--log_samples``): one JSON object per line.

    Each line needs ``doc_id`` and the metric (``metric``, or the first of
    :data:`LM_EVAL_METRICS` present); the instance id is the ``doc_id``.
    """
    name = name_file(filename)
    cells: dict[tuple[str, str], float] = {}
    for number, line in enumerate(_text(data, filename, max_bytes).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsImportError(f"{name}, line {number}: not JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, arrays nested too deep
            raise ResultsImportError(f"{name}, line {number}: not usable JSON ({type(exc).__name__})") from None
        if not isinstance(sample, dict) or "doc_id" not in sample:
            raise ResultsImportError(f"{name}, line {number}: a sample needs a `doc_id`")
        if isinstance(sample["doc_id"], (bool, list, dict)) or sample["doc_id"] is None:
            raise ResultsImportError(f"{name}, line {number}: `doc_id` must be a number or a string")
        if metric is None:
            metric = next((m for m in LM_EVAL_METRICS if m in sample), None)
            if metric is None:
                raise ResultsImportError(
                    f"{name}, line {number}: no metric among {', '.join(LM_EVAL_METRICS)}; name the metric to import"
                )
        if metric not in sample:
            raise ResultsImportError(f"{name}, line {number}: no `{metric}` in this sample")
        value = sample[metric]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise ResultsImportError(f"{name}, line {number}: `{metric}` must be a number (got {value!r})")
        if abs(value) > MAX_SCORE:
            raise ResultsImportError(
                f"{name}, line {number}: `{metric}` must lie within ±{MAX_SCORE:g} (got {value!r})"
            )
        key = (model, str(sample["doc_id"]))
        if key in cells:
            raise ResultsImportError(f"{name}, line {number}: a second sample with doc_id {sample['doc_id']!r}")
        cells[key] = float(value)
    if not cells:
        raise ResultsImportError(f"{name}: no samples")
    assert metric is not None  # named, or found in the first sample
    return _table(cells, False, metric, name)


def read_solved_ids(
    data: bytes, *, model: str, instances, filename: str = "solved.json", max_bytes: int = 20 << 20
) -> ImportedResults:
    """The ids one model solved, against every instance: 1 for solved, 0 for the others.

    ``data`` is a JSON list, a JSON object with a ``resolved`` list (SWE-bench's report),
    or one id per line. An id outside ``instances`` is refused by name.
    """
    name = name_file(filename)
    text = _text(data, filename, max_bytes)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = [line.strip() for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, arrays nested too deep
        raise ResultsImportError(f"{name}: not usable JSON ({type(exc).__name__})") from None
    if isinstance(parsed, dict):
        parsed = parsed.get("resolved", parsed.get("resolved_ids"))
    if not isinstance(parsed, list):
        raise ResultsImportError(f"{name}: expected a list of solved ids (or an object with `resolved`)")
    universe = [str(i) for i in instances]
    known = set(universe)
    solved = {str(i) for i in parsed}
    unknown = sorted(solved - known)
    if unknown:
        raise ResultsImportError(f"{name}: {len(unknown)} solved id(s) are not instances: {show_values(unknown)}")
    cells = {(model, i): float(i in solved) for i in universe}
    return _table(cells, True, "solved", name)


def read_results(
    data: bytes, *, format: str, filename: str, model: str | None = None, metric: str | None = None, instances=None
) -> ImportedResults:
    """Read one file in ``format`` (one of :data:`FORMATS`); the per-format readers say what each needs."""
    if format not in FORMATS:
        raise ResultsImportError(f"`format` must be one of {', '.join(FORMATS)} (got {format!r})")
    if format == "csv":
        return read_csv_results(data, filename=filename)
    if not model:
        raise ResultsImportError(f"{name_file(filename)}: name the model these results belong to")
    if format == "lm-eval-jsonl":
        return read_lm_eval_samples(data, model=model, filename=filename, metric=metric)
    if not instances:
        raise ResultsImportError(f"{name_file(filename)}: solved ids need the list of every instance")
    return read_solved_ids(data, model=model, instances=instances, filename=filename)


def combine(parts, *, instances=None, on_missing: str = "error") -> ImportedResults:
    """Align several imports on the instance ids (``instances``: the order to use, e.g. an earlier import's).

    A model may appear in one part only. With ``on_missing="error"`` every model must
    have every instance (pairs are compared instance by instance); ``"intersect"`` keeps
    the instances every model has.
    """
    parts = list(parts)
    if not parts:
        raise ResultsImportError("nothing to import")
    models: list[str] = []
    for part in parts:
        for m in part.models:
            if m in models:
                raise ResultsImportError(f"model {m!r} appears in two files")
            models.append(m)
    order = list(instances) if instances is not None else list(dict.fromkeys(i for p in parts for i in p.instances))
    check_table_shape(len(models), len(order), "the files together")
    position = {i: k for k, i in enumerate(order)}
    outcomes = np.full((len(models), len(order)), np.nan)
    row = 0
    for part in parts:
        extra = [i for i in part.instances if i not in position]
        if extra:
            raise ResultsImportError(f"{len(extra)} instance(s) are not in this challenge: {show_values(extra)}")
        cols = np.array([position[i] for i in part.instances], dtype=np.int64)
        outcomes[row : row + len(part.models), cols] = part.outcomes
        row += len(part.models)
    missing = np.isnan(outcomes)
    if on_missing == "intersect":
        keep = ~missing.any(axis=0)
        order, outcomes = [i for i, k in zip(order, keep) if k], outcomes[:, keep]
    elif missing.any():
        m = int(np.argmax(missing.any(axis=1)))
        lacks = [order[k] for k in np.flatnonzero(missing[m])]
        raise ResultsImportError(
            f"model {models[m]!r} has no result on {len(lacks)} instance(s): "
            f"{show_values(lacks)} (every model needs every instance)"
        )
    if not order:
        raise ResultsImportError("no instance has a result from every model")
    binary = all(p.binary for p in parts)
    metric = parts[0].metric if len({p.metric for p in parts}) == 1 else "score"
    return ImportedResults(tuple(models), tuple(order), outcomes, binary, metric)
