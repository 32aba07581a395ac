"""The run's workspace inside bubblewrap: a size-capped tmpfs that disappears with the run.

The sandbox's ``/sandbox/work`` (its cwd, HOME and, through the ``/tmp`` link, its temporary
folder) is a tmpfs of ``max_disk_mb`` mounted by bubblewrap (``--size N --tmpfs``), not a
folder of the host's disk. The kernel enforces the limit: whatever the run writes, with any
permissions (a ``chmod 0300`` folder), however deeply nested, however fast (a fallocate
burst), fails with ENOSPC at the cap; and it is gone when the last reference to the mount
is (a polled folder on the host could be hidden from the poll, outrun, or left behind).

The worker reaches the tmpfs through ``/proc/<init>/root/sandbox/work`` once bubblewrap
has mounted it, holds it through a directory descriptor (`ShmWatch`), and through that
descriptor copies the host workspace in (the harness, the recipe, its inputs: before the
go, or for a warm start at its release) and copies ``outputs/`` out after the run's last
process is gone. Every path is opened relative to a descriptor with ``O_NOFOLLOW``; out of
the sandbox come only regular files (at most `MAX_OUTPUT_FILES`, each at most the run's
file-size limit) and symbolic links as links (`execution.outputs` refuses them by name).
Closing the descriptor frees the tmpfs and everything in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat

__all__ = ["MAX_OUTPUT_FILES", "copy_in", "copy_out"]

#: Entries of ``outputs/`` copied back to the host; the rest is dropped with the tmpfs.
MAX_OUTPUT_FILES = 256
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _gather(src: str, prefix: str = "") -> list[tuple[str, bytes | None]]:
    """(relative path, content, or None for a folder) of everything under `src`, folders first."""
    found = []
    with os.scandir(src) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                found += [(rel, None), *_gather(entry.path, rel + "/")]
            elif entry.is_file(follow_symlinks=False):
                with open(entry.path, "rb") as handle:
                    found.append((rel, handle.read()))
    return found


@contextlib.contextmanager
def _creating_as(uid: int | None):
    """Create files as `uid` in this thread (setfsuid/setfsgid): a file system mounted in the run's
    user namespace refuses (EOVERFLOW) files whose owner is not mapped there, as root is not."""
    if uid is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    old_gid, old_uid = libc.setfsgid(uid), libc.setfsuid(uid)
    try:
        yield
    finally:
        libc.setfsuid(old_uid)
        libc.setfsgid(old_gid)


def _open_parent(root_fd: int, rel: str) -> tuple[int, str]:
    """(descriptor of `rel`'s folder, its last name), every folder opened without following links."""
    *folders, name = rel.split("/")
    fd = os.dup(root_fd)
    for folder in folders:
        try:
            sub = os.open(folder, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = sub
    return fd, name


def copy_in(src: str, dest_fd: int, uid: int | None) -> None:
    """Copy the host folder `src` (written by the worker: trusted) into the tmpfs held by
    `dest_fd`, every file and folder created as `uid` (None: the worker's own uid), mode 0700/0600."""
    entries = _gather(src)
    with _creating_as(uid):
        for rel, content in entries:
            parent, name = _open_parent(dest_fd, rel)
            try:
                if content is None:
                    try:
                        os.mkdir(name, 0o700, dir_fd=parent)
                    except FileExistsError:
                        pass
                    continue
                fd = os.open(
                    name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent
                )
                try:
                    view = memoryview(content)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
            finally:
                os.close(parent)


def _read_regular(name: str, src_fd: int, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        return _read_all(fd, max_bytes)
    finally:
        os.close(fd)


def _read_all(fd: int, max_bytes: int) -> bytes:
    chunks, remaining = [], max_bytes
    while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def copy_out(src_fd: int, dest: str, max_file_bytes: int) -> None:
    """Copy ``outputs/`` of the tmpfs held by `src_fd` into the host folder ``dest/outputs``:
    regular files of at most `max_file_bytes` and links as links; nothing else, no folders."""
    try:
        out_fd = os.open("outputs", _DIR_FLAGS, dir_fd=src_fd)
    except OSError:
        return  # absent, or replaced by a link or a file
    try:
        names = sorted(os.listdir(out_fd))[:MAX_OUTPUT_FILES]
        target = os.path.join(dest, "outputs")
        os.makedirs(target, exist_ok=True)
        for name in names:
            try:
                link = os.readlink(name, dir_fd=out_fd)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    continue
                content = _read_regular(name, out_fd, max_file_bytes)
                if content is not None:
                    with open(os.path.join(target, name), "wb") as handle:
                        handle.write(content)
            else:
                try:
                    os.symlink(link, os.path.join(target, name))  # never followed: refused by name
                except OSError:
                    pass
    finally:
        os.close(out_fd)
