"""Host scoring programs run in the recipes' sandbox (execution.scoring_program).

A good program's scores and outcomes come back checked; one that raises, loops, eats
memory, breaks the contract or returns unusable scores fails with a message for the host;
one that tries to read the worker's files, environment or network finds nothing. The
hostile cases run as root (a fresh uid per run) and as the workers' uid 1000 (the Docker
image's workers, tests/recipes/unprivileged.py), like test_hostile.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import textwrap

import numpy as np
import pandas as pd
import pytest

from evaluation.scoring_programs import ProgramMetric, ScoringProgramError
from execution.sandbox import Limits
from execution.scoring_program import read_program_metrics, run_scoring_program

from .conftest import ROOT, needs_linux
from .scoring_cases import HOST_FILE_CONTENT, LIMITS, SECRETS, cases, frames, run_case
from .unprivileged import needs_worker_uid, run_as_worker

pytestmark = [needs_linux]

SAMPLE = (ROOT / "examples" / "scoring" / "macro_f1_and_cost.py").read_bytes()
NAMES = list(cases([]))


def _sentiment(n: int = 60):
    rng = np.random.default_rng(7)
    labels = np.array(["negative", "neutral", "positive"])
    truth = labels[rng.integers(0, 3, n)]
    predicted = np.where(rng.random(n) < 0.6, truth, labels[rng.integers(0, 3, n)])
    ids = pd.Index([f"{i:03d}" for i in range(n)], name="review_id")
    return pd.DataFrame({"label": truth}, index=ids), pd.DataFrame({"prediction": predicted}, index=ids)


# -- a good program -----------------------------------------------------------------------------------


def test_the_sample_program_gives_both_metrics_and_the_cost_outcomes(no_leftovers):
    from sklearn.metrics import f1_score

    y_true, y_pred = _sentiment()
    got = run_scoring_program(SAMPLE, y_true, y_pred, limits=Limits(wall_time_s=60))
    truth, predicted = y_true["label"].to_numpy(), y_pred["prediction"].to_numpy()
    costs = np.array(
        [0.0 if t == p else 5.0 if {t, p} == {"negative", "positive"} else 1.0 for t, p in zip(truth, predicted)]
    )
    assert list(got.scores) == ["macro_f1", "cost"]
    assert got.scores["macro_f1"] == pytest.approx(f1_score(truth, predicted, average="macro"), abs=1e-12)
    assert got.scores["cost"] == pytest.approx(costs.mean(), abs=1e-12)
    assert list(got.outcomes) == ["cost"]  # macro-F1 does not decompose: no outcomes, no paired statistics
    np.testing.assert_array_equal(got.outcomes["cost"], costs)
    assert 0 < got.duration_s < 60


def test_the_sample_programs_metrics_are_read_without_scoring():
    assert read_program_metrics(SAMPLE, limits=Limits(wall_time_s=60)) == [
        ProgramMetric("macro_f1", "Macro F1", True, False),
        ProgramMetric("cost", "Cost-weighted error", False, True),  # marked primary: it gives outcomes
    ]


FRAMES_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    METRICS = [{"name": "seen", "higher_is_better": True}]

    def score(y_true, y_pred):
        print("SEEN " + json.dumps({
            "index_name": y_true.index.name, "ids": [str(i) for i in y_true.index],
            "same_ids": bool(y_true.index.equals(y_pred.index)),
            "dtypes": {c: str(t) for c, t in {**y_true.dtypes.to_dict(), **y_pred.dtypes.to_dict()}.items()},
            "code": list(y_true["code"]), "weight_nan": [bool(np.isnan(v)) for v in y_true["weight"]],
            "weight": float(np.nansum(y_true["weight"])), "count": [int(v) for v in y_true["count"]],
            "flag": [bool(v) for v in y_true["flag"]], "prob": list(y_pred["prob"]),
        }))
        return {"seen": 1.0}
    """
)


