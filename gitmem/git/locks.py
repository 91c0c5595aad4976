"""Cross-process exclusion for writers, and recovery of locks left by crashed ones.

gitmem writers serialise on an ``flock`` held on ``<repo>/gitmem/write.lock``.
The kernel drops an ``flock`` when its holder dies, so a SIGKILLed writer can
never block the others. libgit2's own ``refs/heads/main.lock`` has no such
property: a writer killed between creating and renaming it leaves it behind,
and every git client (libgit2, dulwich, the git CLI) refuses to update ``main``
until it is gone. While we hold the flock no other gitmem writer can be using
that file, so one that stays older than ``stale_after`` seconds was left by a
crash (or by a foreign git process that died) and is removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class _Descriptor:
    """An open lock file that is closed once its thread or its :class:`WriterLock` is gone.

    Stores are cheap to open (``Root.mount`` makes a new one per call), so a
    descriptor that outlived its store would leak one fd per store and thread.
    """

    def __init__(self, path: str) -> None:
        self.fd: int | None = None  # set first: __del__ runs even when open fails
        self.pid = os.getpid()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:  # pragma: no cover - nothing useful to do at collection time
            pass


class WriterLock:
    """An exclusive lock shared by every thread and process that writes one repo.

    Each thread opens its own descriptor: ``flock`` locks belong to an open file
    description, so threads sharing one descriptor would not exclude each other.
    After ``fork`` the child opens a fresh descriptor for the same reason.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _fd(self) -> int:
        desc: _Descriptor | None = getattr(self._local, "desc", None)
        if desc is None or desc.fd is None or desc.pid != os.getpid():
            desc = _Descriptor(self.path)
            self._local.desc = desc
        assert desc.fd is not None
        return desc.fd

    @contextmanager
    def hold(self) -> Iterator[None]:
        fd = self._fd()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                break
            except InterruptedError:  # pragma: no cover - retried by CPython already
                continue
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        desc: _Descriptor | None = getattr(self._local, "desc", None)
        self._local.desc = None
        if desc is not None:
            desc.close()


def remove_if_stale(lock_path: str, stale_after: float) -> bool:
    """Delete ``lock_path`` when it has not changed for ``stale_after`` seconds.

    Call only while holding the :class:`WriterLock`. Returns whether a lock file
    was removed.
    """
    try:
        st = os.stat(lock_path)
    except FileNotFoundError:
        return False
    if time.time() - st.st_mtime < stale_after:
        return False
    try:
        current = os.stat(lock_path)
        if current.st_ino != st.st_ino:
            return False
        os.unlink(lock_path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True
