"""What this process just committed, kept so its next reads need not look for the new packs.

Every commit is one new pack (:mod:`gitmem.git.packwrite`), and libgit2 finds a
pack it has not seen only by listing ``objects/pack`` again when an object is
missing from the packs it knows, then opening and mapping the new index and
pack: ~0.3 ms on the benchmark machine, against ~0.03 ms for a whole read of
a file from packs already open. An agent edits as read, write, read another
file, write, so every read of the head paid it: the head's root tree is always
in the newest pack. The writer made those objects a moment ago and has their
bytes in memory; :class:`Written` keeps the objects of the last commits this
process made, and :meth:`Written.find` walks a path through them, handing over
to libgit2 at the first folder or file that an earlier commit holds (in a
pack libgit2 already opened, most of the time).

Only commits this process made are walked (their tree ids are known because
it wrote them), and the objects are the ones it hashed itself, so nothing read
here can differ from what libgit2 would read. A purge or forget deletes
objects and changes the history mark: everything kept under an older mark is
dropped before it could be served.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

LIMIT_OBJECTS = 4096
"""Objects kept at most (a commit of one file in a 3-deep folder adds five); past it the older half goes."""
LIMIT_BYTES = 8 << 20
"""Bytes of object content kept at most; past it the older half goes."""

_TREE = b"40000"
_FILES = (b"100644", b"100755")

Mark = tuple[int, int]


class Written:
    """Objects (id to type and raw bytes) of the last commits this process made, under one history mark.

    Shared by every thread of a :class:`gitmem.git.repo.GitRepo`: writers add
    under the writer lock (one at a time), readers only look up.
    """

    def __init__(self) -> None:
        self.enabled = True
        self._objects: dict[str, tuple[bytes, bytes]] = {}
        self._bytes = 0
        self._mark: Mark | None = None
        self._lock = threading.Lock()

    def add(self, objects: Mapping[str, tuple[bytes, bytes]], mark: Mark) -> None:
        """Keep a committed commit's ``objects`` (``id -> (type, raw)``), written under history ``mark``."""
        if not self.enabled:
            return
        with self._lock:
            kept = self._objects
            if self._mark != mark:
                kept, self._bytes = {}, 0
            else:
                kept = dict(kept)  # readers keep the dict they took: a new one replaces it
            for oid, (kind, raw) in objects.items():
                if oid not in kept:
                    kept[oid] = (kind, raw)
                    self._bytes += len(raw)
            if len(kept) > LIMIT_OBJECTS or self._bytes > LIMIT_BYTES:
                for old in list(kept)[: len(kept) // 2]:
                    self._bytes -= len(kept.pop(old)[1])
            self._objects, self._mark = kept, mark

    def clear(self) -> None:
        with self._lock:
            self._objects, self._bytes, self._mark = {}, 0, None

    def find(self, tree: str, path: str, mark: Mark | None) -> Found | None:
        """Walk ``path`` from root ``tree`` through the kept objects; ``None``: the root is not kept, ask libgit2.

        Where the walk ends: ``("blob", id, bytes)``, a file found here;
        ``("file", id, None)``, a file whose blob an earlier commit holds;
        ``("tree", id, rest)``, a folder on the way that an earlier commit holds,
        ``rest`` still to look up under it; ``("gone", "", None)``, nothing there
        (or a folder, link or submodule where a file was asked for).
        """
        objects = self._objects
        if mark != self._mark or tree not in objects:
            return None
        names = path.split("/")
        oid = tree
        last = len(names) - 1
        for depth, name in enumerate(names):
            found = objects.get(oid)
            if found is None:
                return ("tree", oid, "/".join(names[depth:]))
            entry = _entry(found[1], name.encode())
            if entry is None:
                return _GONE
            mode, oid = entry
            if depth == last:
                if mode not in _FILES:
                    return _GONE
                blob = objects.get(oid)
                return ("blob", oid, blob[1]) if blob is not None else ("file", oid, None)
            if mode != _TREE:
                return _GONE
        return _GONE


Found = tuple[str, str, "bytes | str | None"]
_GONE: Found = ("gone", "", None)


def _entry(raw: bytes, name: bytes) -> tuple[bytes, str] | None:
    """``(mode, hex id)`` of entry ``name`` of raw tree ``raw``, or ``None``; stops at the entry's place."""
    pos, end = 0, len(raw)
    find = raw.index
    while pos < end:
        space = find(b" ", pos)
        nul = find(b"\x00", space)
        if raw[space + 1 : nul] == name:
            return raw[pos:space], raw[nul + 1 : nul + 21].hex()
        pos = nul + 21
    return None
