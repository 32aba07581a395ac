"""The coverage flag of a prediction board whose metric is not accuracy (found by newuser8): it read "The accuracy
(one file) interval measured on accuracy only: this board's metric has no coverage measured." on an RMSE board,
naming accuracy as the interval and leaving the verb out. It says now which interval (the score of one file, of
k files), that its coverage was simulated on accuracy, and that none was on this board's metric; no figure moves."""

from __future__ import annotations

import html
import re

import pytest

from evaluation.report.coverage import coverage_notes

from .factories import make_user, regression_challenge
from .test_hunt_v8 import _files_submission

pytestmark = pytest.mark.django_db


def test_a_non_accuracy_prediction_board_says_plainly_what_coverage_was_measured(client, host):
    challenge, _, _ = regression_challenge(host, k_runs=2)
    _files_submission(challenge, make_user("ann"), (1.0,), "one-file")
    _files_submission(challenge, make_user("ben"), (2.0, 2.5), "two-files")
    page = client.get(f"/c/{challenge.slug}/").content.decode()
    flags = [
        html.unescape(re.sub(r"\s+", " ", f)) for f in re.findall(r"<p [^>]*data-coverage-flag>(.*?)</p>", page, re.S)
    ]
    assert flags == [
        "The score (one file) interval has no measured coverage: the simulation measured it on accuracy only, "
        "not on this board's metric.",
        "The score (k files, k = runs) interval has no measured coverage: the simulation measured it on accuracy "
        "only, not on this board's metric.",
        # no rank (score) flag: the one-file entry on fewer than 500 test examples shows no rank interval (predrule23)
    ], flags


def test_the_wording_moves_no_figure():
    for k in (5, 10, 30):
        accuracy = {n["interval"]: n for n in coverage_notes(k, ("predictions.",))}
        other = {n["interval"]: n for n in coverage_notes(k, ("predictions.",), accuracy_like=False)}
        assert accuracy.keys() == other.keys()
        for key, note in other.items():
            assert note["coverage"] is None and note["width_ratio"] is None and note["ok"] is False
            assert (note["k"], note["runs"], note["shown"]) == (accuracy[key]["k"], accuracy[key]["runs"], True)
            label = accuracy[key]["label"]
            assert label.startswith(("accuracy", "rank")) and accuracy[key]["coverage"] is not None
