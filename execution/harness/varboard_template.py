"""The template ("zygote") side of forked runs (execution.sandbox.zygote). Copied into the
template's workspace only, never into a run's.

The template is the harness started by bubblewrap like a cold run (same namespaces, view,
rlimits, ``--cap-drop ALL``) but without the seccomp filter and without ``--disable-userns``,
so that each run's process can make namespaces of its own. It imports what it is told,
makes itself non-dumpable (PR_SET_DUMPABLE 0: a same-uid process can neither ptrace it
nor open its /proc files), checks it holds a single thread (fork copies only the caller),
and then only forks, once per ``fork`` message; it never runs contestant code.

Each fork (C, in the template's namespaces) enters new user, mount, pid, ipc, net, uts
and cgroup namespaces (unshare(2)), maps its own uid (user_namespaces(7)) and forks the
run's init (G, pid 1 of the new pid namespace), then only waits for G and reports G's
status and rusage. G mounts a fresh /proc (the new pid namespace only: the template and
other runs are out of sight and out of reach of kill(2)), a fresh size-capped tmpfs on
/dev/shm and on /sandbox/work (the run's workspace, the template's hidden under it),
brings its own loopback up, says ``ready`` (its host pid reaches the worker as
SCM_CREDENTIALS, unix(7)) and waits for the ``go`` while the worker copies the inputs in.
At the go G drops every capability (capset(2), PR_CAPBSET_DROP), sets PR_SET_NO_NEW_PRIVS
and loads the sandbox's seccomp filter (PR_SET_SECCOMP, the same BPF program bubblewrap
loads for a cold run), then forks the harness (H, pid 2), which becomes dumpable again
(as a cold run's process is) and returns into the harness's ``main``. G reaps what is
left in the namespace and exits with H's status (128 + N for a signal N, as bubblewrap's
init); when it exits the kernel kills everything else in the namespace.
"""

import ctypes
import importlib
import json
import os
import resource
import signal
import socket
import struct

CLONE_FLAGS = {
    "NEWNS": 0x00020000,
    "NEWCGROUP": 0x02000000,
    "NEWUTS": 0x04000000,
    "NEWIPC": 0x08000000,
    "NEWUSER": 0x10000000,
    "NEWPID": 0x20000000,
    "NEWNET": 0x40000000,
}
PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 4, 22, 38, 24, 47
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0, pointer=None) -> int:
    return _libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0) if pointer is None else pointer, 0, 0)


def _import(line: bytes) -> None:
    for entry in filter(None, line.decode("ascii", "replace").strip().split(",")):
        module, _, name = entry.partition(":")
        try:
            loaded = importlib.import_module(module)
            if name:
                getattr(loaded, name)
        except BaseException:
            pass


def serve(control_fd: int) -> None:
    """The template's loop; returns only in a forked run's harness process (H), confined."""
    sock = socket.socket(fileno=control_fd)
    line, bpf = sock.recv(65536), sock.recv(65536)
    if not line.startswith(b"imports "):
        os._exit(0)
    _import(line[len(b"imports ") :])
    _check(_prctl(PR_SET_DUMPABLE, 0), "PR_SET_DUMPABLE")
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        sock.send(f"error the template holds {threads} threads after its imports: fork is unsafe".encode())
        os._exit(0)
    sock.send(b"ready")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps each run's C
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 256, 3)
        if not message.startswith(b"fork ") or len(fds) != 3:
            os._exit(0)
        if os.fork() == 0:
            sock.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _run_child(fds, bpf, *(int(part) for part in message.split()[1:4]))
            return
        for fd in fds:
            os.close(fd)


