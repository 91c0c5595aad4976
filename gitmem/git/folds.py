"""Pack folds, paid for by the call that found one due, before that call returns.

A write counts the pack it wrote (:func:`count_pack`, writer lock held); once
``MAX_PACKS`` were written since the last fold, a fold is due and this thread
*owes* it (:func:`owe`). :meth:`gitmem.git.repo.GitRepo.transact` pays it
(:func:`pay`) right before it returns: after the writer lock was let go (other
writers go on meanwhile; the fold takes only the fold lock) and, under group
commit, after the round's other callers were answered (only the caller whose
round found the fold due waits for it). The fold itself
(:meth:`gitmem.git.repo.GitRepo.compact`) is handed in as a function, so this
module knows nothing of the repository handle.

Why not a background thread (the first design): nothing of gitmem's may change
a memory's files after the call that wrote it returned. A caller may delete the
memory's folder right then (a test's ``tmp_path``, an agent's scratch memory),
and a fold still running made and deleted files in it: the delete failed
("Directory not empty") or the fold did.

The pack count stays bounded with many writers, in threads or processes: a
write that finds a fold due while another fold holds the fold lock does not
wait behind it; it leaves the count as it is, so the next write asks again.
Once twice ``MAX_PACKS`` were written with the lock busy all along and
``objects/pack`` holds more than ``hard_max`` packs, the fold is owed anyway
and paid by waiting for the lock (back-pressure: writers outran the folds).
A fold never fails a write: its errors are swallowed, and the memory is
marked :data:`failed`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress

from gitmem.git import packwrite
from gitmem.git.locks import WriterLock

failed: set[str] = set()
"""Memories (by path) whose last fold in this process failed: their writers count packs for real."""

_owed = threading.local()  # .paths: the memories whose fold this thread owes


def count_pack(
    path: str, lock: WriterLock, fold_lock: WriterLock, compact: Callable[[], None], max_packs: int, hard_max: int
) -> bool:
    """Count the pack a commit just wrote; whether a fold is due. Writer lock held.

    The count lives in the writer lock's record (written at every take and
    release anyway), so a write never lists ``objects/pack``: it is the
    number of packs written since the last fold was owed. Past ``max_packs``
    a fold is due if the fold lock is free right now (one non-blocking
    ``flock`` and its release), and the count restarts from zero; while
    another fold holds it, the count goes on (the next write asks again, so a
    fold follows as soon as the running one ends). Past ``2 * max_packs`` with
    the lock still busy, the folder is listed: more than ``hard_max`` packs
    make the fold due regardless (:func:`pay` then waits for the lock). The
    fold itself lists the folder, so packs a push or a foreign git added are
    folded too. If this process's last fold
    failed, the writer counts for real and, past ``hard_max``, folds
    (``compact``) before it lets the writer lock go.
    """
    count = lock.count + 1
    due = False
    if count > max_packs:
        if path in failed and packwrite.pack_count(path) > hard_max:
            count = 0
            failed.discard(path)
            with suppress(Exception):  # as in pay: the commit has landed, whatever the fold does
                compact()
        elif fold_lock.is_free() or (count > 2 * max_packs and packwrite.pack_count(path) > hard_max):
            due, count = True, 0
    lock.count = count
    return due


def owe(path: str) -> None:
    """This thread found a fold of the memory at ``path`` due; it pays (:func:`pay`) before its call returns."""
    owed: set[str] | None = getattr(_owed, "paths", None)
    if owed is None:
        owed = _owed.paths = set()
    owed.add(path)


def pay(path: str, fold: Callable[[bool], bool], hard_max: int) -> None:
    """Run the fold this thread owes on the memory at ``path``, if any; never raises a fold's error.

    ``fold(wait)`` folds under the fold lock and says whether it ran: with
    ``wait`` false it gives up at once when the lock is taken. Taken means
    another fold (or a purge, forget or gc) began after this write counted
    its pack (:func:`count_pack` found the lock free), so that one lists this
    write's packs anyway; this thread waits for it and folds after only when
    ``objects/pack`` holds more than ``hard_max`` packs (back-pressure:
    writers outran the folds, and :func:`count_pack` saw it too).
    """
    owed: set[str] | None = getattr(_owed, "paths", None)
    if not owed or path not in owed:
        return
    owed.discard(path)
    try:
        ran = fold(False)
        if not ran and packwrite.pack_count(path) > hard_max:
            ran = fold(True)
        if ran:
            failed.discard(path)
    except Exception:
        # A fold never fails a write: a foreign gc racing it or a full disk only leaves
        # the packs as they are, and a later write folds them. Nor does a fold's bug:
        # the write is committed, and a caller told it failed would make it again.
        failed.add(path)
