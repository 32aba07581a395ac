"""Host scoring programs: what their ``METRICS`` declare and what their ``score()`` returns, checked.

A challenge host may upload a scoring program: one Python file that turns the ground truth
and a submission's predictions into one or more named scores. It runs in the recipes'
sandbox (:mod:`execution.scoring_program`); this module holds the pure part: the contract,
and the checks of what the program declared and returned, with messages for the *host*.
docs/scoring-programs.md is the host's guide; examples/scoring/macro_f1_and_cost.py a
complete program.

The contract
------------
The file defines ``METRICS`` and ``score``::

    METRICS = [  # the first is the primary one, unless "primary": True marks another
        {"name": "macro_f1", "label": "Macro F1", "higher_is_better": True},
        {"name": "cost", "label": "Cost-weighted error", "higher_is_better": False},
    ]

    def score(y_true, y_pred):
        return {"macro_f1": 0.71, "cost": {"score": 0.12, "outcomes": [...]}}

``METRICS`` is a list of 1 to 20 dicts with the keys ``name`` (a Python identifier of at
most 40 characters, unique), ``higher_is_better`` (True or False, required), ``label``
(text of at most 80 characters shown on the board; default: the name) and ``primary``
(True on at most one metric: the one that ranks the board; default: the first).

``score(y_true, y_pred)`` gets two pandas DataFrames read from CSV files, both indexed by
the challenge's id column (as text), their rows in the same order (the test rows scored):
``y_true`` has the dataset's ground-truth column(s), ``y_pred`` the submission's prediction
column(s) as submitted (``prediction``; or one column per class, named by the class label,
for probabilities; or ``score``). Numeric columns come as numbers (int64 or float64, an
empty cell NaN), True/False columns as bool, every other column as text (str, an empty
cell ``""``). It returns a dict with one entry per declared metric, no other, each either

- a **number**: the metric's score, a finite float (a non-decomposable metric such as
  macro-F1, AUC or BLEU: the board gives no paired statistics for it), or
- a dict ``{"score": s, "outcomes": o}``: ``o`` holds one finite number (or bool) per row of
  ``y_true``, in its order, and their mean is ``s`` (within ``1e-9 * max(1, |s|)``). The
  platform then keeps the paired statistics (test bootstrap, McNemar) for that metric.

Numpy numbers and arrays and pandas Series are accepted wherever numbers and lists are.

Everything here is numpy only; no Django.

>>> metrics = parse_metrics([{"name": "acc", "higher_is_better": True}, {"name": "f1", "higher_is_better": True}])
>>> [(m.name, m.label, m.primary) for m in metrics]
[('acc', 'acc', True), ('f1', 'f1', False)]
>>> got = parse_scores({"acc": {"score": 0.5, "outcomes": [1, 0]}, "f1": 0.4}, metrics, n_rows=2)
>>> got.scores, got.outcomes["acc"].tolist(), sorted(got.outcomes)
({'acc': 0.5, 'f1': 0.4}, [1.0, 0.0], ['acc'])
>>> parse_scores({"acc": 0.5}, metrics, n_rows=2)
Traceback (most recent call last):
...
evaluation.scoring_programs.ScoringProgramError: score() returned no value for the metric 'f1' declared in METRICS
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from evaluation.predictions import MAX_PREDICTION

__all__ = [
    "MAX_LABEL",
    "MAX_METRICS",
    "MAX_NAME",
    "ProgramMetric",
    "ProgramScores",
    "ScoringProgramError",
    "parse_metrics",
    "parse_scores",
]

MAX_METRICS = 20
MAX_NAME = 40
MAX_LABEL = 80
MEAN_TOLERANCE = 1e-9
#: The largest magnitude of a per-row outcome: a run stores its outcomes as float32 (at most 3.4e38), where a
#: program's 1e40 (which its check let through) became inf and the challenge's board answered "cannot be
#: computed" for everyone once a file was scored; the bound of predicted numbers and imported scores.
MAX_OUTCOME = MAX_PREDICTION
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYS = ("name", "label", "higher_is_better", "primary")


class ScoringProgramError(Exception):
    """The host's scoring program is unusable; the message says why, for the host.

    It may quote the program's traceback and output, which may show ground truth or a
    submission's predictions: show it to the challenge's hosts only, never to a contestant.

    Attributes
    ----------
    kind : str
        ``"metrics"`` (``METRICS`` is malformed), ``"scores"`` (what ``score()`` returned is
        unusable), ``"raised"`` (the program raised), ``"limit"`` (it exceeded a limit:
        wall time, memory, output, processes, disk) or ``"crashed"`` (it ended otherwise).
    log : str
        The program's captured output (stdout and stderr, head and tail), possibly empty.
    """

    def __init__(self, message: str, *, kind: str = "scores", log: str = ""):
        super().__init__(message)
        self.kind = kind
        self.log = log


@dataclass(frozen=True)
class ProgramMetric:
    """One metric a scoring program declares.

    Attributes
    ----------
    name : str
        Its key in ``score()``'s result (a Python identifier).
    label : str
        What the board shows.
    higher_is_better : bool
    primary : bool
        Whether it ranks the board (exactly one metric of a program is primary).
    """

    name: str
    label: str
    higher_is_better: bool
    primary: bool = False

    def as_dict(self) -> dict:
        """The metric as a JSON object (the keys of ``METRICS``)."""
        return {
            "name": self.name,
            "label": self.label,
            "higher_is_better": self.higher_is_better,
            "primary": self.primary,
        }


@dataclass(frozen=True, eq=False)
class ProgramScores:
    """What a scoring program returned for one submission, checked.

    Attributes
    ----------
    scores : dict of str to float
        Every declared metric's score, in ``METRICS`` order.
    outcomes : dict of str to ndarray
        The per-row outcomes (float64, one per row of ``y_true``) of the metrics that gave them.
    log : str
        The program's captured output (for the host only: it may show ground truth).
    duration_s : float
        Wall-clock seconds of the sandboxed process (0 when it did not run in one).
    """

    scores: dict
    outcomes: dict = field(default_factory=dict)
    log: str = ""
    duration_s: float = 0.0


def _show(value, limit: int = 60) -> str:
    """``value`` for a message: its repr, shortened, with its type when that is not obvious."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text if isinstance(value, (str, bool, int, float)) or value is None else f"a {type(value).__name__} {text}"


