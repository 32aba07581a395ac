"""Isolation fails closed; the unsandboxed mode is explicit; the probe and its command line;
and the sandbox as the workers' uid (1000, as in the Docker image).

bubblewrap is never mocked: a missing or refused bwrap is simulated by pointing
VARBOARD_BWRAP at a stand-in that fails the way bwrap fails, or by running the probe under
a real seccomp filter that refuses user namespaces the way Docker's default profile does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from execution.sandbox import IsolationUnavailable, Limits, SandboxUnavailable, probe, python_command, run_sandboxed
from execution.sandbox import isolation as isolation_module
from execution.sandbox.seccomp import bpf_program

from .conftest import ROOT, needs_linux
from .unprivileged import SITE_PACKAGES, needs_worker_uid, run_as_worker

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

PY = [python_command()[0][0], "-S", "-B"]
DOCKER_ERROR = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)


@pytest.fixture
def fake_bwrap(workspace):
    """Makes stand-ins for bwrap that answer --version and otherwise fail with bwrap's error.

    They lie beside the workspace, where a run's uid may execute them.
    """

    def make(error: str) -> str:
        path = workspace.parent / "bwrap"
        path.write_text(
            f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\n"
            f"echo {error!r} >&2\nexit 1\n"
        )
        os.chmod(path, 0o755)
        return str(path)

    return make


# -- fail closed ----------------------------------------------------------------------------------


def test_no_bubblewrap_refuses_every_run(workspace, monkeypatch):
    monkeypatch.setenv("VARBOARD_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(IsolationUnavailable) as caught:
        run_sandboxed([*PY, "-c", "print('ran')"], workdir=str(workspace))
    assert str(caught.value) == (
        "recipes cannot be isolated on this machine: bubblewrap is not installed: "
        "/nonexistent/bwrap is not an executable file (VARBOARD_BWRAP=/nonexistent/bwrap)"
    )
    assert isinstance(caught.value, SandboxUnavailable) and isinstance(caught.value, OSError)
    assert os.listdir(workspace) == [] and os.stat(workspace).st_uid == os.geteuid()  # nothing ran


def test_bubblewrap_not_on_the_path(monkeypatch):
    monkeypatch.setattr(isolation_module, "bwrap_path", lambda: None)
    found = probe()
    assert not found.ok and found.missing == "bubblewrap is not installed (apt-get install bubblewrap)"


@pytest.mark.parametrize(
    "error, missing",
    [
        (
            DOCKER_ERROR,
            "user namespaces are refused: under Docker's default seccomp profile a process without "
            "CAP_SYS_ADMIN may not create them",
        ),
        (
            "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)",
            "user namespaces are disabled: sysctl user.max_user_namespaces is 0",
        ),
        (
            "bwrap: setting up uid map: Permission denied",
            "the new user namespace's uid map was refused: AppArmor restricts unprivileged user namespaces",
        ),
        (
            "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
            "a fresh /proc cannot be mounted: the container masks parts of /proc (Docker: security_opt "
            "systempaths=unconfined)",
        ),
        ("bwrap: Failed to make / slave: Permission denied", "mounts are refused inside the new namespaces: AppArmor"),
        ("bwrap: something new went wrong", "bubblewrap could not start a sandbox: bwrap: something new went wrong"),
    ],
)
def test_a_refusing_bubblewrap_is_explained(fake_bwrap, workspace, monkeypatch, error, missing):
    monkeypatch.setenv("VARBOARD_BWRAP", fake_bwrap(error))
    found = probe()
    assert not found.ok and found.missing.startswith(missing), found.missing
    assert found.missing.endswith(f"[{error}]") or missing.startswith("bubblewrap could not")
    with pytest.raises(IsolationUnavailable, match="recipes cannot be isolated on this machine: "):
        run_sandboxed([*PY, "-c", "pass"], workdir=str(workspace))


DOCKER_LIKE_SECCOMP = """
    import errno, pyseccomp as sc
    # what Docker's default profile does to a process without CAP_SYS_ADMIN
    f = sc.SyscallFilter(sc.ALLOW)
    for name in ("unshare", "setns", "mount"):
        f.add_rule(sc.ERRNO(errno.EPERM), name)
    f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    f.load()
