"""Capped capture of a run's stdout and stderr."""

from __future__ import annotations

import os
import threading

__all__ = ["Output"]


class _Stream(threading.Thread):
    """Reads one pipe to EOF, keeping its first and last `keep` bytes.

    `output` counts the bytes of all streams; past its cap the run is flagged (and then
    killed). Memory stays below 3 * keep.
    """

    def __init__(self, pipe, keep: int, output: Output):
        super().__init__(daemon=True)
        self.pipe, self.keep, self.output = pipe, keep, output
        self.head = bytearray()
        self.tail = bytearray()
        self.seen = 0

    def run(self):
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.seen += len(chunk)
            self.output.count(len(chunk))
            room = self.keep - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > 2 * self.keep:
                    del self.tail[: len(self.tail) - self.keep]
        self.pipe.close()

    def text(self) -> str:
        tail = bytes(self.tail[-self.keep :])
        omitted = self.seen - len(self.head) - len(tail)
        marker = f"\n[… {omitted} bytes omitted …]\n".encode() if omitted > 0 else b""
        return (bytes(self.head) + marker + tail).decode("utf-8", errors="replace")


class Output:
    """Reads a process's stdout and stderr pipes in two threads, at most `cap` bytes kept.

    Each stream keeps its first and last quarter of `cap`; `overflow` is set once the
    streams together passed `cap` bytes.
    """

    def __init__(self, stdout, stderr, cap: int):
        self.cap = cap
        self.total = 0
        self.lock = threading.Lock()
        self.overflow = threading.Event()
        keep = max(256, cap // 4)
        self.streams = [_Stream(stdout, keep, self), _Stream(stderr, keep, self)]
        for stream in self.streams:
            stream.start()

    def count(self, n: int) -> None:
        with self.lock:
            self.total += n
            if self.total > self.cap:
                self.overflow.set()

    def join(self, timeout: float = 5) -> bool:
        """Wait for both pipes to reach EOF; False if a process still holds one open."""
        for stream in self.streams:
            stream.join(timeout=timeout)
        return not any(stream.is_alive() for stream in self.streams)

    def stdout(self) -> str:
        return self.streams[0].text()

    def stderr(self) -> str:
        return self.streams[1].text()
