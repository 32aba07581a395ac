"""The command-line client against a live server and a real worker: login, submit --wait, leaderboard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.factories import PASSWORD, digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLI = Path(__file__).resolve().parents[2] / "cli" / "varboard_cli.py"


def cli(base: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "XDG_CONFIG_HOME": str(home),
        "VARBOARD_URL": base,
        "VARBOARD_PASSWORD": PASSWORD,
    }
    return subprocess.run([sys.executable, str(CLI), *args], env=env, capture_output=True, text=True, timeout=180)


def test_contestant_uses_the_cli_end_to_end(live_server, celery_worker_process, tmp_path):
    host = make_user("host")
    make_user("carol")
    challenge, frame = digits_challenge(host, title="CLI digits")
    files = []
    for seed in range(2):
        path = tmp_path / f"seed{seed}.csv"
        path.write_bytes(label_predictions(frame, correct_fraction=0.8, seed=seed))
        files.append(str(path))

    login = cli(live_server.url, tmp_path, "login", "carol")
    assert login.returncode == 0 and "logged in as carol" in login.stdout, login.stderr
    assert (tmp_path / "varboard" / "token").stat().st_mode & 0o077 == 0  # the token file is private

    listing = cli(live_server.url, tmp_path, "challenges")
    assert challenge.slug in listing.stdout and "accuracy" in listing.stdout

    submit = cli(
        live_server.url,
        tmp_path,
        "submit",
        challenge.slug,
        *files,
        "--method",
        "cli two seeds",
        "--wait",
        "--timeout",
        "120",
    )
    assert submit.returncode == 0, submit.stdout + submit.stderr
    assert "scored, 2/2 runs finished, 0 failed" in submit.stdout

    board = cli(live_server.url, tmp_path, "leaderboard", challenge.slug)
    assert board.returncode == 0 and "cli two seeds" in board.stdout and " a " in board.stdout
    csv = cli(live_server.url, tmp_path, "leaderboard", challenge.slug, "--csv")
    assert csv.stdout.splitlines()[0].startswith("submission_id,method_name") and len(csv.stdout.splitlines()) == 2

    bad = tmp_path / "bad.csv"
    bad.write_text("id,prediction\nimg-9999,3\n")
    rejected = cli(live_server.url, tmp_path, "submit", challenge.slug, str(bad), "--method", "bad")
    assert rejected.returncode == 1 and rejected.stderr.startswith("error: 400: bad.csv:")
    missing = cli(live_server.url, tmp_path, "submit", challenge.slug, "nope.csv", "--method", "x")
    assert missing.returncode == 1 and "nope.csv: no such file" in missing.stderr