def test_score_gets_the_documented_frames():
    ids = pd.Index(["007", "7", "x y"], name="doc")
    y_true = pd.DataFrame(
        {
            "code": ["007", "NA", ""],
            "weight": [0.1, np.nan, 1e-300],
            "count": np.array([1, 2, 3]),
            "flag": [True, False, True],
        },
        index=ids,
    )
    y_pred = pd.DataFrame({"prob": [1 / 3, 0.5, 2 / 3]}, index=ids)
    got = run_scoring_program(FRAMES_PROBE.encode(), y_true, y_pred, limits=Limits(wall_time_s=60))
    seen = json.loads(next(line for line in got.log.splitlines() if line.startswith("SEEN "))[5:])
    assert seen == {
        "index_name": "doc",
        "ids": ["007", "7", "x y"],
        "same_ids": True,
        "dtypes": {"code": "str", "weight": "float64", "count": "int64", "flag": "bool", "prob": "float64"},
        "code": ["007", "NA", ""],
        "weight_nan": [False, True, False],
        "weight": 0.1 + 1e-300,
        "count": [1, 2, 3],
        "flag": [True, False, True],
        "prob": [1 / 3, 0.5, 2 / 3],  # exactly: the CSV round trip loses no float
    }


@pytest.mark.parametrize(
    ("y_true", "y_pred", "message"),
    [
        (pd.DataFrame({"label": []}), pd.DataFrame({"prediction": []}), "`y_true` has no rows"),
        (frames()[0], frames()[1].iloc[::-1], "`y_pred` must have the ids of `y_true`, in the same order"),
        (frames()[0], frames()[1].iloc[:3], "`y_pred` must have the ids of `y_true`, in the same order"),
        (frames()[0].rename(columns={"label": 0}), frames()[1], "`y_true`'s column names must be distinct .*"),
        (frames()[0], frames()[1].rename(columns={"prediction": "id"}), "`y_pred` has a column named like the id .*"),
        (frames()[0], frames()[1]["prediction"], "`y_pred` must be a pandas DataFrame, got Series"),
    ],
    ids=["empty", "order", "missing_row", "column_name", "id_column", "series"],
)
def test_frames_that_break_the_preconditions_are_the_callers_bug(y_true, y_pred, message):
    with pytest.raises(ValueError, match=message):
        run_scoring_program(SAMPLE, y_true, y_pred)


# -- broken programs: a message for the host --------------------------------------------------------

HEADER = 'METRICS = [{"name": "acc", "higher_is_better": True}, {"name": "f1", "higher_is_better": True}]\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('    return {"acc": 0.5}', "score() returned no value for the metric 'f1' declared in METRICS"),
        (
            '    return {"acc": 0.5, "f1": float("nan")}',
            "metric 'f1': the score is nan; it must be a finite number",
        ),
        (
            '    return {"acc": {"score": 0.5, "outcomes": np.ones(3) / 2}, "f1": 0.4}',
            "metric 'acc': 3 outcomes for 4 rows of y_true; give one per row, in the order of y_true",
        ),
        (
            '    return {"acc": {"score": 0.5, "outcomes": pd.Series([1, 0, 1, 1])}, "f1": 0.4}',
            "metric 'acc': the score is 0.5 but the mean of its outcomes is 0.75; the score must be the mean of"
            " the outcomes (within 1e-09 × max(1, |score|))",
        ),
        (
            '    return {"acc": 0.5, "f1": y_pred}',
            "metric 'f1': the value must be a number, or a dict with 'score' and 'outcomes'; got"
            " '<object of type DataFrame>'",
        ),
    ],
    ids=["missing", "nan", "outcomes_length", "outcomes_mean", "not_a_number"],
)
def test_unusable_scores_are_named(body, expected):
    source = "import numpy as np\nimport pandas as pd\n" + HEADER + "def score(y_true, y_pred):\n" + body + "\n"
    with pytest.raises(ScoringProgramError) as caught:
        run_scoring_program(source.encode(), *frames(), limits=Limits(wall_time_s=60))
    assert str(caught.value) == expected
    assert caught.value.kind == "scores"


