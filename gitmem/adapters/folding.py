"""Pack folds off the request path: ``gitmem serve`` folds on a thread of its own, after the reply went out.

Every commit is a small pack, and every :data:`~gitmem.git.engine.MAX_PACKS`
commits the writer folds them (:func:`gitmem.git.engine.fold`): 10-30 ms with
fsync, which made that write's request the slow one (a server's p95 write). A
server process lives on after a request, so :class:`BackgroundFolds` takes the
due folds over (:func:`gitmem.git.engine.fold_elsewhere`): the write returns
at once and one thread folds each memory whose fold came due, under the same
fold lock as any fold, one memory at a time, a memory queued twice folded once.

The pack count stays bounded as before: a writer that finds more than twice
``MAX_PACKS`` live packs (this thread fell behind) folds itself, waiting for a
fold in progress. Stopping the server lets the fold in progress finish
(:meth:`BackgroundFolds.close`); a fold cut off by a kill is what a crashed
writer's fold is, which the next fold cleans up.
"""

from __future__ import annotations

import logging
import threading

from gitmem.git import engine
from gitmem.git.repo import GitRepo

log = logging.getLogger("gitmem.serve")


class BackgroundFolds:
    """Due folds, folded one at a time on a daemon thread; :meth:`start` hands the engine's folds here."""

    def __init__(self) -> None:
        self._due: dict[str, GitRepo] = {}  # by the mount's path: queued twice, folded once
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._previous: engine.FoldLater | None = None
        self._busy = False  # a fold is running

    def start(self) -> BackgroundFolds:
        self._previous = engine.fold_elsewhere(self)
        return self

    def __call__(self, repo: GitRepo) -> None:
        """Queue ``repo``'s fold (a writer's thread calls this after its commit); folded here once closed."""
        with self._cond:
            if not self._closed:
                self._due[repo.path] = repo
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="gitmem-serve-fold", daemon=True)
                    self._thread.start()
                self._cond.notify()
                return
        engine.fold(repo)

    def idle(self, timeout: float) -> bool:
        """Wait until no fold is queued or running; ``False`` on timeout (for tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._due and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._due or self._closed)
                if not self._due:
                    return
                path = next(iter(self._due))
                repo = self._due.pop(path)
                self._busy = True
            try:
                engine.fold(repo)
            except Exception:  # a fold never fails a write; the next one due tries again
                log.warning("folding the packs of %s failed", path, exc_info=True)

    def close(self, timeout: float = 10.0) -> None:
        """Stop taking folds (the engine folds in the writer again), finish what is queued, end the thread."""
        engine.fold_elsewhere(self._previous)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
