"""The write round: queued plans committed on ``main`` as one chain, one pack, one ref update.

Split out of :mod:`gitmem.git.repo`, which keeps the handle (opening, reads,
folds) and calls in here from :meth:`~gitmem.git.repo.GitRepo.transact`. The
round sees the handle only through :class:`Writer`, so the imports run one way:
``repo`` imports this module, never the reverse.

- :func:`transact_alone`: one plan, one commit (a proposal branch, or group commit off).
- :func:`run_round`: what one leader of :mod:`gitmem.git.group` runs: take the
  writer lock (handing its requests to the holder instead when the lock is taken
  and the holder answers them first, :mod:`gitmem.git.spool`), then commit its
  requests and the ones other processes queued as one chain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Protocol

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import group, loosetrees, packwrite, spool
from gitmem.git.locks import Wake, WriterLock
from gitmem.git.recent import RecentObjects
from gitmem.git.refs import MAIN, read_ref, swap_ref
from gitmem.git.snapshot import Done, Plan, R, Snapshot, translate_errors
from gitmem.model import CommitId
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

MAX_ATTEMPTS = 100
"""Times a plan is re-run because a writer outside gitmem moved the ref."""
PACK_EDITS = 100_000
"""Batches of up to this many paths are written as one pack (each changed folder encoded once);
bigger ones, which no agent makes, use the grouped loose path rather than one huge pack."""
SPOOL_TAKE = 64
"""Requests of other processes a round takes at most."""
SPOOL_ROUNDS = 4
"""Rounds a holder runs back to back while other processes' requests are queued."""
GATHER = 0.001
"""Seconds a holder waits for as many other processes' requests as its last round took (:func:`spool.gather`)."""
_last_taken: dict[str, int] = {}


class Writer(Protocol):
    """What a round needs of :class:`gitmem.git.repo.GitRepo` (which this module does not import)."""

    path: str
    lock: WriterLock
    recent: RecentObjects
    pack_writes: bool
    stale_lock_seconds: float

    @property
    def lock_timeout(self) -> float: ...
    def fresh(self) -> pygit2.Repository: ...
    def _head_in(self, repo: pygit2.Repository) -> CommitId: ...
    def _tree_cache(self) -> packwrite.TreeCache: ...
    def _recent(self) -> RecentObjects: ...
    def _pack_trees(
        self,
        repo: pygit2.Repository,
        snap: Snapshot,
        pending: packwrite.PendingObjects,
        edits: Sequence[tuple[str, str | None]],
    ) -> str: ...
    def _cas(self, repo: pygit2.Repository, old: str, new: str) -> bool: ...
    def _count_pack(self) -> bool: ...
    def owe_fold(self) -> None: ...
    def on_main(self, header: spool.Header) -> bool: ...


def transact_alone(writer: Writer, plan: Callable[[Snapshot], Plan[R]], ref: str, *, durable: bool) -> Done[R]:
    """One plan committed on its own under the writer lock (another ref than ``main``, or group commit off)."""
    fold = False
    try:
        with translate_errors(writer.path), writer.lock.hold():
            for _ in range(MAX_ATTEMPTS):
                repo = writer.fresh()
                branch = None if ref == MAIN else read_ref(repo, ref)
                head = writer._head_in(repo) if branch is None else branch
                pending = packwrite.PendingObjects() if writer.pack_writes else None
                snap = Snapshot(repo, head, pending, trees=writer._tree_cache(), recent=writer._recent())
                chosen = plan(snap)
                if not chosen.edits:
                    return Done(None, chosen.result)
                if pending is not None and len(chosen.edits) > PACK_EDITS:
                    pending = None
                author, committer, message = _signed(chosen)
                if pending is not None:
                    tree_id = writer._pack_trees(repo, snap, pending, chosen.edits)
                    raw = packwrite.commit_bytes(tree_id, [head], author, committer, message)
                    commit = pending.add(b"commit", raw)
                    packwrite.write_pack(writer.path, pending, durable=durable)
                else:
                    commit = _loose_commit(repo, snap, chosen, author, committer, message)
                if ref == MAIN:
                    moved = writer._cas(repo, head, commit)
                else:
                    moved = swap_ref(
                        repo,
                        writer.path,
                        ref,
                        branch,
                        commit,
                        message=f"gitmem {chosen.op}",
                        stale_after=writer.stale_lock_seconds,
                        timeout=writer.lock_timeout,
                    )
                if moved:
                    if pending is not None:
                        writer.recent.add(pending.objects, [(commit, tree_id)])
                        fold = writer._count_pack()
                    return Done(CommitId(commit), chosen.result)
    finally:
        if fold:
            writer.owe_fold()
    raise MemoryStoreError(
        "unavailable", f"{ref} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
    )


