"""Where a change becomes a commit: the one write engine of the git store.

Every store write (``write``, ``delete``, ``move``, ``move_many``,
``delete_many``, ``apply``) reaches :func:`commit_batch` in one call; restore,
revert and a run's proposal branch reach :func:`transact` with a plan of their
own. Both run the same steps, in this order, in this module::

    queue ──► writer lock ──► take the group ──► read head ──► each change: plan(snapshot) ──► trees ──► commit
                                                    ▲             (on the head the change before made)      │
                                                    │                                                       ▼
                                                    └─ a writer outside gitmem moved the ref ◄── CAS ref ◄── pack
                                                                                                    │
                                                                             unlock ──► answer each ◄┘ ──► fold?

0. **Group**: a write that finds another thread of its process committing on
   the mount waits in the mount's queue (:class:`_Queue`) instead of at the lock.
   The committing thread, once it holds the lock, takes every waiting change on
   its ref (up to :data:`GROUP_MAX`) and runs steps 2-6 once for all of them: each
   change is still its own commit (its author, message and trailers), chained on
   the commit of the change before it; the group is one pack, one copy for other
   processes and one ref move. Each caller gets its own commit, or its own error
   when its plan refused or failed (that change is skipped and leaves nothing
   behind; the others go on). A failure of the pack or the ref move answers every
   change of the group with it: nothing moved. Then the oldest waiter commits the
   next group. Two workers of ``gitmem serve`` writing one memory hand the lock to
   each other once per group instead of once per write. ``GITMEM_GROUP_COMMIT=0``
   commits each change alone (:data:`GROUPING`, for benchmarks).
1. **Lock**: the mount's writer ``flock`` (:class:`gitmem.git.locks.WriterLock`),
   one descriptor per thread, dropped by the kernel when its holder dies.
2. **Snapshot**: the ref is read under the lock; the first plan sees that
   commit, each later one the commit of the plan before it.
3. **Plan**: for a batch, :func:`gitmem.store.decide` (the function the
   in-memory twin runs) checks every expectation and limit and hashes the new
   blobs in memory. A refusal raises its store error; nothing is written.
4. **Trees**: only the folders on the changed paths are re-encoded
   (:func:`gitmem.git.treeedit.set_paths`), each once however many of its files
   change, from the parsed trees the process's committers share.
5. **Pack**: blobs, trees and the commits land as one small pack, fsynced with
   its folder when the mount is durable (:func:`gitmem.git.packwrite.write_pack_files`);
   a copy goes to ``gitmem/last-pack`` for readers in other processes, and after the
   CAS the objects are kept for this process's reads (:mod:`gitmem.git.written`).
6. **CAS**: the ref moves only if it still holds the head read in step 2
   (:mod:`gitmem.git.refs`), once for the group. gitmem writers cannot race each other (they hold the
   lock); a foreign git can, and then the group's plans run again on the new head, so a
   change to another file is kept and a change to this one becomes
   ``version_mismatch``. That is the engine's one retry loop, at most
   :data:`MAX_ATTEMPTS` times. A reader's ``changes`` and the watchers diff trees,
   so one ref move over several commits reports every path they changed.
7. **Fold**: every :data:`MAX_PACKS` packs (groups) the writer, after letting the lock
   go, folds the small packs together (:meth:`GitRepo.compact`). A fold never
   fails the write it follows: the write is committed.

Durability is the mount's (``gitmem.durable`` in its config,
:meth:`GitRepo.durable`), read under the lock at every write, so every process
writing the mount honours it; a caller (every caller of a group) is answered
only after the fsyncs and the ref move.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Generic

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git import erasures, packwrite, treeedit, written
from gitmem.git.locks import lock_held_here
from gitmem.git.refs import MAIN, read_ref, swap_ref
from gitmem.git.repo import GitRepo
from gitmem.git.snapshot import Done, Plan, R, Snapshot, blob_size, check_shape, stored_file, translate_errors
from gitmem.model import CommitId, Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message
from gitmem.store import Batch, Decision, check_batch_room, decide

MAX_ATTEMPTS = 100
"""Times a plan is run again because a writer outside gitmem moved the ref."""
MAX_PACKS = 24
"""Packs written since the last fold after which the writer folds (see :meth:`GitRepo.compact`)."""
GROUP_MAX = 32
"""Changes committed together at most: one group's commits, pack and ref move (see :class:`_Queue`)."""
GROUPING = os.environ.get("GITMEM_GROUP_COMMIT", "1").strip() not in ("0", "false", "no")
"""Whether a process's writers on one mount commit in groups; ``GITMEM_GROUP_COMMIT=0`` commits each alone (benches)."""


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
            total = sum(blob_size(snap, size_of, oid) for _, oid in files) if fmt.max_memory_bytes is not None else 0
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
    and the ref is created by the same compare-and-swap. While another thread of
    this process commits on the mount, the plan waits in its queue and is
    committed in that thread's next group (see :class:`_Queue`).
    """
    mine = _Change(repo, plan, ref)
    if not GROUPING or lock_held_here(repo.lock.path):
        # Alone: grouping off, or this thread already holds the lock (a caller inside a
        # maintenance or merge), where waiting for another thread's group would deadlock.
        fold_due = _commit_group(repo, [mine], ref)
    else:
        queue, fold_due = _queue(repo), False
        try:
            if queue.join(mine):
                assert mine.turn is not None
                mine.turn.wait()
            if not mine.done:
                fold_due = _commit_group(repo, [mine], ref, queue=queue)
        finally:
            # Before the fold, so the next group need not wait for it; also when a signal's
            # exception ended the wait (out of the queue, or the turn to commit passed on).
            queue.leave(mine)
    if fold_due:
        _fold_after(repo)
    return mine.answer()


class _Change(Generic[R]):
    """One caller's plan in a group, and what came of it (its own commit, or its own error)."""

    __slots__ = ("done", "error", "leads", "outcome", "plan", "ref", "repo", "turn")

    def __init__(self, repo: GitRepo, plan: Callable[[Snapshot], Plan[R]], ref: str) -> None:
        self.repo = repo
        self.plan = plan
        self.ref = ref
        self.turn: threading.Event | None = None  # a waiter's: set when answered, or when it commits next
        self.done = False
        self.leads = False  # woken to commit the next group
        self.outcome: tuple[str | None, str, R, str] | None = None  # (commit, its tree, the plan's result, op)
        self.error: BaseException | None = None

    def settle(self, error: BaseException | None = None) -> None:
        self.error = error if error is not None else self.error
        self.done = True
        if self.turn is not None:
            self.turn.set()

    def answer(self) -> Done[R]:
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        commit, _, result, _ = self.outcome
        return Done(None if commit is None else CommitId(commit), result)


