"""The background pack folds of this process: at most one per memory, waited for at exit.

A write that finds a fold due (:meth:`gitmem.git.repo.GitRepo._count_pack`)
starts one here after it released the writer lock; the fold itself
(:meth:`gitmem.git.repo.GitRepo.compact`) is handed in as a function, so this
module knows nothing of the repository handle.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from contextlib import suppress

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import packwrite
from gitmem.git.locks import WriterLock

_running: dict[str, threading.Thread] = {}
_again: set[str] = set()
failed: set[str] = set()
"""Memories (by path) whose last background fold in this process failed: their writers count packs for real."""
_guard = threading.Lock()


@atexit.register
def _finish() -> None:
    """A fold under way finishes before the interpreter exits (its git child would otherwise be orphaned)."""
    with _guard:
        running = list(_running.values())
    for thread in running:
        thread.join(timeout=60)


def start(path: str, compact: Callable[[], None]) -> None:
    """Fold packs in a background thread of this process; one running already folds once more after.

    The write that found the fold due has released the writer lock and
    returns at once; the fold takes only the fold lock (writers never wait
    for it). Back-pressure: when a fold is due a third time while one is
    still running (writes outpace folding, ``2 * MAX_PACKS`` packs written
    since it started), this write waits for the running fold, so the pack
    count stays bounded under any burst. At interpreter exit a running fold
    is waited for.
    """
    with _guard:
        running = _running.get(path)
        if running is None or not running.is_alive():
            running = None
            thread = threading.Thread(target=_quietly, args=(path, compact), name="gitmem-fold", daemon=True)
            _running[path] = thread
            thread.start()
        elif path not in _again:
            _again.add(path)
            running = None
    if running is not None:
        running.join()


def _quietly(path: str, compact: Callable[[], None]) -> None:
    while True:
        # A fold never fails a write: a foreign gc racing it or a full disk only leaves
        # the packs as they are, and a later write starts another.
        try:
            compact()
        except (MemoryStoreError, OSError, pygit2.GitError):
            failed.add(path)
        with _guard:
            if path not in _again:
                return
            _again.discard(path)


def settle(path: str) -> None:
    """Wait until a background fold this process started on the memory at ``path`` has finished."""
    with _guard:
        running = _running.get(path)
    if running is not None:
        running.join()


def count_pack(path: str, lock: WriterLock, compact: Callable[[], None], max_packs: int, hard_max: int) -> bool:
    """Count the pack a commit just wrote; whether a fold is due. Writer lock held.

    The count lives in the writer lock's record (written at every take and
    release anyway), so a write never lists ``objects/pack``: it is the
    number of packs written since the last fold was started, and once it
    passes ``max_packs`` a fold is started and it restarts from zero.
    The fold itself lists the folder, so packs a push or a foreign git
    added are folded too. If this process's last fold failed, the writer
    counts for real and, past ``hard_max``, folds (``compact``) before it returns.
    """
    count = lock.count + 1
    due = count > max_packs
    if due:
        count = 0
        if path in failed and packwrite.pack_count(path) > hard_max:
            due = False
            failed.discard(path)
            with suppress(MemoryStoreError, OSError, pygit2.GitError):
                compact()
    lock.count = count
    return due

