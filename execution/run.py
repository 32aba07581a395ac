"""Execute one run of a training recipe: build its workspace, run it on a runner, score it here.

Pure Python and numpy, no Django. The caller (the worker's run service) gives the recipe's
source, the pool, the run's split and seed record, and a metric; it gets back a
`RunOutcome` to store. The runner (this process's sandbox, or a runner service) only ever
sees the workspace of :mod:`execution.workspace`; the predictions it returns are checked
strictly and scored here, where the labels are.

Hyperparameter search (``hpo={"mode": "search", ...}``) runs in one sandboxed process:
the T configurations are sampled from the recipe's declared ``SEARCH_SPACE`` with the
run's ``hpo`` seed, the harness fits each one on the training rows and predicts the mixed
validation+test rows, and the trial with the best validation score gives the run's test
score. The recipe never learns which trial was chosen, and no refit happens (train is
train, validation selects, test evaluates: Bouthillier et al. 2021, App. B). The
wall-time limit covers all T trials.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.hpo import METHODS, sample_trials
from evaluation.recipes import PREDICTION_KINDS, RecipeError, inspect_recipe
from evaluation.seeds import SOURCES
from evaluation.splits import Split

from .fingerprint import fingerprint
from .messages import error_message, log_text, shorten
from .outputs import RecipeFault, check_predictions
from .recipe_data import RecipeData
from .runners import LocalRunner, RunnerResult
from .sandbox import Limits
from .workspace import RunInputs, build_inputs, prediction_file

__all__ = ["RunOutcome", "execute_recipe_run"]


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
        Notes from the sandbox about the run's confinement.
    isolation : tuple of str
        The confinement in force (e.g. ``("bubblewrap", "user namespace", ...)``), or
        ``("unsandboxed",)`` when an operator allowed runs without isolation.
    part_scores : dict of str to float
        The chosen trial's score on each named part of the test rows (``test_parts``), e.g.
        the public and the private board's rows.
    extra_scores : dict of str to dict of str to float
        The chosen trial's score under each of ``extra_metrics`` on the test rows (``"test"``)
        and on each named part: ``{part: {metric name: score}}``; empty without extra metrics.
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
    isolation: tuple = field(default=())
    part_scores: dict = field(default_factory=dict)
    extra_scores: dict = field(default_factory=dict)


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


def _run_iv(data, metric, prediction_kind: str, seeds: dict, split: Split) -> dict:
    """Check the caller's arguments (a caller's bug, not the recipe's); the seeds as ints."""
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
    _split_iv(split, len(data.y))
    return {name: int(seeds[name]) for name in SOURCES}


def _failed(
    error: str, *, device: str, limits: Limits, hyperparameters=None, ran: RunnerResult | None = None, reported=None
) -> RunOutcome:
    result = ran.sandbox if ran else None
    return RunOutcome(
        status="failed",
        test_score=None,
        valid_score=None,
        outcomes=None,
        hyperparameters=hyperparameters or {},
        trials=[],
        error=error,
        log=log_text(result) if result else "",
        duration_s=result.duration_s if result else 0.0,
        device=device,
        fingerprint=fingerprint(reported, device, limits, bool(result and result.warm_start)),
        sandbox_status=result.status if result else "not_run",
        max_rss_mb=result.max_rss_mb if result else 0.0,
        warnings=result.warnings if result else (),
        isolation=result.isolation if result else (),
    )


class _TrialsUnavailable(Exception):
    """The recipe cannot run under this challenge's settings (message for the contestant)."""


def _trials(recipe_source: str, hyperparameters: dict | None, hpo: dict, seeds: dict) -> tuple[dict, list]:
    """(base hyperparameters, the trials to run): one trial, or T sampled from SEARCH_SPACE."""
    try:
        info = inspect_recipe(recipe_source)
    except RecipeError as exc:
        raise _TrialsUnavailable(str(exc)) from None
    base = {**info.hyperparameters, **(hyperparameters or {})}
    if hpo["mode"] != "search":
        trials = [base]
    elif info.search_space is None:
        raise _TrialsUnavailable("this challenge searches hyperparameters, but recipe.py declares no SEARCH_SPACE")
    else:
        trials = [
            {**base, **t}
            for t in sample_trials(info.search_space, hpo["budget"], method=hpo["method"], seed=seeds["hpo"])
        ]
    try:
        json.dumps(trials)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"hyperparameters must be JSON values: {exc}") from None
    return base, trials