def _quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def _metric(index: int, raw) -> ProgramMetric:
    where = f"METRICS[{index}]"
    if not isinstance(raw, dict):
        raise ScoringProgramError(
            f"{where} must be a dict with a 'name' and 'higher_is_better'; got {_show(raw)}", kind="metrics"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise ScoringProgramError(
            f"{where}: 'name' must be a Python identifier (letters, digits, _) of at most {MAX_NAME} characters;"
            f" got {_show(name)}",
            kind="metrics",
        )
    where = f"{where} ({name!r})"
    unknown = [k for k in raw if k not in _KEYS]
    if unknown:
        raise ScoringProgramError(
            f"{where}: unknown key {_quoted(unknown)}; a metric has the keys {_quoted(_KEYS)}", kind="metrics"
        )
    if "higher_is_better" not in raw:
        raise ScoringProgramError(f"{where}: 'higher_is_better' is missing (True or False)", kind="metrics")
    for key in ("higher_is_better", "primary"):
        if key in raw and not isinstance(raw[key], bool):
            raise ScoringProgramError(f"{where}: {key!r} must be True or False; got {_show(raw[key])}", kind="metrics")
    label = raw.get("label", name)
    if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL or not label.isprintable():
        raise ScoringProgramError(
            f"{where}: 'label' must be text of 1 to {MAX_LABEL} printable characters; got {_show(label)}",
            kind="metrics",
        )
    return ProgramMetric(name, label.strip(), raw["higher_is_better"], raw.get("primary", False))


def parse_metrics(raw) -> list[ProgramMetric]:
    """The metrics a program's ``METRICS`` declares, or `ScoringProgramError` (kind "metrics").

    Exactly one of them is primary: the one marked ``"primary": True``, else the first.

    >>> [m.primary for m in parse_metrics([{"name": "a", "higher_is_better": False},
    ...                                    {"name": "b", "higher_is_better": True, "primary": True}])]
    [False, True]
    """
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScoringProgramError(
            f"METRICS must be a non-empty list of dicts such as "
            f'{{"name": "accuracy", "higher_is_better": True}}; got {_show(raw)}',
            kind="metrics",
        )
    if len(raw) > MAX_METRICS:
        raise ScoringProgramError(
            f"METRICS declares {len(raw)} metrics; at most {MAX_METRICS} are allowed", kind="metrics"
        )
    metrics = [_metric(i, m) for i, m in enumerate(raw)]
    names = [m.name for m in metrics]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ScoringProgramError(f"METRICS declares {_quoted(repeated)} more than once", kind="metrics")
    marked = [m.name for m in metrics if m.primary]
    if len(marked) > 1:
        raise ScoringProgramError(
            f"METRICS marks {_quoted(marked)} as primary; at most one metric may be primary", kind="metrics"
        )
    if not marked:
        metrics[0] = ProgramMetric(metrics[0].name, metrics[0].label, metrics[0].higher_is_better, True)
    return metrics


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite_score(name: str, value) -> float:
    if not _number(value):
        raise ScoringProgramError(
            f"metric {name!r}: the value must be a number, or a dict with 'score' and 'outcomes'; got {_show(value)}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ScoringProgramError(f"metric {name!r}: the score is {value}; it must be a finite number")
    return value


def _rows(indices) -> str:
    shown = ", ".join(str(int(i)) for i in indices[:5])
    return shown + (f", … ({len(indices)} in all)" if len(indices) > 5 else "")


def _outcomes(name: str, value: dict, n_rows: int) -> tuple[float, np.ndarray]:
    """(score, outcomes) of a decomposable metric's value, checked."""
    keys = sorted(value, key=str)
    if set(keys) != {"score", "outcomes"}:
        raise ScoringProgramError(
            f"metric {name!r}: a dict value must have exactly the keys 'score' and 'outcomes'; got {_quoted(keys)}"
            " (return a plain number for a metric without per-row outcomes)"
        )
    score = _finite_score(name, value["score"])
    raw = value["outcomes"]
    if not isinstance(raw, (list, tuple)):
        raise ScoringProgramError(f"metric {name!r}: 'outcomes' must be a list or array of numbers; got {_show(raw)}")
    if len(raw) != n_rows:
        raise ScoringProgramError(
            f"metric {name!r}: {len(raw)} outcomes for {n_rows} rows of y_true; give one per row, in the order of y_true"
        )
    bad = next((i for i, x in enumerate(raw) if not isinstance(x, (int, float))), None)
    if bad is not None:
        raise ScoringProgramError(
            f"metric {name!r}: outcome {bad} (row {bad} of y_true) is {_show(raw[bad])}, not a number"
        )
    outcomes = np.asarray(raw, dtype=np.float64)
    nonfinite = np.flatnonzero(~np.isfinite(outcomes))
    if len(nonfinite):
        raise ScoringProgramError(
            f"metric {name!r}: the outcomes of rows {_rows(nonfinite)} of y_true are not finite"
            f" ({outcomes[nonfinite[0]]}); every outcome must be a finite number"
        )
    huge = np.flatnonzero(np.abs(outcomes) > MAX_OUTCOME)
    if len(huge):
        raise ScoringProgramError(
            f"metric {name!r}: the outcomes of rows {_rows(huge)} of y_true are beyond ±{MAX_OUTCOME:g}"
            f" ({outcomes[huge[0]]}); every outcome must lie within it (the board stores them as float32)"
        )
    mean = float(np.mean(outcomes))
    if abs(mean - score) > MEAN_TOLERANCE * max(1.0, abs(score)):
        raise ScoringProgramError(
            f"metric {name!r}: the score is {score!r} but the mean of its outcomes is {mean!r}; the score must be"
            f" the mean of the outcomes (within {MEAN_TOLERANCE:g} × max(1, |score|))"
        )
    return score, outcomes


def parse_scores(raw, metrics: list[ProgramMetric], n_rows: int) -> ProgramScores:
    """``score()``'s result checked against the declared `metrics`, for a test set of `n_rows` rows.

    Parameters
    ----------
    raw : object
        What ``score()`` returned, as plain Python (dicts, lists, numbers: the JSON the
        sandbox's harness wrote).
    metrics : list of ProgramMetric
        What the program's ``METRICS`` declares (`parse_metrics`).
    n_rows : int
        Rows of ``y_true``: the length every ``outcomes`` must have.

    Returns
    -------
    ProgramScores

    Raises
    ------
    ScoringProgramError
        (kind "scores") naming the metric and the problem: a metric missing or not
        declared, a score not a finite number, outcomes of the wrong length, not finite,
        or whose mean is not the score.
    ValueError
        When `n_rows` < 1 or `metrics` is empty (a caller's bug).
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
        raise ValueError(f"`n_rows` must be a positive integer, got {n_rows!r}")
    if not metrics:
        raise ValueError("`metrics` is empty")
    names = [m.name for m in metrics]
    if not isinstance(raw, dict):
        raise ScoringProgramError(
            f"score() must return a dict with one value per metric ({_quoted(names)}); it returned {_show(raw)}"
        )
    missing = [n for n in names if n not in raw]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise ScoringProgramError(
            f"score() returned no value for the metric{plural} {_quoted(missing)} declared in METRICS"
        )
    extra = [k for k in raw if k not in names]
    if extra:
        raise ScoringProgramError(
            f"score() returned {_quoted(extra)}, which METRICS does not declare (it declares {_quoted(names)})"
        )
    scores, outcomes = {}, {}
    for name in names:
        value = raw[name]
        if isinstance(value, dict):
            scores[name], outcomes[name] = _outcomes(name, value, int(n_rows))
        else:
            scores[name] = _finite_score(name, value)
    return ProgramScores(scores=scores, outcomes=outcomes)
