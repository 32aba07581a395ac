"""The workers' readiness check: which isolation runs get here, or what is missing.

    python -m execution.sandbox.probe [--python]

prints the isolation in force and exits 0, or prints what is missing and exits 1.
``--python`` also imports numpy with the sandbox's interpreter inside a sandbox. With
``VARBOARD_ALLOW_UNSANDBOXED=1`` and no isolation it warns and exits 0 (runs would go on,
unsandboxed). No Django is imported. (Run it; in code, use `execution.sandbox.probe()`.)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from execution.sandbox import IsolationUnavailable, Limits, python_command, run_sandboxed
from execution.sandbox.interpreter import python_view
from execution.sandbox.isolation import probe, unsandboxed_allowed
from execution.sandbox.unconfined import ALLOW_ENV

__all__ = ["main"]


def _check_python() -> str:
    prefix, env, _ = python_command()
    code = (
        "import os, site\n"
        "for d in filter(None, os.environ.pop('VARBOARD_SITE_PACKAGES', '').split(os.pathsep)):"
        " site.addsitedir(d)\nimport numpy; print(numpy.__version__)"
    )
    root = tempfile.mkdtemp(prefix="varboard-probe-")
    os.chmod(root, 0o711)
    os.mkdir(os.path.join(root, "work"))
    try:
        result = run_sandboxed(
            [*prefix, "-c", code], workdir=os.path.join(root, "work"), env=dict(env), limits=Limits(wall_time_s=120)
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not result.ok:
        raise IsolationUnavailable(
            f"{' '.join(prefix)} cannot import numpy in the sandbox: "
            f"{result.message}: {result.stderr_tail.strip()[-500:]}"
        )
    note = python_view().note
    return f"python: {' '.join(prefix)} imports numpy {result.stdout_tail.strip()} in the sandbox" + (
        f" ({note})" if note else ""
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    found = probe()
    if found.ok:
        print("isolation: " + "; ".join(found.isolation))
    elif unsandboxed_allowed():
        print(f"WARNING: no isolation ({found.missing}); recipes run UNSANDBOXED because {ALLOW_ENV}=1")
    else:
        print(f"isolation unavailable: {found.missing}")
        return 1
    if "--python" in args:
        try:
            print(_check_python())
        except OSError as exc:
            print(f"python unavailable: {exc}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