def _predictions(ran: RunnerResult, trial: int, inputs: RunInputs, kind: str, classes: np.ndarray) -> np.ndarray:
    """Trial ``trial``'s predictions in validation-then-test order; RecipeFault when unusable."""
    name = prediction_file(trial)
    if name in ran.faults:
        raise RecipeFault(ran.faults[name])
    raw = ran.outputs.get(name)
    if raw is None:
        raise RecipeFault("the recipe's predictions are missing")
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise RecipeFault(f"the recipe's predictions could not be read ({shorten(str(exc), 200)})") from None
    if not isinstance(arr, np.ndarray):
        raise RecipeFault("the recipe's predictions are not an array")
    arr = check_predictions(arr, inputs.n_rows, kind, classes)
    ordered = np.empty_like(arr)
    ordered[inputs.order] = arr
    return ordered


def _reported(ran: RunnerResult, name: str) -> dict | None:
    """A JSON object the harness wrote, or None (absent, unreadable or not an object)."""
    raw = ran.outputs.get(name)
    try:
        value = json.loads(raw.decode("utf-8", errors="replace")) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _best_trial(valid_scores: list, higher_is_better: bool) -> int:
    """Index of the best validation score; ties: the first; non-finite scores lose."""

    def key(j):
        v = valid_scores[j]
        return (v if higher_is_better else -v) if math.isfinite(v) else -math.inf

    return max(range(len(valid_scores)), key=key)


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
    higher_is_better: bool = True,
    runner=None,
    test_parts: dict | None = None,
    extra_metrics: dict | None = None,
    test_rows: np.ndarray | None = None,
) -> RunOutcome:
    """Run a recipe once on a runner and score it here.

    Parameters
    ----------
    recipe_source : str
        Text of recipe.py.
    data : RecipeData
        The pool (public rows and, where the scheme scores on them, hidden rows).
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
    higher_is_better : bool, default True
        Direction of the metric, used to choose the best trial in search mode.
    runner : optional
        What executes the workspace (``.run(files, expected_outputs, limits, device)``);
        default: a `execution.runners.LocalRunner`.
    test_parts : dict of str to ndarray of bool, optional
        Named masks over ``split.test`` (e.g. ``{"public": ..., "private": ...}``); each
        non-empty part is scored here too (``RunOutcome.part_scores``). The sandbox sees only
        the mixed rows.
    extra_metrics : dict of str to callable, optional
        Secondary metrics by name, each called as ``metric``, scored on the chosen trial's test
        predictions and on each part (``RunOutcome.extra_scores``); they never choose a trial.
    test_rows : ndarray of int, optional
        The rows the recipe predicts as test rows, each once: every hidden row of the pool, so that
        its inputs tell nothing of the run's resample (:func:`execution.workspace.build_inputs`);
        default: the distinct rows of ``split.test``.

    Returns
    -------
    RunOutcome
        ``status == "failed"`` with a clear ``error`` when the recipe crashes, hangs,
        exceeds a limit or returns unusable predictions.

    Raises
    ------
    ValueError
        For bad arguments (a caller's bug, not the recipe's).
    execution.sandbox.SandboxUnavailable
        When the sandbox cannot start or isolate (a platform failure: retry elsewhere).
    """
    limits = limits or Limits()
    seeds = _run_iv(data, metric, prediction_kind, seeds, split)
    scoring = _Scoring(
        data, split, metric, prediction_kind, higher_is_better, test_parts or {}, extra_metrics or {}, test_rows
    )
    return _run_trials(recipe_source, hyperparameters, _hpo_iv(hpo), seeds, scoring, limits, device, runner)


@dataclass(frozen=True, eq=False)
class _Scoring:
    """What scores a run here: the pool, the run's split, the metric, its direction and the test parts."""

    data: RecipeData
    split: Split
    metric: Callable
    prediction_kind: str
    higher_is_better: bool
    test_parts: dict
    extra_metrics: dict = field(default_factory=dict)
    test_rows: np.ndarray | None = None


