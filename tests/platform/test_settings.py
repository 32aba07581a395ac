"""Production settings: `check --deploy` is clean, and a missing secret key refuses to start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_in_production(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY="k" * 20 + "-a-long-random-production-secret-0123456789",
        DJANGO_ALLOWED_HOSTS="varboard.example.org",
        VARBOARD_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_without_secret_key_refuses_to_start(tmp_path):
    result = manage("check", DJANGO_ENV="production", DJANGO_ALLOWED_HOSTS="x", VARBOARD_VAR_DIR=str(tmp_path))
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set" in result.stderr
