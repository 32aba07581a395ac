"""The files one recipe run receives, and the outputs it may return.

What crosses into the sandbox (docs/DESIGN.md §5): the recipe, the harness, the training
rows with labels, the validation rows with labels, and the *inputs* of the validation and
test rows mixed in one shuffled table. Hidden labels never do, and neither do the
dataset's row ids: every table's ``ids`` are row numbers within that table, so a recipe
cannot look a row up in the public files by its id.

The file set is a plain ``{relative path: bytes}`` mapping, so that the same inputs can be
written to a local workspace or sent to a runner service on another machine.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass

import numpy as np

from evaluation.splits import Split

from .outputs import MAX_JSON_BYTES
from .recipe_data import RecipeData

__all__ = ["HARNESS_DIR", "HARNESS_FILES", "RunInputs", "build_inputs", "harness_files", "prediction_file"]

HARNESS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness")
HARNESS_FILES = ("harness.py", "varboard_recipe.py")


def prediction_file(trial: int) -> str:
    """Name of the file (under ``outputs/``) holding trial ``trial``'s predictions."""
    return f"predictions_{trial}.npy"


@dataclass(frozen=True, eq=False)
class RunInputs:
    """One run's workspace and how to read its predictions back.

    Attributes
    ----------
    files : dict of str to bytes
        Relative path in the workspace -> content (harness, recipe, ``inputs/*``).
    order : ndarray of int
        Row ``j`` of ``test_inputs`` is row ``order[j]`` of validation-then-test.
    n_valid : int
        Validation rows; the other ``len(order) - n_valid`` rows are the predicted test rows.
    expected_outputs : dict of str to int
        Output file name -> the most bytes it may have.
    test_index : ndarray of int
        ``split.test`` as positions among the predicted test rows: the predictions of the run's
        resample (its repeated rows repeated) are ``predictions[n_valid:][test_index]``.
    """

    files: dict
    order: np.ndarray
    n_valid: int
    expected_outputs: dict
    test_index: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.order)


def _npz(data: RecipeData, rows: np.ndarray, labelled: bool) -> bytes:
    payload = {
        "X": data.X[rows],
        "ids": np.arange(len(rows), dtype=np.int64),  # positions, never the dataset's ids
        "feature_names": np.asarray(data.feature_names, dtype=str),
        "classes": np.asarray(data.classes) if data.classes else np.zeros(0),
    }
    if labelled:
        payload["y"] = data.y[rows]
    buffer = io.BytesIO()
    np.savez(buffer, **payload)
    return buffer.getvalue()


def harness_files() -> dict:
    """The harness's files, by name."""
    files = {}
    for name in HARNESS_FILES:
        with open(os.path.join(HARNESS_DIR, name), "rb") as handle:
            files[name] = handle.read()
    return files


def _prediction_bytes(data: RecipeData, n_rows: int) -> int:
    """A generous bound on one trial's ``.npy`` predictions (probabilities or labels)."""
    width = max(len(data.classes), 1)
    label_len = max((len(str(c)) for c in data.classes), default=1)
    return n_rows * width * 8 + n_rows * 4 * max(label_len, 1) + 65536


def build_inputs(
    *,
    recipe_source: str,
    data: RecipeData,
    split: Split,
    trials: list,
    seeds: dict,
    device: str,
    prediction_kind: str,
    test_rows: np.ndarray | None = None,
) -> RunInputs:
    """The workspace of one run: what the harness reads and where it writes.

    The recipe predicts ``test_rows`` (each once; the caller gives every hidden row of the pool, whichever
    the run's resample drew; default: the distinct rows of ``split.test``), and the run's resample is
    scored from those predictions (:attr:`RunInputs.test_index`). Never the resample itself: a recipe
    that counted its repeated test rows across runs, whose draws (within classes, from a published seed)
    it could replay, read every hidden label and each row's board off them (an attacker, 360 of 360 at
    k = 10). The validation and test rows are shuffled together with a permutation drawn from the
    split id, so the order of ``test_inputs`` says nothing of which rows are which. It does not hide the
    validation rows: ``valid.npz`` holds the same features, so a recipe can find them and answer them from
    ``valid.y`` (a reviewer, 466 of 466). That sets only its own validation scores (which choose its trials
    and weigh Boo_n's runs), never a test score: nothing of the hidden rows' labels is in the workspace.
    """
    rows = np.unique(split.test) if test_rows is None else np.unique(np.asarray(test_rows, dtype=np.int64))
    test_index = np.searchsorted(rows, split.test)
    if np.any(test_index >= rows.size) or np.any(rows[np.minimum(test_index, rows.size - 1)] != split.test):
        raise ValueError("`test_rows` must hold every row of `split.test`")
    stacked = np.concatenate([split.valid, rows])
    order_seed = int(hashlib.sha256(split.split_id.encode()).hexdigest()[:16], 16)
    order = np.random.default_rng(order_seed).permutation(len(stacked))
    spec = {"trials": trials, "seeds": seeds, "device": device, "task": data.task, "prediction_kind": prediction_kind}
    files = {
        **harness_files(),
        "recipe.py": recipe_source.encode("utf-8"),
        "inputs/train.npz": _npz(data, split.train, True),
        "inputs/valid.npz": _npz(data, split.valid, True),
        "inputs/test_inputs.npz": _npz(data, stacked[order], False),
        "inputs/spec.json": json.dumps(spec).encode(),
    }
    limit = _prediction_bytes(data, len(order))
    expected = {"done.json": MAX_JSON_BYTES, "error.json": MAX_JSON_BYTES}
    expected.update({prediction_file(t): limit for t in range(len(trials))})
    return RunInputs(
        files=files, order=order, n_valid=len(split.valid), expected_outputs=expected, test_index=test_index
    )
