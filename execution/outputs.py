"""What a recipe run hands back: files read without following its links, predictions checked.

The sandboxed process owns its workspace and may replace any file in it; nothing here
trusts it. Every problem raises :class:`RecipeFault`, whose message is for the contestant.
"""

from __future__ import annotations

import errno
import json
import os
import stat

import numpy as np

from evaluation.predictions import MAX_PREDICTION

__all__ = ["MAX_JSON_BYTES", "Outputs", "RecipeFault", "check_predictions"]

MAX_JSON_BYTES = 64 * 1024


class RecipeFault(Exception):
    """The recipe's outputs are unusable; the message is for the contestant."""


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def check_predictions(arr: np.ndarray, n_rows: int, kind: str, classes: np.ndarray) -> np.ndarray:
    """Return the predictions as the metric expects them, or raise RecipeFault."""
    if arr.ndim == 0:
        raise RecipeFault(
            f"the recipe returned a single value, not one prediction per row of test_inputs ({n_rows} rows)"
        )
    if len(arr) != n_rows:
        raise RecipeFault(f"the recipe returned {len(arr)} predictions for {n_rows} rows of test_inputs")
    if kind == "proba":
        n_classes = len(classes)
        if arr.ndim != 2 or arr.shape[1] != n_classes:
            raise RecipeFault(
                f"the recipe returned predictions of shape {arr.shape}; this challenge needs "
                f"probabilities of shape ({n_rows}, {n_classes}), one column per class in the order "
                "of `classes`"
            )
    elif arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim != 1:
        raise RecipeFault(
            f"the recipe returned predictions of shape {arr.shape}; this challenge needs one "
            f"{'class label' if kind == 'label' else 'value'} per row, shape ({n_rows},)"
        )

    if kind == "label" and classes.dtype.kind == "U":
        if arr.dtype.kind != "U":
            raise RecipeFault(
                f"the recipe returned {arr.dtype} predictions, but the classes are strings "
                f"({', '.join(map(repr, classes[:3].tolist()))}, ...); return the class labels themselves"
            )
    else:
        if arr.dtype.kind not in "biuf":
            raise RecipeFault(f"the recipe returned predictions of dtype {arr.dtype}; they must be numbers")
        arr = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
        if arr.dtype.kind == "f":
            n_nan = int(np.isnan(arr).sum())
            if n_nan:
                rows = int(np.isnan(arr).reshape(len(arr), -1).any(axis=1).sum())
                raise RecipeFault(f"the recipe returned NaN in {_count(rows, 'prediction')}")
            n_inf = int(np.isinf(arr).reshape(len(arr), -1).any(axis=1).sum())
            if n_inf:
                raise RecipeFault(f"the recipe returned infinite values in {_count(n_inf, 'prediction')}")
            huge = np.abs(arr).reshape(len(arr), -1).max(axis=1, initial=0.0) > MAX_PREDICTION
            if huge.any():
                raise RecipeFault(
                    f"the recipe returned values beyond ±{MAX_PREDICTION:g} in {_count(int(huge.sum()), 'prediction')}"
                    f" (row {int(np.argmax(huge))} of test_inputs): their errors cannot be scored"
                )

    if kind == "label":
        if classes.dtype.kind != "U":
            if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
                arr = arr.astype(classes.dtype) if classes.dtype.kind in "iu" else arr
        bad = ~np.isin(arr, classes)
        if bad.any():
            raise RecipeFault(
                f"the recipe returned {_count(int(bad.sum()), 'label')} that "
                f"{'is' if bad.sum() == 1 else 'are'} not among the classes (e.g. {arr[bad][0].item()!r}; "
                f"the classes are {', '.join(map(repr, classes[:10].tolist()))})"
            )
    elif kind == "proba":
        if arr.min() < -1e-6 or arr.max() > 1 + 1e-6:
            row = int(np.flatnonzero(((arr < -1e-6) | (arr > 1 + 1e-6)).any(axis=1))[0])
            raise RecipeFault(f"the recipe returned probabilities outside [0, 1] (row {row} of test_inputs)")
        sums = arr.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1) > 1e-3)
        if len(off):
            raise RecipeFault(
                f"the recipe returned probabilities that do not sum to 1 in {_count(len(off), 'row')} "
                f"(row {off[0]} of test_inputs sums to {sums[off[0]]:.4g})"
            )
        arr = np.clip(arr, 0.0, 1.0)
    return arr


class Outputs:
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
        """The file's bytes; None if absent; RecipeFault if not a regular file or too big."""
        if self.fd is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RecipeFault(
                    f"outputs/{name} is a symbolic link; the recipe must not replace the harness's output files"
                ) from None
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RecipeFault(f"outputs/{name} is not a regular file")
            if st.st_nlink != 1:  # a hard link to a file elsewhere (protected_hardlinks off)
                raise RecipeFault(
                    f"outputs/{name} is a hard link; the recipe must not replace the harness's output files"
                )
            if st.st_size > max_bytes:
                raise RecipeFault(f"outputs/{name} is {st.st_size:,} bytes, more than the {max_bytes:,} expected")
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
            data = self.read(name, MAX_JSON_BYTES)
        except RecipeFault:
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