class _Queue:
    """The changes waiting to commit on one mount in this process, and whether a thread is committing.

    The first caller finding no one committing commits; the others wait. After
    its group the committer wakes the oldest waiter to commit the next group,
    which takes every waiter of its ref then (up to :data:`GROUP_MAX`) in the
    order they came. A committer that dies with its process takes nothing
    acknowledged with it: its waiters are in the same process.
    """

    __slots__ = ("__weakref__", "busy", "forks", "guard", "last", "trees", "waiting")

    def __init__(self) -> None:
        self.forks = _forks[0]  # made in this process (not inherited through a fork)
        self.guard = threading.Lock()
        self.waiting: list[_Change[Any]] = []
        self.busy = False
        # What the committers (one at a time) share, whichever thread and store they come from:
        # the folders they parsed and made, and the last commit they made with its tree.
        self.trees: tuple[tuple[int, int], treeedit.TreeCache] | None = None  # under a history mark
        self.last = ("", "")

    def tree_cache(self, mark: tuple[int, int]) -> treeedit.TreeCache:
        """The committers' parsed trees; new when a purge or forget deleted objects since (``mark`` moved)."""
        if self.trees is None or self.trees[0] != mark:
            self.trees = (mark, treeedit.TreeCache())
        return self.trees[1]

    def join(self, change: _Change[Any]) -> bool:
        """Queue ``change``; ``True``: another thread commits now, wait for ``change.turn``."""
        with self.guard:
            if not self.busy:
                self.busy = change.leads = True
                return False
            change.turn = threading.Event()  # only a waiter needs one
            self.waiting.append(change)
            return True

    def take(self, first: _Change[Any], ref: str) -> list[_Change[Any]]:
        """``first`` and the waiters on ``ref`` after it, up to :data:`GROUP_MAX`, out of the queue.

        Nobody waiting is answered without the guard: a waiter that joins a moment
        later is still in the queue when this group leaves it, and commits next.
        """
        group = [first]
        if not self.waiting:
            return group
        with self.guard:
            for change in list(self.waiting):
                if len(group) >= GROUP_MAX:
                    break
                if change.ref == ref:
                    self.waiting.remove(change)
                    group.append(change)
            return group

    def take_all(self, first: _Change[Any]) -> list[_Change[Any]]:
        """Every waiter (whatever its ref) but ``first``, out of the queue."""
        with self.guard:
            taken = [change for change in self.waiting if change is not first]
            self.waiting.clear()
            return taken

    def leave(self, change: _Change[Any]) -> None:
        """``change``'s caller is done or stopped waiting: out of the queue, and if it was
        to commit (or did), the oldest waiter commits the next group, or nobody is committing.

        Taken into another's group already, it is committed or refused as if its caller still waited.
        """
        with self.guard:
            if change in self.waiting:
                self.waiting.remove(change)
            elif change.leads:
                change.leads = False
                if self.waiting:
                    after = self.waiting.pop(0)
                    after.leads = True
                    assert after.turn is not None
                    after.turn.set()  # not done: it commits the next group
                else:
                    self.busy = False


