"""Watching a sandbox's private tmpfs mounts: its /dev/shm (tmpfs pages are memory that no
process's RSS shows) and its workspace (`execution.sandbox.scratch`)."""

from __future__ import annotations

import os

__all__ = ["INODE_CHARGE_BYTES", "ShmWatch"]

_PAGE = os.sysconf("SC_PAGE_SIZE")
#: Memory charged to a run for each file, folder or link in its tmpfs mounts: the kernel's inode and
#: name, which no page of the tmpfs and no process's RSS shows. Three million empty files with names of
#: 248 characters grew the host's slab by 4,480 MiB (1.5 KiB each) in a run of 256 MB (a reviewer, 2026-11-30).
INODE_CHARGE_BYTES = 2048


class ShmWatch:
    """The /dev/shm tmpfs of the sandbox whose init is `init_pid`, of `size` bytes.

    The tmpfs is reached through ``/proc/<init>/root`` once bubblewrap has mounted it
    (recognised by its size and by not being the host's /dev/shm) and then held open, so
    that what it holds can still be measured after the run's last process is gone.
    """

    def __init__(self, init_pid: int, size: int, inner: str = "/dev/shm", host: str = "/dev/shm"):
        self.path = f"/proc/{init_pid}/root{inner}"
        self.size = size
        self.fd: int | None = None
        self.host_dev: int | None
        try:
            self.host_dev = os.stat(host).st_dev  # the host's folder at that path is not it
        except OSError:
            self.host_dev = None

    def attach(self) -> bool:
        """Whether the sandbox's tmpfs is held (trying to reach it if not yet)."""
        if self.fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            vfs = os.fstatvfs(fd)
            ours = os.fstat(fd).st_dev != self.host_dev and abs(vfs.f_blocks * vfs.f_frsize - self.size) < 2 * _PAGE
        except OSError:
            ours = False
        if ours:
            self.fd = fd
        else:
            os.close(fd)
        return ours

    def used_bytes(self) -> int:
        if not self.attach():
            return 0
        assert self.fd is not None  # attach() returned True: the tmpfs is held
        vfs = os.fstatvfs(self.fd)
        return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize

    def used_inodes(self) -> int:
        """Files, folders and links it holds (0 when not held, or a tmpfs without an inode count)."""
        if not self.attach():
            return 0
        assert self.fd is not None  # attach() returned True: the tmpfs is held
        vfs = os.fstatvfs(self.fd)
        return max(0, vfs.f_files - vfs.f_ffree)

    def full(self) -> bool:
        """Whether it is (nearly) full: a write there would fail with ENOSPC. Only a tmpfs
        already held is measured (after the run, /proc/<init> may be another process)."""
        return self.fd is not None and self.size - self.used_bytes() < max(2**20, self.size // 50)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