def _run_trials(
    recipe_source: str,
    hyperparameters: dict | None,
    hpo: dict,
    seeds: dict,
    scoring: _Scoring,
    limits: Limits,
    device: str,
    runner,
) -> RunOutcome:
    """Draw the trials, build their workspace, run it on ``runner`` (default: a LocalRunner), score it here."""
    try:
        base, trials = _trials(recipe_source, hyperparameters, hpo, seeds)
    except _TrialsUnavailable as exc:
        return _failed(str(exc), device=device, limits=limits, hyperparameters={**(hyperparameters or {})})
    inputs = build_inputs(
        recipe_source=recipe_source,
        data=scoring.data,
        split=scoring.split,
        trials=trials,
        seeds=seeds,
        device=device,
        prediction_kind=scoring.prediction_kind,
        test_rows=scoring.test_rows,
    )
    ran = (runner or LocalRunner()).run(inputs.files, inputs.expected_outputs, limits, device)
    return _score(ran, inputs, trials, base, scoring, limits=limits, device=device, search=hpo["mode"] == "search")


def _score(
    ran: RunnerResult,
    inputs: RunInputs,
    trials: list,
    base: dict,
    scoring: _Scoring,
    *,
    limits: Limits,
    device: str,
    search: bool,
) -> RunOutcome:
    """Check every trial's predictions, choose by validation score, score the choice on test."""
    reported = _reported(ran, "done.json")
    common: dict[str, Any] = dict(device=device, limits=limits, ran=ran, reported=reported)
    if ran.sandbox.status != "ok" or reported is None:
        return _failed(error_message(ran.sandbox, _reported(ran, "error.json"), limits), hyperparameters=base, **common)
    data, split, metric = scoring.data, scoring.split, scoring.metric
    classes = np.asarray(data.classes) if data.classes else np.zeros(0)
    valid_scores, test_predictions = [], []
    for t, hp in enumerate(trials):
        try:
            ordered = _predictions(ran, t, inputs, scoring.prediction_kind, classes)
        except RecipeFault as fault:
            prefix = f"trial {t + 1} of {len(trials)}: " if len(trials) > 1 else ""
            return _failed(prefix + str(fault), hyperparameters=hp, **common)
        valid_scores.append(float(metric(data.y[split.valid], ordered[: inputs.n_valid])[0]))
        test_predictions.append(ordered[inputs.n_valid :][inputs.test_index])  # the resample's rows
    best = _best_trial(valid_scores, scoring.higher_is_better)
    test_score, outcomes = metric(data.y[split.test], test_predictions[best])
    part_scores = {
        name: float(metric(data.y[split.test][mask], test_predictions[best][mask])[0])
        for name, mask in scoring.test_parts.items()
        if np.any(mask)
    }
    extra_scores = _extra_scores(scoring, data.y[split.test], test_predictions[best])
    result = ran.sandbox
    return RunOutcome(
        status="succeeded",
        test_score=float(test_score),
        valid_score=valid_scores[best],
        outcomes=None if outcomes is None else np.asarray(outcomes),
        hyperparameters=trials[best],
        trials=[{"hyperparameters": hp, "valid_score": s} for hp, s in zip(trials, valid_scores)] if search else [],
        error="",
        log=log_text(result),
        duration_s=result.duration_s,
        device=device,
        fingerprint=fingerprint(reported, device, limits, result.warm_start),
        sandbox_status=result.status,
        max_rss_mb=result.max_rss_mb,
        warnings=result.warnings,
        isolation=result.isolation,
        part_scores=part_scores,
        extra_scores=extra_scores,
    )


def _extra_scores(scoring: _Scoring, y_test: np.ndarray, predictions: np.ndarray) -> dict:
    """``{part: {name: score}}`` of the extra metrics on the test rows ("test") and each non-empty part."""
    if not scoring.extra_metrics:
        return {}
    parts = {"test": np.ones(len(y_test), dtype=bool), **scoring.test_parts}
    return {
        part: {name: float(fn(y_test[mask], predictions[mask])[0]) for name, fn in scoring.extra_metrics.items()}
        for part, mask in parts.items()
        if np.any(mask)
    }