# By mount path, as long as a store of the mount holds its queue (GitRepo.writers): the parsed
# trees of a memory no store holds any more are let go. Emptied in a forked child.
_queues: weakref.WeakValueDictionary[str, _Queue] = weakref.WeakValueDictionary()
_queues_guard = threading.Lock()
_forks = [0]  # forks this process came through: a queue of another count is a parent's


def _queue(repo: GitRepo) -> _Queue:
    held = repo.writers
    if isinstance(held, _Queue) and held.forks == _forks[0]:
        return held
    with _queues_guard:
        found = _queues.get(repo.path)
        if found is None:
            found = _queues[repo.path] = _Queue()
    repo.writers = found
    return found


def _after_fork() -> None:
    global _queues_guard
    _forks[0] += 1
    _queues_guard = threading.Lock()  # another thread of the parent may have held it
    _queues.clear()


os.register_at_fork(after_in_child=_after_fork)


def _commit_group(repo: GitRepo, group: list[_Change[Any]], ref: str, *, queue: _Queue | None = None) -> bool:
    """Lock, then commit each change of ``group`` on the head the one before made: one pack, one ref move.

    With ``queue``, the changes waiting in it on ``ref`` join ``group`` once the
    lock is held (those that came while the lock was awaited ride along).
    Every change is answered: its own commit, its refusal, or (when the lock,
    the pack or the ref move fails) that failure. Returns whether a fold is due.
    """
    first, fold_due, moved, locked = group[0], False, False, False
    moving: str | None = None  # the head a ref move was tried to
    try:
        with translate_errors(repo.path), repo.lock.hold():
            locked = True
            if queue is not None:
                group[:] = queue.take(first, ref)
            durable = repo.durable()
            reopened = False
            for attempt in range(MAX_ATTEMPTS):
                handle = repo.fresh(config_checked=attempt == 0)  # durable() compared the config's stamp
                branch = None if ref == MAIN else read_ref(handle, ref)
                base = repo.head_in(handle) if branch is None else branch
                pending = treeedit.PendingObjects()
                if queue is None:
                    trees, known = repo.tree_cache(), ("", "")
                else:
                    trees, known = queue.tree_cache(repo.handle_mark()), queue.last
                try:
                    head, tree = _plan_all(repo, handle, group, base, pending, reopened, trees, known)
                except _Reopen:
                    repo.reopen()
                    reopened = True
                    continue
                if head == base:  # every plan refused or changed nothing
                    break
                sha, pack, idx = packwrite.pack_files(pending)
                packwrite.write_pack_files(repo.path, sha, pack, idx, durable=durable)
                if repo.written.enabled:  # before the ref moves: a reader of the new head finds it
                    written.publish(repo.path, pack, pending.objects, pending.ids)
                made = [c for c in group if c.outcome is not None and c.outcome[0] is not None]
                ops = [c.outcome[3] for c in made if c.outcome is not None]
                op = ops[0] if len(ops) == 1 else "+".join(sorted(set(ops)))
                moving = head
                if _move(repo, handle, ref, branch, base, head, durable=durable, op=op):
                    moved = True
                    _remember(repo, made, head, tree, pending)
                    if queue is not None:
                        queue.last = (head, tree)
                    fold_due = _count_pack(repo)
                    break
                moving = None  # a writer outside gitmem moved the ref first: plan again
            else:
                raise MemoryStoreError(
                    "unavailable",
                    f"{ref} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again",
                )
    except BaseException as exc:
        if moved:  # what failed after the ref moved (letting the lock go) takes no commit back
            for change in group:
                change.settle()
            raise
        if moving is not None and _ref_holds(repo, ref, moving):
            # The move failed after the ref took the group's head (its folder's fsync, an interruption):
            # the changes are there, perhaps not durably; no caller may be told to make its change again.
            unconfirmed = MemoryStoreError(
                "write_unconfirmed", f"{ref} moved to {moving[:12]} but the commit did not complete ({exc!r})"
            )
            for change in group:
                landed = change.outcome is not None and change.outcome[0] is not None
                change.settle(unconfirmed if landed else None)
            if isinstance(exc, Exception):
                raise unconfirmed from exc
            raise
        if not locked and queue is not None and isinstance(exc, MemoryStoreError):
            # The lock stayed taken past its timeout: every change waiting behind it is told so now,
            # as its own wait would have, rather than after one more timeout per change in turn.
            group[:] = [first, *queue.take_all(first)]
        # The lock, the pack or the ref move failed, or the committing thread was interrupted:
        # nothing of the group was committed. A change that refused keeps its refusal when it
        # saw only the committed head; one after a change that made a commit may have been
        # refused by that change, which never landed: it gets the failure too.
        seen_uncommitted = False
        for change in group:
            if not change.done:
                refusal = None if seen_uncommitted else change.error
                seen_uncommitted = seen_uncommitted or (change.outcome is not None and change.outcome[0] is not None)
                change.outcome = None
                change.settle(refusal or (exc if change is first else _failed(exc)))
        return False
    for change in group:
        change.settle()
    return fold_due