def run_round(writer: Writer, requests: list[group.Request], *, cross: bool, durable: bool) -> list[group.Request]:
    """Commit queued plans on ``main`` as a chain of commits: one pack, one ref update.

    Each plan runs on the head the previous accepted plan made, so its checks
    (its expected versions) see exactly what a one-at-a-time writer would; a
    plan that refuses gets its error and the chain goes on without it. A
    big batch (more than :data:`PACK_EDITS` paths) is committed on its own
    by the loose path, first in its round; requests after it wait for the
    next round (returned). Outcomes are settled only once the ref has moved
    (and, when durable, is on disk): a kill before leaves every request
    unanswered and ``main`` where it was.

    Across processes (:mod:`gitmem.git.spool`): when the writer lock is taken,
    requests that can cross processes are published before waiting; once the
    lock is ours, a holder may already have committed them (their outcomes
    are collected and nothing else is done). A holder takes the requests
    other processes published into its round, behind its own.
    """
    own: spool.Slot | None = None
    published = False

    def on_wait() -> Wake | None:  # the lock is taken: hand our requests to its holder if they can cross
        nonlocal own, published
        if cross and all(r.spec is not None for r in requests):
            own = spool.own_slot(writer.path)
            published = own is not None and own.publish([r.spec for r in requests])
            if published and own is not None and own.wake_fd is not None:
                return Wake(own.wake_fd, own.answered)
        return None

    def give_up() -> bool:
        return own is None or not published or own.withdraw()

    fold = False
    try:
        with translate_errors(writer.path), writer.lock.hold(on_wait=on_wait, give_up=give_up) as held:
            if own is not None and published:  # answered while we waited (no lock), or see whether we were
                answers = own.collect(writer.on_main)
                if answers is not None:
                    for request, (value, error) in zip(requests, answers, strict=True):
                        request.finish(value, error)
                    return []
            assert held, "the writer lock ends a wait unheld only for an answered request"
            spool.at("round")
            left, fold = _chain(writer, requests, cross=cross, durable=durable)
            for _ in range(SPOOL_ROUNDS - 1):
                if not (cross and spool.queued(writer.path)):
                    break
                # Requests published while our round ran: their writers are waiting on
                # us anyway, and another round now saves each of them a round of its own.
                more = _chain(writer, [], cross=cross, durable=durable)[1]
                fold = fold or more
            return left
    finally:
        if fold:
            writer.owe_fold()


