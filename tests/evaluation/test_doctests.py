"""Every example in the docstrings of ``evaluation`` runs and prints what it shows.

The suite collects ``tests/`` only (pytest.ini), so ``--doctest-modules`` never reaches the
package: this runs :mod:`doctest` over each of its modules instead.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import evaluation

MODULES = sorted(info.name for info in pkgutil.walk_packages(evaluation.__path__, "evaluation."))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def run_examples(module) -> tuple[int, int, str]:
    """(examples tried, examples failed, the failure report) of ``module``'s own docstrings."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = io.StringIO()
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=out.write)
    tried, failed = runner.tries, runner.failures
    return tried, failed, out.getvalue()


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    tried, failed, report = run_examples(importlib.import_module(name))
    assert failed == 0, f"{failed} of {tried} examples of {name} fail:\n{report}"


def test_the_examples_are_found():
    tried = sum(run_examples(importlib.import_module(name))[0] for name in ("evaluation.report", "evaluation.datasets"))
    assert tried >= 5  # build_report's example and shuffle_test_rows' at least
