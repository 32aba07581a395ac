"""The worker's side of host scoring programs (issue 26): check an uploaded program, and run one to score.

:func:`program_check` is the body of ``tasks.scoring.check_scoring_program``: it reads the program's
``METRICS`` and scores the challenge's own sample submission against the hidden labels in the sandbox,
then records the outcome for the hosts (``services.programs.program_store_check``). :func:`run_program`
is the runner the scoring task gives ``services.scoring``, which cannot import the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from evaluation.scoring_programs import ProgramMetric, ProgramScores, ScoringProgramError
from execution.runners import configured_program_runner
from execution.sandbox import SandboxUnavailable
from execution.scoring_program import read_program_metrics, run_scoring_program

from ..models import Challenge
from ..services.errors import PlatformError
from ..services.programs import program_check_inputs, program_check_key, program_store_check, scoring_parts

__all__ = ["program_check", "run_program"]

Runner = Callable[[bytes, pd.DataFrame, pd.DataFrame], ProgramScores]
MetricsReader = Callable[[bytes], list[ProgramMetric]]


def run_program(source: bytes, y_true: pd.DataFrame, y_pred: pd.DataFrame) -> ProgramScores:
    """Score one part of a submission with the host's program, on the programs' runner
    (``VARBOARD_PROGRAM_RUNNER_URL``, else this worker's sandbox); a sandbox that cannot run is the
    platform's fault."""
    try:
        return run_scoring_program(source, y_true, y_pred, runner=configured_program_runner())
    except SandboxUnavailable as exc:
        raise PlatformError(f"the sandbox cannot run scoring programs here: {exc}") from exc


def program_check(
    *, challenge_id: int, run: Runner | None = None, read_metrics: MetricsReader | None = None
) -> Challenge | None:
    """Check the challenge's stored program on its sample submission, called on every part a submission's
    scoring may call it on (``scoring_parts``), and record ``ok`` or ``failed`` for what it ran on
    (``program_check_key``, taken before it ran: a challenge changed meanwhile is checked again).

    ``run`` and ``read_metrics``: the sandbox's (:func:`run_program`, ``read_program_metrics`` on the programs'
    runner) unless given (the unit tests run the program in their own process).
    """
    run = run or run_program
    read_metrics = read_metrics or (lambda source: read_program_metrics(source, runner=configured_program_runner()))
    challenge = Challenge.objects.select_related("dataset").get(pk=challenge_id)
    if not challenge.scoring_program:
        return None
    program, key = challenge.scoring_program.name, program_check_key(challenge)
    with challenge.scoring_program.open("rb") as handle:
        source = handle.read()
    outcome_names: set[str] | None = None
    try:
        metrics = read_metrics(source)
        y_true, y_pred = program_check_inputs(challenge)
        for _part, rows in scoring_parts(challenge, None):
            if rows.any():
                scores = run(source, y_true[rows], y_pred[rows])
                names = set(scores.outcomes)
                outcome_names = names if outcome_names is None else outcome_names & names
    except ScoringProgramError as exc:
        return program_store_check(challenge_id=challenge_id, program=program, error=exc, key=key)
    except SandboxUnavailable as exc:
        raise PlatformError(f"the sandbox cannot run scoring programs here: {exc}") from exc
    return program_store_check(
        challenge_id=challenge_id, program=program, metrics=metrics, outcome_names=sorted(outcome_names or ()), key=key
    )