@pytest.mark.parametrize(
    ("source", "expected", "kind"),
    [
        (
            'METRICS = [{"name": "a b", "higher_is_better": True}]',
            r"METRICS\[0\]: 'name' must be a Python .*",
            "metrics",
        ),
        (
            'METRICS = [{"name": "a", "higher_is_better": "yes"}]',
            r"METRICS\[0\] \('a'\): 'higher_is_better' must be True or False; got 'yes'",
            "metrics",
        ),
        ("METRICS = 'accuracy'", r"METRICS must be a non-empty list of dicts .*; got 'accuracy'", "metrics"),
        (
            "def score(y_true, y_pred):\n    return {}",
            r"the scoring program is incomplete: scoring.py does not define METRICS",
            "metrics",
        ),
        (
            "METRICS = [\n    {'name': 'a', 'higher_is_better': True\n",
            r"the scoring program failed while being imported: SyntaxError: .* \(line 2 of scoring.py\)\n\n"
            r"Traceback \(its last lines\):\n.*",
            "raised",
        ),
        (
            "import missing_module_xyz\nMETRICS = []",
            r"the scoring program failed while being imported: ModuleNotFoundError: No module named "
            r"'missing_module_xyz' \(line 1 of scoring.py\)\n\nTraceback \(its last lines\):\n.*",
            "raised",
        ),
    ],
    ids=["bad_name", "bad_direction", "not_a_list", "no_metrics", "syntax_error", "import_error"],
)
def test_malformed_programs_are_refused_when_their_metrics_are_read(source, expected, kind):
    with pytest.raises(ScoringProgramError) as caught:
        read_program_metrics(source.encode(), limits=Limits(wall_time_s=60))
    assert re.fullmatch(expected, str(caught.value), flags=re.S), str(caught.value)
    assert caught.value.kind == kind


def test_a_program_without_score_is_incomplete():
    with pytest.raises(
        ScoringProgramError, match=r"^the scoring program is incomplete: scoring.py does not define a function score"
    ):
        run_scoring_program(HEADER.encode(), *frames(), limits=Limits(wall_time_s=60))


# -- hostile programs, as root and as the workers' uid ----------------------------------------------


@pytest.fixture(scope="module")
def host_paths():
    """A file of the worker's (0644 in a 0755 folder) and this repository's own settings."""
    base = tempfile.mkdtemp(prefix="varboard-host-")
    os.chmod(base, 0o755)
    path = os.path.join(base, "media", "upload.csv")
    os.makedirs(os.path.dirname(path), mode=0o755)
    with open(path, "w") as fh:
        fh.write(HOST_FILE_CONTENT)
    os.chmod(path, 0o644)
    yield [path, str(ROOT / "leaderboard" / "settings.py")]
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("name", NAMES)
def test_hostile_program_as_root(name, host_paths, monkeypatch, no_leftovers):
    for variable, value in SECRETS.items():
        monkeypatch.setenv(variable, value)
    source, limits = cases(host_paths)[name]
    check(name, run_case(source, limits), host_paths)


@pytest.fixture(scope="module")
def as_worker(host_paths):
    """Every case, run once by a driver as uid 1000 with the secrets in its environment."""
    return run_as_worker(
        f"""
    from tests.recipes.scoring_cases import cases, run_case
    print(json.dumps({{name: run_case(*case) for name, case in cases({host_paths!r}).items()}}))
    """,
        env=SECRETS,
        timeout=300,
    )


@needs_worker_uid
@pytest.mark.parametrize("name", NAMES)
def test_hostile_program_as_the_workers_uid(name, as_worker, host_paths):
    check(name, as_worker[name], host_paths)


