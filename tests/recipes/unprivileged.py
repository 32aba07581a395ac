"""Running sandbox code as the workers' uid, for real.

Why: the Docker image runs its workers as uid 1000 (``varboard``), not root. There bubblewrap
maps the worker's own uid into the run's user namespace (no fresh uid), RLIMIT_NPROC counts
per user namespace, and the recipe runs as the same uid as the worker: only the namespaces
and the mount view keep it from the worker's processes and files. The tests run as root
here, so a small driver is started under ``setpriv --reuid=1000 --regid=1000
--clear-groups``, with Debian's /usr/bin/python3.11 -S (pyenv's interpreter lies under the
0700 /root, out of uid 1000's reach) and the venv's site-packages and the repository put on
sys.path by hand. It prints one JSON line, the last of its output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import textwrap

import pytest

from .helpers import ROOT

WORKER_UID = 1000
PYTHON = "/usr/bin/python3.11"
SITE_PACKAGES = sysconfig.get_paths()["purelib"]

needs_worker_uid = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(PYTHON),
    reason="needs root, setpriv and Debian's python3.11 to run a driver as uid 1000",
)


def run_as_worker(
    body: str, env: dict | None = None, timeout: float = 300, *, python: str = PYTHON, uid: int | None = WORKER_UID
):
    """Run `body` (Python; its last printed line is JSON) with `python` as `uid` (None: this
    process's uid); return that value."""
    script = f"import json, sys\nsys.path[:0] = [{str(ROOT)!r}, {SITE_PACKAGES!r}]\n" + textwrap.dedent(body)
    as_uid = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    out = subprocess.run(
        [*as_uid, python, "-S", "-B", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        cwd="/",
    )
    assert out.returncode == 0, f"the driver (uid {uid}) failed ({out.returncode}):\n{out.stderr[-4000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])