def _ref_holds(repo: GitRepo, ref: str, commit: str) -> bool:
    """Whether ``ref`` holds ``commit`` now (read afresh; ``False`` when it cannot be read)."""
    try:
        return read_ref(repo.fresh(), ref) == commit
    except Exception:
        return False


def _fold_after(repo: GitRepo) -> None:
    """Fold after a write, the lock let go: other writers go on meanwhile (step 7).

    Nothing of gitmem's runs after the call returns (a caller may delete the
    folder then), unless a server took the folds over (:func:`fold_elsewhere`).
    A fold never fails the write it follows.
    """
    with suppress(Exception):
        later = _later[0]
        if later is None or packwrite.pack_count(repo.path) > 2 * MAX_PACKS:
            fold(repo)
        else:
            later(repo)


def _plan_all(
    repo: GitRepo,
    handle: pygit2.Repository,
    group: list[_Change[Any]],
    base: str,
    pending: treeedit.PendingObjects,
    reopened: bool,
    trees: treeedit.TreeCache,
    known: tuple[str, str],
) -> tuple[str, str]:
    """Run each change's plan on the head the one before it made; the last head and its tree.

    ``trees``: the parsed trees to read and edit through; ``known``: a commit
    whose tree is known (the last one this process's groups made).
    A plan that refuses or fails keeps its error and leaves nothing in
    ``pending``; the next plan runs on the head before it. An object missing
    from the handle's packs raises :class:`_Reopen` (steps 2-4 of the diagram).
    """
    try:
        head, tree = base, known[1] if base == known[0] else repo.tree_id_of(base)
    except KeyError:
        if reopened:
            raise
        raise _Reopen from None
    for change in group:
        change.outcome, change.error = None, None
        kept = len(pending)
        try:
            with translate_errors(repo.path):
                try:
                    snap = Snapshot(handle, head, pending, tree=tree, trees=trees)
                    chosen = change.plan(snap)
                    if not chosen.edits:
                        change.outcome = (None, tree, chosen.result, chosen.op)
                        continue
                    new_tree = treeedit.set_paths(snap.raw, pending, tree, chosen.edits, trees)
                except KeyError:
                    # An object of the head missing: a pack rewrite in another process can hide
                    # one from this handle's pack list for a moment (see GitFileStore._at_head).
                    # The group is planned once more on a new handle; a damaged repository fails again.
                    if reopened:
                        raise
                    raise _Reopen from None
                author, committer, message = _signed(chosen)
                commit = pending.add(b"commit", packwrite.commit_bytes(new_tree, [head], author, committer, message))
        except Exception as exc:  # this change's own failure: the others go on without it
            pending.drop_after(kept)
            change.error = exc
            continue
        change.outcome = (commit, new_tree, chosen.result, chosen.op)
        head, tree = commit, new_tree
    return head, tree


