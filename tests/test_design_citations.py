"""Every citation of the design names docs/DESIGN.md and a section it has.

A citation reads ``docs/DESIGN.md §6`` (several: ``§3, §6``; a range: ``§4–5``), on one
line, so that grepping for it finds it; a bare "DESIGN §6" or a section the file does
not have fails.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evaluation", "execution", "leaderboard", "tasks", "cli")
CITATION = re.compile(r"(docs/)?DESIGN(\.md)?(?P<sections>(?:,?[ \t]*§[ \t]*\d+(?:[–-]\d+)?)*)")


def design_sections() -> set[int]:
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^## (\d+)\.", text, flags=re.M)}


def bad_citations(text: str, sections: set[int]) -> list[str]:
    bad = []
    for match in CITATION.finditer(text):
        cited = [int(n) for n in re.findall(r"\d+", match["sections"])]
        if "–" in match["sections"] or "-" in match["sections"]:
            low, high = cited[0], cited[-1]
            cited = list(range(low, high + 1))
        if not match.group(0).startswith("docs/DESIGN.md") or not cited or set(cited) - sections:
            bad.append(match.group(0))
    return bad


def test_design_citations_resolve():
    sections = design_sections()
    assert sections == set(range(1, 8))
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []:
            for citation in bad_citations(path.read_text(encoding="utf-8"), sections):
                found.append(f"{path.relative_to(ROOT)}: {citation!r}")
    assert not found, "citations of the design that do not resolve:\n" + "\n".join(found)


def test_the_checker_flags_bare_and_unknown_citations():
    sections = set(range(1, 8))
    assert bad_citations("see docs/DESIGN.md §6 and docs/DESIGN.md §3, §6 or docs/DESIGN.md §4–5", sections) == []
    assert bad_citations("(DESIGN §6)", sections) == ["DESIGN §6"]
    assert bad_citations("docs/DESIGN.md §9", sections) == ["docs/DESIGN.md §9"]
    assert bad_citations("docs/DESIGN.md\n§6", sections) == ["docs/DESIGN.md"]
