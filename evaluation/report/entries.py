"""The report's entries: one submission and its succeeded runs, checked and put in run order.

:class:`EntryRuns` is what the caller gathers from the stored runs (docs/DESIGN.md §3);
:func:`check_entries` refuses malformed entries naming the entry and the field, and
returns them with float64/int64 arrays sorted by run index, each run without a finite
validation score left out of an entry whose other runs have one (:func:`complete_pairs`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

import numpy as np

from evaluation.report.settings import KINDS
from evaluation.stats._resample import tie_block_starts, tie_canonical

__all__ = ["EntryRuns", "check_entries", "complete_pairs"]


@dataclass(frozen=True, eq=False)
class EntryRuns:
    """One entry (submission) and its succeeded runs.

    Attributes
    ----------
    id : int
        Submission id.
    name, team : str
        Method name and team name.
    kind : {"recipe", "predictions"}
    runs_expected : int
        Runs the submission asked for (k for recipes, the number of files otherwise).
    run_index : ndarray of int, shape (runs,)
        Index i of each succeeded run (pairs recipe runs across entries).
    test : ndarray of float, shape (runs,)
        Test score of each run, in the metric's units.
    valid : ndarray of float, shape (runs,), optional
        Validation score of each run (chooses the best run in Boo_n).
    outcomes : ndarray of float, shape (runs, examples), optional
        Per-example outcomes of each run (prediction entries).
    created : str
        ISO timestamp of the submission (shown, never used to order).
    in_progress : bool
        More runs may still arrive.
    provenance : dict, optional
        Where results produced elsewhere come from (``source``, ``link``); None for
        entries run or scored here. Shown, never used in a computation.
    left_out : tuple of (int, str)
        Runs :func:`check_entries` left out of every statistic, with the reason: (run
        index, reason). Set by :func:`check_entries`, not by the caller.
    secondary : mapping of str to (ndarray, ndarray or None), optional
        The secondary metrics' scores of each run (shape (runs,), NaN where a run has none)
        and, where the metric decomposes and every run has them, their per-example outcomes
        (runs, examples), by metric name (:mod:`evaluation.report.secondary`). Shown, never ranked.
    """

    id: int
    name: str
    team: str
    kind: str
    runs_expected: int
    run_index: np.ndarray
    test: np.ndarray
    valid: np.ndarray | None = None
    outcomes: np.ndarray | None = None
    created: str = ""
    in_progress: bool = False
    provenance: dict | None = None
    left_out: tuple = ()
    secondary: dict | None = None


def check_entries(entries: list[EntryRuns]) -> list[EntryRuns]:
    """Check every entry; return them with arrays as float64/int64 (never modified), runs sorted by index."""
    seen: set[int] = set()
    for e in entries:
        if e.kind not in KINDS:
            raise ValueError(f"entry {e.id}: `kind` must be one of {', '.join(KINDS)} (got {e.kind!r}).")
        if e.id in seen:
            raise ValueError(f"entry ids must be unique; {e.id} appears twice.")
        seen.add(e.id)
    if _well_formed(entries):
        return list(entries)
    checked = []
    for e in entries:
        test = np.asarray(e.test, dtype=np.float64)
        index = np.asarray(e.run_index, dtype=np.int64)
        if test.ndim != 1 or test.size == 0 or not np.all(np.isfinite(test)):
            raise ValueError(f"entry {e.id}: `test` must be a non-empty 1-D array of finite scores.")
        ascending = bool(np.all(index[1:] > index[:-1]))
        if index.shape != test.shape or (not ascending and np.unique(index).size != index.size):
            raise ValueError(f"entry {e.id}: `run_index` must hold one distinct index per test score.")
        valid = None if e.valid is None else np.asarray(e.valid, dtype=np.float64)
        if valid is not None and valid.shape != test.shape:
            raise ValueError(
                f"entry {e.id}: `valid` must hold one validation score per test score "
                f"(got {valid.size} for {test.size})."
            )
        outcomes = None if e.outcomes is None else np.asarray(e.outcomes, dtype=np.float64)
        if outcomes is not None and (
            outcomes.ndim != 2
            or outcomes.shape[0] != test.size
            or outcomes.shape[1] == 0
            or not np.all(np.isfinite(outcomes))
        ):
            raise ValueError(
                f"entry {e.id}: `outcomes` must be finite, of shape (runs, examples) with runs = {test.size}."
            )
        keep, left_out = complete_pairs(index, valid)
        secondary = e.secondary
        if valid is not None and not keep.any():
            valid = None  # no validation score at all: Boo_n chooses by test score
        elif left_out:  # a subset of the runs: still ascending if it was
            assert valid is not None  # complete_pairs leaves runs out only by their validation score
            test, index, valid = test[keep], index[keep], valid[keep]
            outcomes = None if outcomes is None else outcomes[keep]
            secondary = _secondary_runs(secondary, keep)
        if valid is not None and _rounding_ties([valid]):  # finite here
            # tied validation scores share Boo_n's choice as equal ones do (Bajgar et al. 2018, eq. 7). Found by a
            # reviewer: one entry's validation score 0.8, a copy's 0.1 + 0.7, showed Boo_2 0.7700 and 0.7756, ranks 2 and 1
            valid = tie_canonical(valid)
        if (
            ascending
            and secondary is e.secondary
            and all(a is b for a, b in ((test, e.test), (index, e.run_index), (valid, e.valid), (outcomes, e.outcomes)))
        ):
            checked.append(e)  # already float64/int64 and sorted: nothing to copy
            continue
        order = slice(None) if ascending else np.argsort(index, kind="stable")
        checked.append(
            replace(
                e,
                run_index=index[order],
                test=test[order],
                valid=None if valid is None else valid[order],
                outcomes=None if outcomes is None else outcomes[order],
                left_out=tuple(sorted((*e.left_out, *left_out))),
                secondary=_secondary_runs(secondary, order),
            )
        )
    return checked


def _secondary_runs(secondary: dict | None, runs) -> dict | None:
    """The secondary metrics' per-run arrays restricted to (or put in the order of) ``runs``."""
    if not secondary:
        return secondary
    return {
        name: (np.asarray(scores, dtype=np.float64)[runs], None if outcomes is None else np.asarray(outcomes)[runs])
        for name, (scores, outcomes) in secondary.items()
    }


