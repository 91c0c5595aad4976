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
from collections.abc import Iterator
from contextlib import contextmanager

from gitmem.git.locks import LockDescriptor


class IndexLock:
    """The index writers' ``flock`` on one file, with a descriptor per thread."""

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

        Yields whether it is held; the block runs either way. Uncontended, one
        non-blocking ``flock`` takes it; otherwise the wait is a *blocking*
        ``flock`` (as the writer lock waits), so the kernel hands the lock over
        when its holder lets go instead of a poller guessing when to try again.
        """
        desc = self._descriptor()
        if desc.held:
            raise RuntimeError("the index lock is not reentrant")
        fd = desc.fd
        assert fd is not None
        waiter: LockDescriptor | None = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiter = _wait_for(self.path, wait) if wait > 0 else None
            if waiter is None:
                yield False
                return
            assert waiter.fd is not None
            fd = waiter.fd
        desc.held = True
        try:
            yield True
        finally:
            desc.held = False
            fcntl.flock(fd, fcntl.LOCK_UN)
            if waiter is not None:
                waiter.close()


def _wait_for(path: str, wait: float) -> LockDescriptor | None:
    """A fresh descriptor holding the lock on ``path``, or ``None`` after ``wait`` seconds.

    A helper thread blocks in ``flock`` on the new descriptor; if the caller has
    given up by the time the kernel grants it, the helper lets go at once.
    """
    waiter = LockDescriptor(path)
    got = threading.Event()
    guard = threading.Lock()
    abandoned = False

    def block() -> None:
        assert waiter.fd is not None
        try:
            fcntl.flock(waiter.fd, fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - the descriptor was closed under us
            return
        with guard:
            if not abandoned:
                got.set()
                return
        fcntl.flock(waiter.fd, fcntl.LOCK_UN)
        waiter.close()

    threading.Thread(target=block, name="gitmem-index-lock-wait", daemon=True).start()
    if got.wait(wait):
        return waiter
    with guard:
        if got.is_set():
            return waiter
        abandoned = True
    return None
