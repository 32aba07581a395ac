"""The seccomp filter every sandboxed process runs under, compiled once per process.

bubblewrap loads it (``--seccomp FD``) right before it executes the run's program; the
filter is built with libseccomp through `pyseccomp` (ctypes; pinned in requirements.txt)
and handed over as a compiled BPF program through a pipe.

Everything is allowed except the calls below, which fail with EPERM (clone3 with ENOSYS,
so that glibc falls back to clone, where the namespace flags can be inspected). A call
this libseccomp does not know is left out of the filter (the kernel predates it).
Calls from another architecture's ABI (32-bit x86 on x86_64) kill the process: libseccomp's
default for a foreign architecture.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import tempfile

__all__ = ["DENIED", "DENIED_CLONE_FLAGS", "bpf_program", "program_fd"]

#: Denied system calls, grouped by what they would let a recipe do.
DENIED = (
    # look into or steer other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    # change the file-system view
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # new namespaces (bubblewrap's --disable-userns and the dropped capabilities refuse them too)
    "unshare",
    "setns",
    # the kernel keyring
    "keyctl",
    "add_key",
    "request_key",
    # large kernel attack surface, not needed by Python, numpy or torch
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "syslog",
    "uselib",
    "quotactl",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    # System V IPC: kernel memory that the memory polling cannot see or attribute
    "shmget",
    "msgget",
    "semget",
    # anonymous files: RAM outside every RSS and every tmpfs the run is given (a memfd held
    # unmapped escapes RLIMIT_AS and the polling; no cgroup counts it here). Callers fall
    # back to /dev/shm, the run's own size-capped tmpfs, counted as its memory
    "memfd_create",
    "memfd_secret",
)

#: clone() fails with EPERM when its flags ask for any of these namespaces.
DENIED_CLONE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

#: Architectures where clone()'s first argument is its flags (s390 swaps the first two).
_CLONE_FLAGS_FIRST = {"x86_64", "aarch64", "ppc64le", "riscv64"}


@functools.lru_cache(maxsize=1)
def bpf_program() -> bytes:
    """The compiled filter (a multiple of 8 bytes). OSError when libseccomp is missing."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:
        raise OSError(
            f"libseccomp cannot be used ({exc}): apt-get install libseccomp2 "
            "and pip install the pyseccomp pinned in requirements.txt"
        ) from None
    fil = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        if sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0:
            fil.add_rule(sc.ERRNO(errno.EPERM), name)
    fil.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if platform.machine() in _CLONE_FLAGS_FIRST:
        for flag in DENIED_CLONE_FLAGS.values():
            fil.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    with tempfile.TemporaryFile() as handle:
        fil.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def program_fd() -> int:
    """A pipe's read end holding the compiled filter (bubblewrap reads it to the end)."""
    program = bpf_program()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: well under the pipe's buffer
    finally:
        os.close(write_end)
    return read_end
