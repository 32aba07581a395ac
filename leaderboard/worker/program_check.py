"""The worker's side of host scoring programs (issue 26): check an uploaded program, and run one to score.

:func:`program_check` is the body of ``tasks.scoring.check_scoring_program``: it reads the program's
``METRICS`` and scores the challenge's own sample submission against the hidden labels in the sandbox,
then records the outcome for the hosts (``services.programs.program_store_check``). :func:`run_program`
is the runner the scoring task gives ``services.scoring``, which cannot import the sandbox.
"""

from __future__ import annotations

import pandas as pd

from evaluation.scoring_programs import ProgramScores, ScoringProgramError
from execution.sandbox import SandboxUnavailable
from execution.scoring_program import read_program_metrics, run_scoring_program

from ..models import Challenge
from ..services.errors import PlatformError
from ..services.programs import program_check_inputs, program_store_check

__all__ = ["program_check", "run_program"]


def run_program(source: bytes, y_true: pd.DataFrame, y_pred: pd.DataFrame) -> ProgramScores:
    """Score one part of a submission with the host's program; a sandbox that cannot run is the platform's fault."""
    try:
        return run_scoring_program(source, y_true, y_pred)
    except SandboxUnavailable as exc:
        raise PlatformError(f"the sandbox cannot run scoring programs here: {exc}") from exc


def program_check(*, challenge_id: int) -> Challenge | None:
    """Check the challenge's stored program on its sample submission and record ``ok`` or ``failed``."""
    challenge = Challenge.objects.select_related("dataset").get(pk=challenge_id)
    if not challenge.scoring_program:
        return None
    program = challenge.scoring_program.name
    with challenge.scoring_program.open("rb") as handle:
        source = handle.read()
    try:
        metrics = read_program_metrics(source)
        y_true, y_pred = program_check_inputs(challenge)
        scores = run_program(source, y_true, y_pred)
    except ScoringProgramError as exc:
        return program_store_check(challenge_id=challenge_id, program=program, error=exc)
    return program_store_check(
        challenge_id=challenge_id, program=program, metrics=metrics, outcome_names=list(scores.outcomes)
    )
