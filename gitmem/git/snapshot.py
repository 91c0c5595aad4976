"""What a writer sees and decides on: the head's snapshot, a plan, its outcome, and error translation.

:class:`Snapshot` is the head of a ref as a plan sees it under the writer lock
(:mod:`gitmem.git.engine`), :class:`Plan` what the plan decided, :class:`Done`
what the commit came to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import decode_stored
from gitmem.git.loose import raise_if_corrupt, take_corruption
from gitmem.model import BlobVersion, CommitId, FileText, Origin
from gitmem.store import file_dir_conflict

if TYPE_CHECKING:  # the tree editor is a write's: reads (log, blame, diff) never load it
    from gitmem.git import treeedit

FILE_MODES = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
TREE_MODE = pygit2.GIT_FILEMODE_TREE

T = TypeVar("T")
R = TypeVar("R")


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
        elif isinstance(exc, (pygit2.GitError, OSError, KeyError, ValueError, IndexError, SystemError)):
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
    pack (:mod:`gitmem.git.packwrite`) instead of becoming loose files. Lookups
    read the raw trees (from ``pending`` or the repository) through ``trees``,
    the writer's cache of parsed trees, so consecutive writes parse a folder once.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        head: str,
        pending: treeedit.PendingObjects | None = None,
        *,
        tree: str | None = None,
        trees: treeedit.TreeCache | None = None,
    ) -> None:
        self._repo = repo
        self.head = head
        self.pending = pending
        self.tree_id = tree if tree is not None else str(repo[head].peel(pygit2.Commit).tree_id)
        if trees is None:
            from gitmem.git.treeedit import TreeCache

            trees = TreeCache()
        self._trees = trees
        self._folders: dict[str, str | None] = {"": self.tree_id}

    @property
    def handle(self) -> pygit2.Repository:
        """The libgit2 handle this snapshot reads through (the writer's, opened under the lock)."""
        return self._repo

    @property
    def tree(self) -> pygit2.Tree:
        """The head's tree as libgit2 reads it (only for a head that is on disk)."""
        return self._repo[self.tree_id].peel(pygit2.Tree)

    def raw(self, oid: str) -> bytes:
        if self.pending is not None:
            found = self.pending.raw(oid)
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
        return None if found is None else Entry(kind_of(found[0]), found[1].hex())

    def _folder(self, folder: str) -> str | None:
        if folder in self._folders:
            return self._folders[folder]
        parent, _, name = folder.rpartition("/")
        above = self._folder(parent)
        found = self._entries(above).get(name.encode()) if above is not None else None
        tree = found[1].hex() if found is not None and kind_of(found[0]) == "tree" else None
        self._folders[folder] = tree
        return tree

    def files(self) -> Iterator[tuple[str, str]]:
        """Every regular file as ``(path, blob id)``, in git's order."""
        if self.pending is None or self.pending.raw(self.head) is None:
            return walk_files(self.tree)
        return self._walk(self.tree_id, "")

    def _walk(self, tree_id: str, prefix: str) -> Iterator[tuple[str, str]]:
        entries = self._entries(tree_id)
        from gitmem.git.treeedit import entry_order

        for name, (mode, oid) in sorted(entries.items(), key=entry_order):
            kind = kind_of(mode)
            if kind == "tree":
                yield from self._walk(oid.hex(), f"{prefix}{name.decode('utf-8', 'surrogateescape')}/")
            elif kind == "blob":
                yield f"{prefix}{name.decode('utf-8', 'surrogateescape')}", oid.hex()

    def write_blob(self, data: bytes) -> BlobVersion:
        if self.pending is not None:
            return BlobVersion(self.pending.add(b"blob", data))
        return BlobVersion(str(self._repo.create_blob(data)))


def kind_of(mode: bytes) -> str:
    """An entry's kind from its raw tree mode, as :func:`lookup` tells it from libgit2's."""
    if mode in (b"100644", b"100755"):  # gitmem.git.treeedit.FILE_MODES, as stored
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
    if mode in FILE_MODES:
        return Entry("blob", str(obj.id))
    if mode == TREE_MODE:
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
        if mode == TREE_MODE:
            assert isinstance(obj, pygit2.Tree)
            yield from walk_file_ids(obj, f"{prefix}{obj.name}/")
        elif mode in FILE_MODES:
            yield f"{prefix}{obj.name}", obj.id


_TEXT_SLOT: Any = FileText.__dict__["text"]  # the slot behind FileText.text, which StoredFile fills on first use


class StoredFile(FileText):
    """A file at a head whose text is read and decoded on first use.

    Deciding a batch compares versions; only a refusal (which hands the caller
    the file, as a plain :class:`FileText`) or a size limit needs the text. A
    prune of 10,000 items read 10,000 blobs for nothing before this.
    """

    __slots__ = ("_snap",)
    _snap: Snapshot

    def __init__(self, path: str, version: str, snap: Snapshot) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "_snap", snap)

    @property
    def text(self) -> str:  # type: ignore[override]  # FileText's fields are read-only at run time
        try:
            return str(_TEXT_SLOT.__get__(self))
        except AttributeError:
            text = decode_stored(self._snap.raw(self.version))
            _TEXT_SLOT.__set__(self, text)
            return text

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled (a worker process's answer) it is a plain file.
        return (FileText, (self.path, self.text, self.version))


def stored_file(snap: Snapshot, path: str) -> FileText | None:
    """The file at ``path`` in ``snap`` as a write sees it (``None``: none), its text read only when used
    (:class:`StoredFile`). A symbolic link or submodule (pushed with plain git) is no memory file, yet a
    write must not silently replace it: that is ``invalid_path``."""
    entry = snap.get(path)
    if entry is None or entry.kind == "tree":
        return None
    if entry.kind != "blob":
        raise MemoryStoreError("invalid_path", f"{path} holds a symbolic link or submodule; remove it with git")
    return StoredFile(path, entry.oid, snap)


def check_shape(snap: Snapshot, path: str) -> None:
    """Refuse a new file where a folder is, or below a file."""
    entry = snap.get(path)
    if entry is not None and entry.kind == "tree":
        raise file_dir_conflict(path, is_file=False)
    parts = path.split("/")
    for i in range(1, len(parts)):
        above = snap.get("/".join(parts[:i]))
        if above is not None and above.kind != "tree":
            raise file_dir_conflict(path, is_file=True)


def blob_size(snap: Snapshot, size_of: Callable[[str], int], oid: str) -> int:
    """A blob's size, from ``snap``'s objects not yet on disk first (an earlier change of a group wrote it),
    else ``size_of`` (a store's cached size, which reads the repository)."""
    raw = snap.pending.raw(oid) if snap.pending is not None else None
    return len(raw) if raw is not None else size_of(oid)
