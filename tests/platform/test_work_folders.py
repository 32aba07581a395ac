"""Working folders of uploads left behind by a process killed mid-request are removed by the next request."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from leaderboard.services import workdirs


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The system's temporary folder, redirected to one of the test's own."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _left_behind(root: Path, name: str, age_s: float) -> Path:
    folder = root / name
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "train.csv").write_bytes(b"x" * 1000)
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_a_new_working_folder_removes_the_stale_ones_of_every_kind_and_keeps_the_rest(scratch):
    stale = [_left_behind(scratch, f"varboard-{kind}-old", workdirs.STALE_AFTER_S + 60) for kind in workdirs.KINDS]
    recent = _left_behind(scratch, "varboard-dataset-busy", 600)  # another request, still working
    unrelated = _left_behind(scratch, "someone-else-old", workdirs.STALE_AFTER_S + 60)
    with workdirs.work_folder("predictions") as folder:
        assert Path(folder).is_dir() and Path(folder).name.startswith("varboard-predictions-")
        assert not any(path.exists() for path in stale)
        assert recent.exists() and unrelated.exists()
    assert not Path(folder).exists()  # its own folder ends with the request


@pytest.mark.django_db
def test_a_challenge_created_after_a_killed_upload_sweeps_its_folder(scratch, host):
    """Through the service: the dataset folder a killed web process left is gone after the next challenge."""
    from .factories import digits_challenge

    stale = _left_behind(scratch, "varboard-dataset-killed", workdirs.STALE_AFTER_S + 1)
    digits_challenge(host, title="After a crash")
    assert not stale.exists()
    assert not list(scratch.glob("varboard-dataset-*"))  # and the new challenge's own folder is gone too


def test_an_unknown_kind_is_named():
    with pytest.raises(ValueError, match="dataset, bundle, predictions"):
        with workdirs.work_folder("uploads"):
            pass
