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

import atexit
import functools
import hashlib
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
from gitmem.git import cli, group, loosetrees, packwrite, spool
from gitmem.git.locks import Holder, Wake, WriterLock, remove_crashed_locks
from gitmem.git.loose import open_repository, raise_if_corrupt, take_corruption
from gitmem.git.perms import make_private_dir, write_private
from gitmem.git.recent import RecentObjects, recent_for
from gitmem.git.refs import MAIN, read_ref, read_ref_file, swap_loose_ref, swap_ref
from gitmem.git.treediff import diff_trees
from gitmem.model import BlobVersion, CommitId, Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_FILE_MODES = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
_OBJECT_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
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


class translate_errors:
    """Turn pygit2 and OS failures into store errors where they enter gitmem.

    A damaged loose object refused by the guard (:mod:`gitmem.git.loose`) is
    reported as itself, whatever error pygit2 turned it into on the way. A
    class rather than a generator-based context manager: every read and write
    enters one or more, and this costs a third as much.
    """

    __slots__ = ("repo_path",)

    def __init__(self, repo_path: str) -> None:
        self.repo_path = repo_path

    def __enter__(self) -> None:
        take_corruption()  # one refused earlier and swallowed is not this call's cause

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            return
        if isinstance(exc, MemoryStoreError):
            take_corruption()
        elif isinstance(exc, (pygit2.GitError, OSError, KeyError, ValueError, IndexError)):
            raise_if_corrupt()
            if not os.path.isdir(os.path.join(self.repo_path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.repo_path} no longer exists") from None
            raise MemoryStoreError("unavailable", f"git error: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """A tree entry found at a path: a file (``blob``) or a folder (``tree``)."""

    kind: str
    oid: str


class Snapshot:
    """The head of ``main`` as a writer sees it under the lock.

    With ``pending``, blobs a plan writes are kept in memory for the commit's
    pack (:mod:`gitmem.git.packwrite`) instead of becoming loose files, and the
    head may itself be a commit still in ``pending``: the one a group commit
    made for the request before (see :mod:`gitmem.git.group`). Lookups read the
    raw trees (from ``pending`` or the repository) through ``trees``, the
    writer's cache of parsed trees, so consecutive writes parse a folder once.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        head: str,
        pending: packwrite.PendingObjects | None = None,
        *,
        tree: str | None = None,
        trees: packwrite.TreeCache | None = None,
        recent: RecentObjects | None = None,
    ) -> None:
        self._repo = repo
        self.head = head
        self.pending = pending
        self._recent = recent
        if tree is None and recent is not None:
            tree = recent.tree_of(head)
        self.tree_id = tree if tree is not None else str(repo[head].peel(pygit2.Commit).tree_id)
        self._trees = trees if trees is not None else packwrite.TreeCache()
        self._folders: dict[str, str | None] = {"": self.tree_id}

    @property
    def tree(self) -> pygit2.Tree:
        """The head's tree as libgit2 reads it (only for a head that is on disk)."""
        return self._repo[self.tree_id].peel(pygit2.Tree)

    def raw(self, oid: str) -> bytes:
        if self.pending is not None:
            found = self.pending.raw(oid)
            if found is not None:
                return found
        if self._recent is not None:
            found = self._recent.raw(oid)
            if found is not None:
                return found
        return bytes(self._repo[oid].read_raw())

    def _entries(self, tree_id: str) -> dict[bytes, tuple[bytes, bytes]]:
        return self._trees.view(tree_id, self.raw)

    def get(self, path: str) -> Entry | None:
        """The entry at ``path``; folders are looked up once per snapshot (a batch of 10k paths
        in a few hundred folders reads each folder's tree once, not once per path)."""
        folder, _, name = path.rpartition("/")
        tree = self._folder(folder)
        if tree is None:
            return None
        found = self._entries(tree).get(name.encode())
        return None if found is None else Entry(_kind(found[0]), found[1].hex())

    def _folder(self, folder: str) -> str | None:
        if folder in self._folders:
            return self._folders[folder]
        parent, _, name = folder.rpartition("/")
        above = self._folder(parent)
        found = self._entries(above).get(name.encode()) if above is not None else None
        tree = found[1].hex() if found is not None and _kind(found[0]) == "tree" else None
        self._folders[folder] = tree
        return tree

    def files(self) -> Iterator[tuple[str, str]]:
        """Every regular file as ``(path, blob id)``, in git's order."""
        if self.pending is None or self.pending.raw(self.head) is None:
            return walk_files(self.tree)
        return self._walk(self.tree_id, "")

    def _walk(self, tree_id: str, prefix: str) -> Iterator[tuple[str, str]]:
        entries = self._entries(tree_id)
        for name, (mode, oid) in sorted(entries.items(), key=packwrite.entry_order):
            kind = _kind(mode)
            if kind == "tree":
                yield from self._walk(oid.hex(), f"{prefix}{name.decode('utf-8', 'surrogateescape')}/")
            elif kind == "blob":
                yield f"{prefix}{name.decode('utf-8', 'surrogateescape')}", oid.hex()

    def data(self, oid: str) -> bytes:
        return self.raw(oid)

    def write_blob(self, data: bytes) -> BlobVersion:
        if self.pending is not None:
            return BlobVersion(self.pending.add(b"blob", data))
        return BlobVersion(str(self._repo.create_blob(data)))


def _kind(mode: bytes) -> str:
    """An entry's kind from its raw tree mode, as :func:`lookup` tells it from libgit2's."""
    if mode in packwrite.FILE_MODES:
        return "blob"
    if mode.lstrip(b"0") == b"40000":
        return "tree"
    return "other"


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
    for path, oid in walk_file_ids(tree, prefix):
        yield path, str(oid)


def walk_file_ids(tree: pygit2.Tree, prefix: str = "") -> Iterator[tuple[str, pygit2.Oid]]:
    """:func:`walk_files` with the ids as pygit2 keeps them (a bulk reader looks them up as they are)."""
    # Entries are not loaded by iterating a tree: only the subtrees are read.
    for obj in tree:
        mode = obj.filemode
        if mode == _TREE_MODE:
            assert isinstance(obj, pygit2.Tree)
            yield from walk_file_ids(obj, f"{prefix}{obj.name}/")
        elif mode in _FILE_MODES:
            yield f"{prefix}{obj.name}", obj.id


_durable = [False]  # what set_durable last said; the pack writer fsyncs to match libgit2

_pid = [os.getpid()]  # this process's id, kept current across fork: os.getpid() is a system call


def _forked() -> None:
    _pid[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)


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
"""Packs in ``objects/pack`` above which a fold is started after the write (see :meth:`GitRepo.compact`)."""
HARD_MAX_PACKS = 64
"""Packs above which a writer folds before it returns, once a background fold of its process failed."""
GROUP_COMMIT = True
"""Commit the writes that threads of one process queue at the same time together (:mod:`gitmem.git.group`)."""
CROSS_PROCESS = True
"""A writer that finds the lock taken hands its requests to the holder's round (:mod:`gitmem.git.spool`)."""
SPOOL_TAKE = 64
"""Requests of other processes a round takes at most."""
SPOOL_ROUNDS = 4
"""Rounds a holder runs back to back while other processes' requests are queued."""
GATHER = 0.001
"""Seconds a holder waits for as many other processes' requests as its last round took (:func:`spool.gather`)."""
_last_taken: dict[str, int] = {}

_folds: dict[str, threading.Thread] = {}
_folds_again: set[str] = set()
_folds_failed: set[str] = set()
_folds_guard = threading.Lock()


@atexit.register
def _finish_folds() -> None:
    """A fold under way finishes before the interpreter exits (its git child would otherwise be orphaned)."""
    with _folds_guard:
        running = list(_folds.values())
    for thread in running:
        thread.join(timeout=60)
PACK_EDITS = 100_000
"""Batches of up to this many paths are written as one pack (each changed folder encoded once);
bigger ones, which no agent makes, use the grouped loose path rather than one huge pack."""


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
        self._main_path = os.path.join(self.path, *MAIN.split("/"))
        self.pending_path = os.path.join(self.path, "gitmem", "forget-pending")
        """Exists while a forget or purge may have moved refs without pruning the old objects yet."""
        self.lock = WriterLock(
            os.path.join(self.path, "gitmem", "write.lock"), timeout=lock_timeout, on_crash=functools.partial(_after_crash, self.path, self._gen_path, self.pending_path)
        )
        self.recent = recent_for(self.path)
        """The objects of this process's latest commits (:mod:`gitmem.git.recent`)."""
        self.fold_lock = WriterLock(os.path.join(self.path, "gitmem", "fold.lock"), timeout=lock_timeout)
        """Held by a pack fold, and after the writer lock by what deletes objects (see :meth:`maintenance`)."""

    @property
    def lock_timeout(self) -> float:
        """Seconds a writer waits for the writer lock (or a ref lock) before ``unavailable``."""
        return self.lock.timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self.lock.timeout = seconds
        self.fold_lock.timeout = seconds

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
        pid = _pid[0]
        repo: pygit2.Repository | None = getattr(local, "repo", None)
        if repo is None or local.pid != pid:
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            repo = open_repository(self.path)
            marks = self._marks()
            if getattr(local, "pid", None) != pid or getattr(local, "gen", (None,))[0] != marks[0]:
                # Parsed trees of the old handle: a purge may have erased their names. A reopen
                # only because packs were folded (every few dozen commits) keeps them: a fold
                # moves objects into another pack and deletes none.
                local.trees = None
            local.repo = repo
            local.pid = pid
            local.packs = local.packs_of = None  # the old handle's pack backend (it keeps deleted packs open)
            local.gen = marks
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
        return self._head_in(self.fresh())

    def _head_in(self, repo: pygit2.Repository) -> CommitId:
        """:meth:`head` with the handle the caller just got from :meth:`fresh`."""
        head = read_ref_file(self._main_path) or read_ref(repo, MAIN)
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
        recent = self._recent()
        known = recent.read_tree_of(commit)
        if known is not None:
            return self.repo[known].peel(pygit2.Tree)
        tree = self.repo[commit].peel(pygit2.Tree)
        recent.learn_tree(commit, str(tree.id))
        return tree

    def _recent(self) -> RecentObjects:
        """This process's recent objects, emptied first if a purge or forget erased history since.

        The history mark is the one this thread's handle was last checked against
        (every call starts by reading ``main`` through :meth:`fresh`), so this costs
        no system call; without one it is read from disk.
        """
        marks = getattr(self._local, "gen", None)
        self.recent.check(marks[0] if marks is not None else self.history_mark())
        return self.recent

    def _raw(self, oid: str) -> bytes:
        found = self.recent.raw(oid)
        return found if found is not None else self.blob(oid)

    def tree_id_of(self, commit: str) -> str:
        """The id of ``commit``'s tree (for a commit this process just made, without reading it)."""
        tree = self._recent().tree_of(commit)
        return tree if tree is not None else str(self.tree_of(commit).id)

    def read_at(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` in ``commit``, or ``None``."""
        tree = self._recent().tree_of(commit)
        if tree is not None:  # a commit this process just made: its new trees are read from memory
            cache = self.recent.trees(self._tree_cache())  # parsed once per process, not per handle
            parts = path.split("/")
            for name in parts[:-1]:
                found = cache.view(tree, self._raw).get(name.encode())
                if found is None or _kind(found[0]) != "tree":
                    return None
                tree = found[1].hex()
            found = cache.view(tree, self._raw).get(parts[-1].encode())
            if found is None or _kind(found[0]) != "blob":
                return None
            oid = found[1].hex()
            return oid, self._raw(oid)
        entry = lookup(self.tree_of(commit), path)
        if entry is None or entry.kind != "blob":
            return None
        return entry.oid, self.blob(entry.oid)

    def blob(self, oid: str) -> bytes:
        """An object's bytes, read once, from the packs first.

        ``repo[oid].read_raw()`` looks the object up (reading it whole) and then
        reads it again, each time asking the loose-object guard (a Python call)
        first: ~10 µs of a ~100 µs read. Here a packed object is read from the
        handle's own pack backend (~7 µs against ~19 µs through the object
        database) and its id checked against its bytes, as libgit2's object
        database would; anything else (loose, in a pack this handle has not
        seen yet, damaged) is read through the object database as before,
        guard, rescan and errors included.
        """
        if len(oid) != 40:  # an abbreviated id: libgit2 resolves the prefix
            return bytes(self.repo[oid].read_raw())
        key = pygit2.Oid(hex=oid)
        packs = self._pack_backend()
        if packs is not None:
            try:
                kind, data = packs.read(key)
            except (KeyError, ValueError, pygit2.GitError):
                pass
            else:
                name = _OBJECT_NAMES.get(int(kind))
                if name is not None:
                    digest = hashlib.sha1(b"%s %d\x00" % (name, len(data)), usedforsecurity=False)
                    digest.update(data)
                    if digest.digest() == key.raw:
                        return bytes(data)
        return self.repo.odb.read(key)[1]

    def _pack_backend(self) -> Any:
        """The pack backend of this thread's handle (the object database asks it right after the guard)."""
        repo = self.repo
        local = self._local
        if getattr(local, "packs_of", None) is not repo:
            # open_repository adds the guard at priority 1000 to libgit2's pack (2) and loose (1)
            # backends of the repository's own objects; alternates come after those.
            backends = list(repo.odb.backends)
            local.packs = backends[1] if len(backends) >= 3 else None
            local.packs_of = repo
        return local.packs

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
        raw = self._recent().raw(tree_id)
        if raw is not None:
            return [
                (name.decode("utf-8", "replace"), _kind(mode), oid.hex())
                for name, (mode, oid) in packwrite.parse_tree(raw).items()
            ]
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

    def transact(
        self, plan: Callable[[Snapshot], Plan[R]], *, ref: str = MAIN, spec: spool.Spec | None = None
    ) -> Done[R]:
        """Run ``plan`` on the head and commit its edits with a CAS on ``ref`` (``main``).

        ``plan`` runs under the writer lock and may raise a store error to refuse
        the change, or return a plan without edits for a no-op. When a writer
        outside gitmem (a push, plain git) moved the ref in between, the plan is
        re-run on the new head: its checks decide again, so nothing is merged
        blindly. Another ``ref`` (a proposal branch) that does not exist yet is
        forked from ``main``: the plan sees main's head and the ref is created
        atomically. Returns the new commit (``None`` for a no-op) and the result
        of the plan that was committed.

        Changes to ``main`` from threads of this process that queue at the same
        time are committed together (:mod:`gitmem.git.group`): each plan runs on
        the head the one before it made, each is its own commit, and the chain
        lands as one pack and one ref update. A caller gets its own outcome.
        With ``spec`` (the plan as a picklable factory: ``spec(repo)`` returns
        it), a writer in another process may commit it (:mod:`gitmem.git.spool`).
        """
        if ref != MAIN or not self.pack_writes or not GROUP_COMMIT:
            return self._transact_alone(plan, ref)
        done: Done[R] = group.submit(self.path, plan, self._round, spec)
        return done

    def _transact_alone(self, plan: Callable[[Snapshot], Plan[R]], ref: str) -> Done[R]:
        fold = False
        try:
            with translate_errors(self.path), self.lock.hold():
                for _ in range(MAX_ATTEMPTS):
                    repo = self.fresh()
                    branch = None if ref == MAIN else read_ref(repo, ref)
                    head = self._head_in(repo) if branch is None else branch
                    pending = packwrite.PendingObjects() if self.pack_writes else None
                    snap = Snapshot(repo, head, pending, trees=self._tree_cache(), recent=self._recent())
                    chosen = plan(snap)
                    if not chosen.edits:
                        return Done(None, chosen.result)
                    if pending is not None and len(chosen.edits) > PACK_EDITS:
                        pending = None
                    author, committer, message = _signed(chosen)
                    if pending is not None:
                        tree_id = self._pack_trees(repo, snap, pending, chosen.edits)
                        raw = packwrite.commit_bytes(tree_id, [head], author, committer, message)
                        commit = pending.add(b"commit", raw)
                        packwrite.write_pack(self.path, pending, durable=_durable[0])
                    else:
                        commit = self._loose_commit(repo, snap, chosen, author, committer, message)
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
                        if pending is not None:
                            objects = ((oid, kind, raw) for oid, (kind, raw) in pending.objects.items())
                            self.recent.add(objects, [(commit, tree_id)])
                            fold = self._count_pack()
                        return Done(CommitId(commit), chosen.result)
        finally:
            if fold:
                self.start_fold()
        raise MemoryStoreError(
            "unavailable", f"{ref} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
        )

    def _round(self, requests: list[group.Request]) -> list[group.Request]:
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
            if CROSS_PROCESS and all(r.spec is not None for r in requests):
                own = spool.own_slot(self.path)
                published = own is not None and own.publish([r.spec for r in requests])
                if published and own is not None and own.wake_fd is not None:
                    return Wake(own.wake_fd, own.answered)
            return None

        def give_up() -> bool:
            return own is None or not published or own.withdraw()

        fold = False
        try:
            with translate_errors(self.path), self.lock.hold(on_wait=on_wait, give_up=give_up) as held:
                if own is not None and published:  # answered while we waited (no lock), or see whether we were
                    answers = own.collect(self.on_main)
                    if answers is not None:
                        for request, (value, error) in zip(requests, answers, strict=True):
                            request.finish(value, error)
                        return []
                assert held, "the writer lock ends a wait unheld only for an answered request"
                spool.at("round")
                left, fold = self._chain(requests)
                for _ in range(SPOOL_ROUNDS - 1):
                    if not (CROSS_PROCESS and spool.queued(self.path)):
                        break
                    # Requests published while our round ran: their writers are waiting on
                    # us anyway, and another round now saves each of them a round of its own.
                    more = self._chain([])[1]
                    fold = fold or more
                return left
        finally:
            if fold:
                self.start_fold()

    def _chain(self, requests: list[group.Request]) -> tuple[list[group.Request], bool]:
        """One round under the writer lock: ``requests`` and the spool's, as one chain; (left over, fold due)."""
        taken: list[spool.Taken] = []
        theirs: list[group.Request] = []
        settled_slots = False
        try:
            if CROSS_PROCESS:
                last = _last_taken.get(self.path, 0)
                if last:
                    spool.gather(self.path, last, GATHER)
                taken = spool.take(self.path, spool.own_slot(self.path, create=False), SPOOL_TAKE)
                _last_taken[self.path] = len(taken)
                theirs = [group.Request(spec(self)) for t in taken for spec in t.specs]
            everything = requests + theirs
            for _ in range(MAX_ATTEMPTS):
                repo = self.fresh()
                head: str = self._head_in(repo)
                trees = self._tree_cache()
                recent = self._recent()
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
                        with translate_errors(self.path):
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
                            tree_id = self._pack_trees(repo, snap, pending, chosen.edits)
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
                    taken, theirs, everything = [], [], requests
                    continue
                if loose is not None:
                    request, chosen, snap = loose
                    author, committer, message = _signed(chosen)
                    tip = self._loose_commit(repo, snap, chosen, author, committer, message)
                    chain, tip_tree = [(request, tip, chosen.result)], None
                elif chain:
                    packwrite.write_pack(self.path, pending, durable=_durable[0])
                if taken:
                    outcomes: dict[int, tuple[Any, BaseException | None]] = {}
                    for request, commit, result in chain:
                        outcomes[id(request)] = (Done(CommitId(commit), result), None)
                    for request, value, error in settled:
                        outcomes[id(request)] = (value, error)
                    at = iter(theirs)
                    for t in taken:
                        t.slot.settle(t.header, tip if chain else None, [outcomes[id(next(at))] for _ in t.specs])
                    settled_slots = bool(chain)
                spool.at("pending")
                if chain and not self._cas(repo, head, tip):
                    continue  # a writer outside gitmem moved main: every plan decides again
                spool.at("landed")
                if settled_slots:
                    for t in taken:
                        t.slot.mark("done")
                    settled_slots = False
                for t in taken:
                    t.slot.ring()
                if chain and loose is None:
                    recent.add(((oid, kind, raw) for oid, (kind, raw) in pending.objects.items()), made)
                mine = {id(r) for r in requests}
                for request, commit, result in chain:
                    if id(request) in mine:
                        request.finish(Done(CommitId(commit), result))
                for request, value, error in settled:
                    if id(request) in mine:
                        request.finish(value, error)
                return left, bool(chain) and loose is None and self._count_pack()
            raise MemoryStoreError(
                "unavailable", f"{MAIN} kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts); try again"
            )
        finally:
            if taken:
                if settled_slots:  # the round failed after its outcomes were written: did main move?
                    with suppress(MemoryStoreError, OSError, pygit2.GitError):
                        landed = self.on_main(taken[0].slot.header() or taken[0].header)
                        for t in taken:
                            t.slot.mark("done" if landed else "queued")
                            t.slot.ring()
                spool.release(taken)

    def on_main(self, header: spool.Header) -> bool:
        """Whether a spool slot's round tip is ``main`` or one of its ancestors."""
        if not header.tip:
            return False
        head = self.head()
        return head == header.tip or self.descendant_of(head, header.tip)

    def _pack_trees(
        self,
        repo: pygit2.Repository,
        snap: Snapshot,
        pending: packwrite.PendingObjects,
        edits: Sequence[tuple[str, str | None]],
    ) -> str:
        """The plan's edits applied to the snapshot's tree in memory; new trees go to ``pending``."""
        return packwrite.set_paths(snap.raw, pending, snap.tree_id, edits, self._tree_cache())

    def _loose_commit(
        self, repo: pygit2.Repository, snap: Snapshot, chosen: Plan[Any], author: bytes, committer: bytes, message: str
    ) -> str:
        """A big batch: main's grouped tree writes (each folder once) as loose objects."""
        if snap.pending is not None:
            for _kind, raw in snap.pending.objects.values():
                repo.create_blob(raw)
        tree_id = loosetrees.set_paths(repo, snap.tree, chosen.edits)
        raw = packwrite.commit_bytes(str(tree_id), [snap.head], author, committer, message)
        return str(repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw))

    def _tree_cache(self) -> packwrite.TreeCache:
        cache: packwrite.TreeCache | None = getattr(self._local, "trees", None)
        if cache is None:
            cache = self._local.trees = packwrite.TreeCache()
        return cache

    def _count_pack(self) -> bool:
        """Count the pack a commit just wrote; whether a fold is due. Writer lock held.

        The count lives in the writer lock's record (written at every take and
        release anyway), so a write never lists ``objects/pack``: it is the
        number of packs written since the last fold was started, and once it
        passes :data:`MAX_PACKS` a fold is started and it restarts from zero.
        The fold itself lists the folder, so packs a push or a foreign git
        added are folded too. If this process's last fold failed, the writer
        counts for real and, past :data:`HARD_MAX_PACKS`, folds before it returns.
        """
        count = self.lock.count + 1
        due = count > MAX_PACKS
        if due:
            count = 0
            if self.path in _folds_failed and packwrite.pack_count(self.path) > HARD_MAX_PACKS:
                due = False
                _folds_failed.discard(self.path)
                with suppress(MemoryStoreError, OSError, pygit2.GitError):
                    self.compact()
        self.lock.count = count
        return due

    def start_fold(self) -> None:
        """Fold packs in a background thread of this process; one running already folds once more after.

        The write that found the fold due has released the writer lock and
        returns at once; the fold takes only the fold lock (writers never wait
        for it). Back-pressure: when a fold is due a third time while one is
        still running (writes outpace folding, ``2 * MAX_PACKS`` packs written
        since it started), this write waits for the running fold, so the pack
        count stays bounded under any burst. At interpreter exit a running fold
        is waited for.
        """
        with _folds_guard:
            running = _folds.get(self.path)
            if running is None or not running.is_alive():
                running = None
                thread = threading.Thread(target=self._fold_quietly, name="gitmem-fold", daemon=True)
                _folds[self.path] = thread
                thread.start()
            elif self.path not in _folds_again:
                _folds_again.add(self.path)
                running = None
        if running is not None:
            running.join()

    def _fold_quietly(self) -> None:
        while True:
            # A fold never fails a write: a foreign gc racing it or a full disk only leaves
            # the packs as they are, and a later write starts another.
            try:
                self.compact()
            except (MemoryStoreError, OSError, pygit2.GitError):
                _folds_failed.add(self.path)
            with _folds_guard:
                if self.path not in _folds_again:
                    return
                _folds_again.discard(self.path)

    def settle(self) -> None:
        """Wait until a background fold this process started on this memory has finished."""
        with _folds_guard:
            running = _folds.get(self.path)
        if running is not None:
            running.join()

    def compact(self) -> None:
        """Fold the small per-commit packs together by git's geometric rule, under the fold lock.

        Each pack left holds at least twice the objects of all smaller ones
        together, so ``n`` objects live in about ``log2(n)`` packs, and a run
        copies only the small packs (amortised: each object is copied about
        ``log2(n)`` times over its life). The packs a run folded are deleted by
        a later run, at least a quarter second later (:func:`gitmem.git.packwrite.compact`).

        A fold reads only packs (which never change) and adds one, so it needs
        no writer lock and writers go on meanwhile. It holds the *fold lock*,
        which every operation that deletes objects or repacks (purge, forget,
        gc: :meth:`maintenance`) takes after the writer lock, so a fold can
        never put back objects a purge is deleting; the git child holds the
        fold lock too until it exits. When another process is folding (or a
        purge holds the lock) this fold waits and runs after it, so packs
        written since the other fold listed them are folded too.
        """
        with translate_errors(self.path), self.fold_lock.hold("fold"):
            self._fold()

    def _fold(self) -> None:
        def run(args: list[str], stdin: bytes) -> tuple[int, str]:
            done = cli.run_git(args, git_dir=self.path, stdin=stdin, pass_fds=(self.fold_lock.held_fd(),))
            return done.returncode, done.stdout

        if packwrite.compact(self.path, run):
            # libgit2 never forgets a pack it opened, even once deleted: every handle
            # reopens at its next call, so deleted packs' descriptors and disk space go.
            _bump(self._packs_path)
            self._local.repo = None

    @contextmanager
    def maintenance(self, op: str) -> Iterator[None]:
        """The writer lock and then the fold lock, for ``op`` (gc, purge, forget): nothing writes or folds meanwhile."""
        with self.lock.hold(op), self.fold_lock.hold(op):
            yield

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
    if os.path.isdir(spool.spool_dir(path)):
        # Its round may have written outcomes for other processes' requests: settle them
        # before anything (a forget included) can change main's history.
        repo = GitRepo(path)
        spool.recover(path, repo.on_main)


def _sig_bytes(sig: pygit2.Signature) -> bytes:
    """A signature as a commit header holds it (libgit2 checked and trimmed the name and e-mail)."""
    return packwrite.signature_line(sig.raw_name, sig.raw_email, sig.time, sig.offset)


def _signed(chosen: Plan[Any]) -> tuple[bytes, bytes, str]:
    """A plan's author and committer lines and its commit message."""
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    message = commit_message(
        chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra, summary=chosen.summary
    )
    return _sig_bytes(_author(chosen.origin)), _sig_bytes(committer), message


def _author(origin: Origin) -> pygit2.Signature:
    return pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
