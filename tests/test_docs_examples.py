"""The statistics example of README.md and docs/statistics.md prints what the documents say it prints.

A new user ran it and read 0.6882 where the README said 0.6883: the documents had drifted from the code. Each
document's example is run as it is written (from the repository root, as they say) and its output compared,
line by line, with the block after it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_HEADING = "Output (run from the repository root"


def example_and_output(document: Path) -> tuple[str, list[str]]:
    """The ```python block before the output heading, and the lines of the ``` block after it."""
    text = document.read_text()
    heading = text.index(OUTPUT_HEADING)
    code_start = text.rindex("```python\n", 0, heading) + len("```python\n")
    code = text[code_start : text.index("```", code_start)]
    output_start = text.index("```\n", heading) + len("```\n")
    return code, text[output_start : text.index("```", output_start)].splitlines()


@pytest.mark.parametrize("document", ["README.md", "docs/statistics.md"])
def test_the_statistics_example_prints_what_the_document_says(document):
    code, expected = example_and_output(ROOT / document)
    printed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert printed == expected
