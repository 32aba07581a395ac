"""The command-line client as a subprocess against a live server: download, headed leaderboard
sections, the error of a closed challenge, a closed pipe, ``--json`` on every command, and the
``varboard`` command installed with pip from ``cli/``. (Scoring by a worker: tests/integration/test_cli.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from leaderboard.models import Challenge, Run, Submission, Team
from leaderboard.services.phases import phase_default

from .factories import PASSWORD, board_row, digits_challenge, label_predictions, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "cli" / "varboard_cli.py"


def run_cli(base: str, home: Path, *args: str, command=(sys.executable, str(CLI)), **kwargs):
    env = {
        "PATH": os.environ["PATH"],
        "XDG_CONFIG_HOME": str(home),
        "VARBOARD_URL": base,
        "VARBOARD_PASSWORD": PASSWORD,
    }
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=120, **kwargs)


def add_entry(challenge, user, method: str, kind: str, scores) -> Submission:
    team, _ = Team.objects.get_or_create(name=f"team-{method}")
    submission = Submission.objects.create(
        challenge=challenge,
        team=team,
        submitted_by=user,
        kind=kind,
        method_name=method,
        status="scored",
        runs_expected=len(scores),
    )
    Run.objects.bulk_create(
        [
            Run(
                submission=submission,
                index=i,
                status="succeeded",
                test_score=float(s),
                outcomes=Run.pack_outcomes(np.ones(72) * (i % 2)) if kind == "predictions" else None,
            )
            for i, s in enumerate(scores)
        ]
    )
    return submission


@pytest.fixture
def board(live_server):
    host = make_user("host")
    make_user("carol")
    challenge, frame = digits_challenge(host, k_runs=4, bootstrap_resamples=100)
    rng = np.random.default_rng(0)
    for name, centre in (("resnet", 0.8), ("mlp", 0.7)):
        add_entry(challenge, host, name, "recipe", centre + 0.01 * rng.standard_normal(4))
    add_entry(challenge, host, "files", "predictions", [0.5, 0.5])
    return challenge, frame


def test_download_saves_the_public_files(live_server, board, tmp_path):
    challenge, frame = board
    done = run_cli(live_server.url, tmp_path, "download", challenge.slug, "--dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    train = (tmp_path / "data" / "train.csv").read_text()
    assert train.splitlines()[0].startswith("id,") and len(train.splitlines()) == 1 + (frame.is_test == 0).sum()
    assert "label" not in (tmp_path / "data" / "test_inputs.csv").read_text().splitlines()[0]
    as_json = json.loads(
        run_cli(
            live_server.url,
            tmp_path,
            "--json",
            "download",
            challenge.slug,
            "--dir",
            str(tmp_path / "again"),
            "--part",
            "train",
        ).stdout
    )
    assert [row["part"] for row in as_json["files"]] == ["train"]
    missing = run_cli(live_server.url, tmp_path, "download", "no-such-challenge")
    assert missing.returncode == 1 and missing.stderr.startswith("error: 404")


def test_leaderboard_prints_one_headed_section_per_kind(live_server, board, tmp_path):
    challenge, _ = board
    done = run_cli(live_server.url, tmp_path, "leaderboard", challenge.slug)
    assert done.returncode == 0, done.stderr
    headings = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    assert len(headings) == 2 and "recipe" in headings[0].lower() and "prediction" in headings[1].lower()
    sections = done.stdout.split("\n== ")
    assert "resnet" in sections[0] and "mlp" in sections[0] and "files" in sections[1]
    assert "within a section" in done.stdout
    board_json = json.loads(run_cli(live_server.url, tmp_path, "leaderboard", challenge.slug, "--json").stdout)
    assert {e["method_name"] for e in board_json["entries"]} == {"resnet", "mlp", "files"}


def test_a_closed_challenge_is_reported_as_closed(live_server, tmp_path):
    host = make_user("host")
    make_user("carol")
    closed = Challenge.objects.create(
        slug="boon-2018",
        title="Published 2018",
        metric="accuracy",
        higher_is_better=True,
        allow_recipes=True,
        created_by=host,
    )
    phase_default(challenge=closed, closes_at=datetime(2018, 7, 15, tzinfo=UTC))
    recipe = tmp_path / "recipe.py"
    recipe.write_text("def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):\n    return None\n")
    assert run_cli(live_server.url, tmp_path, "login", "carol").returncode == 0
    done = run_cli(live_server.url, tmp_path, "submit", "boon-2018", "--recipe", str(recipe), "--method", "late")
    assert done.returncode == 1
    closed_at = "409: The main phase closed at 2018-07-15 00:00 UTC. "  # then what to do: it has no dataset
    assert done.stderr.strip().startswith(f"error: {closed_at}") and "/imports/" in done.stderr
    as_json = run_cli(
        live_server.url, tmp_path, "submit", "boon-2018", "--recipe", str(recipe), "--method", "x", "--json"
    )
    assert json.loads(as_json.stderr)["error"].startswith(closed_at)


def test_every_command_answers_json(live_server, board, tmp_path):
    challenge, frame = board
    login = json.loads(run_cli(live_server.url, tmp_path, "login", "carol", "--json").stdout)
    assert login["username"] == "carol" and "token" not in login
    listing = json.loads(run_cli(live_server.url, tmp_path, "challenges", "--json").stdout)
    assert [c["slug"] for c in listing] == [challenge.slug]
    files = tmp_path / "p.csv"
    files.write_bytes(label_predictions(frame))
    submitted = json.loads(
        run_cli(live_server.url, tmp_path, "--json", "submit", challenge.slug, str(files), "--method", "cli").stdout
    )
    assert submitted["status"] == "queued"
    status = json.loads(run_cli(live_server.url, tmp_path, "status", str(submitted["id"]), "--json").stdout)
    assert status["id"] == submitted["id"] and len(status["runs"]) == 1


def test_a_closed_pipe_ends_quietly(live_server, board, tmp_path):
    challenge, _ = board
    env = {"PATH": os.environ["PATH"], "XDG_CONFIG_HOME": str(tmp_path), "VARBOARD_URL": live_server.url}
    process = subprocess.Popen(
        [sys.executable, str(CLI), "leaderboard", challenge.slug, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before anything is written, as `| head -0` would be
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert stderr == ""  # no BrokenPipeError traceback
    piped = subprocess.run(
        f"{sys.executable} {CLI} leaderboard {challenge.slug} | head -1",
        shell=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.stdout.startswith("== ") and "Traceback" not in piped.stderr


def test_pip_installs_the_varboard_command_from_cli(live_server, board, tmp_path):
    source = tmp_path / "cli"
    shutil.copytree(ROOT / "cli", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(source),
            "-w",
            str(wheels),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            *map(str, wheels.glob("*.whl")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    done = run_cli(live_server.url, tmp_path, "challenges", "--json", command=(str(venv / "bin" / "varboard"),))
    assert done.returncode == 0, done.stderr
    assert [c["slug"] for c in json.loads(done.stdout)] == [board[0].slug]


def test_leaderboard_heads_imported_runs_as_published_not_as_recipes():
    from cli.varboard_cli import leaderboard_text

    entry = board_row(
        method_name="ResNet-32",
        runs_succeeded=74,
        runs_expected=74,
        mean={"estimate": 0.7, "low": 0.69, "high": 0.71},
        boo_n={"estimate": 0.72},
        provenance={"source": "published", "link": "https://example.org", "note": "Someone (2018)"},
    )
    section = {"label": "Training recipes", "design": "seed-paired runs on out-of-bootstrap splits", "entries": [1]}
    text = leaderboard_text({"entries": [entry], "sections": [section]})
    assert text.startswith("== Imported runs (published elsewhere) (1 entry) ==")
    assert "recipe" not in text.lower() and "seed-paired" not in text
    entry["provenance"] = None
    assert leaderboard_text({"entries": [entry], "sections": [section]}).startswith("== Training recipes (1 entry) ==")


def test_the_challenge_listing_marks_closed_challenges(live_server, tmp_path):
    """``varboard challenges`` listed a closed challenge as an open one; it says which take submissions now."""
    host = make_user("host")
    open_, _ = digits_challenge(host)
    closed = Challenge.objects.create(
        slug="boon-2018", title="Published 2018", metric="accuracy", higher_is_better=True, created_by=host
    )
    phase_default(challenge=closed, closes_at=datetime(2018, 7, 15, tzinfo=UTC))
    listing = run_cli(live_server.url, tmp_path, "challenges").stdout.splitlines()
    states = {line.split()[0]: line.split()[1] for line in listing}
    assert states == {open_.slug: "open", "boon-2018": "closed"}, listing
