"""The sandbox shows Python at /opt/python and /opt/venv whatever the host's layout.

A worker's base interpreter may live in a pyenv prefix under root's home: a 0711 home (a
fresh uid may pass through it, so it is bound from where it is) or a 0700 one (out of that
uid's reach, so it is bound from a copy). Each layout is built here for real: the
interpreter's files hard-linked (or copied) into ``<tmp>/home/.pyenv/versions/X.Y.Z``
under a home of that mode, and a driver started with *that* interpreter runs a sandbox
(as root, and in the 0711 layout also as uid 1000) and the hostile ``list_host`` recipe,
cold and warm. Inside, the interpreter is at the neutral path and nothing of the host's
path to it (the temporary home, /root, the project's venv) is there.
"""

from __future__ import annotations

import glob
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import needs_linux, needs_root
from .hostile_cases import SECRETS, make_host_files
from .test_hostile import check
from .unprivileged import ROOT, SITE_PACKAGES, WORKER_UID, run_as_worker

pytestmark = [needs_linux, needs_root, pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")]

VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
SYSTEM_TOPS = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "proc", "dev", "tmp", "sandbox"}


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def fake_prefix(base: Path, home_mode: int) -> Path:
    """This interpreter's executable, shared library and standard library under ``base/home``
    (mode `home_mode`), laid out as pyenv does; the prefix."""
    real = Path(os.path.realpath(sys.base_prefix))
    prefix = base / "home" / ".pyenv" / "versions" / platform.python_version()
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    _link_or_copy(os.path.realpath(sys.executable), str(prefix / "bin" / VERSION))
    for library in glob.glob(str(real / "lib" / f"lib{VERSION}*.so*")):
        _link_or_copy(os.path.realpath(library), str(prefix / "lib" / os.path.basename(library)))
    shutil.copytree(
        real / "lib" / VERSION,
        prefix / "lib" / VERSION,
        symlinks=True,
        copy_function=_link_or_copy,
        ignore=lambda folder, names: (
            {"site-packages", "test"} & set(names) if folder == str(real / "lib" / VERSION) else ()
        ),
    )
    for folder, _, _ in os.walk(base):
        os.chmod(folder, 0o755)
    os.chmod(base / "home", home_mode)
    return prefix


DRIVER = """
import os, tempfile
from execution.sandbox import python_command, run_sandboxed
from execution.sandbox.interpreter import python_view
from tests.recipes.helpers import load_digits_data
from tests.recipes.hostile_cases import cases, run_case

root = tempfile.mkdtemp(prefix="varboard-layout-run-")
os.chmod(root, 0o711)
os.mkdir(os.path.join(root, "work"))
prefix, env, _ = python_command()
code = '''import json, os, site, sys
for d in filter(None, os.environ.pop("VARBOARD_SITE_PACKAGES", "").split(os.pathsep)):
    site.addsitedir(d)
import numpy
print(json.dumps({"executable": sys.executable, "prefix": sys.prefix, "numpy": numpy.__file__,
                  "/": sorted(os.listdir("/")), "/opt": sorted(os.listdir("/opt")),
                  "present": [p for p in %r if os.path.lexists(p)]}))'''
r = run_sandboxed([*prefix, "-c", code % (HOST_PATHS,)], workdir=os.path.join(root, "work"), env=dict(env))
data = load_digits_data()
inside = json.loads(r.stdout_tail.splitlines()[-1]) if r.ok else None
print(json.dumps({"base_prefix": sys.base_prefix, "argv": prefix, "sources": [h for h, _ in python_view().binds],
                  "status": r.status, "stderr": r.stderr_tail, "inside": inside,
                  "list_host": {start: run_case(cases(HOST_FILES)["list_host"], data, start)
                                for start in ("cold", "warm")}}))
"""


@pytest.fixture(scope="module")
def host_files():
    base = tempfile.mkdtemp(prefix="varboard-host-")
    yield make_host_files(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(
    ("home_mode", "uid"),
    [(0o711, None), (0o711, WORKER_UID), (0o700, None)],
    ids=["0711-as-root", "0711-as-uid-1000", "0700-as-root"],
)
def test_python_is_shown_at_neutral_paths_on_any_layout(home_mode, uid, host_files):
    # not under /tmp: the sandbox makes its own /tmp, which would hide a host path there anyway
    base = Path(tempfile.mkdtemp(prefix="varboard-layout-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    try:
        prefix = fake_prefix(base, home_mode)
        host_paths = [str(base), str(base / "home"), str(prefix), "/root", "/home", SITE_PACKAGES, str(ROOT)]
        body = f"HOST_PATHS, HOST_FILES = {host_paths!r}, {host_files!r}\n" + DRIVER
        result = run_as_worker(
            body,
            python=str(prefix / "bin" / VERSION),
            uid=uid,
            timeout=600,
            env={**SECRETS, "LD_LIBRARY_PATH": str(prefix / "lib"), "VARBOARD_PYTHON_COPY_DIR": str(base / "cache")},
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)

    assert result["base_prefix"] == str(prefix)  # the driver ran the interpreter of this layout
    copied = home_mode == 0o700  # out of a fresh uid's reach: bound from a copy
    interpreter_sources = result["sources"][:-1]
    assert all(source.startswith(str(base / ("cache" if copied else "home")) + "/") for source in interpreter_sources)

    assert result["status"] == "ok", result["stderr"]
    inside = result["inside"]
    assert result["argv"][0] == inside["executable"] == f"/opt/python/bin/{VERSION}"
    assert inside["prefix"] == "/opt/python"
    assert inside["numpy"].startswith("/opt/venv/site-packages/numpy/")
    assert inside["/opt"] == ["python", "venv"] and set(inside["/"]) <= SYSTEM_TOPS | {"opt"}
    assert inside["present"] == []  # no host folder above the interpreter or the venv

    for start, outcome in result["list_host"].items():
        check("list_host", outcome, host_files, start)
