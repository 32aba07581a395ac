"""The recipe workers' readiness check: ``python -m execution.probe``.

Prints the isolation recipe runs get (this machine's sandbox, or the runner service named
by ``VARBOARD_RUNNER_URL``) and exits 0, or prints what is missing and exits 1. With
``VARBOARD_ALLOW_UNSANDBOXED=1`` and no isolation it warns and exits 0. No Django.
"""

from __future__ import annotations

import sys

from execution.readiness import may_run_recipes, readiness
from execution.sandbox.unconfined import ALLOW_ENV


def main() -> int:
    found = readiness()
    if found.ok:
        print(f"isolation ({found.backend}): " + "; ".join(found.isolation))
    elif may_run_recipes(found):
        print(f"WARNING: no isolation ({found.missing}); recipes run UNSANDBOXED because {ALLOW_ENV}=1")
    else:
        print(f"isolation unavailable: {found.missing}")
    return 0 if may_run_recipes(found) else 1


if __name__ == "__main__":
    sys.exit(main())
