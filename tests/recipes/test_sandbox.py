"""The sandbox itself, with tiny Python programs (``python -S``: no site, fast start)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap

import pytest

from tasks import sandbox
from tasks.sandbox import Limits, SandboxUnavailable, python_command, run_sandboxed

from .conftest import needs_linux, needs_root

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

PY = [python_command()[0][0], "-S", "-B"]


def run_code(code: str, tmp_path, **limits):
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    return run_sandboxed([*PY, "-c", textwrap.dedent(code)], workdir=str(workdir),
                         limits=Limits(**{"wall_time_s": 20, **limits}))


def test_clean_environment_and_private_workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "fake-secret-4242")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:hunter2@db/varboard")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://:pw@redis:6379/0")
    r = run_code("""
        import json, os
        print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "uid": os.getuid(),
                          "gid": os.getgid(), "groups": os.getgroups()}))
    """, tmp_path)
    assert r.status == "ok", r
    seen = json.loads(r.stdout_tail)
    allowed = {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "LANG", "LC_ALL", "PYTHONHASHSEED",
               "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "MALLOC_ARENA_MAX", "HF_HUB_OFFLINE",
               "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "TOKENIZERS_PARALLELISM",
               "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "CUDA_VISIBLE_DEVICES"}
    assert set(seen["env"]) <= allowed
    assert "hunter2" not in r.stdout_tail and "fake-secret-4242" not in r.stdout_tail
    assert seen["env"]["HOME"] == seen["cwd"] == str(tmp_path / "work")
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "" and seen["env"]["OMP_NUM_THREADS"] == "1"
    if os.geteuid() == 0:
        assert seen["uid"] != 0 and seen["gid"] != 0 and seen["groups"] == []
        assert sandbox._UID_BASE <= seen["uid"] < sandbox._UID_BASE + sandbox._UID_SPAN
        assert f"uid {seen['uid']}" in r.isolation


def test_each_run_gets_a_fresh_uid(tmp_path):
    uids = {run_code("import os; print(os.getuid())", tmp_path).stdout_tail for _ in range(3)}
    if os.geteuid() == 0:
        assert len(uids) == 3


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "MY_API_KEY",
                                  "GITHUB_TOKEN", "db_password"])
def test_credentials_cannot_be_passed_in(tmp_path, name):
    with pytest.raises(ValueError, match=f"`env` variable '{name}' looks like a credential"):
        run_sandboxed([*PY, "-c", "pass"], workdir=str(tmp_path), env={name: "x"})


def test_no_network(tmp_path):
    r = run_code("""
        import socket
        for address in [("127.0.0.1", 5432), ("1.1.1.1", 53), ("127.0.0.1", 6379)]:
            try:
                socket.create_connection(address, timeout=2)
                print("CONNECTED", address)
            except OSError as exc:
                print("refused", address, exc.errno)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"x", ("8.8.8.8", 53))
            print("SENT")
        except OSError as exc:
            print("refused udp", exc.errno)
    """, tmp_path)
    assert r.status == "ok", r
    assert "CONNECTED" not in r.stdout_tail and "SENT" not in r.stdout_tail
    assert r.stdout_tail.count("refused") == 4
    assert r.warnings == () or os.geteuid() != 0
    assert any("network namespace" in i for i in r.isolation)


@needs_root
def test_host_unix_sockets_and_shared_memory_are_hidden(tmp_path):
    r = run_code("import os; print(sorted(os.listdir('/run')), sorted(os.listdir('/dev/shm')))", tmp_path)
    assert r.stdout_tail.strip() == "[] []"


PG_SOCKET = "/run/postgresql/.s.PGSQL.5432"


@needs_root
@pytest.mark.skipif(not os.path.exists(PG_SOCKET), reason="no PostgreSQL Unix socket on this machine")
def test_postgres_unix_socket_is_unreachable(tmp_path):
    r = run_code(f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect({PG_SOCKET!r})
            print("CONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
    """, tmp_path)
    assert r.stdout_tail.strip() == "refused FileNotFoundError"


@needs_root
def test_root_only_directory_is_unreadable(tmp_path):
    secret_dir = tmp_path / "private"
    secret_dir.mkdir(mode=0o700)
    (secret_dir / "db.sqlite3").write_text("SQLITE-CONTENT-777")
    os.chmod(secret_dir / "db.sqlite3", 0o644)
    os.chmod(tmp_path, 0o755)
    r = run_code(f"""
        try:
            print(open({str(secret_dir / 'db.sqlite3')!r}).read())
        except PermissionError as exc:
            print("denied", exc.errno)
    """, tmp_path)
    assert "SQLITE-CONTENT-777" not in r.stdout_tail and "denied 13" in r.stdout_tail


def test_wall_time_limit(tmp_path):
    r = run_code("while True: pass", tmp_path, wall_time_s=1)
    assert r.status == "timeout" and r.message == "exceeded the wall-time limit of 1 s"
    assert 1 <= r.duration_s < 3


def test_cpu_time_limit(tmp_path):
    r = run_code("while True: pass", tmp_path, wall_time_s=20, cpu_time_s=1)
    assert r.status == "cpu_time" and r.message == "exceeded the CPU-time limit of 1 s"
    assert r.duration_s < 6


def test_address_space_limit(tmp_path):
    r = run_code("x = bytearray(1500 * 1024 * 1024)", tmp_path, memory_mb=512)
    assert r.status == "memory" and r.message == "ran out of memory (limit 512 MB)"
    assert "MemoryError" in r.stderr_tail


