"""The sandbox itself, with tiny Python programs (``python -S``: no site, fast start).

Real processes throughout: bubblewrap, the seccomp filter and the namespaces are never
mocked. Where a test needs bubblewrap to fail, it points VARBOARD_BWRAP at a stand-in that
fails the way bwrap does, or runs the probe under a real seccomp filter.
"""

from __future__ import annotations

import json
import os
import platform
import textwrap

import pytest

from execution.sandbox import Limits, SandboxUnavailable, probe, python_command, run_sandboxed
from execution.sandbox.bubblewrap import UID_BASE, UID_SPAN, bwrap_path, bwrap_version

from .conftest import leftovers, needs_linux, needs_root

pytestmark = [needs_linux, pytest.mark.usefixtures("no_leftovers")]

PY = [python_command()[0][0], "-S", "-B"]
ISOLATED = ("user, pid, ipc, uts, net, mount, cgroup namespaces", "seccomp", "rlimits")


def run_code(code: str, workspace, **limits):
    return run_sandboxed(
        [*PY, "-c", textwrap.dedent(code)], workdir=str(workspace), limits=Limits(**{"wall_time_s": 20, **limits})
    )


# -- isolation ------------------------------------------------------------------------------------


def test_isolation_in_force(workspace):
    r = run_code("import os; print(os.getuid())", workspace)
    assert r.status == "ok", r
    uid = int(r.stdout_tail)
    assert r.isolation == (bwrap_version(bwrap_path()), ISOLATED[0], "seccomp", f"uid {uid}", "rlimits")
    assert probe().ok and probe().isolation[-1] == "rlimits"
    if os.geteuid() == 0:
        assert UID_BASE <= uid < UID_BASE + UID_SPAN


def test_clean_environment_and_private_workdir(workspace, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "fake-secret-4242")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:hunter2@db/varboard")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://:pw@redis:6379/0")
    r = run_code(
        """
        import json, os
        print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "uid": os.getuid(),
                          "gid": os.getgid(), "groups": os.getgroups(), "tmp": os.path.realpath("/tmp")}))
    """,
        workspace,
    )
    assert r.status == "ok", r
    seen = json.loads(r.stdout_tail)
    allowed = {
        "PATH",
        "HOME",
        "TMPDIR",
        "USER",
        "LOGNAME",
        "LANG",
        "LC_ALL",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "MALLOC_ARENA_MAX",
        "JE_ARROW_MALLOC_CONF",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_DISABLE_TELEMETRY",
        "TOKENIZERS_PARALLELISM",
        "CUBLAS_WORKSPACE_CONFIG",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
        "PWD",
    }
    assert set(seen["env"]) <= allowed
    assert "hunter2" not in r.stdout_tail and "fake-secret-4242" not in r.stdout_tail
    assert seen["env"]["HOME"] == seen["cwd"] == "/sandbox/work" and seen["tmp"] == "/sandbox/work/tmp"
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "" and seen["env"]["OMP_NUM_THREADS"] == "1"
    if os.geteuid() == 0:
        assert seen["uid"] != 0 and seen["gid"] == seen["uid"] and seen["groups"] == []
        assert os.stat(workspace).st_uid == seen["uid"] and os.stat(workspace).st_mode & 0o777 == 0o700


@needs_root
def test_each_run_gets_a_fresh_uid(workspace):
    uids = {run_code("import os; print(os.getuid())", workspace).stdout_tail for _ in range(3)}
    assert len(uids) == 3


@pytest.mark.parametrize(
    "name", ["DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "MY_API_KEY", "GITHUB_TOKEN", "db_password"]
)
def test_credentials_cannot_be_passed_in(workspace, name):
    with pytest.raises(ValueError, match=f"`env` variable '{name}' looks like a credential"):
        run_sandboxed([*PY, "-c", "pass"], workdir=str(workspace), env={name: "x"})


def test_no_network(workspace):
    r = run_code(
        """
        import socket
        for address in [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("1.1.1.1", 53)]:
            try:
                socket.create_connection(address, timeout=2)
                print("CONNECTED", address)
            except OSError as exc:
                print("refused", address[1], exc.errno)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53))
            print("SENT")
        except OSError as exc:
            print("refused udp", exc.errno)
    """,
        workspace,
    )
    assert r.status == "ok", r
    # the run's own loopback: nothing listens there; no route anywhere else
    assert r.stdout_tail.splitlines() == ["refused 5432 111", "refused 6379 111", "refused 53 101", "refused udp 101"]


def test_namespaces_capabilities_and_seccomp_are_the_runs_own(workspace):
    host = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("pid", "ipc", "uts", "net", "mnt", "user", "cgroup")}
    r = run_code(
        f"""
        import json, os, socket
        status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines())
        print(json.dumps({{"ns": {{ns: os.readlink(f"/proc/self/ns/{{ns}}") for ns in {sorted(host)!r}}},
                          "pids": sorted(p for p in os.listdir("/proc") if p.isdigit()),
                          "pid": os.getpid(), "hostname": socket.gethostname(),
                          "status": {{k: status[k] for k in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp")}}}}))
    """,
        workspace,
    )
    seen = json.loads(r.stdout_tail)
    assert all(seen["ns"][ns] != host[ns] for ns in host), seen["ns"]
    assert seen["pids"] == ["1", "2"] and seen["pid"] == 2 and seen["hostname"] == "sandbox"
    assert seen["status"] == {
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "NoNewPrivs": "1",
        "Seccomp": "2",
    }


