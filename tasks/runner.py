"""Execute one run of a training recipe: write its inputs, run it sandboxed, score it.

Pure Python and numpy, no Django. The caller (a Celery task, through a service) gives the
recipe's source, the pool, the run's split and seed record, and a metric; it gets back a
`RunOutcome` to store. What crosses into the sandbox: the recipe, the harness, the
training rows with labels, the validation rows with labels, and the inputs (never the
labels) of the validation and test rows, mixed together. What comes back: prediction
arrays, checked strictly and scored here, outside the sandbox.

Hyperparameter search (``hpo={"mode": "search", ...}``) runs in one sandboxed process:
the runner samples T configurations from the recipe's declared ``SEARCH_SPACE`` with the
run's ``hpo`` seed, the harness fits each one on the training rows and predicts the mixed
validation+test rows, and the runner picks the trial with the best validation score and
reports that trial's test score. The recipe never learns which trial was chosen, and no
refit happens (train is train, validation selects, test evaluates: Bouthillier et al.
2021, App. B). The wall-time limit covers all T trials.
"""

from __future__ import annotations

import ast
import dataclasses
import errno
import functools
import hashlib
import importlib.metadata
import io
import json
import math
import os
import platform
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from evaluation.hpo import METHODS, sample_trials, validate_search_space
from evaluation.seeds import SOURCES
from evaluation.splits import Split

from .sandbox import Limits, SandboxResult, python_command, run_sandboxed

__all__ = [
    "RecipeData",
    "RecipeInfo",
    "RecipeError",
    "RunOutcome",
    "inspect_recipe",
    "execute_recipe_run",
    "PREDICTION_KINDS",
]

PREDICTION_KINDS = ("label", "proba", "value")
HARNESS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe_harness")
HARNESS_FILES = ("harness.py", "varboard_recipe.py")
_MAX_JSON_BYTES = 64 * 1024
_MAX_MESSAGE = 500


# -- inputs and outputs ------------------------------------------------------------------


def _plain(arr, name: str) -> np.ndarray:
    """An array np.load can read back without pickle (object columns become str/float)."""
    arr = np.asarray(arr)
    if arr.dtype == object:
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            return arr.astype(str)
    if arr.dtype.kind not in "biufU":
        raise ValueError(f"`{name}` has unsupported dtype {arr.dtype}")
    return arr


