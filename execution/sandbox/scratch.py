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
file-size limit, all of them at most the workspace's size, none with holes or a second name) and
symbolic links as links (`execution.outputs` refuses them by name).
Closing the descriptor frees the tmpfs and everything in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat

__all__ = ["MAX_LISTED", "MAX_OUTPUT_FILES", "copy_in", "copy_out"]

#: Entries of ``outputs/`` copied back to the host; the rest is dropped with the tmpfs.
MAX_OUTPUT_FILES = 256
#: ``outputs/`` holding more entries than this is not copied back (the harness writes a handful).
MAX_LISTED = 4 * MAX_OUTPUT_FILES
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


def copy_out(src_fd: int, dest: str, max_file_bytes: int, max_total_bytes: int | None = None) -> None:
    """Copy ``outputs/`` of the tmpfs held by `src_fd` into the host folder ``dest/outputs``:
    regular files of at most `max_file_bytes`, `max_total_bytes` together (the workspace's size),
    and links as links; nothing else, no folders.

    Only what the run really stored comes out: a file that holds fewer blocks than it reads as
    (holes: ``truncate`` to 256 MB stores nothing in the tmpfs, but reads as 256 MB of zeros) or a
    second name of one file (a hard link) is left behind, so the host receives at most what the
    size-capped tmpfs held (blocks allocated past the end, ``FALLOC_FL_KEEP_SIZE``, count as held:
    they are in the tmpfs's size); a folder
    of more than :data:`MAX_LISTED` entries (millions of empty files cost no blocks) is not
    listed at all, and each file is copied in pieces, never held whole in the worker's memory.
    """
    try:
        out_fd = os.open("outputs", _DIR_FLAGS, dir_fd=src_fd)
    except OSError:
        return  # absent, or replaced by a link or a file
    try:
        names = _listed(out_fd)
        target = os.path.join(dest, "outputs")
        os.makedirs(target, exist_ok=True)
        budget = max_total_bytes
        for name in names[:MAX_OUTPUT_FILES]:
            try:
                link = os.readlink(name, dir_fd=out_fd)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    continue
                copied = _copy_regular(name, out_fd, os.path.join(target, name), max_file_bytes, budget)
                if budget is not None:
                    budget -= copied
            else:
                try:
                    os.symlink(link, os.path.join(target, name))  # never followed: refused by name
                except OSError:
                    pass
    finally:
        os.close(out_fd)


def _listed(dir_fd: int) -> list[str]:
    """The names in the folder, sorted; none when it holds more than :data:`MAX_LISTED` (read lazily:
    a folder of millions of names is never listed whole in the worker)."""
    names = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) > MAX_LISTED:
                return []
    return sorted(names)


def _copy_regular(name: str, src_fd: int, dest: str, max_bytes: int, budget: int | None) -> int:
    """Copy a regular file of one link and no holes, of at most `max_bytes` (and `budget`, when
    given), in pieces; returns the bytes copied (0 when it was left behind)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        stored = st.st_blocks * 512  # what the tmpfs holds for it: less than its size where it has holes
        limit = max_bytes if budget is None else min(max_bytes, budget)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > limit or stored < st.st_size:
            return 0
        copied = 0
        with open(dest, "wb") as handle:
            while copied < st.st_size and (chunk := os.read(fd, min(st.st_size - copied, 1 << 20))):
                handle.write(chunk)
                copied += len(chunk)
        return copied
    finally:
        os.close(fd)
