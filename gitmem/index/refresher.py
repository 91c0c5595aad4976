"""One background queue that brings mount indexes up to date after their ``main`` moved.

``gitmem serve`` (after a push) and the watcher (after any ref change) both know
that a mount's index fell behind, and neither should make its caller wait for a
Whoosh commit. They hand the mount to a :class:`Refresher`: one thread works
through the mounts one at a time, and a mount asked for again while it waits is
caught up once. The index is derived from git and catches up at the next search
anyway, so a refresh that fails is logged, never raised, and requests still
waiting at :meth:`Refresher.close` are dropped.
"""

from __future__ import annotations

import logging
import threading
import time

from gitmem.index.mount import catch_up

log = logging.getLogger("gitmem.index")


class Refresher:
    """Catches mount indexes up on its own thread (started on the first request)."""

    def __init__(self, thread_name: str = "gitmem-index-refresh") -> None:
        self._thread_name = thread_name
        self._pending: dict[str, None] = {}  # insertion-ordered set: first asked, first done
        self._busy = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def request(self, mount_path: str) -> None:
        """Ask for the mount's index to catch up soon; returns at once."""
        with self._cond:
            if self._closed:
                return
            self._pending[mount_path] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                path = next(iter(self._pending))
                del self._pending[path]
                self._busy += 1
            try:
                catch_up(path, inline=False)  # this thread is off every request path; waits for another indexer
            except Exception:  # derived state: the next search catches up anyway
                log.warning("the index of %s was not brought up to date", path, exc_info=True)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running; ``False`` if ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float) -> None:
        """Drop waiting requests and let the thread end (a running catch-up finishes first)."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