@dataclass(frozen=True, eq=False)
class RecipeData:
    """The pool a challenge's splits index into.

    Attributes
    ----------
    X : ndarray, shape (n, n_features) of numbers, or (n,) of str for text
    y : ndarray, shape (n,)
        Labels (classification) or targets (regression) of every pool row.
    ids : ndarray, shape (n,)
    feature_names : list of str
    classes : list
        Class labels in the order of probability columns; empty for regression.
    task : {"classification", "regression"}
    """

    X: np.ndarray
    y: np.ndarray
    ids: np.ndarray
    feature_names: list
    classes: list
    task: str = "classification"

    def __post_init__(self):
        X, y, ids = _plain(self.X, "X"), _plain(self.y, "y"), _plain(self.ids, "ids")
        if X.ndim not in (1, 2) or len(X) < 2:
            raise ValueError(f"`X` must be a 1-d (text) or 2-d array of at least 2 rows, got shape {X.shape}")
        if y.shape != (len(X),) or ids.shape != (len(X),):
            raise ValueError(
                f"`y` and `ids` must have one entry per row of X ({len(X)}), got {y.shape} and {ids.shape}"
            )
        if self.task not in ("classification", "regression"):
            raise ValueError(f"`task` must be 'classification' or 'regression', got {self.task!r}")
        classes = list(self.classes)
        if self.task == "classification":
            if len(classes) < 2:
                raise ValueError("`classes` must list at least 2 classes for a classification task")
            unknown = np.setdiff1d(y, np.asarray(classes))
            if len(unknown):
                raise ValueError(f"`y` holds {len(unknown)} value(s) not in `classes`, e.g. {unknown[0]!r}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "feature_names", [str(f) for f in self.feature_names])
        object.__setattr__(self, "classes", classes)


@dataclass(frozen=True)
class RecipeInfo:
    """What a recipe declares, read without running it (see `inspect_recipe`)."""

    hyperparameters: dict
    search_space: dict | None
    needs_gpu: bool


class RecipeError(ValueError):
    """The recipe's source is unusable (syntax error, no fit_predict, bad declarations)."""


@dataclass(frozen=True, eq=False)
class RunOutcome:
    """Result of one recipe run.

    Attributes
    ----------
    status : {"succeeded", "failed"}
    test_score, valid_score : float or None
        Scores of the chosen trial on the test and validation rows (None on failure).
    outcomes : ndarray or None
        Per-example outcomes on the test rows (in ``split.test`` order), from the metric.
    hyperparameters : dict
        Hyperparameters of the chosen trial (the recipe's defaults, overridden by the
        submission's, overridden by the search).
    trials : list of dict
        Search mode only: ``{"hyperparameters": ..., "valid_score": ...}`` per trial.
    error : str
        A sentence for the contestant naming the problem; empty on success.
    log : str
        Captured stdout and stderr (head and tail).
    duration_s : float
        Wall-clock seconds of the sandboxed process.
    device : str
    fingerprint : dict
        Interpreter and library versions seen inside the sandbox, platform, CPU, GPU.
    sandbox_status : str
        `SandboxResult.status` ("ok", "timeout", "memory", ...), or "not_run".
    max_rss_mb : float
    warnings : tuple of str
        Confinement the sandbox could not set up.
    """

    status: str
    test_score: float | None
    valid_score: float | None
    outcomes: np.ndarray | None
    hyperparameters: dict
    trials: list
    error: str
    log: str
    duration_s: float
    device: str
    fingerprint: dict
    sandbox_status: str = "not_run"
    max_rss_mb: float = 0.0
    warnings: tuple = field(default=())


class _RecipeFault(Exception):
    """The recipe's outputs are unusable; the message is for the contestant."""


# -- reading a recipe without running it -------------------------------------------------


def inspect_recipe(source: str) -> RecipeInfo:
    """Check a recipe's source and read its declarations without executing it.

    ``HYPERPARAMETERS``, ``SEARCH_SPACE`` and ``NEEDS_GPU`` must be literals (they are
    read with `ast.literal_eval`), so the platform learns them without running
    contestant code outside the sandbox.

    Raises
    ------
    RecipeError
        On a syntax error, a missing top-level ``fit_predict`` taking six positional
        parameters, a non-literal declaration, or an invalid ``SEARCH_SPACE``.
    """
    if not isinstance(source, str) or not source.strip():
        raise RecipeError("the recipe is empty")
    try:
        tree = ast.parse(source, filename="recipe.py")
    except SyntaxError as exc:
        raise RecipeError(f"recipe.py has a syntax error on line {exc.lineno}: {exc.msg}") from None
    fit = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
           and n.name == "fit_predict"]
    if not fit:
        raise RecipeError(
            "recipe.py must define a top-level function "
            "fit_predict(train, valid, test_inputs, hyperparameters, seeds, device)"
        )
    args = fit[-1].args
    n_positional = len(args.posonlyargs) + len(args.args)
    if isinstance(fit[-1], ast.AsyncFunctionDef) or (args.vararg is None and n_positional != 6):
        raise RecipeError(
            f"fit_predict must take 6 parameters (train, valid, test_inputs, hyperparameters, "
            f"seeds, device), it takes {n_positional}"
        )
    declared = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("HYPERPARAMETERS", "SEARCH_SPACE", "NEEDS_GPU"):
                try:
                    declared[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    raise RecipeError(
                        f"{target.id} (line {node.lineno}) must be a literal (a dict of plain "
                        "values written out), so it can be read without running the recipe"
                    ) from None
    hyperparameters = declared.get("HYPERPARAMETERS", {})
    if not isinstance(hyperparameters, dict) or not all(isinstance(k, str) for k in hyperparameters):
        raise RecipeError("HYPERPARAMETERS must be a dict with string keys")
    space = declared.get("SEARCH_SPACE")
    if space is not None:
        try:
            validate_search_space(space)
        except ValueError as exc:
            raise RecipeError(f"SEARCH_SPACE is invalid: {exc}") from None
    needs_gpu = declared.get("NEEDS_GPU", False)
    if not isinstance(needs_gpu, bool):
        raise RecipeError("NEEDS_GPU must be True or False")
    return RecipeInfo(hyperparameters=hyperparameters, search_space=space, needs_gpu=needs_gpu)


# -- checking predictions ------------------------------------------------------------------


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _check_predictions(arr: np.ndarray, n_rows: int, kind: str, classes: np.ndarray) -> np.ndarray:
    """Return the predictions as the metric expects them, or raise _RecipeFault."""
    if arr.ndim == 0:
        raise _RecipeFault(
            f"the recipe returned a single value, not one prediction per row of test_inputs ({n_rows} rows)")
    if len(arr) != n_rows:
        raise _RecipeFault(f"the recipe returned {len(arr)} predictions for {n_rows} rows of test_inputs")
    if kind == "proba":
        n_classes = len(classes)
        if arr.ndim != 2 or arr.shape[1] != n_classes:
            raise _RecipeFault(
                f"the recipe returned predictions of shape {arr.shape}; this challenge needs "
                f"probabilities of shape ({n_rows}, {n_classes}), one column per class in the order "
                "of `classes`")
    elif arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim != 1:
        raise _RecipeFault(
            f"the recipe returned predictions of shape {arr.shape}; this challenge needs one "
            f"{'class label' if kind == 'label' else 'value'} per row, shape ({n_rows},)")

    if kind == "label" and classes.dtype.kind == "U":
        if arr.dtype.kind != "U":
            raise _RecipeFault(
                f"the recipe returned {arr.dtype} predictions, but the classes are strings "
                f"({', '.join(map(repr, classes[:3].tolist()))}, ...); return the class labels themselves")
    else:
        if arr.dtype.kind not in "biuf":
            raise _RecipeFault(f"the recipe returned predictions of dtype {arr.dtype}; they must be numbers")
        arr = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
        if arr.dtype.kind == "f":
            n_nan = int(np.isnan(arr).sum())
            if n_nan:
                rows = int(np.isnan(arr).reshape(len(arr), -1).any(axis=1).sum())
                raise _RecipeFault(f"the recipe returned NaN in {_count(rows, 'prediction')}")
            n_inf = int(np.isinf(arr).reshape(len(arr), -1).any(axis=1).sum())
            if n_inf:
                raise _RecipeFault(f"the recipe returned infinite values in {_count(n_inf, 'prediction')}")

    if kind == "label":
        if classes.dtype.kind != "U":
            if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
                arr = arr.astype(classes.dtype) if classes.dtype.kind in "iu" else arr
        bad = ~np.isin(arr, classes)
        if bad.any():
            raise _RecipeFault(
                f"the recipe returned {_count(int(bad.sum()), 'label')} that "
                f"{'is' if bad.sum() == 1 else 'are'} not among the classes (e.g. {arr[bad][0].item()!r}; "
                f"the classes are {', '.join(map(repr, classes[:10].tolist()))})")
    elif kind == "proba":
        if arr.min() < -1e-6 or arr.max() > 1 + 1e-6:
            row = int(np.flatnonzero(((arr < -1e-6) | (arr > 1 + 1e-6)).any(axis=1))[0])
            raise _RecipeFault(f"the recipe returned probabilities outside [0, 1] (row {row} of test_inputs)")
        sums = arr.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1) > 1e-3)
        if len(off):
            raise _RecipeFault(
                f"the recipe returned probabilities that do not sum to 1 in {_count(len(off), 'row')} "
                f"(row {off[0]} of test_inputs sums to {sums[off[0]]:.4g})")
        arr = np.clip(arr, 0.0, 1.0)
    return arr


