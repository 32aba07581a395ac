"""No function longer than 80 lines, unless a comment says why.

A function's length is ``end_lineno - lineno + 1`` of its ``def`` (docstring and
comments included, decorators excluded), for every function and method, nested ones
too, in the packages below (``migrations/`` skipped). A function that must be longer
carries a comment starting ``# long because`` on the line just above its ``def`` (or,
when it is decorated, just above its first decorator).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evaluation", "execution", "leaderboard", "tasks", "cli")
LIMIT = 80
MARK = "# long because"


def long_functions(source: str, name: str = "<source>") -> list[str]:
    """``file:line name (N lines)`` for each function over LIMIT lines without the mark."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = node.end_lineno - node.lineno + 1
        if length <= LIMIT:
            continue
        tops = {node.lineno} | {d.lineno for d in node.decorator_list[:1]}
        marked = any(top >= 2 and lines[top - 2].strip().startswith(MARK) for top in tops)
        if not marked:
            found.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return found


def package_files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.relative_to(ROOT).parts)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_80_lines(package):
    if not (ROOT / package).is_dir():
        pytest.skip(f"no {package}/ package in this checkout")
    offenders = [
        hit
        for path in package_files(package)
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not offenders, f"functions over {LIMIT} lines without '{MARK} …' above them:\n" + "\n".join(offenders)


def _function(body_lines: int, *, decorated: bool = False, mark: str = "", indent: str = "") -> str:
    head = [f"{indent}{mark}"] if mark else []
    if decorated:
        head.append(f"{indent}@staticmethod")
    body = [f"{indent}    x = {i}" for i in range(body_lines)]
    return "\n".join([*head, f"{indent}def f():", *body]) + "\n"


def test_the_checker_counts_def_to_last_line_and_honours_the_mark():
    assert long_functions(_function(LIMIT - 1)) == []  # def + 79 lines = 80
    assert long_functions(_function(LIMIT)) == ["<source>:1 f (81 lines)"]
    assert long_functions(_function(LIMIT, mark="# long because it is a table")) == []
    assert long_functions(_function(LIMIT, mark="# long, because")) != []
    assert long_functions(_function(LIMIT - 1, decorated=True)) == []  # decorators excluded
    assert long_functions(_function(LIMIT, decorated=True, mark="# long because x")) == []
    nested = "class C:\n" + _function(LIMIT, indent="    ")
    assert long_functions(nested) == ["<source>:2 f (81 lines)"]