"""


@needs_worker_uid
def test_docker_default_seccomp_refusal_as_the_workers_uid(workspace):
    os.chmod(workspace, 0o777)
    seen = run_as_worker(
        DOCKER_LIKE_SECCOMP
        + f"""
    from execution.sandbox import IsolationUnavailable, probe, run_sandboxed
    try:
        run_sandboxed(["/usr/bin/true"], workdir={str(workspace)!r})
        refused = None
    except IsolationUnavailable as exc:
        refused = str(exc)
    print(json.dumps([probe().ok, probe().missing, refused]))
    """
    )
    ok, missing, refused = seen
    assert not ok and missing.startswith("user namespaces are refused: under Docker's default seccomp profile")
    assert "[bwrap: No permissions to create" in missing  # Debian's wording of bwrap's message
    assert refused == f"recipes cannot be isolated on this machine: {missing}"


# -- the unsandboxed mode ------------------------------------------------------------------------


def test_unsandboxed_only_when_allowed(workspace, monkeypatch):
    monkeypatch.setenv("VARBOARD_BWRAP", "/nonexistent/bwrap")
    monkeypatch.setenv("VARBOARD_ALLOW_UNSANDBOXED", "1")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "fake-secret-31337")
    r = run_sandboxed(
        [*PY, "-c", "import os; print(os.environ['HOME'], 'DJANGO_SECRET_KEY' in os.environ)"], workdir=str(workspace)
    )
    assert r.status == "ok" and r.isolation == ("unsandboxed",)
    assert r.stdout_tail.split() == [str(workspace), "False"]
    assert any("UNSANDBOXED" in w for w in r.warnings)
    slow = run_sandboxed([*PY, "-c", "while True: pass"], workdir=str(workspace), limits=Limits(wall_time_s=1))
    assert slow.status == "timeout" and slow.isolation == ("unsandboxed",)


def test_allowing_unsandboxed_runs_changes_nothing_where_bubblewrap_works(workspace, monkeypatch):
    monkeypatch.setenv("VARBOARD_ALLOW_UNSANDBOXED", "1")
    r = run_sandboxed([*PY, "-c", "pass"], workdir=str(workspace))
    assert r.isolation[0].startswith("bubblewrap ") and r.warnings == ()


# -- the probe ------------------------------------------------------------------------------------


def test_the_probe_and_the_seccomp_program_are_made_once_per_process():
    assert probe() is probe()
    bpf_program()
    assert bpf_program.cache_info().misses == 1 and len(bpf_program()) % 8 == 0


def cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "execution.sandbox.probe", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={"PATH": os.environ["PATH"], **env},
    )


def test_probe_command_line_exit_codes(fake_bwrap):
    ok = cli()
    assert ok.returncode == 0 and ok.stdout.startswith("isolation: bubblewrap ") and ok.stderr == ""
    assert "; user, pid, ipc, uts, net, mount, cgroup namespaces; seccomp; " in ok.stdout
    refused = cli(VARBOARD_BWRAP=fake_bwrap(DOCKER_ERROR))
    assert refused.returncode == 1
    assert refused.stdout.startswith("isolation unavailable: user namespaces are refused: under Docker's")
    allowed = cli(VARBOARD_BWRAP="/nonexistent", VARBOARD_ALLOW_UNSANDBOXED="1")
    assert allowed.returncode == 0 and allowed.stdout.startswith("WARNING: no isolation (bubblewrap is not")
    python = cli("--python")
    assert python.returncode == 0 and "imports numpy" in python.stdout


def test_probe_command_line_imports_no_django():
    code = textwrap.dedent("""
        import runpy, sys
        sys.argv = ["probe"]
        try:
            runpy.run_module("execution.sandbox.probe", run_name="__main__")
        except SystemExit as exc:
            print(exc.code, any(name.split(".")[0] == "django" for name in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.splitlines()[-1] == "0 False", out.stderr


# -- as the workers' uid --------------------------------------------------------------------------


@needs_worker_uid
def test_as_the_workers_uid(workspace):
    os.chmod(workspace, 0o777)
    seen = run_as_worker(f"""
    import os
    from execution.sandbox import run_sandboxed, Limits
    code = ("import os, socket\\n"
            "try:\\n socket.create_connection(('127.0.0.1', 6379), timeout=2); print('CONNECTED')\\n"
            "except OSError as e: print('refused', e.errno)\\n"
            "print(os.getuid(), sorted(p for p in os.listdir('/proc') if p.isdigit()))")
    r = run_sandboxed([sys.executable, "-S", "-c", code], workdir={str(workspace)!r}, limits=Limits(wall_time_s=10))
    print(json.dumps([r.status, r.stdout_tail, list(r.isolation), os.getuid()]))
    """)
    status, stdout, isolation, worker_uid = seen
    assert status == "ok" and stdout.splitlines() == ["refused 111", "1000 ['1', '2']"]
    assert worker_uid == 1000 and isolation[1:] == [
        "user, pid, ipc, uts, net, mount, cgroup namespaces",
        "seccomp",
        "uid 1000 (the worker's)",
        "rlimits",
    ]
    probe_cli = subprocess.run(
        [
            "setpriv",
            "--reuid=1000",
            "--regid=1000",
            "--clear-groups",
            "/usr/bin/python3.11",
            "-S",
            "-c",
            f"import sys; sys.path[:0] = [{str(ROOT)!r}, {SITE_PACKAGES!r}]; "
            "import runpy; "
            "runpy.run_module('execution.sandbox.probe', run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert probe_cli.returncode == 0 and "uid 1000 (the worker's)" in probe_cli.stdout, probe_cli.stderr


@needs_worker_uid
def test_fork_bomb_as_the_workers_uid_is_contained_and_the_worker_not_starved(workspace):
    """As uid 1000 RLIMIT_NPROC counts per user namespace (Linux >= 5.14): the bomb stops at
    its limit, while the worker, with more threads than that limit, keeps forking."""
    os.chmod(workspace, 0o777)
    seen = run_as_worker(f"""
    import os, threading, time
    from execution.sandbox import run_sandboxed, Limits
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(40)]  # the worker: 41 tasks > 16
    for t in threads:
        t.start()
    bomb = "import os\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        pass\\n"
    r = run_sandboxed([sys.executable, "-S", "-c", bomb], workdir={str(workspace)!r},
                      limits=Limits(wall_time_s=20, max_processes=16))
    children = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.5)
            os._exit(0)
        children.append(pid)
    forked = sum(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 for pid in children)
    after = run_sandboxed([sys.executable, "-S", "-c", "print('fine')"], workdir={str(workspace)!r})
    stop.set()
    print(json.dumps([r.status, r.message, r.duration_s, forked, after.status, after.stdout_tail]))
    """)
    status, message, duration, forked, after_status, after_stdout = seen
    assert status == "processes" and message == "reached the limit of 16 processes" and duration < 10
    assert forked == 20 and after_status == "ok" and after_stdout == "fine\n"
