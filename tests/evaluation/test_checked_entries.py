"""``check_entries`` remembers, per process, the entries of read-only arrays it found well formed (issue 27: a worker's
update checks only the entries it has not checked), and checks again every entry whose arrays can have changed."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import entries as entries_module
from evaluation.report.entries import EntryRuns, check_entries


def _frozen(values) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    array.flags.writeable = False
    return array


def _entry(i: int, test: np.ndarray, valid: np.ndarray | None = None) -> EntryRuns:
    index = np.arange(test.size, dtype=np.int64)
    index.flags.writeable = False
    return EntryRuns(i, f"m{i}", "t", "recipe", test.size, index, test, valid)


def test_an_entry_of_read_only_arrays_is_checked_once_and_returned_as_is():
    good = [_entry(i, _frozen([0.5, 0.6 + i / 100])) for i in range(3)]
    assert all(a is b for a, b in zip(check_entries(good), good))
    assert all(e in entries_module._WELL_FORMED for e in good)
    assert all(a is b for a, b in zip(check_entries(good), good))


def test_a_new_entry_beside_checked_ones_is_checked():
    good = [_entry(i, _frozen([0.5, 0.6 + i / 100])) for i in range(3)]
    check_entries(good)
    with pytest.raises(ValueError, match="finite"):
        check_entries([*good, _entry(9, _frozen([0.5, np.nan]))])
    tied = _entry(10, _frozen([0.5, 0.6]), valid=_frozen([0.8, 0.1 + 0.7]))  # validation scores that tie by the rule
    (out,) = [e for e in check_entries([*good, tied]) if e.id == 10]
    assert out is not tied and out.valid[0] == out.valid[1]


def test_an_entry_whose_arrays_can_change_is_checked_every_time():
    test = np.array([0.5, 0.6])  # writable: changed in place after its first check
    entry = _entry(1, test)
    assert check_entries([entry])[0] is entry
    assert entry not in entries_module._WELL_FORMED
    test[1] = np.inf
    with pytest.raises(ValueError, match="finite"):
        check_entries([entry])


def test_a_read_only_view_of_a_writable_array_is_checked_every_time():
    base = np.array([0.5, 0.6, 0.7, 0.8])
    view = base[:2]
    view.flags.writeable = False  # read-only itself, but its base can still be written
    entry = _entry(2, view)
    check_entries([entry])
    assert entry not in entries_module._WELL_FORMED
    base[0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        check_entries([entry])
