"""The package boundaries hold: import contracts (import-linter) and a web process free of execution code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                                      "sys.exit(lint_imports_command())", "--config"]


def test_import_contracts_are_kept():
    """.importlinter: layers, no circles, pure engines, services never import tasks, web imports no execution."""
    out = subprocess.run([*LINT_IMPORTS, str(ROOT / ".importlinter"), "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "6 kept, 0 broken" in out.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("leaderboard/services/scoring.py", "import tasks.reports", "Services enqueue by task name"),
    ("evaluation/metrics.py", "import django.db", "evaluation is numpy/scipy/pandas only"),
    ("leaderboard/web/views.py", "import execution.run", "The web process imports no execution code"),
    ("evaluation/stats/_validation.py", "import evaluation.stats.boon", "No import circles"),
])
def test_the_contracts_catch_a_violation(tmp_path, module, line, contract):
    """Each contract fails when its rule is broken (checked on a copy of the tree with one import added)."""
    import shutil

    for package in ("evaluation", "execution", "leaderboard", "tasks"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # added by the test\n")
    out = subprocess.run([*LINT_IMPORTS, str(ROOT / ".importlinter"), "--no-cache"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(tmp_path),
                                                                           "PATH": "/usr/bin:/bin"})
    assert out.returncode != 0 and f"{contract}" in out.stdout and "BROKEN" in out.stdout, out.stdout


def test_the_web_process_loads_no_execution_or_task_code():
    """Import the WSGI application and every view the URLs name: no ``execution`` or ``tasks`` module loads."""
    script = (
        "import json, sys\n"
        "from django.core.wsgi import get_wsgi_application\n"
        "get_wsgi_application()\n"
        "from django.urls import get_resolver\n"
        "def walk(patterns):\n"
        "    for p in patterns:\n"
        "        walk(p.url_patterns) if hasattr(p, 'url_patterns') else p.callback\n"
        "walk(get_resolver().url_patterns)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('execution', 'tasks'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"DJANGO_SETTINGS_MODULE": "leaderboard.settings", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
