"""The Ladder on a board ranked by a host's scoring program (issue 26), whose move per row nobody bounds.

``services.boards.ladder_margin`` raises η to twice the largest move one public row makes to a built-in metric, but a
scoring program's primary metric is the host's own: the board kept the host's η. The test program's cost-weighted
error moves by 1/60 (a row made right) to 4/60 per row of its 60 public rows, above η = 0.01: a contestant who
predicted "dog" everywhere and changed one row to "cat", then "fox", read each row's label off the releases (every
one of the 12 rows attacked, chance 3). The Ladder is now refused with a scoring program, at upload and when the
feedback changes, and a board stored before the refusal releases each person's first score alone, as on MAE or RMSE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.choices import ProgramStatus, Visibility
from leaderboard.models import Challenge
from leaderboard.services.boards import board_ladder, board_public_mask, ladder_margin
from leaderboard.services.challenges import challenge_update, challenge_warnings
from leaderboard.services.dataset_files import dataset_hidden_labels
from leaderboard.services.errors import ServiceError
from leaderboard.services.programs import program_upload

from .factories import make_user
from .test_scoring_programs import PROGRAM, animals_challenge, check_in_process, submit

pytestmark = pytest.mark.django_db

REFUSAL = (
    "The Ladder protects only metrics one row moves by a bounded amount (Blum & Hardt 2015); a scoring program's "
    "metric moves per row by an amount the platform cannot bound:"
)


def _program_challenge(host, **overrides) -> Challenge:
    challenge = animals_challenge(host, daily_quota=100, total_quota=100, **overrides)
    program_upload(challenge=challenge, user=host, data=PROGRAM)
    challenge = check_in_process(challenge)
    assert challenge.program_status == ProgramStatus.OK, challenge.program_error
    return challenge_update(challenge=challenge, user=host, visibility=Visibility.PUBLIC)


def test_single_row_probes_read_nothing_off_a_ladder_stored_with_a_scoring_program(host):
    challenge = _program_challenge(host, feedback="rounded")
    Challenge.objects.filter(pk=challenge.pk).update(feedback="ladder", ladder_margin=0.01)  # stored before the refusal
    challenge.refresh_from_db()
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    assert board_public_mask(dataset=challenge.dataset).all() and truth.size == 60  # every hidden row is public
    attacker = make_user("mallory")
    baseline = np.full(truth.size, "dog", dtype=object)
    submit(challenge, attacker, [baseline], "baseline")
    rows = range(12)
    for row in rows:
        for candidate in ("cat", "fox"):
            probe = baseline.copy()
            probe[row] = candidate
            before = sorted(board_ladder(challenge=challenge).items())[-1][1]
            submit(challenge, attacker, [probe], f"probe {row} {candidate}")
            if sorted(board_ladder(challenge=challenge).items())[-1][1] != before:  # the release moved
                baseline = probe
                break
    chance = int(np.sum(truth[list(rows)] == "dog"))
    recovered = int(np.sum(baseline[list(rows)] == truth[list(rows)]))
    assert recovered - chance <= 1, f"{recovered} of 12 labels read (chance: {chance})"
    assert math.isinf(ladder_margin(challenge).value)
    assert "scoring program" in ladder_margin(challenge).note()
    warnings = challenge_warnings(challenge=challenge, user=host)
    assert any(w.startswith(REFUSAL) and "first score alone" in w for w in warnings), warnings


def test_the_ladder_is_refused_with_a_scoring_program_at_upload_and_update(host):
    challenge = animals_challenge(host, feedback="ladder", ladder_margin=0.01)
    with pytest.raises(ServiceError) as refused:
        program_upload(challenge=challenge, user=host, data=PROGRAM)
    assert str(refused.value).startswith(REFUSAL) and refused.value.field == "scoring_program"
    assert not Challenge.objects.get(pk=challenge.pk).scoring_program

    other = _program_challenge(host, title="Animals rounded", feedback="rounded")
    with pytest.raises(ServiceError) as refused:
        challenge_update(challenge=other, user=host, feedback="ladder")
    assert str(refused.value).startswith(REFUSAL) and refused.value.field == "feedback"
    assert Challenge.objects.get(pk=other.pk).feedback == "rounded"