def test_memory_of_all_processes_is_polled(tmp_path):
    # four processes of 150 MB, each under the 400 MB address-space limit, 600 MB together
    r = run_code("""
        import os, time
        for _ in range(4):
            if os.fork() == 0:
                block = bytearray(150 * 1024 * 1024)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(30)
                os._exit(0)
        time.sleep(30)
    """, tmp_path, memory_mb=400)
    assert r.status == "memory" and r.message == "ran out of memory (limit 400 MB)"
    assert r.duration_s < 15


def test_file_size_limit(tmp_path):
    r = run_code("open('big', 'wb').write(b'x' * (5 * 1024 * 1024))", tmp_path, max_file_mb=1)
    assert r.status == "file_size" and "larger than the 1 MB limit" in r.message
    assert os.path.getsize(tmp_path / "work" / "big") <= 1024 * 1024


def test_disk_limit(tmp_path):
    r = run_code("""
        import time
        for i in range(8):
            open(f'f{i}', 'wb').write(b'x' * (1024 * 1024))
        time.sleep(20)
    """, tmp_path, max_file_mb=2, max_disk_mb=4)
    assert r.status == "disk" and r.message == "wrote more than the 4 MB disk limit"


def test_output_is_capped_head_and_tail_kept(tmp_path):
    r = run_code("""
        import sys
        print("FIRST LINE")
        for i in range(200000):
            print("spam", i)
        print("never reached?")
    """, tmp_path, max_output_bytes=100_000)
    assert r.status == "output_limit"
    assert r.message == "printed more than the 100,000-byte output limit"
    assert r.stdout_tail.startswith("FIRST LINE")
    assert "bytes omitted …]" in r.stdout_tail
    assert len(r.stdout_tail.encode()) < 100_000


def test_output_under_the_cap_is_kept_whole(tmp_path):
    r = run_code("import sys; print('a' * 1000); print('b' * 1000, file=sys.stderr); sys.exit(3)",
                 tmp_path, max_output_bytes=10_000)
    assert r.status == "error" and r.returncode == 3 and r.message == "exited with status 3"
    assert r.stdout_tail == "a" * 1000 + "\n" and r.stderr_tail == "b" * 1000 + "\n"


def test_killed_by_a_signal(tmp_path):
    r = run_code("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", tmp_path)
    assert r.status == "killed" and r.message == "was killed by signal SIGSEGV"


@needs_root
def test_fork_bomb_is_stopped_and_cleaned_up(tmp_path):
    r = run_code("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """, tmp_path, max_processes=16, wall_time_s=20)
    assert r.status == "processes" and r.message == "reached the limit of 16 processes"
    assert r.duration_s < 10


def test_detached_daemon_is_killed_and_tmp_files_removed(tmp_path):
    r = run_code("""
        import os, time
        open('/tmp/varboard-sandbox-leftover', 'w').write('x')
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(300)
            os._exit(0)
        time.sleep(0.2)
    """, tmp_path)
    assert r.status == "ok", r
    if os.geteuid() == 0:
        assert not os.path.exists("/tmp/varboard-sandbox-leftover")
    else:
        os.unlink("/tmp/varboard-sandbox-leftover")
    # no_leftovers checks that the daemon is gone


def test_argument_validation(tmp_path):
    with pytest.raises(ValueError, match="`argv` must be a non-empty list of strings"):
        run_sandboxed("python -c pass", workdir=str(tmp_path))
    with pytest.raises(ValueError, match="is not a directory"):
        run_sandboxed(PY, workdir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="`device` must be 'cpu', 'cuda' or 'cuda:N'"):
        run_sandboxed(PY, workdir=str(tmp_path), device="tpu")
    with pytest.raises(ValueError, match="`wall_time_s` must be a positive number"):
        Limits(wall_time_s=0)
    with pytest.raises(ValueError, match="`cpu_time_s` must be a positive number or None"):
        Limits(cpu_time_s=-1)


def test_a_missing_program_is_a_platform_failure(tmp_path):
    with pytest.raises(SandboxUnavailable, match="could not start the sandboxed process"):
        run_sandboxed(["/nonexistent/python"], workdir=str(tmp_path))


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_unprivileged_worker_falls_back_to_a_user_namespace():
    """Run the sandbox from a non-root process: a user+network namespace, said so in warnings."""
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        _run_as_nobody(workdir)


def _run_as_nobody(workdir):
    script = textwrap.dedent(f"""
        import sys, json
        sys.path.insert(0, {os.path.dirname(os.path.dirname(sandbox.__file__))!r})
        from tasks.sandbox import run_sandboxed, Limits
        code = "import socket\\ntry:\\n socket.create_connection(('1.1.1.1', 53), timeout=2); print('CONNECTED')\\nexcept OSError as e: print('refused', e.errno)"
        r = run_sandboxed([sys.executable, "-S", "-c", code], workdir={workdir!r}, limits=Limits(wall_time_s=10))
        print(json.dumps([r.status, r.stdout_tail, list(r.isolation), list(r.warnings)]))
    """)
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          PY[0], "-S", "-c", script], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"}, cwd="/")
    assert out.returncode == 0, out.stderr
    status, stdout, isolation, warnings = json.loads(out.stdout.strip().splitlines()[-1])
    assert status == "ok" and "CONNECTED" not in stdout
    if "user+network namespace" in isolation:
        assert stdout.strip() == "refused 101"
        assert any("not root" in w for w in warnings)
    else:  # this kernel allows no unprivileged user namespace: the result must say so
        assert any("no network isolation" in w for w in warnings)
