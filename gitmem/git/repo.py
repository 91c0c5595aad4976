"""One bare repository seen as a memory, and the transaction every file change commits through.

What lives here: opening and creating repos, reading trees and blobs at a head,
and :meth:`GitRepo.transact`, which rebuilds only the trees on the changed
paths, creates the commit and moves the ref with the one compare-and-swap of
:mod:`gitmem.git.refs`. Every store write (:mod:`gitmem.git.batch`), restore and
revert commits here; the other writers in ``git/`` are history rewrites
(:mod:`gitmem.git.rewrite`), merges (:mod:`gitmem.git.merge`) and the review
gate (:mod:`gitmem.git.review`), and they move refs through the same CAS.
Everything is expressed in hex ids, bytes and str, so the layers above never see pygit2.

How a change becomes a commit (:meth:`GitRepo.transact`)::

    take the writer flock ──► read head ──► plan(snapshot) ──► write blob/trees/commit
          ▲                                                      │
          └────────── ref moved by a foreign writer ◄── CAS main ┘

A plan re-runs at most :data:`MAX_ATTEMPTS` times; a ref that a foreign writer
moves faster than that is ``unavailable``. Waiting for the writer lock and for a
foreign git's ref lock is bounded too (:mod:`gitmem.git.locks`).

Importing this module turns libgit2's strict object creation off for the whole
process: libgit2 would otherwise look up every object a new tree or commit
names, about a third of a write's CPU. gitmem only names objects it has just
written, or read from the head under the writer lock, so the check buys nothing
here; other pygit2 users in the same process lose it too.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import cli, packwrite
from gitmem.git.locks import Holder, WriterLock, remove_crashed_locks
from gitmem.git.loose import open_repository, raise_if_corrupt, take_corruption
from gitmem.git.perms import make_private_dir, write_private
from gitmem.git.refs import MAIN, read_ref, swap_loose_ref, swap_ref
from gitmem.git.treediff import diff_trees
from gitmem.model import BlobVersion, CommitId, Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message
from gitmem.store import file_dir_conflict

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_FILE_MODES = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
_TREE_MODE = pygit2.GIT_FILEMODE_TREE

T = TypeVar("T")
R = TypeVar("R")

# libgit2 keeps parsed trees in its object cache only up to 4 KiB each by default, so a
# folder of more than ~100 files was parsed again on every read by path (~1 ms per 1000
# entries: a read in a 10k-file folder took ~10 ms, 0.25 ms with this). Process-wide,
# like every libgit2 cache setting; the cache's total size stays bounded (256 MiB).
TREE_CACHE_LIMIT = 8 * 1024 * 1024
pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)

# Each commit is a pack until compaction folds them (gitmem.git.packwrite), and libgit2
# keeps a descriptor open per pack it has read: bound them process-wide (the least
# recently used pack is closed first and reopened on demand).
MWINDOW_FILE_LIMIT = 256
pygit2.settings.mwindow_file_limit = MWINDOW_FILE_LIMIT

MAX_ATTEMPTS = 100
"""Times :meth:`GitRepo.transact` re-runs a plan because a writer outside gitmem moved the ref."""

# libgit2 re-checks that every object a new tree or commit names exists (an odb lookup
# per entry), which costs about a third of a write's CPU. gitmem only names objects it
# has just written or read from the head under the writer lock, so the check adds no
# safety here. The switch is process-wide.
pygit2.settings.enable_strict_object_creation(False)


@contextmanager
def translate_errors(repo_path: str) -> Iterator[None]:
    """Turn pygit2 and OS failures into store errors where they enter gitmem.

    A damaged loose object refused by the guard (:mod:`gitmem.git.loose`) is
    reported as itself, whatever error pygit2 turned it into on the way.
    """
    take_corruption()  # one refused earlier and swallowed is not this call's cause
    try:
        yield
    except MemoryStoreError:
        take_corruption()
        raise
    except (pygit2.GitError, OSError, KeyError, ValueError, IndexError) as exc:
        raise_if_corrupt()
        if not os.path.isdir(os.path.join(repo_path, "objects")):
            raise MemoryStoreError("memory_deleted", f"the memory at {repo_path} no longer exists") from None
        raise MemoryStoreError("unavailable", f"git error: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """A tree entry found at a path: a file (``blob``) or a folder (``tree``)."""

    kind: str
    oid: str


class Snapshot:
    """The head of ``main`` as a writer sees it under the lock.

    With ``pending``, blobs a plan writes are kept in memory for the commit's
    pack (:mod:`gitmem.git.packwrite`) instead of becoming loose files.
    """

    def __init__(self, repo: pygit2.Repository, head: str, pending: packwrite.PendingObjects | None = None) -> None:
        self._repo = repo
        self.head = head
        self.tree: pygit2.Tree = repo[head].peel(pygit2.Tree)
        self.pending = pending
        self._folders: dict[str, pygit2.Tree | None] = {"": self.tree}

    def get(self, path: str) -> Entry | None:
        """The entry at ``path``; folders are looked up once per snapshot (a batch of 10k paths
        in a few hundred folders reads each folder's tree once, not once per path)."""
        folder, _, name = path.rpartition("/")
        tree = self._folder(folder)
        return None if tree is None else lookup(tree, name)

    def _folder(self, folder: str) -> pygit2.Tree | None:
        if folder in self._folders:
            return self._folders[folder]
        parent, _, name = folder.rpartition("/")
        above = self._folder(parent)
        found = lookup(above, name) if above is not None else None
        tree = self._repo[found.oid].peel(pygit2.Tree) if found is not None and found.kind == "tree" else None
        self._folders[folder] = tree
        return tree

    def data(self, oid: str) -> bytes:
        if self.pending is not None:
            raw = self.pending.raw(oid)
            if raw is not None:
                return raw
        return bytes(self._repo[oid].read_raw())

    def write_blob(self, data: bytes) -> BlobVersion:
        if self.pending is not None:
            return BlobVersion(self.pending.add(b"blob", data))
        return BlobVersion(str(self._repo.create_blob(data)))


@dataclass(frozen=True, slots=True)
class Plan(Generic[R]):
    """What a transaction commits: path edits (blob id, or ``None`` to delete) and a message.

    ``result`` is what the plan decided, handed back with the commit (see
    :class:`Done`). A plan without ``edits`` commits nothing (:meth:`nothing`).
    ``summary`` replaces the summary line derived from ``op`` and ``paths``.
    """

    edits: tuple[tuple[str, str | None], ...]
    op: str
    paths: tuple[str, ...]
    origin: Origin
    result: R
    detail: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    summary: str | None = None

    @staticmethod
    def nothing(result: T) -> Plan[T]:
        """A plan that changes nothing (no empty commit) and answers ``result``."""
        return Plan((), "none", (), Origin(), result)


@dataclass(frozen=True, slots=True)
class Done(Generic[R]):
    """What :meth:`GitRepo.transact` did: the new commit (``None``: nothing to change) and the plan's result."""

    commit: CommitId | None
    result: R


def lookup(tree: pygit2.Tree, path: str) -> Entry | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    mode = obj.filemode
    if mode in _FILE_MODES:
        return Entry("blob", str(obj.id))
    if mode == _TREE_MODE:
        return Entry("tree", str(obj.id))
    return Entry("other", str(obj.id))


def walk_files(tree: pygit2.Tree, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every regular file under ``tree`` as ``(path, blob id)``, in git's (path) order."""
    for obj in tree:
        mode = obj.filemode
        if mode == _TREE_MODE:
            assert isinstance(obj, pygit2.Tree)
            yield from walk_files(obj, f"{prefix}{obj.name}/")
        elif mode in _FILE_MODES:
            yield f"{prefix}{obj.name}", str(obj.id)


_durable = [False]  # what set_durable last said; the pack writer fsyncs to match libgit2


def set_durable(enabled: bool = True) -> None:
    """Make libgit2 fsync every object and ref file it writes, and their folders.

    The switch belongs to libgit2 and so is process-wide: it covers every
    repository this process writes. A commit then waits for about a dozen fsyncs
    (two per new object, two for the ref) against two for a plain file store;
    ``docs/benchmarks.md`` has the measured cost.
    """
    pygit2.settings.enable_fsync_gitdir(enabled)
    _durable[0] = enabled


MAX_PACKS = 24
"""Packs in ``objects/pack`` above which a writer folds the small ones together (see :meth:`GitRepo.compact`)."""
PACK_EDITS = 8
"""Batches of up to this many paths are written as one pack; bigger ones use the grouped loose path."""


_ANCESTRY_WALK = 512  # commits descendant_of visits itself before asking libgit2


class GitRepo:
    """A bare repository holding one memory on ``refs/heads/main``.

    pygit2 repositories are not safe to share between threads, so each thread
    (and each process after ``fork``) opens its own handle.
    """

    pack_writes = True
    """Write each commit's new objects as one pack (:mod:`gitmem.git.packwrite`) rather than loose files."""

    def __init__(self, path: str, *, stale_lock_seconds: float = 30.0, lock_timeout: float = 30.0) -> None:
        self.path = os.path.abspath(path)
        self.stale_lock_seconds = stale_lock_seconds
        """How long a foreign git's ref lock must stay unchanged before it is taken for a crash's."""
        self._local = threading.local()
        self._gen_path = os.path.join(self.path, "gitmem", "generation")
        self._packs_path = os.path.join(self.path, "gitmem", "packs-folded")
        self.pending_path = os.path.join(self.path, "gitmem", "forget-pending")
        """Exists while a forget or purge may have moved refs without pruning the old objects yet."""
        self.lock = WriterLock(
            os.path.join(self.path, "gitmem", "write.lock"), timeout=lock_timeout, on_crash=functools.partial(_after_crash, self.path, self._gen_path, self.pending_path)
        )

    @property
    def lock_timeout(self) -> float:
        """Seconds a writer waits for the writer lock (or a ref lock) before ``unavailable``."""
        return self.lock.timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self.lock.timeout = seconds

    # -- lifecycle --

    @classmethod
    def init(cls, path: str, *, config: dict[str, str] | None = None) -> GitRepo:
        """Create a bare repo whose ``main`` holds a root commit with an empty tree."""
        path = os.path.abspath(path)
        if os.path.exists(os.path.join(path, "HEAD")):
            raise MemoryStoreError("already_exists", f"a repository already exists at {path}")
        try:
            make_private_dir(path, parents=True)
            repo = pygit2.init_repository(path, bare=True, initial_head="main")
            for key, value in (config or {}).items():
                repo.config[key] = value
            make_private_dir(os.path.join(path, "gitmem"))
            tree = repo.TreeBuilder().write()
            sig = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
            message = commit_message("init", (), Origin())
            repo.create_commit(MAIN, sig, sig, message, tree, [])
        except (pygit2.GitError, OSError) as exc:
            raise MemoryStoreError("unavailable", f"cannot create a repository at {path}: {exc}") from exc
        return cls(path)

    @classmethod
    def open(cls, path: str) -> GitRepo:
        path = os.path.abspath(path)
        if not os.path.isdir(os.path.join(path, "objects")):
            raise MemoryStoreError("memory_deleted", f"no memory repository at {path}")
        opened = cls(path)
        with translate_errors(path):
            make_private_dir(os.path.join(path, "gitmem"))
            opened.head()
        return opened

    @property
    def repo(self) -> pygit2.Repository:
        local = self._local
        pid = os.getpid()
        repo: pygit2.Repository | None = getattr(local, "repo", None)
        if repo is None or local.pid != pid:
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            repo = open_repository(self.path)
            local.repo = repo
            local.pid = pid
            local.trees = None  # parsed trees of the old handle: a purge may have erased their names
            local.gen = self._marks()
        return repo

    def history_mark(self) -> tuple[int, int]:
        """Changes whenever a purge or forget deletes objects (compare two marks)."""
        try:
            st = os.stat(self._gen_path)
        except FileNotFoundError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)

    def _marks(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The history mark and the packs-folded mark: a handle older than either is reopened."""
        try:
            st = os.stat(self._packs_path)
            folded = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            folded = (0, 0)
        return self.history_mark(), folded

    def bump_generation(self) -> None:
        """Tell other handles that objects were deleted, so they drop their caches."""
        _bump(self._gen_path)
        self._local.repo = None

    def fresh(self) -> pygit2.Repository:
        """The thread's handle, reopened if a purge or forget deleted objects since."""
        repo = self.repo
        if self._local.gen != self._marks():
            self._local.repo = None
            repo = self.repo
        return repo

    def config_get(self, key: str) -> str | None:
        with translate_errors(self.path):
            cfg = self.repo.config
            return cfg[key] if key in cfg else None

    def config_set(self, key: str, value: str) -> None:
        with translate_errors(self.path):
            self.repo.config[key] = value

    # -- reads (no lock: refs and objects are read consistently from one head) --

    def head(self) -> CommitId:
        """The commit ``main`` holds. Every read starts here: a handle must not serve objects a purge deleted."""
        head = read_ref(self.fresh(), MAIN)
        if head is None:
            # A handle opened before Root.remove keeps its pygit2 object; the ref vanishing
            # with the whole repo is a deleted memory, not a broken one.
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            raise MemoryStoreError("unavailable", f"{self.path} has no {MAIN}")
        return head

    def ref_target(self, name: str) -> CommitId | None:
        """The commit another ref (a proposal branch) points at, or ``None`` when it does not exist."""
        with translate_errors(self.path):
            return read_ref(self.fresh(), name)

    def tree_of(self, commit: str) -> pygit2.Tree:
        return self.repo[commit].peel(pygit2.Tree)

    def read_at(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` in ``commit``, or ``None``."""
        entry = lookup(self.tree_of(commit), path)
        if entry is None or entry.kind != "blob":
            return None
        return entry.oid, bytes(self.repo[entry.oid].read_raw())

    def blob(self, oid: str) -> bytes:
        return bytes(self.repo[oid].read_raw())

    def files_at(self, commit: str, prefix: str = "") -> Iterator[tuple[str, str]]:
        tree = self.tree_of(commit)
        if prefix:
            sub = lookup(tree, prefix.rstrip("/"))
            if sub is None or sub.kind != "tree":
                return iter(())
            return walk_files(self.repo[sub.oid].peel(pygit2.Tree), prefix)
        return walk_files(tree)

    def tree_items(self, tree_id: str) -> list[tuple[str, str, str]]:
        """One folder's entries as ``(name, kind, hex id)`` in git order, ``kind`` as in :class:`Entry`.

        Lets callers cache per folder by tree id (a tree id names its whole content).
        """
        items: list[tuple[str, str, str]] = []
        for obj in self.repo[tree_id].peel(pygit2.Tree):
            mode = obj.filemode
            kind = "tree" if mode == _TREE_MODE else "blob" if mode in _FILE_MODES else "other"
            items.append((obj.name or "", kind, str(obj.id)))
        return items

    def resolve(self, rev: str) -> str | None:
        """The commit id a revision names (hex id, prefix, ``main``, ``main~2``), or ``None``."""
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise_if_corrupt()
            return None
        return str(commit.id)

    def is_commit(self, rev: str) -> bool:
        try:
            obj = self.repo.get(rev)
        except (ValueError, pygit2.GitError):
            raise_if_corrupt()
            return False
        return obj is not None and obj.type == pygit2.enums.ObjectType.COMMIT

    def descendant_of(self, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is reachable from ``commit`` through parents (a commit is not its own).

        Walks parents breadth-first from ``commit``, so a cursor a few changes old
        costs a few commit reads. libgit2's check walks the whole history even for
        the parent (~1 ms per 300 commits written in the same second), so it is
        only the fallback for an ancestor further back than the walk goes.
        """
        if commit == ancestor:
            return False
        try:
            repo = self.repo
            target = pygit2.Oid(hex=ancestor)
            frontier = deque([pygit2.Oid(hex=commit)])
            seen: set[pygit2.Oid] = set()
            for _ in range(_ANCESTRY_WALK):
                if not frontier:
                    return False  # the whole history was walked
                for parent in repo[frontier.popleft()].peel(pygit2.Commit).parent_ids:
                    if parent == target:
                        return True
                    if parent not in seen:
                        seen.add(parent)
                        frontier.append(parent)
            return bool(repo.descendant_of(commit, ancestor))
        except (pygit2.GitError, KeyError):  # its objects were deleted (a purge or forget meanwhile)
            raise_if_corrupt()
            return False

    def changed_paths(self, old: str, new: str) -> tuple[str, ...]:
        """Paths that differ between two commits' trees; cost follows the changed subtrees.

        The same paths libgit2's tree diff reports (no rename detection), but folders
        whose tree id is unchanged are skipped instead of walked: libgit2 visits every
        entry, ~9 ms for one changed file in a 100k-file memory, against ~0.3 ms here.
        """
        paths: list[str] = []
        diff_trees(self.repo, self.tree_of(old).id, self.tree_of(new).id, "", paths)
        return tuple(sorted(set(paths)))

    # -- writes --

    def transact(self, plan: Callable[[Snapshot], Plan[R]], *, ref: str = MAIN) -> Done[R]:
        """Run ``plan`` on the head and commit its edits with a CAS on ``ref`` (``main``).

        ``plan`` runs under the writer lock and may raise a store error to refuse
        the change, or return a plan without edits for a no-op. When a writer
        outside gitmem (a push, plain git) moved the ref in between, the plan is
        re-run on the new head: its checks decide again, so nothing is merged
        blindly. Another ``ref`` (a proposal branch) that does not exist yet is
        forked from ``main``: the plan sees main's head and the ref is created
        atomically. Returns the new commit (``None`` for a no-op) and the result
        of the plan that was committed.
        """
        with translate_errors(self.path), self.lock.hold():
            for _ in range(MAX_ATTEMPTS):
                repo = self.fresh()
                branch = None if ref == MAIN else read_ref(repo, ref)
                head = self.head() if branch is None else branch
                pending = packwrite.PendingObjects() if self.pack_writes else None
                snap = Snapshot(repo, head, pending)
                chosen = plan(snap)
                if not chosen.edits:
                    return Done(None, chosen.result)
                if pending is not None and len(chosen.edits) > PACK_EDITS:
                    # A big batch: main's grouped tree writes (each folder once) as loose objects.
                    for _kind, raw in pending.objects.values():
                        repo.create_blob(raw)
                    pending = None
                author = _author(chosen.origin)
                committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
                message = commit_message(
                    chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra, summary=chosen.summary
                )
                if pending is not None:
                    commit = self._pack_commit(repo, snap, pending, chosen, author, committer, message)
                else:
                    tree_id = _set_paths(repo, snap.tree, chosen.edits)
                    commit = str(repo.create_commit(None, author, committer, message, tree_id, [pygit2.Oid(hex=head)]))
                if ref == MAIN:
                    moved = self._cas(repo, head, commit)
                else:
                    moved = swap_ref(
                        repo,
                        self.path,
                        ref,
                        branch,
                        commit,
                        message=f"gitmem {chosen.op}",
                        stale_after=self.stale_lock_seconds,
                        timeout=self.lock_timeout,
                    )
                if moved:
                    if pending is not None and packwrite.pack_count(self.path) > MAX_PACKS:
                        # The write is in: a failed fold (a foreign gc racing it, a full disk)
                        # must not report it as failed; the next writer tries again.
                        with suppress(MemoryStoreError, OSError, pygit2.GitError):
                            self.compact()
                    return Done(CommitId(commit), chosen.result)
        raise MemoryStoreError(
            "unavailable", f"{ref} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
        )

    def _pack_commit(
        self,
        repo: pygit2.Repository,
        snap: Snapshot,
        pending: packwrite.PendingObjects,
        chosen: Plan[Any],
        author: pygit2.Signature,
        committer: pygit2.Signature,
        message: str,
    ) -> str:
        """Build the plan's trees and commit in memory and write them, with its blobs, as one pack."""

        def read_tree(oid: str) -> bytes:
            raw = pending.raw(oid)
            return raw if raw is not None else bytes(repo[oid].read_raw())

        tree_id = str(snap.tree.id)
        for path, oid in chosen.edits:
            tree_id = packwrite.set_path(read_tree, pending, tree_id, path.split("/"), oid, path, self._tree_cache())
        raw = packwrite.commit_bytes(tree_id, [snap.head], _sig_bytes(author), _sig_bytes(committer), message)
        commit = pending.add(b"commit", raw)
        packwrite.write_pack(self.path, pending, durable=_durable[0])
        return commit

    def _tree_cache(self) -> packwrite.TreeCache:
        cache: packwrite.TreeCache | None = getattr(self._local, "trees", None)
        if cache is None:
            cache = self._local.trees = packwrite.TreeCache()
        return cache

    def compact(self) -> None:
        """Fold the small per-commit packs together by git's geometric rule. Writer lock held.

        Each pack left holds at least twice the objects of all smaller ones
        together, so ``n`` objects live in about ``log2(n)`` packs, and a run
        copies only the small packs (amortised: each object is copied about
        ``log2(n)`` times over its life). Folded packs are deleted by a later
        run after a grace period (:func:`gitmem.git.packwrite.compact`). It
        runs under the writer lock, like every other repack gitmem starts, so
        it can never put back objects a purge is deleting; the git child holds
        the lock too until it exits.
        """

        def run(args: list[str], stdin: bytes) -> tuple[int, str]:
            done = cli.run_git(args, git_dir=self.path, stdin=stdin, pass_fds=(self.lock.held_fd(),))
            return done.returncode, done.stdout

        if packwrite.compact(self.path, run):
            # libgit2 never forgets a pack it opened, even once deleted: every handle
            # reopens at its next call, so deleted packs' descriptors and disk space go.
            _bump(self._packs_path)
            self._local.repo = None

    def _cas(self, repo: pygit2.Repository, old: str, new: str) -> bool:
        """Move ``main`` from ``old`` to ``new``; ``False`` when someone else moved it first."""
        if self.pack_writes:
            moved = swap_loose_ref(self.path, MAIN, old, new, durable=_durable[0])
            if moved is not None:
                return moved
        return swap_ref(
            repo,
            self.path,
            MAIN,
            old,
            new,
            message="gitmem: move main",
            stale_after=self.stale_lock_seconds,
            timeout=self.lock_timeout,
        )


def _bump(gen_path: str) -> None:
    tmp = f"{gen_path}.{os.getpid()}.tmp"
    write_private(tmp, f"{time.time_ns()}\n")
    os.replace(tmp, gen_path)


def _after_crash(path: str, gen_path: str, pending_path: str, holder: Holder) -> None:
    """The previous writer-lock holder died holding it: clear what it left behind.

    A plain function, not a method: the lock keeps it, and a bound method would
    make a cycle that keeps every store's lock descriptors open until a GC pass.
    """
    remove_crashed_locks(path, holder.written_ns)
    if os.path.exists(pending_path):
        _bump(gen_path)  # it may have pruned without telling other handles: make them reopen


def _sig_bytes(sig: pygit2.Signature) -> bytes:
    """A signature as a commit header holds it (libgit2 checked and trimmed the name and e-mail)."""
    return packwrite.signature_line(sig.raw_name, sig.raw_email, sig.time, sig.offset)


def _author(origin: Origin) -> pygit2.Signature:
    return pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)


def _set_paths(repo: pygit2.Repository, tree: pygit2.Tree, edits: Sequence[tuple[str, str | None]]) -> pygit2.Oid:
    """The id of ``tree`` with every ``(path, blob or None)`` edit applied, as one batch.

    Each changed folder's tree is written once, however many of its files change
    (a prune of 10k files writes a few hundred trees, not 30k). The result equals
    applying the edits one by one with :func:`_set_path`, which remains the rule;
    a batch that both replaces a file by a folder and edits inside it (order
    matters there) is applied that way.
    """
    if len(edits) == 1:
        path, oid = edits[0]
        return _set_path(repo, tree, path.split("/"), oid, path)
    split = [(path.split("/"), oid, path) for path, oid in edits]
    if _mixes_file_and_folder(split):
        tree_id = tree.id
        for path, oid in edits:
            tree_id = _set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
        return tree_id
    return _set_group(repo, tree, split)


def _mixes_file_and_folder(split: list[tuple[list[str], str | None, str]]) -> bool:
    """Whether some edited path is also a folder of another edited path."""
    paths = {"/".join(parts) for parts, _, _ in split}
    return any("/".join(parts[:i]) in paths for parts, _, _ in split for i in range(1, len(parts)))


def _set_group(
    repo: pygit2.Repository, tree: pygit2.Tree | None, edits: list[tuple[list[str], str | None, str]]
) -> pygit2.Oid:
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    below: dict[str, list[tuple[list[str], str | None, str]]] = {}
    for parts, oid, full in edits:
        name = parts[0]
        if len(parts) > 1:
            below.setdefault(name, []).append((parts[1:], oid, full))
            continue
        existing = builder.get(name)
        if existing is not None and existing.filemode == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    for name, group in below.items():
        existing = builder.get(name)
        sub: pygit2.Tree | None = None
        if existing is not None:
            if existing.filemode != _TREE_MODE:
                creating = [full for _, oid, full in group if oid is not None]
                if creating:
                    raise file_dir_conflict(creating[0], is_file=True)
                continue  # deletes under a file: nothing there to delete
            sub = repo[existing.id].peel(pygit2.Tree)
        elif all(oid is None for _, oid, _ in group):
            continue
        new_sub = _set_group(repo, sub, group)
        if str(new_sub) == EMPTY_TREE:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, new_sub, _TREE_MODE)
    return builder.write()


def _set_path(
    repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], oid: str | None, full: str
) -> pygit2.Oid:
    """Return the id of ``tree`` with ``parts`` set to blob ``oid`` (or removed when ``None``).

    Only the trees on the path are rebuilt; a folder left empty disappears.
    """
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    existing = builder.get(name)
    if len(parts) == 1:
        if existing is not None and existing.filemode == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    else:
        sub: pygit2.Tree | None = None
        if existing is not None:
            if existing.filemode != _TREE_MODE:
                if oid is None:
                    return builder.write()
                raise file_dir_conflict(full, is_file=True)
            sub = repo[existing.id].peel(pygit2.Tree)
        elif oid is None:
            return builder.write()
        new_sub = _set_path(repo, sub, parts[1:], oid, full)
        if str(new_sub) == EMPTY_TREE:
            builder.remove(name)
        else:
            builder.insert(name, new_sub, _TREE_MODE)
    return builder.write()
