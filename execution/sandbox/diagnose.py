"""Whether bubblewrap can isolate runs on this machine, and if not, why, in words.

The probe starts a real sandbox (every namespace, the seccomp filter, the run's uid, the
rlimits: the same code path as a run) around ``/usr/bin/true``; when that fails,
bubblewrap's own error message is translated into what is missing and how to fix it.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from .backend import Probe, RunSpec
from .limits import Limits, SandboxUnavailable
from .seccomp import bpf_program
from .tool import BWRAP_ENV, bwrap_version
from .view import view_problem

__all__ = ["explain", "probe_bubblewrap"]

DOCKER_USERNS = (
    "user namespaces are refused: under Docker's default seccomp profile a process without "
    "CAP_SYS_ADMIN may not create them (elsewhere: sysctl kernel.unprivileged_userns_clone=0). "
    "Give the worker container a seccomp profile that allows unshare/clone with CLONE_NEWUSER "
    "(security_opt: seccomp=<profile> or seccomp=unconfined), or allow unprivileged user "
    "namespaces on the host"
)

#: bubblewrap's error text -> what is missing (first match wins).
_KNOWN = (
    ("No permissions to creat", DOCKER_USERNS),  # upstream: "to creating"; Debian: "to create"
    (
        "max_*_namespaces exceeded",
        "user namespaces are disabled: sysctl user.max_user_namespaces is 0 (or the nesting depth "
        "is reached); set it to a positive number",
    ),
    (
        "Resource temporarily unavailable",
        "the uid has reached its process limit (RLIMIT_NPROC) and cannot start the sandbox",
    ),
    ("Creating new namespace failed", "the kernel cannot create namespaces (built without user namespace support?)"),
    (
        "uid map",
        "the new user namespace's uid map was refused: AppArmor restricts unprivileged "
        "user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): give bwrap a profile "
        "that allows userns, or set that sysctl to 0",
    ),
    (
        "Can't mount proc",
        "a fresh /proc cannot be mounted: the container masks parts of /proc (Docker: "
        "security_opt systempaths=unconfined), or AppArmor forbids the mount",
    ),
    (
        "Failed to make / slave",
        "mounts are refused inside the new namespaces: AppArmor "
        "(Docker: security_opt apparmor=unconfined or a profile that allows mount) or a seccomp "
        "profile forbids mount",
    ),
    ("Failed to mount tmpfs", "mounts are refused inside the new namespaces (AppArmor or seccomp)"),
    ("loopback", "the network namespace's loopback cannot be set up (RTM_NEWADDR refused)"),
    ("seccomp", "the kernel refused the seccomp filter (CONFIG_SECCOMP_FILTER missing?)"),
    ("Unknown option", "this bubblewrap is too old: --disable-userns needs 0.8.0 or later"),
    (
        "user.max_user_namespaces",
        "--disable-userns failed: /proc/sys/user/max_user_namespaces cannot be written in the sandbox",
    ),
)


def explain(bwrap_error: str) -> str:
    """What is missing, from bwrap's error message."""
    for needle, words in _KNOWN:
        if needle.lower() in bwrap_error.lower():
            return f"{words} [{bwrap_error.strip()}]"
    return f"bubblewrap could not start a sandbox: {bwrap_error.strip()}"


def _prerequisites(path: str | None) -> str | None:

    if not path:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        where = f" ({BWRAP_ENV}={path})" if os.environ.get(BWRAP_ENV) else ""
        return f"bubblewrap is not installed: {path} is not an executable file{where}"
    try:
        bwrap_version(path)
        bpf_program()
    except OSError as exc:
        return str(exc)
    if shutil.which("prlimit", path="/usr/bin") is None:
        return "/usr/bin/prlimit is missing (apt-get install util-linux)"
    return view_problem()


def probe_bubblewrap(backend) -> Probe:
    """Start a sandbox around /usr/bin/true with `backend`; report what is missing."""
    from .supervise import execute

    problem = _prerequisites(backend.path)
    if problem:
        return Probe(ok=False, backend=backend.name, missing=problem)
    root = tempfile.mkdtemp(prefix="varboard-probe-")
    try:
        os.chmod(root, 0o711)
        work = os.path.join(root, "work")
        os.mkdir(work)
        spec = RunSpec(
            argv=("/usr/bin/true",), workdir=work, env={}, limits=Limits(wall_time_s=30, memory_mb=256), device="cpu"
        )
        try:
            result = execute(backend, spec)
        except SandboxUnavailable as exc:
            message = str(exc).removeprefix("could not start the sandboxed process: ")
            return Probe(ok=False, backend=backend.name, missing=explain(message))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not result.ok:
        return Probe(
            ok=False, backend=backend.name, missing=explain(result.stderr_tail or f"/usr/bin/true {result.message}")
        )
    isolation = tuple(
        "a fresh uid per run" if item.startswith("uid ") and os.geteuid() == 0 else item for item in result.isolation
    )
    return Probe(ok=True, backend=backend.name, isolation=isolation)
