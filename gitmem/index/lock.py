"""Who may write a mount's index: one holder of an ``flock``, others move on.

Searches never need the lock to be correct (they read the last committed index
and scan what changed since), so they only *try* it; a rebuild on request waits.
The kernel drops the lock when its holder dies, so a killed indexer never
blocks anyone. Each thread (and each process after ``fork``) opens its own
descriptor, because ``flock`` locks belong to an open file description; the
descriptor is closed when its thread ends or the lock object is dropped, so
short-lived threads and stores do not leak one fd each.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gitmem.git.locks import LockDescriptor


class IndexLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _descriptor(self) -> LockDescriptor:
        desc: LockDescriptor | None = getattr(self._local, "desc", None)
        if desc is None or desc.fd is None or desc.pid != os.getpid():
            desc = LockDescriptor(self.path)
            self._local.desc = desc
        return desc

    @contextmanager
    def attempt(self, wait: float = 0.0) -> Iterator[bool]:
        """Hold the lock for the block if it can be had within ``wait`` seconds.

        Yields whether it is held; the block runs either way.
        """
        desc = self._descriptor()
        if desc.held:
            raise RuntimeError("the index lock is not reentrant")
        fd = desc.fd
        assert fd is not None
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
        desc.held = True
        try:
            yield True
        finally:
            desc.held = False
            fcntl.flock(fd, fcntl.LOCK_UN)
