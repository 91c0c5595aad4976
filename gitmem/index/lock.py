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

from gitmem.git.locks import FlockWait, LockDescriptor


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
        ``flock`` (:class:`~gitmem.git.locks.FlockWait`, as the writer lock waits), so
        the kernel hands the lock over when its holder lets go instead of a poller
        guessing when to try again.
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
            pending = FlockWait(self.path) if wait > 0 else None
            # granted within ``wait``, or just after it (then give_up() fails and the lock is held)
            if pending is not None and (pending.got.wait(wait) or not pending.give_up()):
                waiter = pending.desc
            else:
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