def check(name: str, outcome: dict, paths: list) -> None:
    everything = json.dumps(outcome)
    for secret in [*SECRETS.values(), HOST_FILE_CONTENT, "SECRET_KEY =", "CONNECTED"]:
        assert secret not in everything
    assert outcome["scores"] is None, outcome["log"]
    error = outcome["error"]
    assert EXPECTED[name].fullmatch(error), error
    assert outcome["kind"] == ("limit" if name in ("infinite_loop", "memory_hog") else "raised")
    if name == "read_secrets":
        error += outcome["log"]  # the message is shortened; the log has the whole traceback
        for path in paths:
            assert f"FileNotFoundError reading {path}" in error
            assert f"FileNotFoundError listing {os.path.dirname(path)}" in error
        for hidden in ("reading /etc/shadow", "listing /root", "listing /home", "listing /var/cache"):
            assert f"FileNotFoundError {hidden}" in error
        assert "nothing in /proc/1/environ" in error  # bwrap's init: started with an empty environment
        assert all(f"KeyError {variable}" in error for variable in SECRETS)


EXPECTED = {
    "raises": re.compile(
        r"score\(y_true, y_pred\) raised ValueError: boom after 3 steps \(line 7 of scoring.py\)\n\n"
        r"Traceback \(its last lines\):\nTraceback \(most recent call last\):\n"
        r'  File "/sandbox/work/scoring.py", line 7, in score\n.*ValueError: boom after 3 steps',
        flags=re.S,
    ),
    "infinite_loop": re.compile(
        re.escape(f"the scoring program exceeded the wall-time limit of {LIMITS.wall_time_s:g} s")
    ),
    "memory_hog": re.compile(
        r"the scoring program ran out of memory \(limit 1024 MB\) \(MemoryError: .* \(line 8 of scoring.py\)\)"
    ),
    "network": re.compile(
        r"score\(y_true, y_pred\) raised ConnectionError: 127.0.0.1:5432 \[Errno 111\] Connection refused; "
        r"1.1.1.1:53 \[Errno 101\] Network is unreachable \(line \d+ of scoring.py\) "
        r"\(scoring programs have no network access\)\n\nTraceback.*",
        flags=re.S,
    ),
    "read_secrets": re.compile(
        r"score\(y_true, y_pred\) raised PermissionError: could not read anything: .*", flags=re.S
    ),
}


# -- what a program writes back is bounded -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # the program writes the harness's result file itself, far past what its scores need
            'open("outputs/result.json", "w").write("[" * 10 + "1" * 5_000_000 + "]" * 10); os._exit(0)',
            "the scoring program's result is unusable: outputs/result.json is 5,000,020 bytes, more than the 70,656",
        ),
        (  # nested deeper than json.loads goes: a RecursionError in the worker, before
            'open("outputs/result.json", "w").write("[" * 30_000 + "]" * 30_000); os._exit(0)',
            "the scoring program's result is unusable: outputs/result.json is not a JSON object (or is nested",
        ),
    ],
)
def test_a_result_the_program_writes_itself_is_refused_without_reaching_the_workers_memory(body, expected):
    source = textwrap.dedent(
        f"""
        import os
        METRICS = [{{"name": "accuracy", "higher_is_better": True}}]

        def score(y_true, y_pred):
            {body}
        """
    ).encode()
    y_true, y_pred = _sentiment(20)
    with pytest.raises(ScoringProgramError) as raised:
        run_scoring_program(source, y_true, y_pred, limits=Limits(wall_time_s=30))
    assert str(raised.value).startswith(expected), str(raised.value)


def test_a_program_never_runs_unsandboxed(monkeypatch):
    from execution.sandbox import SandboxUnavailable
    from execution.sandbox.backend import Probe

    monkeypatch.setenv("VARBOARD_ALLOW_UNSANDBOXED", "1")  # recipes would run unconfined on such a laptop
    monkeypatch.setattr(
        "execution.scoring_program.probe", lambda: Probe(ok=False, backend="bubblewrap", missing="no bwrap here")
    )
    with pytest.raises(SandboxUnavailable, match="scoring programs never run unsandboxed: no bwrap here"):
        run_scoring_program(SAMPLE, *_sentiment(10), limits=Limits(wall_time_s=30))
