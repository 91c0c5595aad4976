"""Where a change becomes a commit: the one write engine of the git store.

Every store write (``write``, ``delete``, ``move``, ``move_many``,
``delete_many``, ``apply``) reaches :func:`commit_batch` in one call; restore,
revert and a run's proposal branch reach :func:`transact` with a plan of their
own. Both run the same steps, in this order, in this module::

    writer lock ──► read head ──► plan(snapshot) ──► trees ──► pack ──► CAS ref ──► unlock ──► fold?
                        ▲                                                 │
                        └─────── a writer outside gitmem moved the ref ◄──┘

1. **Lock**: the mount's writer ``flock`` (:class:`gitmem.git.locks.WriterLock`),
   one descriptor per thread, dropped by the kernel when its holder dies.
2. **Snapshot**: the ref is read under the lock; the plan sees that commit only.
3. **Plan**: for a batch, :func:`gitmem.store.decide` (the function the
   in-memory twin runs) checks every expectation and limit and hashes the new
   blobs in memory. A refusal raises its store error; nothing is written.
4. **Trees**: only the folders on the changed paths are re-encoded
   (:func:`gitmem.git.treeedit.set_paths`), each once however many of its files change.
5. **Pack**: blobs, trees and the commit land as one small pack, fsynced with
   its folder when the mount is durable (:func:`gitmem.git.packwrite.write_pack_files`);
   a copy goes to ``gitmem/last-pack`` for readers in other processes, and after the
   CAS the objects are kept for this process's reads (:mod:`gitmem.git.written`).
6. **CAS**: the ref moves only if it still holds the head read in step 2
   (:mod:`gitmem.git.refs`). gitmem writers cannot race each other (they hold the
   lock); a foreign git can, and then the plan runs again on the new head, so a
   change to another file is kept and a change to this one becomes
   ``version_mismatch``. That is the engine's one retry loop, at most
   :data:`MAX_ATTEMPTS` times.
7. **Fold**: every :data:`MAX_PACKS` packs the writer, after letting the lock
   go, folds the small packs together (:meth:`GitRepo.compact`). A fold never
   fails the write it follows: the write is committed.

Durability is the mount's (``gitmem.durable`` in its config,
:meth:`GitRepo.durable`), read under the lock at every write, so every process
writing the mount honours it; a caller is answered only after the fsyncs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git import erasures, packwrite, written
from gitmem.git.refs import MAIN, read_ref, swap_ref
from gitmem.git.repo import GitRepo
from gitmem.git.snapshot import Done, Plan, R, Snapshot, check_shape, stored_file, translate_errors
from gitmem.model import CommitId, Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message
from gitmem.store import Batch, Decision, check_batch_room, decide

MAX_ATTEMPTS = 100
"""Times a plan is run again because a writer outside gitmem moved the ref."""
MAX_PACKS = 24
"""Packs written since the last fold after which the writer folds (see :meth:`GitRepo.compact`)."""


def commit_batch(
    repo: GitRepo,
    fmt: FileFormat,
    batch: Batch,
    *,
    origin: Origin,
    ref: str = MAIN,
    size_of: Callable[[str], int],
) -> Done[Decision | None]:
    """Commit ``batch`` on ``ref`` as one commit: all of its paths change, or none.

    The commit names every changed path in its trailers (a delete: one
    ``Gitmem-Path`` each; a move: the destination's ``Gitmem-Path`` followed by
    the source's ``Gitmem-From``), which ``log`` relies on to skip commits that
    do not mention a path and to follow a file across a move. With a file-count
    or byte limit, a new file colliding with a folder is ``invalid_path`` before
    the memory is found full (as in the twin). Returns the new commit and the
    decision (both ``None``: nothing to change, and no empty commit is made).
    """

    def plan(snap: Snapshot) -> Plan[Decision | None]:
        decision = decide(batch, lambda path: stored_file(snap, path), snap.write_blob)
        if decision is None:
            return Plan.nothing(None)
        # Erased stays erased: a blob the erasure ledger names is refused (or let in by an admin's trailer).
        erasures.refuse_erased(
            snap.handle, repo.path, ((e.path, e.version) for e in decision.effects if e.version), batch.trailers
        )
        writes = any(e.data is not None for e in decision.effects)
        if writes and (fmt.max_files is not None or fmt.max_memory_bytes is not None):
            for effect in decision.creates:
                check_shape(snap, effect.path)
            files = list(snap.files())
            total = sum(size_of(oid) for _, oid in files) if fmt.max_memory_bytes is not None else 0
            check_batch_room(
                decision, files=len(files), total_bytes=total, max_files=fmt.max_files, max_bytes=fmt.max_memory_bytes
            )
        edits = tuple((e.path, e.version) for e in decision.effects)
        return Plan(edits, decision.op, decision.paths, origin, decision, summary=batch.summary, extra=batch.trailers)

    return transact(repo, plan, ref=ref)


def transact(repo: GitRepo, plan: Callable[[Snapshot], Plan[R]], *, ref: str = MAIN) -> Done[R]:
    """Run ``plan`` on the head of ``ref`` under the writer lock and commit its edits (steps 1-7 above).

    ``plan`` may raise a store error to refuse, or return a plan without edits
    for a no-op (no commit). Another ``ref`` than ``main`` (a proposal branch)
    that does not exist yet is forked from ``main``: the plan sees main's head
    and the ref is created by the same compare-and-swap.
    """
    fold_due = False
    try:
        with translate_errors(repo.path), repo.lock.hold():
            durable = repo.durable()
            reopened = False
            for _ in range(MAX_ATTEMPTS):
                handle = repo.fresh()
                branch = None if ref == MAIN else read_ref(handle, ref)
                head = repo.head_in(handle) if branch is None else branch
                pending = packwrite.PendingObjects()
                try:
                    snap = Snapshot(handle, head, pending, tree=repo.tree_id_of(head), trees=repo.tree_cache())
                    chosen = plan(snap)
                    if not chosen.edits:
                        return Done(None, chosen.result)
                    tree_id = packwrite.set_paths(snap.raw, pending, snap.tree_id, chosen.edits, repo.tree_cache())
                except KeyError:
                    # An object of the head missing: a pack rewrite in another process can hide
                    # one from this handle's pack list for a moment (see GitFileStore._at_head).
                    # Looked for once more on a new handle; a damaged repository fails again.
                    if reopened:
                        raise
                    repo.reopen()
                    reopened = True
                    continue
                author, committer, message = _signed(chosen)
                commit = pending.add(b"commit", packwrite.commit_bytes(tree_id, [head], author, committer, message))
                sha, pack, idx = packwrite.pack_files(pending)
                packwrite.write_pack_files(repo.path, sha, pack, idx, durable=durable)
                if repo.written.enabled:
                    written.publish(repo.path, pack, pending.objects)  # before the ref moves: a reader of the new head finds it
                if _move(repo, handle, ref, branch, head, commit, durable=durable, op=chosen.op):
                    repo.remember_commit(commit, tree_id, pending.objects)
                    fold_due = _count_pack(repo)
                    return Done(CommitId(commit), chosen.result)
    finally:
        if fold_due:
            # The lock is let go: other writers go on while this one folds. Nothing of
            # gitmem's runs after the call returns (a caller may delete the folder then),
            # unless a server took the folds over (fold_elsewhere).
            with suppress(Exception):
                later = _later[0]
                if later is None or packwrite.pack_count(repo.path) > 2 * MAX_PACKS:
                    fold(repo)
                else:
                    later(repo)
    raise MemoryStoreError(
        "unavailable", f"{ref} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
    )


def _move(
    repo: GitRepo,
    handle: pygit2.Repository,
    ref: str,
    branch: str | None,
    head: str,
    commit: str,
    *,
    durable: bool,
    op: str,
) -> bool:
    """Compare-and-swap ``ref`` from what the plan saw to ``commit``; ``False`` when someone moved it first."""
    old = head if ref == MAIN else branch
    return swap_ref(
        handle,
        repo.path,
        ref,
        old,
        commit,
        message=f"gitmem {op}",
        stale_after=repo.stale_lock_seconds,
        timeout=repo.lock_timeout,
        durable=durable,
    )


def _count_pack(repo: GitRepo) -> bool:
    """Count the pack just written in the lock's record; whether a fold is due (the count then restarts)."""
    count = repo.lock.count + 1
    due = count > MAX_PACKS
    repo.lock.count = 0 if due else count
    return due


FoldLater = Callable[[GitRepo], None]
_later: list[FoldLater | None] = [None]


def fold_elsewhere(later: FoldLater | None) -> FoldLater | None:
    """Hand each due fold to ``later`` instead of folding before the write returns; the previous one back.

    For a long-lived server (``gitmem serve``), which folds on a thread of its
    own after the write's reply went out (:mod:`gitmem.adapters.folding`), so no
    request waits for a fold. ``later`` must end by calling :func:`fold`. The
    bound holds whoever folds: a writer that finds more than twice
    :data:`MAX_PACKS` live packs (the folds fell behind) folds itself, as before.
    ``None`` folds in the writer again.
    """
    previous, _later[0] = _later[0], later
    return previous


def fold(repo: GitRepo) -> None:
    """Fold now, unless another fold holds the fold lock (it is folding these packs' neighbours already).

    When writers outrun the folds (the lock was busy and ``objects/pack`` holds
    more than twice :data:`MAX_PACKS`), wait for the running fold and fold after it.
    """
    if not repo.fold_once(False) and packwrite.pack_count(repo.path) > 2 * MAX_PACKS:
        repo.fold_once(True)


def _signed(chosen: Plan[Any]) -> tuple[bytes, bytes, str]:
    """A plan's author and committer lines (the principal as author, gitmem as committer) and its message.

    Both lines carry the current second and this machine's offset from UTC at
    that second, as libgit2's ``git_signature_now`` gives them.
    """
    now = int(time.time())
    offset = int(time.localtime(now).tm_gmtoff / 60)
    message = commit_message(
        chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra, summary=chosen.summary
    )
    author = packwrite.signature_line(*_identity(chosen.origin.principal_id or COMMITTER_NAME), now, offset)
    committer = packwrite.signature_line(*_identity(COMMITTER_NAME), now, offset)
    return author, committer, message


def _identity(name: str) -> tuple[bytes, bytes]:
    """``name`` and gitmem's e-mail as a commit header holds them, checked and trimmed by libgit2.

    A bad name (a newline, angle brackets) fails here as libgit2 refuses it.
    """
    sig = pygit2.Signature(name, COMMITTER_EMAIL, 0, 0)
    return sig.raw_name, sig.raw_email