# -- reading outputs without following the recipe's symlinks -------------------------------


class _Outputs:
    """Reads files from <run_root>/work/outputs with no symlink followed at any step.

    The sandboxed user owns work/ and could swap a file or a directory for a symlink to,
    say, the hidden labels; every component is opened with O_NOFOLLOW relative to a
    directory descriptor, starting from run_root, which the sandbox cannot modify. Files
    must be regular, with a single link, and of a bounded size.
    """

    def __init__(self, run_root: str):
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        self.fd = None
        root = os.open(run_root, flags)
        try:
            work = os.open("work", flags, dir_fd=root)
            try:
                self.fd = os.open("outputs", flags, dir_fd=work)
            finally:
                os.close(work)
        except OSError:
            self.fd = None
        finally:
            os.close(root)

    def read(self, name: str, max_bytes: int) -> bytes | None:
        """The file's bytes; None if absent; _RecipeFault if not a regular file or too big."""
        if self.fd is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _RecipeFault(f"outputs/{name} is a symbolic link; the recipe must not replace "
                                   "the harness's output files") from None
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _RecipeFault(f"outputs/{name} is not a regular file")
            if st.st_nlink != 1:  # a hard link to a file elsewhere (protected_hardlinks off)
                raise _RecipeFault(f"outputs/{name} is a hard link; the recipe must not replace "
                                   "the harness's output files")
            if st.st_size > max_bytes:
                raise _RecipeFault(f"outputs/{name} is {st.st_size:,} bytes, more than the "
                                   f"{max_bytes:,} expected")
            chunks, remaining = [], max_bytes + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks)[:max_bytes]
        finally:
            os.close(fd)

    def json(self, name: str) -> dict | None:
        try:
            data = self.read(name, _MAX_JSON_BYTES)
        except _RecipeFault:
            return None
        if data is None:
            return None
        try:
            value = json.loads(data.decode("utf-8", errors="replace"))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# -- fingerprint ------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=None)