def _remember(repo: GitRepo, made: list[_Change[Any]], head: str, tree: str, pending: treeedit.PendingObjects) -> None:
    """Tell every store of the group what it committed: the head's tree and objects, each commit's tree."""
    objects, ids = pending.objects, pending.ids
    if len(made) == 1 and made[0].repo is repo:  # one change (most writes): its commit is the head
        repo.remember_commit(head, tree, objects, ids=ids)
        return
    mark = repo.handle_mark()
    for other in {id(c.repo): c.repo for c in made if c.repo is not repo}.values():
        other.remember_commit(head, tree, objects, mark=mark, ids=ids)
    repo.remember_commit(head, tree, objects, ids=ids)
    for change in made:
        if change.outcome is not None and change.outcome[0] is not None and change.outcome[0] != head:
            change.repo.remember_tree(change.outcome[0], change.outcome[1])


class _Reopen(BaseException):
    """An object went missing from the handle: plan the group again on a new one (not a change's error)."""


def _failed(exc: BaseException) -> MemoryStoreError:
    """What a change committed in another thread's group is told when the group failed: nothing moved."""
    if isinstance(exc, MemoryStoreError):
        return exc
    return MemoryStoreError("unavailable", f"the commit failed before the memory moved ({exc!r}); try again")


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
    second, offset = _offset[0]
    if second != now:
        offset = int(time.localtime(now).tm_gmtoff / 60)
        _offset[0] = (now, offset)  # the same second has the same offset
    message = commit_message(
        chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra, summary=chosen.summary
    )
    author = packwrite.signature_line(*_identity(chosen.origin.principal_id or COMMITTER_NAME), now, offset)
    committer = packwrite.signature_line(*_identity(COMMITTER_NAME), now, offset)
    return author, committer, message


_offset = [(-1, 0)]  # the last second asked and this machine's offset from UTC then, in minutes


def _identity(name: str) -> tuple[bytes, bytes]:
    """``name`` and gitmem's e-mail as a commit header holds them, checked and trimmed by libgit2.

    A bad name (a newline, angle brackets) fails here as libgit2 refuses it. The
    answers for the last names asked are kept (a process writes for a few principals).
    """
    found = _identities.get(name)
    if found is None:
        sig = pygit2.Signature(name, COMMITTER_EMAIL, 0, 0)
        if len(_identities) >= 256:
            _identities.clear()
        found = _identities[name] = (sig.raw_name, sig.raw_email)
    return found


_identities: dict[str, tuple[bytes, bytes]] = {}