DENIED_X86_64 = {
    "unshare": (272, 0x10000000),
    "setns": (308, 0, 0),
    "mount": (165, 0, 0, 0, 0, 0),
    "umount2": (166, 0, 0),
    "pivot_root": (155, 0, 0),
    "chroot": (161, 0),
    "ptrace": (101, 0, 0, 0, 0),
    "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
    "keyctl": (250, 0, 0),
    "bpf": (321, 0, 0, 0),
    "perf_event_open": (298, 0, 0, 0, 0, 0),
    "userfaultfd": (323, 0),
    "io_uring_setup": (425, 1, 0),
    "open_by_handle_at": (304, 0, 0, 0),
    "kexec_load": (246, 0, 0, 0, 0),
    "init_module": (175, 0, 0, 0),
    "reboot": (169, 0, 0, 0, 0),
    "swapon": (167, 0, 0),
    "acct": (163, 0),
    "shmget": (29, 0x5EC2E7, 4096, 0o1666),
    "msgget": (68, 1, 0o1666),
    "clone (new user ns)": (56, 0x10000000 | 17, 0, 0, 0, 0),
    "clone (new net ns)": (56, 0x40000000 | 17, 0, 0, 0, 0),
    "clone3": (435, 0, 0),
}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="system call numbers of x86_64")
def test_seccomp_denies_dangerous_calls(workspace):
    r = run_code(
        f"""
        import ctypes, json, os, threading
        libc = ctypes.CDLL(None, use_errno=True)
        seen = {{}}
        for name, (nr, *args) in {DENIED_X86_64!r}.items():
            rc = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
            seen[name] = os.strerror(ctypes.get_errno()) if rc == -1 else f"returned {{rc}}"
        pid = os.fork()  # plain fork and threads still work
        if pid == 0:
            os._exit(7)
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()
        seen["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        print(json.dumps(seen))
    """,
        workspace,
    )
    seen = json.loads(r.stdout_tail)
    assert seen.pop("clone3") == "Function not implemented" and seen.pop("fork") == 7
    assert seen == {name: "Operation not permitted" for name in seen}, seen


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 ABI of x86_64")
def test_a_call_through_another_abi_kills_the_process(workspace):
    """unshare through the x32 numbering (nr | 0x40000000) would slip past a filter of x86_64 numbers."""
    r = run_code(
        """
        import ctypes
        ctypes.CDLL(None).syscall(0x40000000 | 272, ctypes.c_long(0x10000000))
        print("survived")
    """,
        workspace,
    )
    assert r.status == "killed" and r.message == "was killed by signal SIGSYS" and "survived" not in r.stdout_tail


def test_host_unix_sockets_and_shared_memory_are_hidden(workspace):
    r = run_code(
        """
        import os
        for path in ("/run", "/var/run", "/var", "/home", "/root"):
            print(path, os.path.exists(path))
        print(sorted(os.listdir("/dev/shm")))
    """,
        workspace,
    )
    assert r.stdout_tail.split() == [
        "/run",
        "False",
        "/var/run",
        "False",
        "/var",
        "False",
        "/home",
        "False",
        "/root",
        "False",
        "[]",
    ]


PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"


