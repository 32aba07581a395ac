"""Shared fixtures of the statistics tests: the published per-run tables.

The tables (Bajgar et al. 2018, columns run,valid,test) are looked up in
``$VARBOARD_BOON_RUNS``, then ``examples/data/boon-runs`` in the repository, then
``/work/shared/data/boon-runs``; tests that need them are skipped when none exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

_REPO = Path(__file__).resolve().parents[2]
_CANDIDATES = [
    os.environ.get("VARBOARD_BOON_RUNS", ""),
    str(_REPO / "examples" / "data" / "boon-runs"),
    "/work/shared/data/boon-runs",
]


def _load(name: str) -> np.ndarray:
    for folder in filter(None, _CANDIDATES):
        path = Path(folder) / name
        if path.is_file():
            return np.loadtxt(path, delimiter=",", skiprows=1)
    pytest.skip(f"{name} not found (set VARBOARD_BOON_RUNS)")


@pytest.fixture(scope="session")
def asreader() -> np.ndarray:
    """AS Reader on CBT-CN: 370 runs, many tied validation values. Columns run, valid, test."""
    return _load("asreader_cbt_cn_fixed.csv")


@pytest.fixture(scope="session")
def resnet() -> np.ndarray:
    """ResNet-32 on CIFAR-100: 74 runs. Columns run, valid, test."""
    return _load("resnet32_cifar100.csv")
