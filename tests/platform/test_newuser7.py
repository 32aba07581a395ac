"""A new user's walk through hosting and entering a prediction challenge (newuser7, 2026-12-01): what the board's
"How to read this" and the host form say against what the board shows and the code does."""

from __future__ import annotations

import html as html_module
import re

import pandas as pd
import pytest

from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import csv_bytes, digits_challenge, make_user

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", html)).split())


def _files(frame: pd.DataFrame, fractions: list[float]) -> list[UploadedFile]:
    """One prediction file per fraction: that share of the test rows labelled right (the first rows), the rest wrong."""
    test = frame[frame.is_test == 1]
    files = []
    for i, fraction in enumerate(fractions):
        labels = test.label.to_numpy().copy()
        wrong = int(round(len(labels) * (1 - fraction)))
        labels[len(labels) - wrong :] = (labels[len(labels) - wrong :] + 1) % 10
        table = pd.DataFrame({"id": test.id.to_numpy(), "prediction": labels})
        files.append(UploadedFile(f"p{i}.csv", csv_bytes(table)))
    return files


def test_how_to_read_does_not_withhold_the_rank_interval_of_prediction_entries_with_few_files(client, host):
    """A prediction board (k = 10, ranked by the mean) of two entries of 3 files each: both showed a rank interval,
    yet "How to read this" said "An entry with fewer runs than an interval needs (6) shows no rank interval (—)", the
    rule of recipe entries only. The new user's iris board: 3-file entries ranked "1" and "2" beside that sentence.
    Since REPORT_FORMAT 30 (stats20) an entry of 2 to 5 files shows none (sections.files_rank_withheld; 2 to 15, or one
    file on fewer than 500 test examples, since 36): the page says the prediction rule, not the recipes'."""
    challenge, frame = digits_challenge(host, title="Few files", k_runs=10, bootstrap_resamples=200)
    for user, name, fractions in ((make_user("pia"), "Good", [0.95, 0.9, 0.9]), (make_user("quinn"), "Bad", [0.5] * 3)):
        sub = submission_create_predictions(
            challenge=challenge, user=user, method_name=name, files=_files(frame, fractions)
        )
        submission_score(submission_id=sub.pk)
    report = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert all(row["runs_succeeded"] == 3 and row["rank_interval"] is None for row in report["entries"]), report
    assert any(n["interval"] == "predictions.rank" and not n["shown"] for n in report["settings"]["coverage"])
    html = client.get(challenge.get_absolute_url()).content.decode()
    ranks = _text(html[html.index('id="explain-rank"') :].split("</dd>")[0])
    assert "An entry with fewer runs than an interval needs" not in ranks, ranks
    assert "A recipe entry with fewer runs than an interval needs (16) shows no rank interval" in ranks, ranks
    assert "a prediction entry's rank interval comes from resampled test examples and, for several files" in ranks
    assert "an entry of 2 to 15 files, or of one file on fewer than 500 test examples, shows none (—)" in ranks, ranks
    assert "No rank interval: an entry of fewer than 16 files (3 files here) has none" in _text(html), _text(html)[
        -3000:
    ]


def test_the_host_form_says_the_ladder_releases_per_person_as_the_board_does(client, alice):
    """The Ladder's releases are keyed by the submitting person across all their teams (services.boards.
    ladder_releases, issue 21), and the board says "a person's shown score, across all their teams"; the host form's
    feedback choice said "Ladder (a team's shown score changes only on a significant improvement)" and the Ladder
    margin's help "a team's shown score moves only when a new submission beats it by more than η": a team of two
    people shows each one's releases, not one sequence of the team."""
    client.force_login(alice)
    html = _text(client.get("/challenges/new/").content.decode())
    assert "a team's shown score" not in html
    assert "Ladder (a person's shown score, across all their teams, changes only on a significant improvement)" in html
    assert (
        "a person's shown score, across all their teams, moves only when their new submission beats it by more" in html
    )