def complete_pairs(run_index: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, tuple]:
    """Which runs have a finite validation score, and the others as ``(run index, reason)``.

    Boo_n (Bajgar et al. 2018, eq. 7) chooses the best run by validation score: a run
    whose score is NaN (stored as missing) or infinite cannot be placed. It is left out of
    the entry, which keeps eq. 7 on its complete (valid, test) pairs (not Boo_n chosen by
    test score over all runs, the optimistic selection); the row names it. Without any
    validation score (``valid`` None, or none finite) nothing is left out here.

    Parameters
    ----------
    run_index : ndarray of int, shape (runs,)
    valid : ndarray of float, shape (runs,), or None

    Returns
    -------
    keep : ndarray of bool, shape (runs,)
    left_out : tuple of (int, str)
        The runs not kept, in the order given, e.g. ``((3, "validation score is NaN"),)``.
    """
    if valid is None:
        return np.ones(np.shape(run_index), dtype=bool), ()
    keep = np.isfinite(valid)
    if keep.all() or not keep.any():
        return keep, ()
    return keep, tuple(
        (int(i), f"validation score is {'NaN' if np.isnan(v) else v}") for i, v in zip(run_index[~keep], valid[~keep])
    )


def _rounding_ties(valids: list[np.ndarray]) -> bool:
    """Whether two validation scores of one entry differ but tie by the tie rule (:func:`~evaluation.stats._resample.tie_canonical` would change
    them), for every entry at once."""
    if len({v.size for v in valids}) == 1:  # one run count (a board as the service reads it): one sort along rows,
        # not a lexsort of every score by owner (0.11 -> 0.03 s on 20,000 entries of 16 runs; issue 27)
        ordered = np.sort(np.stack(valids), axis=1)
        return bool(np.any(~tie_block_starts(ordered)[:, 1:] & (np.diff(ordered, axis=1) > 0)))
    values = np.concatenate(valids)
    owner = np.repeat(np.arange(len(valids)), [v.size for v in valids])
    order = np.lexsort((values, owner))
    ordered, same = values[order], owner[order][1:] == owner[order][:-1]
    return bool(np.any(same & ~tie_block_starts(ordered)[1:] & (np.diff(ordered) > 0)))


#: The entries :func:`_well_formed` found so whose arrays no one can change in place (:func:`_unchangeable`: the
#: service's, ``leaderboard.services.reports._entries``), by identity (``EntryRuns`` is frozen, ``eq=False``): a
#: worker's next update checks only the entries it has not checked yet (20,000 entries: issue 27). Weak: an entry
#: is forgotten with its last holder. An entry of arrays that can change is checked every time.
_WELL_FORMED: weakref.WeakSet = weakref.WeakSet()


def _unchangeable(array) -> bool:
    """Whether ``array`` (None: no array) cannot change in place: read-only, as is every array it views, down to
    memory it owns or immutable ``bytes``."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return array is None or isinstance(array, bytes)


def _well_formed(entries: list[EntryRuns]) -> bool:
    """True when no entry needs anything of :func:`check_entries`'s loop: float64/int64 1-D arrays of one
    length, finite scores, run indices ascending, no outcomes (a board of recipes as the service reads
    it). Checked on all the entries' runs at once: thousands of entries cost a few numpy calls; those
    checked before (:data:`_WELL_FORMED`) are not checked again."""
    if not entries or any(e.outcomes is not None for e in entries):
        return False
    todo = [e for e in entries if e not in _WELL_FORMED]
    if not todo:
        return True
    if not _runs_well_formed(todo):
        return False
    _WELL_FORMED.update(e for e in todo if all(_unchangeable(a) for a in (e.test, e.run_index, e.valid)))
    return True


def _runs_well_formed(entries: list[EntryRuns]) -> bool:
    """:func:`_well_formed`'s checks of the entries' runs, all entries at once."""
    arrays = [(e.test, e.run_index, e.valid) for e in entries]
    for test, index, valid in arrays:
        if not (
            type(test) is np.ndarray
            and test.dtype == np.float64
            and test.ndim == 1
            and test.size
            and type(index) is np.ndarray
            and index.dtype == np.int64
            and index.shape == test.shape
            and (
                valid is None or (type(valid) is np.ndarray and valid.dtype == np.float64 and valid.shape == test.shape)
            )
        ):
            return False
    valids = [v for _, _, v in arrays if v is not None]
    if not np.isfinite(np.concatenate([t for t, _, _ in arrays])).all() or (
        valids and not np.isfinite(np.concatenate(valids)).all()
    ):
        return False
    if valids and _rounding_ties(valids):
        return False
    index = np.concatenate([i for _, i, _ in arrays])
    step = np.diff(index) > 0
    step[np.cumsum([t.size for t, _, _ in arrays])[:-1] - 1] = True  # where one entry's runs end
    return bool(step.all())