def _run_child(fds: list, bpf: bytes, shm_bytes: int, disk_bytes: int, nproc: int) -> None:
    """C: new namespaces, then G; C waits for G and reports. Returns only in H."""
    chan_fd, out_fd, err_fd = fds
    chan = socket.socket(fileno=chan_fd)
    try:
        _enter_namespaces()
        init = os.fork()
    except OSError as exc:
        chan.send(f"error {exc}".encode())
        os._exit(0)
    if init:
        for fd in (out_fd, err_fd):
            os.close(fd)
        _, status, usage = os.wait4(init, 0)
        chan.send(json.dumps({"status": status, "rusage": list(usage)}).encode())
        os._exit(0)
    try:
        _mount_private(shm_bytes, disk_bytes)
        _loopback_up()
    except OSError as exc:
        chan.send(f"error {exc}".encode())
        os._exit(0)
    keep = sorted((chan_fd, out_fd, err_fd))
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, keep[2])
    os.closerange(keep[2] + 1, 1 << 16)
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))  # the template's, less its own and C's
    chan.send(b"ready")
    if chan.recv(16) != b"go":
        os._exit(0)
    chan.close()
    _confine(bpf, err_fd)
    _become_init(out_fd, err_fd)


def _enter_namespaces() -> None:
    """unshare(2) every namespace, then map this uid and gid to themselves (user_namespaces(7));
    dumpable only while it writes its maps."""
    uid, gid = os.getuid(), os.getgid()
    flags = 0
    for value in CLONE_FLAGS.values():
        flags |= value
    _check(_libc.unshare(flags), "unshare")
    _prctl(PR_SET_DUMPABLE, 1)  # /proc/self/*_map are root's while non-dumpable
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    _check(_prctl(PR_SET_DUMPABLE, 0), "PR_SET_DUMPABLE")


def _mount(source: bytes, target: bytes, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
    _check(_libc.mount(source, target, fstype, ctypes.c_ulong(flags), data), f"mount {target.decode()}")


def _mount_private(shm_bytes: int, disk_bytes: int) -> None:
    """A /proc of this pid namespace only, and fresh size-capped tmpfs on /dev/shm and the workspace."""
    _mount(b"none", b"/", None, MS_REC | MS_PRIVATE)
    _mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, f"size={shm_bytes},mode=1777".encode())
    _mount(b"tmpfs", b"/sandbox/work", b"tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_bytes},mode=0700".encode())
    os.chdir("/sandbox/work")
    os.mkdir("tmp", 0o700)


def _loopback_up() -> None:
    """Bring ``lo`` up in the new network namespace (bubblewrap does the same for a cold run)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe, siocgifflags, request))[1]
        fcntl.ioctl(probe, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _confine(bpf: bytes, err_fd: int) -> None:
    """No capabilities (bounding, ambient, effective, permitted, inheritable), no new privileges,
    the seccomp filter. Any failure ends the process: nothing runs half-confined."""
    try:
        for cap in range(64):
            if _prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() == 22:  # EINVAL: past the last cap
                break
        _check(_prctl(PR_CAP_AMBIENT, 4), "PR_CAP_AMBIENT_CLEAR_ALL")
        data = (ctypes.c_uint32 * 6)()
        _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), data), "capset")
        _check(_prctl(PR_SET_NO_NEW_PRIVS, 1), "PR_SET_NO_NEW_PRIVS")
        program = ctypes.create_string_buffer(bpf, len(bpf))
        fprog = _SockFprog(len(bpf) // 8, ctypes.addressof(program))
        _check(_prctl(PR_SET_SECCOMP, 2, ctypes.byref(fprog)), "PR_SET_SECCOMP")
    except BaseException as exc:
        os.write(err_fd, f"varboard: the run could not be confined: {exc}\n".encode())
        os._exit(125)


def _become_init(out_fd: int, err_fd: int) -> None:
    """Fork H (returns in it, its stdio the run's pipes); this process reaps as the run's pid 1."""
    harness = os.fork()
    if harness == 0:
        null = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((null, 0), (out_fd, 1), (err_fd, 2)):
            os.dup2(source, target)
            os.close(source)
        _prctl(PR_SET_DUMPABLE, 1)
        importlib.invalidate_caches()  # the workspace is a new file system
        return
    for fd in (0, 1, 2, out_fd, err_fd):
        os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == harness:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)
