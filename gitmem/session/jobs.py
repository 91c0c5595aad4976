"""A FIFO job queue with one worker thread: extraction jobs of one session run in order.

Order matters: a later turn's extraction may supersede what an earlier one
stored, so jobs never overtake each other. The worker is a daemon thread, so an
extraction stuck on a model call cannot keep the process alive; ``close`` waits
a bounded time (5 s by default) for the jobs accepted before it and reports how
many did not finish.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final, TypeVar

from gitmem.errors import MemoryStoreError

CLOSE_TIMEOUT: Final = 5.0
T = TypeVar("T")

_Job = tuple[Callable[[], Any], "Future[Any]"]


class JobQueue:
    """Run submitted callables one at a time, first in first out."""

    def __init__(self, name: str = "gitmem-session-jobs") -> None:
        self.name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Queue ``fn``; its future holds the result or the exception it raised."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise MemoryStoreError("unavailable", "the session is closed; no more extraction jobs are accepted")
            self._pending.add(future)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._queue.put((fn, future))
        return future

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            fn, future = job
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn())
                    except BaseException as exc:  # the caller sees it through the future
                        future.set_exception(exc)
            finally:
                with self._lock:
                    self._pending.discard(future)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> int:
        """Stop accepting jobs and wait up to ``timeout`` seconds for the accepted ones.

        Returns how many were still unfinished (0: everything ran). Unfinished jobs
        keep running in the background until the process exits.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
            thread = self._thread
        if thread is not None:
            thread.join(max(0.0, timeout))
        return self.pending
