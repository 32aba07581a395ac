"""The package boundaries hold: import contracts (import-linter) and a web process free of execution code."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
    "--config",
]


WEB_NO_WORKER = "The web side imports no worker or execution code"
EXECUTION_ONLY_FROM_WORKER = "Only leaderboard.worker and tasks import the execution engine"


def _copy_of_the_tree(tmp_path: Path) -> Path:
    for package in ("evaluation", "execution", "leaderboard", "tasks"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """lint-imports with the project's contracts over the packages under ``root`` (wide lines: no wrapped names)."""
    return subprocess.run(
        [*LINT_IMPORTS, str(ROOT / ".importlinter"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def test_import_contracts_are_kept():
    """.importlinter: layers, no circles, pure engines, services never import tasks, only the worker runs recipes."""
    out = _lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "7 kept, 0 broken" in out.stdout


def _broken(contract: str, stdout: str) -> bool:
    """Whether the contract whose name starts with ``contract`` is reported BROKEN."""
    return re.search(rf"^{re.escape(contract)}.* BROKEN$", stdout, flags=re.MULTILINE) is not None


@pytest.mark.parametrize(
    "module, line, contract",
    [
        ("leaderboard/services/scoring.py", "import tasks.reports", "Services enqueue by task name"),
        ("evaluation/metrics.py", "import django.db", "evaluation is numpy/scipy/pandas only"),
        ("leaderboard/web/views.py", "import execution.run", WEB_NO_WORKER),
        ("leaderboard/selectors.py", "import execution.run", EXECUTION_ONLY_FROM_WORKER),
        ("leaderboard/services/submissions.py", "import leaderboard.worker.run_data", WEB_NO_WORKER),
        ("evaluation/stats/_validation.py", "import evaluation.stats.boon", "No import circles"),
    ],
)
def test_the_contracts_catch_a_violation(tmp_path, module, line, contract):
    """Each contract fails when its rule is broken (checked on a copy of the tree with one import added)."""
    target = _copy_of_the_tree(tmp_path) / module
    target.write_text(target.read_text() + f"\n{line}  # added by the test\n")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0 and _broken(contract, out.stdout), out.stdout


@pytest.mark.parametrize(
    "package, imported, contract",
    [
        ("web", "leaderboard.worker.run_execution", WEB_NO_WORKER),
        ("web", "leaderboard.worker", WEB_NO_WORKER),
        ("services", "leaderboard.worker.study_execution", WEB_NO_WORKER),
        ("api", "execution.run", EXECUTION_ONLY_FROM_WORKER),
    ],
)
def test_a_planted_module_reaching_the_worker_breaks_a_contract(tmp_path, package, imported, contract):
    """A new module in ``package`` importing worker code inside a function (where only lint-imports sees it) fails.

    The module is planted in a copy of the tree, never in the tree itself, and removed again.
    """
    planted = _copy_of_the_tree(tmp_path) / "leaderboard" / package / "_planted_probe.py"
    planted.write_text(
        f'"""Planted by tests/test_architecture.py."""\n\n\ndef probe():\n    import {imported}\n\n'
        f"    return {imported}\n"
    )
    try:
        out = _lint_imports(tmp_path)
    finally:
        planted.unlink()
    assert out.returncode != 0 and _broken(contract, out.stdout), out.stdout
    assert f"leaderboard.{package}._planted_probe -> {imported}" in out.stdout, out.stdout
    assert not (ROOT / "leaderboard" / package / "_planted_probe.py").exists()


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
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"DJANGO_SETTINGS_MODULE": "leaderboard.settings", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


SENDERS = {"send", "send_task", "enqueue_on_commit", "apply_async", "signature"}


def _dispatched_task_names() -> dict[str, str]:
    """Every task name the app sends, with where: the first argument of each send or enqueue call in ``leaderboard/``
    (a literal, or a module-level constant such as ``dispatch.EXECUTE_RUN`` looked up in the calling module), every
    ``tasks.*`` constant of ``services.dispatch``, and the beat schedule's tasks."""
    from django.conf import settings

    from leaderboard.services import dispatch

    names = {
        value: f"services.dispatch.{key}"
        for key, value in vars(dispatch).items()
        if key.isupper() and isinstance(value, str) and value.startswith("tasks.")
    }
    for path in sorted((ROOT / "leaderboard").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            func = getattr(node, "func", None)
            called = getattr(func, "attr", getattr(func, "id", None))
            if not isinstance(node, ast.Call) or called not in SENDERS or not node.args:
                continue
            first, where = node.args[0], f"{module}:{node.lineno}"
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names[first.value] = where
            elif isinstance(first, ast.Name) and first.id.isupper():
                names[getattr(importlib.import_module(module), first.id)] = where
    for entry, schedule in settings.CELERY_BEAT_SCHEDULE.items():
        names[schedule["task"]] = f"CELERY_BEAT_SCHEDULE[{entry!r}]"
    return names


def test_every_dispatched_task_name_is_a_registered_celery_task():
    """Services enqueue by name (``services.dispatch``), so a misspelt or renamed task fails only here, not at import."""
    from leaderboard.celery import app

    app.loader.import_default_modules()  # the task modules a worker loads (``app.conf.include``)
    names = _dispatched_task_names()
    assert {"tasks.runs.execute_run", "tasks.variance_studies.execute_study_run", "tasks.maintenance.janitor"} <= set(
        names
    )  # the scan sees the worker's tasks and the beat schedule
    unregistered = {name: where for name, where in names.items() if name not in app.tasks}
    assert not unregistered, f"dispatched but no Celery task has the name: {unregistered}"
