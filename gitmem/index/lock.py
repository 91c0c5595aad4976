"""Who may write a mount's index: one holder of an ``flock``, others move on.

Searches never need the lock to be correct (they read the last committed index
and scan what changed since), so they only *try* it; a rebuild on request waits.
The kernel drops the lock when its holder dies, so a killed indexer never
blocks anyone. Each thread (and each process after ``fork``) opens its own
descriptor, because ``flock`` locks belong to an open file description.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class IndexLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _fd(self) -> int:
        pid = os.getpid()
        fd: int | None = getattr(self._local, "fd", None)
        if fd is None or getattr(self._local, "pid", None) != pid:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._local.fd = fd
            self._local.pid = pid
        return fd

    @contextmanager
    def attempt(self, wait: float = 0.0) -> Iterator[bool]:
        """Hold the lock for the block if it can be had within ``wait`` seconds.

        Yields whether it is held; the block runs either way.
        """
        if getattr(self._local, "held", False):
            raise RuntimeError("the index lock is not reentrant")
        fd = self._fd()
        deadline = time.monotonic() + wait
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    yield False
                    return
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.05)
        self._local.held = True
        try:
            yield True
        finally:
            self._local.held = False
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        fd = getattr(self._local, "fd", None)
        if fd is not None and getattr(self._local, "pid", None) == os.getpid():
            os.close(fd)
        self._local.fd = None
