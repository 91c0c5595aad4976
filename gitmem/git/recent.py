"""The objects this process committed lately, kept in memory, so reading them back needs no pack rescan.

Each commit lands as a new pack (:mod:`gitmem.git.packwrite`). libgit2 finds a
pack it has not seen only after a miss, by listing ``objects/pack`` again and
checking every index in it (about 3 µs per pack; the live packs plus those folded
in the last quarter second). A
read right after a write asks exactly for those new objects: the head commit and
the trees on the written path. Here the writer keeps the raw objects of its last
rounds, so such a read parses them in Python instead, and libgit2 is asked only
for older objects, which it finds in packs it already knows.

Ids name content, so an entry can never be stale; it only stops being
*allowed* once a purge or forget erased history, which the caller detects with
the repository's history mark (:meth:`RecentObjects.check`) and drops everything.
Bounded by bytes; the oldest round goes first. Per process and repository path.

The trees such a read walks are parsed once per process, not once per handle
(:meth:`RecentObjects.trees`): each thread's handle keeps its own parsed trees,
but a new handle (a new store, another thread, the reopen after a purge) starts
with none, and parsing a folder in Python costs ~2 µs an entry, where
libgit2 parses in C: a fresh handle's first read of ``a/b/c.md`` in the
writing process took 1.5-1.9x what it took on the same memory through libgit2
(``docs/benchmarks.md``, "Reads after 100k writes").
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

from gitmem.git.treeedit import TreeCache, parse_tree

Entries = dict[bytes, tuple[bytes, bytes]]

PARSED_LIMIT = 1024
"""Parsed trees kept per repository for every handle of the process (a 50-file folder's is ~10 KB)."""

LIMIT_BYTES = 4 * 1024 * 1024
"""Raw object bytes kept per repository (a write of a note in a 10k-file memory makes ~4 KB)."""


class RecentObjects:
    """Raw objects by id, and the tree of each commit, from this process's latest commits."""

    def __init__(self, limit: int = LIMIT_BYTES) -> None:
        self.limit = limit
        self._objects: OrderedDict[str, bytes] = OrderedDict()
        self._trees: dict[str, str] = {}  # commit id -> its tree id
        self._read_trees: dict[str, str] = {}  # the same, for commits read from disk (see read_tree_of)
        self._size = 0
        self._parsed: dict[str, Entries] = {}  # tree id -> its entries, shared by every handle (read only)
        self._mark: object = None
        self._guard = threading.Lock()

    def check(self, mark: object) -> None:
        """Drop everything when ``mark`` (the history mark) changed: objects may have been erased."""
        if mark != self._mark:
            with self._guard:
                self._objects.clear()
                self._trees.clear()
                self._read_trees.clear()
                self._parsed.clear()
                self._size = 0
                self._mark = mark

    def add(self, objects: Mapping[str, tuple[bytes, bytes]], commits: Iterable[tuple[str, str]]) -> None:
        """Remember the objects (id -> (kind, raw)) and ``(commit, tree)`` pairs of a commit that landed."""
        with self._guard:
            known = self._objects
            size = self._size
            for oid, (_kind, raw) in objects.items():
                if oid not in known:
                    known[oid] = raw
                    size += len(raw)
            self._trees.update(commits)
            if size > self.limit:
                popitem = known.popitem
                while size > self.limit and known:
                    size -= len(popitem(last=False)[1])
            self._size = size
            if len(self._trees) > 4096:
                self._trees.clear()

    def raw(self, oid: str) -> bytes | None:
        return self._objects.get(oid)

    def read_tree_of(self, commit: str) -> str | None:
        """The tree id of a commit read before (:meth:`learn_tree`), or of one this process made.

        A commit never changes, but reading one to find its tree costs more than
        the rest of a read when its message is long (a batch's commit names
        every path it changed) and libgit2 does not cache objects over 4 KiB.
        Forgotten with everything else when the history mark moves.
        """
        return self._read_trees.get(commit) or self._trees.get(commit)

    def learn_tree(self, commit: str, tree: str) -> None:
        with self._guard:
            if len(self._read_trees) >= 4096:
                self._read_trees.clear()
            self._read_trees[commit] = tree

    def tree_of(self, commit: str) -> str | None:
        """The tree id of a commit this process made (if remembered), without reading the commit."""
        tree = self._trees.get(commit)
        return tree if tree is not None and tree in self._objects else None

    def trees(self, local: TreeCache) -> TreeViews:
        """Parsed trees for a read by a handle whose own parsed trees are ``local``."""
        return TreeViews(local, self)

    def parsed(self, oid: str, read: Callable[[str], bytes]) -> Entries:
        """Tree ``oid``'s entries, parsed by whichever handle of the process asked first (never edit them)."""
        found = self._parsed.get(oid)
        if found is None:
            found = parse_tree(read(oid))
            with self._guard:
                if len(self._parsed) >= PARSED_LIMIT:
                    for old in list(self._parsed)[: PARSED_LIMIT // 2]:  # the longest kept
                        del self._parsed[old]
                self._parsed[oid] = found
        return found


class TreeViews:
    """A read's trees: the handle's own parsed ones (what its writes built), else the process's (:meth:`RecentObjects.parsed`)."""

    __slots__ = ("_local", "_recent")

    def __init__(self, local: TreeCache, recent: RecentObjects) -> None:
        self._local = local
        self._recent = recent

    def view(self, oid: str, read: Callable[[str], bytes]) -> Entries:
        found = self._local.trees.get(oid)
        return found if found is not None else self._recent.parsed(oid, read)


_registry: dict[tuple[int, str], RecentObjects] = {}
_registry_guard = threading.Lock()


def recent_for(path: str) -> RecentObjects:
    """The recent objects of the repository at ``path`` in this process (a forked child starts empty)."""
    key = (os.getpid(), path)
    with _registry_guard:
        found = _registry.get(key)
        if found is None:
            found = _registry[key] = RecentObjects()
        return found