def _chain(
    writer: Writer, requests: list[group.Request], *, cross: bool, durable: bool
) -> tuple[list[group.Request], bool]:
    """One round under the writer lock: ``requests`` and the spool's, as one chain; (left over, fold due)."""
    taken: list[spool.Taken] = []
    theirs: list[group.Request] = []
    settled_slots = False
    try:
        if cross:
            last = _last_taken.get(writer.path, 0)
            if last:
                spool.gather(writer.path, last, GATHER)
            taken = spool.take(writer.path, spool.own_slot(writer.path, create=False), SPOOL_TAKE)
            _last_taken[writer.path] = len(taken)
            theirs = [group.Request(spec(writer)) for t in taken for spec in t.specs]
        everything = requests + theirs
        for _ in range(MAX_ATTEMPTS):
            repo = writer.fresh()
            head: str = writer._head_in(repo)
            trees = writer._tree_cache()
            recent = writer._recent()
            pending = packwrite.PendingObjects()
            tip, tip_tree = head, None
            made: list[tuple[str, str]] = []
            chain: list[tuple[group.Request, str, Any]] = []
            settled: list[tuple[group.Request, Any, BaseException | None]] = []
            left: list[group.Request] = []
            loose: tuple[group.Request, Plan[Any], Snapshot] | None = None
            for i, request in enumerate(everything):
                snap = Snapshot(repo, tip, pending, tree=tip_tree, trees=trees, recent=recent)
                mark = len(pending)
                try:
                    with translate_errors(writer.path):
                        chosen: Plan[Any] = request.plan(snap)
                        if len(chosen.edits) > PACK_EDITS:
                            if chain or loose is not None:
                                pending.drop_after(mark)
                                left = everything[i:]
                            else:
                                loose, left = (request, chosen, snap), everything[i + 1 :]
                            break
                        if not chosen.edits:
                            pending.drop_after(mark)
                            settled.append((request, Done(None, chosen.result), None))
                            continue
                        author, committer, message = _signed(chosen)
                        tree_id = writer._pack_trees(repo, snap, pending, chosen.edits)
                        raw = packwrite.commit_bytes(tree_id, [tip], author, committer, message)
                except BaseException as exc:
                    pending.drop_after(mark)
                    settled.append((request, None, exc))
                    continue
                tip, tip_tree = pending.add(b"commit", raw), tree_id
                chain.append((request, tip, chosen.result))
                made.append((tip, tree_id))
            if theirs and (any(r in left for r in theirs) or (loose is not None and loose[0] in theirs)):
                # Another process's big batch: only its own process commits it (loose path).
                spool.release(taken)
                spool.left_queued(writer.path)
                taken, theirs, everything = [], [], requests
                continue
            if loose is not None:
                request, chosen, snap = loose
                author, committer, message = _signed(chosen)
                tip = _loose_commit(repo, snap, chosen, author, committer, message)
                chain, tip_tree = [(request, tip, chosen.result)], None
            elif chain:
                packwrite.write_pack(writer.path, pending, durable=durable)
            if taken:
                outcomes: dict[int, tuple[Any, BaseException | None]] = {}
                for request, commit, result in chain:
                    outcomes[id(request)] = (Done(CommitId(commit), result), None)
                for request, value, error in settled:
                    outcomes[id(request)] = (value, error)
                at = iter(theirs)
                for t in taken:
                    t.header = t.slot.settle(t.header, tip if chain else None, [outcomes[id(next(at))] for _ in t.specs])
                settled_slots = bool(chain)
            spool.at("pending")
            if chain and not writer._cas(repo, head, tip):
                continue  # a writer outside gitmem moved main: every plan decides again
            spool.at("landed")
            if settled_slots:
                for t in taken:
                    t.slot.landed(t.header)
                settled_slots = False
            for t in taken:
                t.slot.ring()
            if chain and loose is None:
                recent.add(pending.objects, made)
            mine = {id(r) for r in requests}
            for request, commit, result in chain:
                if id(request) in mine:
                    request.finish(Done(CommitId(commit), result))
            for request, value, error in settled:
                if id(request) in mine:
                    request.finish(value, error)
            return left, bool(chain) and loose is None and writer._count_pack()
        raise MemoryStoreError(
            "unavailable", f"{MAIN} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
        )
    finally:
        if taken:
            if settled_slots:  # the round failed after its outcomes were written: did main move?
                with suppress(MemoryStoreError, OSError, pygit2.GitError):
                    landed = writer.on_main(taken[0].slot.header() or taken[0].header)
                    for t in taken:
                        t.slot.mark("done" if landed else "queued")
                        t.slot.ring()
            spool.release(taken)


def _loose_commit(
    repo: pygit2.Repository, snap: Snapshot, chosen: Plan[Any], author: bytes, committer: bytes, message: str
) -> str:
    """A big batch: main's grouped tree writes (each folder once) as loose objects."""
    if snap.pending is not None:
        for _kind, raw in snap.pending.objects.values():
            repo.create_blob(raw)
    tree_id = loosetrees.set_paths(repo, snap.tree, chosen.edits)
    raw = packwrite.commit_bytes(str(tree_id), [snap.head], author, committer, message)
    return str(repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw))


def _identity(name: str) -> tuple[bytes, bytes]:
    """``name`` and gitmem's e-mail as a commit header holds them: checked and trimmed by libgit2, once per name.

    A principal writes many commits, and ``pygit2.Signature(name, email)`` per
    commit also reads the clock and asks the C library for the time zone (a
    ``stat`` of ``/etc/localtime`` each); the checks depend on the name alone,
    so they run on the first commit of each name (a bad one fails there as before).
    """
    found = _identities.get(name)
    if found is None:
        sig = pygit2.Signature(name, COMMITTER_EMAIL, 0, 0)
        found = (sig.raw_name, sig.raw_email)
        if len(_identities) >= 256:
            _identities.clear()
        _identities[name] = found
    return found


_identities: dict[str, tuple[bytes, bytes]] = {}


def _signed(chosen: Plan[Any]) -> tuple[bytes, bytes, str]:
    """A plan's author and committer lines and its commit message.

    Both lines carry the current second and this machine's offset from UTC at
    that second, as libgit2's ``git_signature_now`` gives them (the offset from
    ``localtime``, which reads the time zone once per process).
    """
    now = int(time.time())
    offset = int(time.localtime(now).tm_gmtoff / 60)
    message = commit_message(
        chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra, summary=chosen.summary
    )
    author = packwrite.signature_line(*_identity(chosen.origin.principal_id or COMMITTER_NAME), now, offset)
    committer = packwrite.signature_line(*_identity(COMMITTER_NAME), now, offset)
    return author, committer, message