@pytest.mark.skipif(not os.path.exists(PG_SOCKET), reason="no PostgreSQL Unix socket on this machine")
def test_postgres_unix_socket_is_unreachable(workspace):
    r = run_code(
        f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect({PG_SOCKET!r})
            print("CONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
    """,
        workspace,
    )
    assert r.stdout_tail.strip() == "refused FileNotFoundError"


def test_world_readable_files_outside_the_view_are_absent(workspace, tmp_path):
    """A 0644 file in a 0755 folder: any uid could read it; only the mount view stops it."""
    folder = tmp_path / "var"
    folder.mkdir()
    (folder / "db.sqlite3").write_text("SQLITE-CONTENT-777")
    os.chmod(folder, 0o755)
    os.chmod(folder / "db.sqlite3", 0o644)
    r = run_code(
        f"""
        try:
            print(open({str(folder / "db.sqlite3")!r}).read())
        except OSError as exc:
            print("absent", type(exc).__name__)
    """,
        workspace,
    )
    assert r.stdout_tail.strip() == "absent FileNotFoundError"


def test_the_view_is_read_only_but_the_workspace(workspace):
    r = run_code(
        """
        import os
        for path in ("/x", "/etc/x", "/dev/x", "/usr/x", "/sandbox/x", "/tmp/x", "/sandbox/work/x", "/dev/shm/x",
                     "/dev/null"):
            try:
                open(path, "w").close()
                print(path, "written")
            except OSError as exc:
                print(path, exc.errno)
    """,
        workspace,
    )
    assert r.stdout_tail.split() == [
        "/x",
        "30",
        "/etc/x",
        "30",
        "/dev/x",
        "30",
        "/usr/x",
        "30",
        "/sandbox/x",
        "30",
        "/tmp/x",
        "written",
        "/sandbox/work/x",
        "written",
        "/dev/shm/x",
        "written",
        "/dev/null",
        "written",
    ]
    # the workspace is the run's own size-capped tmpfs (execution.sandbox.scratch): gone with the run
    assert not (workspace / "tmp" / "x").exists() and not (workspace / "x").exists()


# -- limits ---------------------------------------------------------------------------------------


def test_wall_time_limit(workspace):
    r = run_code("while True: pass", workspace, wall_time_s=1)
    assert r.status == "timeout" and r.message == "exceeded the wall-time limit of 1 s"
    assert 1 <= r.duration_s < 3


def test_cpu_time_limit(workspace):
    r = run_code("while True: pass", workspace, wall_time_s=20, cpu_time_s=1)
    assert r.status == "cpu_time" and r.message == "exceeded the CPU-time limit of 1 s"
    assert r.duration_s < 6


def test_address_space_limit(workspace):
    r = run_code("x = bytearray(1500 * 1024 * 1024)", workspace, memory_mb=512)
    assert r.status == "memory" and r.message == "ran out of memory (limit 512 MB)"
    assert "MemoryError" in r.stderr_tail


def test_memory_of_all_processes_is_polled(workspace):
    # four processes of 150 MB, each under the 400 MB address-space limit, 600 MB together
    r = run_code(
        """
        import os, time
        for _ in range(4):
            if os.fork() == 0:
                block = bytearray(150 * 1024 * 1024)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(30)
                os._exit(0)
        time.sleep(30)
    """,
        workspace,
        memory_mb=400,
    )
    assert r.status == "memory" and r.message == "ran out of memory (limit 400 MB)"
    assert r.duration_s < 15


def test_dev_shm_counts_as_memory(workspace):
    """Files in /dev/shm are RAM outside every RSS: 180 MB there plus 250 MB resident > 400 MB."""
    r = run_code(
        """
        import time
        with open("/dev/shm/blob", "wb") as fh:
            for _ in range(18):
                fh.write(b"x" * (10 << 20))
        block = bytearray(250 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(30)
    """,
        workspace,
        memory_mb=400,
        max_file_mb=300,
    )
    assert r.status == "memory" and r.message == "ran out of memory (limit 400 MB)"
    assert r.duration_s < 15 and r.max_rss_mb > 400


def test_a_full_dev_shm_is_running_out_of_memory(workspace):
    r = run_code(
        """
        with open("/dev/shm/blob", "wb") as fh:
            while True:
                fh.write(b"x" * (1 << 20))
    """,
        workspace,
        memory_mb=200,
        max_file_mb=300,
    )
    assert r.status == "memory" and r.message == "ran out of memory (limit 200 MB)"
    assert "No space left on device" in r.stderr_tail


def test_file_size_limit(workspace):
    r = run_code(
        "import os; os.mkdir('outputs'); open('outputs/big', 'wb').write(b'x' * (5 * 1024 * 1024))",
        workspace,
        max_file_mb=1,
    )
    assert r.status == "file_size" and "larger than the 1 MB limit" in r.message
    assert os.path.getsize(workspace / "outputs" / "big") <= 1024 * 1024


def test_disk_limit_counts_tmp(workspace):
    r = run_code(
        """
        import time
        for i in range(8):
            open(f'/tmp/f{i}', 'wb').write(b'x' * (1024 * 1024))
        time.sleep(20)
    """,
        workspace,
        max_file_mb=2,
        max_disk_mb=4,
    )
    assert r.status == "disk" and r.message == "wrote more than the 4 MB disk limit"


def test_output_is_capped_head_and_tail_kept(workspace):
    r = run_code(
        """
        import sys
        print("FIRST LINE")
        for i in range(200000):
            print("spam", i)
        print("never reached?")
    """,
        workspace,
        max_output_bytes=100_000,
    )
    assert r.status == "output_limit"
    assert r.message == "printed more than the 100,000-byte output limit"
    assert r.stdout_tail.startswith("FIRST LINE")
    assert "bytes omitted …]" in r.stdout_tail
    assert len(r.stdout_tail.encode()) < 100_000


def test_output_under_the_cap_is_kept_whole(workspace):
    r = run_code(
        "import sys; print('a' * 1000); print('b' * 1000, file=sys.stderr); sys.exit(3)",
        workspace,
        max_output_bytes=10_000,
    )
    assert r.status == "error" and r.returncode == 3 and r.message == "exited with status 3"
    assert r.stdout_tail == "a" * 1000 + "\n" and r.stderr_tail == "b" * 1000 + "\n"


def test_killed_by_a_signal(workspace):
    r = run_code("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", workspace)
    assert r.status == "killed" and r.message == "was killed by signal SIGSEGV" and r.returncode == -11


FORK_BOMB = """
    import os
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""


def test_fork_bomb_is_stopped_and_cleaned_up(workspace):
    r = run_code(FORK_BOMB, workspace, max_processes=16, wall_time_s=20)
    assert r.status == "processes" and r.message == "reached the limit of 16 processes"
    assert r.duration_s < 10


def test_detached_daemon_is_killed(workspace, no_leftovers):
    r = run_code(
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/usr/bin/sleep", ["sleep", "86400.31337"])
            os._exit(0)
        time.sleep(0.2)
    """,
        workspace,
    )
    assert r.status == "ok", r
    assert leftovers(no_leftovers) == []
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == b"sleep\x0086400.31337\x00"]


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


# -- arguments and platform failures --------------------------------------------------------------


def test_argument_validation(workspace):
    with pytest.raises(ValueError, match="`argv` must be a non-empty list of strings"):
        run_sandboxed("python -c pass", workdir=str(workspace))
    with pytest.raises(ValueError, match="is not a directory"):
        run_sandboxed(PY, workdir=str(workspace / "missing"))
    with pytest.raises(ValueError, match="`device` must be 'cpu', 'cuda' or 'cuda:N'"):
        run_sandboxed(PY, workdir=str(workspace), device="tpu")
    with pytest.raises(ValueError, match="`wall_time_s` must be a positive number"):
        Limits(wall_time_s=0)
    with pytest.raises(ValueError, match="`cpu_time_s` must be a positive number or None"):
        Limits(cpu_time_s=-1)


@needs_root
def test_a_workdir_the_runs_uid_cannot_reach_is_refused(tmp_path):
    os.chmod(tmp_path, 0o700)
    with pytest.raises(ValueError, match="must be reachable by the sandbox's uid"):
        run_sandboxed([*PY, "-c", "pass"], workdir=str(tmp_path))


def test_a_missing_program_is_a_platform_failure(workspace):
    with pytest.raises(SandboxUnavailable, match="could not start the sandboxed process"):
        run_sandboxed(["/nonexistent/python"], workdir=str(workspace))


def test_the_parallelism_of_python_and_its_libraries_works(workspace):
    """Pools, POSIX shared memory and joblib's workers (fresh interpreters) run in the sandbox;
    only System V IPC is refused."""
    prefix, env, _ = python_command()
    code = textwrap.dedent("""
        import os, site
        for d in filter(None, os.environ.pop("VARBOARD_SITE_PACKAGES", "").split(os.pathsep)):
            site.addsitedir(d)
        from multiprocessing import Pool, shared_memory
        from joblib import Parallel, delayed
        memory = shared_memory.SharedMemory(create=True, size=4096)
        memory.close()
        memory.unlink()
        with Pool(2) as pool:
            print("pool", sum(pool.map(abs, range(-5, 5))))
        print("joblib", sum(Parallel(n_jobs=2)(delayed(abs)(i) for i in range(-5, 5))))
    """)
    r = run_sandboxed([*prefix, "-c", code], workdir=str(workspace), env=dict(env), limits=Limits(wall_time_s=60))
    assert r.status == "ok", r.stderr_tail
    assert r.stdout_tail.split() == ["pool", "25", "joblib", "25"]