def _host_fingerprint() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "sklearn": _version("scikit-learn"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
    }


@functools.lru_cache(maxsize=None)
def _gpu_name(device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    index = device.split(":", 1)[1] if ":" in device else "0"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", index],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _fingerprint(reported: dict | None, device: str, limits: Limits) -> dict:
    fp = dict(_host_fingerprint())
    for key in ("python", "numpy", "torch", "transformers", "sklearn", "gpu"):
        value = (reported or {}).get(key)
        if isinstance(value, str) and value:
            fp[key] = value[:100]
    if device.startswith("cuda") and not fp.get("gpu"):
        fp["gpu"] = _gpu_name(device)
    fp.setdefault("gpu", None)
    fp["threads"] = limits.threads
    return fp


# -- messages ---------------------------------------------------------------------------------


def _shorten(text: str, limit: int = _MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_message(result: SandboxResult, error: dict | None, limits: Limits) -> str:
    where = ""
    raised = ""
    if error:
        etype = _shorten(error.get("type", "Exception"), 80)
        emsg = _shorten(error.get("message", ""))
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
        return (f"the recipe tried to write a file larger than the {limits.max_file_mb} MB limit"
                + (f" ({raised}{at})" if raised else ""))
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
        note = " (recipes have no network access)" if errno_ in (
            errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED) or "gaierror" in raised else ""
        return f"the recipe raised {raised}" + (f" ({where})" if where else "") + note
    if result.status == "killed":
        return f"the recipe's process {result.message}"
    if result.status == "error":
        last = [line for line in result.stderr_tail.strip().splitlines() if line.strip()]
        detail = f": {_shorten(last[-1], 200)}" if last else ""
        return f"the recipe's process {result.message}{detail}"
    return "the recipe exited before the harness finished (no predictions were written)"


def _log(result: SandboxResult) -> str:
    parts = []
    if result.stdout_tail.strip():
        parts.append("[stdout]\n" + result.stdout_tail.rstrip("\n"))
    if result.stderr_tail.strip():
        parts.append("[stderr]\n" + result.stderr_tail.rstrip("\n"))
    return "\n".join(parts)


# -- the run ----------------------------------------------------------------------------------


def _hpo_iv(hpo) -> dict:
    hpo = dict(hpo or {"mode": "fixed"})
    mode = hpo.get("mode", "fixed")
    if mode == "fixed":
        return {"mode": "fixed"}
    if mode != "search":
        raise ValueError(f"`hpo['mode']` must be 'fixed' or 'search', got {mode!r}")
    method = hpo.get("method", "random")
    if method not in METHODS:
        raise ValueError(f"`hpo['method']` must be one of {', '.join(METHODS)}, got {method!r}")
    budget = hpo.get("budget")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"`hpo['budget']` must be a positive integer, got {budget!r}")
    return {"mode": "search", "method": method, "budget": budget}


def _split_iv(split: Split, n_pool: int) -> None:
    for name in ("train", "valid", "test"):
        idx = getattr(split, name)
        if len(idx) == 0:
            raise ValueError(f"`split.{name}` is empty")
        if idx.min() < 0 or idx.max() >= n_pool:
            raise ValueError(f"`split.{name}` indexes outside the pool of {n_pool} rows")


def _save_npz(path: str, data: RecipeData, rows: np.ndarray, labelled: bool) -> None:
    payload = {
        "X": data.X[rows],
        "ids": data.ids[rows],
        "feature_names": np.asarray(data.feature_names, dtype=str),
        "classes": np.asarray(data.classes) if data.classes else np.zeros(0),
    }
    if labelled:
        payload["y"] = data.y[rows]
    np.savez(path, **payload)


def _failed(error: str, *, hyperparameters=None, log="", result: SandboxResult | None = None,
            device="cpu", limits: Limits, reported=None, trials=()) -> RunOutcome:
    return RunOutcome(
        status="failed", test_score=None, valid_score=None, outcomes=None,
        hyperparameters=hyperparameters or {}, trials=list(trials), error=error, log=log,
        duration_s=result.duration_s if result else 0.0, device=device,
        fingerprint=_fingerprint(reported, device, limits),
        sandbox_status=result.status if result else "not_run",
        max_rss_mb=result.max_rss_mb if result else 0.0,
        warnings=result.warnings if result else (),
    )


def execute_recipe_run(
    *,
    recipe_source: str,
    data: RecipeData,
    split: Split,
    seeds: dict,
    hyperparameters: dict | None = None,
    hpo: dict | None = None,
    metric: Callable,
    prediction_kind: str,
    limits: Limits | None = None,
    device: str = "cpu",
    workdir_root: str | None = None,
    higher_is_better: bool = True,
    python: str | None = None,
) -> RunOutcome:
    """Run a recipe once in the sandbox and score it outside.

    Parameters
    ----------
    recipe_source : str
        Text of recipe.py.
    data : RecipeData
        The pool.
    split : Split
        Rows of this run (indices into the pool).
    seeds : dict
        The run's seed record (`evaluation.seeds.seed_record`).
    hyperparameters : dict, optional
        The submission's hyperparameters; they override the recipe's ``HYPERPARAMETERS``.
    hpo : dict, optional
        ``{"mode": "fixed"}`` (default) or ``{"mode": "search", "method": "random" |
        "noisy_grid", "budget": T}``.
    metric : callable
        ``metric(y_true, y_pred) -> (score, outcomes or None)``.
    prediction_kind : {"label", "proba", "value"}
        What the metric takes: class labels, class probabilities of shape (n, n_classes)
        in the order of ``data.classes``, or values.
    limits : Limits, optional
    device : {"cpu", "cuda", "cuda:N"}
    workdir_root : str, optional
        Where the run's temporary directory is made (default: the system's).
    higher_is_better : bool, default True
        Direction of the metric, used to choose the best trial in search mode.
    python : str, optional
        Interpreter that runs the harness; default: `tasks.sandbox.python_command`
        (this interpreter, or one of the same version the sandbox user can execute).

    Returns
    -------
    RunOutcome
        ``status == "failed"`` with a clear ``error`` when the recipe crashes, hangs,
        exceeds a limit or returns unusable predictions.

    Raises
    ------
    ValueError
        For bad arguments (a caller's bug, not the recipe's).
    tasks.sandbox.SandboxUnavailable
        When the sandbox cannot start (a platform failure: retry elsewhere).
    """
    limits = limits or Limits()
    if prediction_kind not in PREDICTION_KINDS:
        raise ValueError(f"`prediction_kind` must be one of {', '.join(PREDICTION_KINDS)}, got {prediction_kind!r}")
    if not isinstance(data, RecipeData):
        raise ValueError("`data` must be a RecipeData")
    if prediction_kind != "value" and data.task != "classification":
        raise ValueError(f"prediction kind {prediction_kind!r} needs a classification task")
    if not callable(metric):
        raise ValueError("`metric` must be callable: metric(y_true, y_pred) -> (score, outcomes)")
    missing = [s for s in SOURCES if s not in seeds]
    if missing:
        raise ValueError(f"`seeds` lacks the source(s) {', '.join(missing)}")
    seeds = {name: int(seeds[name]) for name in SOURCES}
    _split_iv(split, len(data.y))
    hpo = _hpo_iv(hpo)

    try:
        info = inspect_recipe(recipe_source)
    except RecipeError as exc:
        return _failed(str(exc), device=device, limits=limits)
    base = {**info.hyperparameters, **(hyperparameters or {})}
    if hpo["mode"] == "search":
        if info.search_space is None:
            return _failed("this challenge searches hyperparameters, but recipe.py declares no SEARCH_SPACE",
                           hyperparameters=base, device=device, limits=limits)
        trials = [{**base, **t} for t in sample_trials(
            info.search_space, hpo["budget"], method=hpo["method"], seed=seeds["hpo"])]
    else:
        trials = [base]
    try:
        json.dumps(trials)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"hyperparameters must be JSON values: {exc}") from None

    classes = np.asarray(data.classes) if data.classes else np.zeros(0)
    stacked = np.concatenate([split.valid, split.test])
    order_seed = int(hashlib.sha256(split.split_id.encode()).hexdigest()[:16], 16)
    perm = np.random.default_rng(order_seed).permutation(len(stacked))
    n_valid, n_rows = len(split.valid), len(stacked)

    run_root = tempfile.mkdtemp(prefix="varboard-run-", dir=workdir_root)
    outputs = None
    try:
        os.chmod(run_root, 0o711)  # the sandbox user may enter work/, not list or change run_root
        work = os.path.join(run_root, "work")
        os.makedirs(os.path.join(work, "inputs"))
        os.makedirs(os.path.join(work, "outputs"))
        for name in HARNESS_FILES:
            shutil.copyfile(os.path.join(HARNESS_DIR, name), os.path.join(work, name))
        with open(os.path.join(work, "recipe.py"), "w", encoding="utf-8") as fh:
            fh.write(recipe_source)
        _save_npz(os.path.join(work, "inputs", "train.npz"), data, split.train, True)
        _save_npz(os.path.join(work, "inputs", "valid.npz"), data, split.valid, True)
        _save_npz(os.path.join(work, "inputs", "test_inputs.npz"), data, stacked[perm], False)
        with open(os.path.join(work, "inputs", "spec.json"), "w") as fh:
            json.dump({"trials": trials, "seeds": seeds, "device": device, "task": data.task,
                       "prediction_kind": prediction_kind}, fh)

        if python:
            prefix, env, note = (python, "-s", "-B"), {}, None
        else:
            prefix, env_items, note = python_command()
            env = dict(env_items)
        result = run_sandboxed([*prefix, "harness.py"], workdir=work, env=env, limits=limits,
                               device=device)
        if note:
            result = dataclasses.replace(result, warnings=(*result.warnings, note))
        outputs = _Outputs(run_root)
        reported = outputs.json("done.json")
        log = _log(result)
        common = dict(log=log, result=result, device=device, limits=limits)
        if result.status != "ok" or reported is None:
            error = outputs.json("error.json")
            return _failed(_error_message(result, error, limits), hyperparameters=base,
                           reported=reported, **common)

        width = max(len(classes), 1)
        label_len = max((len(str(c)) for c in data.classes), default=1)
        max_bytes = n_rows * width * 8 + n_rows * 4 * max(label_len, 1) + 65536
        scored = []
        for t, hp in enumerate(trials):
            prefix = f"trial {t + 1} of {len(trials)}: " if len(trials) > 1 else ""
            try:
                raw = outputs.read(f"predictions_{t}.npy", max_bytes)
                if raw is None:
                    raise _RecipeFault("the recipe's predictions are missing")
                try:
                    arr = np.load(io.BytesIO(raw), allow_pickle=False)
                except (ValueError, OSError, EOFError) as exc:
                    raise _RecipeFault(f"the recipe's predictions could not be read ({_shorten(exc, 200)})") from None
                if not isinstance(arr, np.ndarray):
                    raise _RecipeFault("the recipe's predictions are not an array")
                arr = _check_predictions(arr, n_rows, prediction_kind, classes)
            except _RecipeFault as fault:
                return _failed(prefix + str(fault), hyperparameters=hp, reported=reported, **common)
            ordered = np.empty_like(arr)
            ordered[perm] = arr
            valid_pred, test_pred = ordered[:n_valid], ordered[n_valid:]
            valid_score = float(metric(data.y[split.valid], valid_pred)[0])
            scored.append((valid_score, test_pred))

        def key(j):
            v = scored[j][0]
            if not math.isfinite(v):
                return -math.inf
            return v if higher_is_better else -v

        best = max(range(len(trials)), key=key)  # ties: the first such trial
        test_score, outcomes = metric(data.y[split.test], scored[best][1])
        return RunOutcome(
            status="succeeded", test_score=float(test_score), valid_score=scored[best][0],
            outcomes=None if outcomes is None else np.asarray(outcomes),
            hyperparameters=trials[best],
            trials=[{"hyperparameters": hp, "valid_score": s[0]} for hp, s in zip(trials, scored)]
            if hpo["mode"] == "search" else [],
            error="", log=log, duration_s=result.duration_s, device=device,
            fingerprint=_fingerprint(reported, device, limits), sandbox_status=result.status,
            max_rss_mb=result.max_rss_mb, warnings=result.warnings,
        )
    finally:
        if outputs is not None:
            outputs.close()
        shutil.rmtree(run_root, ignore_errors=True)
