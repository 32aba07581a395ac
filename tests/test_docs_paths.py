"""The docs name places that exist, and no place of a development machine.

Every repository path that README.md or a file of docs/ names (``execution/sandbox/``,
``benchmarks/bench_*.py``, in backticks or not) exists in this checkout; the layout table of
docs/DESIGN.md puts the sandbox where its code is; and no doc holds an absolute path of a
development machine (``/work/…``, ``/root/…``, ``/home/…``), which a reader's machine has not.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = (
    "benchmarks",
    "cli",
    "docs",
    "evaluation",
    "examples",
    "execution",
    "leaderboard",
    "tasks",
    "templates",
    "tests",
)
REPO_PATH = re.compile(r"(?<![\w./~-])((?:" + "|".join(TREE) + r")/[\w.*-]*(?:/[\w.*-]+)*/?)")
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home|Users)/[\w.-]+")
LAYOUT_ROW = re.compile(r"^\| `([^`]+)` \| (.*) \|$", flags=re.M)


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def missing_paths(text: str, root: Path = ROOT) -> list[str]:
    """The repository paths named in ``text`` that ``root`` lacks (a ``*`` matches as a glob)."""
    missing = []
    for match in REPO_PATH.finditer(text):
        path = match.group(1).rstrip(".")
        found = any(root.glob(path.rstrip("/"))) if "*" in path else (root / path).exists()
        if not found:
            missing.append(path)
    return missing


def machine_paths(text: str) -> list[str]:
    return MACHINE_PATH.findall(text)


def sandbox_rows_elsewhere(design: str, root: Path = ROOT) -> list[str]:
    """Rows of the layout table that say they hold the sandbox while their path has no sandbox code."""
    return [
        path
        for path, holds in LAYOUT_ROW.findall(design)
        if "sandbox" in holds and not (root / path / "sandbox").is_dir() and "sandbox" not in path
    ]


def test_every_path_the_docs_name_exists():
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in doc_files()
        for name in missing_paths(path.read_text(encoding="utf-8"))
    ]
    assert not found, "paths named in the docs that this checkout lacks:\n" + "\n".join(found)


def test_no_doc_names_a_development_machines_path():
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in doc_files()
        for name in machine_paths(path.read_text(encoding="utf-8"))
    ]
    assert not found, "absolute paths of a development machine in the docs:\n" + "\n".join(found)


def test_the_design_places_the_sandbox_where_its_code_is():
    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    assert (ROOT / "execution" / "sandbox").is_dir() and "`execution/sandbox/`" in design
    assert sandbox_rows_elsewhere(design) == []


def test_the_checkers_flag_what_they_should(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_runs.py").write_text("")
    text = (
        "see `tasks/` and benchmarks/bench_*.py, (tasks/sandbox.py) and `execution/harness/`. "
        "Not a path: `sections[].low/high`, https://example.org/tasks/x, ~/tasks/y"
    )
    assert missing_paths(text, tmp_path) == ["tasks/sandbox.py", "execution/harness/"]
    assert missing_paths("`benchmarks/nothing_*.py`", tmp_path) == ["benchmarks/nothing_*.py"]
    assert machine_paths("(`/work/shared/data/x.csv`, /root/.pyenv/bin, /home/ann/a.csv, /Users/b/c)") == [
        "/work/shared",
        "/root/.pyenv",
        "/home/ann",
        "/Users/b",
    ]
    assert machine_paths("no home, `/root`, `/sandbox/work`, /opt/python, var/work/x") == []
    old_row = "| `tasks/` | Celery tasks (thin wrappers), the recipe sandbox and the harness that runs inside it |"
    assert sandbox_rows_elsewhere(old_row, tmp_path) == ["tasks/"]
    (tmp_path / "execution" / "sandbox").mkdir(parents=True)
    assert sandbox_rows_elsewhere("| `execution/` | the recipe engine: the sandbox |", tmp_path) == []
