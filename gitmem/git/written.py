"""What the latest commits wrote, kept so the next reads need not look for the new packs.

Every commit is one new pack (:mod:`gitmem.git.packwrite`), and libgit2 finds a
pack it has not seen only by listing ``objects/pack`` again when an object is
missing from the packs it knows, then opening and mapping the new index and
pack: ~0.3 ms on the benchmark machine, against ~0.1 ms for a whole read with
no write since. An agent edits as read, write, read another file, write, so
every read of the head paid it: the head's root tree is always in the newest
pack. Two ways round it, both measured on and off in ``bench/bench_readafter.py``:

- **In the writing process**, :class:`Written` keeps the objects of the last
  commits it made (it hashed them itself) and :meth:`Written.find` walks a path
  through them, handing over to libgit2 at the first folder or file an earlier
  commit holds (in a pack libgit2 already opened, most of the time).
- **In another process**, the writer leaves a copy of its commit's pack in
  :data:`LAST_PACK` before the ref moves (:func:`publish`), and a reader of a
  head it did not make reads that one file (:meth:`Written.adopt`): the pack's
  trailer and every object are checked against their hashes, and the copy is
  used only while the store still holds the pack it copies. A torn copy, one of
  another commit (a writer outside gitmem), a big pack: libgit2 reads as before.

A purge or forget deletes objects and changes the history mark: everything kept
under an older mark is dropped before it could be served.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
import zlib
from collections.abc import Mapping

from gitmem.errors import MemoryStoreError
from gitmem.localfile import open_private, read_local

LIMIT_OBJECTS = 4096
"""Objects kept at most (a commit of one file in a 3-deep folder adds five); past it the older half goes."""
LIMIT_BYTES = 8 << 20
"""Bytes of object content kept at most; past it the older half goes."""
ADOPT_BYTES = 1 << 16
"""Largest pack another process wrote that is read whole here (a commit's is a few KiB; a fold's is libgit2's)."""
_GLANCES = 4
"""Names looked up one by one in a kept tree (each answer kept); the next new name parses it whole."""
ADOPT_PACKS = 16
"""New packs read here at most at once; with more (a reader idle through many writes) libgit2 lists them."""
LAST_PACK = os.path.join("gitmem", "last-pack")
"""A copy of the latest commit's pack, left by its writer before the ref moves: a hint, checked like any input."""

_LENGTH = struct.Struct(">I")
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
        self._seen: set[bytes] = set()  # trailers of the LAST_PACK copies read here already
        self._parsed: dict[str, dict[bytes, tuple[bytes, bytes]]] = {}  # kept trees' entries, parsed once
        self._glanced: dict[str, dict[bytes, tuple[bytes, bytes] | None]] = {}  # names looked up in unparsed trees

    def add(self, objects: Mapping[str, tuple[bytes, bytes]], mark: Mark) -> None:
        """Keep a committed commit's ``objects`` (``id -> (type, raw)``), written under history ``mark``."""
        if not self.enabled:
            return
        with self._lock:
            kept = self._objects  # readers only look up: changed in place (one dict operation at a time)
            if self._mark != mark:
                kept, self._bytes = {}, 0
            for oid, (kind, raw) in objects.items():
                if oid not in kept:
                    kept[oid] = (kind, raw)
                    self._bytes += len(raw)
            if len(kept) > LIMIT_OBJECTS or self._bytes > LIMIT_BYTES:
                for old in list(kept)[: len(kept) // 2]:
                    self._bytes -= len(kept.pop(old)[1])
                self._parsed = {}
            if kept is not self._objects:
                self._parsed = {}
            self._objects, self._mark = kept, mark

    def raw(self, oid: str) -> bytes | None:
        found = self._objects.get(oid)
        return None if found is None else found[1]

    def object_under(self, oid: str, mark: Mark) -> tuple[bytes, bytes] | None:
        """A kept object's type and bytes, only while nothing was deleted since (history ``mark``); else ``None``."""
        return self._objects.get(oid) if mark == self._mark else None

    def raw_under(self, oid: str, mark: Mark) -> bytes | None:
        """:meth:`raw`, only while nothing was deleted since it was kept (history ``mark``): else libgit2's to read."""
        found = self.object_under(oid, mark)
        return None if found is None else found[1]

    def adopt(self, repo_path: str, mark: Mark, want: str) -> bool:
        """Keep the objects of the latest commit's pack, if it holds commit ``want``; whether it did.

        A commit another process made is in a pack this process has not seen.
        libgit2 finds it by listing ``objects/pack`` (~0.15 ms for a folder of a
        few hundred names on the benchmark machine), then opening and mapping its
        index and pack. Here the copy of that pack its writer left in
        :data:`LAST_PACK` is read instead (one small read), its trailer and every
        object checked against their hashes. A copy that is torn, damaged,
        deltified or of another commit (a writer outside gitmem moved the head)
        is left alone, and libgit2 reads as before.
        """
        held = read_local(os.path.join(repo_path, LAST_PACK), ADOPT_BYTES + _LENGTH.size)
        if held is None or len(held) < _LENGTH.size:
            return False
        pack = held[_LENGTH.size : _LENGTH.size + _LENGTH.unpack_from(held)[0]]
        if len(pack) < 32 or pack[-20:] in self._seen:
            return False
        # Only a copy of a pack the store still holds (a pack is named by its trailer): one that a
        # fold, gc or unpack removed since, or a copy of no pack at all, is not served from here.
        if not os.access(os.path.join(repo_path, "objects", "pack", f"pack-{pack[-20:].hex()}.idx"), os.F_OK):
            return False
        found = _small_pack(pack)
        if not found:
            return False
        if len(self._seen) > LIMIT_OBJECTS:
            self._seen = set()
        self._seen.add(pack[-20:])
        self.add(found, mark)
        return want in found

    def commit_tree(self, repo_path: str, commit: str, mark: Mark) -> str | None:
        """The tree id of ``commit``, another process's, from its pack's copy; ``None``: libgit2's to read.

        Asked once per head this process did not make (its tree id is remembered after).
        """
        raw = self.raw(commit)
        if raw is None:
            if not self.adopt(repo_path, mark, commit):
                return None
            raw = self.raw(commit)
        if raw is None or not raw.startswith(b"tree ") or len(raw) < 46:
            return None
        return raw[5:45].decode("ascii", "replace")

    def clear(self) -> None:
        with self._lock:
            self._objects, self._bytes, self._mark, self._parsed = {}, 0, None, {}

    def holds(self, oid: str) -> bool:
        return oid in self._objects

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
        parsed, glanced = self._parsed, self._glanced
        if len(glanced) > LIMIT_OBJECTS:
            glanced.clear()
        names = path.split("/")
        oid = tree
        last = len(names) - 1
        for depth, name in enumerate(names):
            found = objects.get(oid)
            if found is None:
                return ("tree", oid, "/".join(names[depth:]))
            entries = parsed.get(oid)
            key = name.encode()
            if entries is not None:
                entry = entries.get(key)
            else:  # a new tree (the head's root after every write) is walked a few times: one entry looked up
                looked = glanced.get(oid)
                if looked is None:
                    looked = glanced[oid] = {}
                if key in looked:
                    entry = looked[key]
                elif len(looked) >= _GLANCES:  # many names asked of it: parsed whole, once
                    entry = parsed.setdefault(oid, _parse(found[1])).get(key)
                else:
                    entry = looked[key] = _entry(found[1], key)
            if entry is None:
                return _GONE
            mode, oid = entry[0], entry[1].hex()
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


def publish(repo_path: str, pack: bytes) -> None:
    """Put the latest commit's ``pack`` in :data:`LAST_PACK` too (rewritten in place; never fails a write).

    Another process reading the new head reads this one file instead of listing
    the pack folder and opening the new pack (:meth:`Written.adopt`). The file is
    the pack's length (4 bytes) and the pack, overwritten in place (what lies past
    the length is an older copy's tail); a pack over :data:`ADOPT_BYTES` is
    published as length 0. A reader that meets the file mid-rewrite finds its
    hash wrong and reads through libgit2.
    """
    data = _LENGTH.pack(len(pack)) + pack if len(pack) <= ADOPT_BYTES else _LENGTH.pack(0)
    try:
        fd = open_private(os.path.join(repo_path, LAST_PACK), os.O_WRONLY | os.O_CREAT)
    except (OSError, MemoryStoreError):
        return
    try:
        os.pwrite(fd, data, 0)  # never truncated: freeing and allocating blocks per commit cost ~2 ms on root
    except OSError:
        pass
    finally:
        os.close(fd)


_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}


def _small_pack(pack: bytes) -> dict[str, tuple[bytes, bytes]] | None:
    """Every object of ``pack`` (id to type and bytes), or ``None`` unless sound and undeltified.

    No index is needed: the entries are read in order, each id is the hash of
    its bytes, and the pack's own trailer (the hash of all before it) is checked.
    """
    if len(pack) < 32 or pack[:8] != b"PACK\x00\x00\x00\x02":
        return None
    body = memoryview(pack)[:-20]
    if hashlib.sha1(body, usedforsecurity=False).digest() != pack[-20:]:
        return None  # torn or damaged
    count = struct.unpack_from(">I", pack, 8)[0]
    found: dict[str, tuple[bytes, bytes]] = {}
    pos, end = 12, len(pack) - 20
    for _ in range(count):
        if pos >= end:
            return None
        byte = pack[pos]
        kind = _TYPES.get((byte >> 4) & 7)
        size, shift = byte & 0x0F, 4
        while byte & 0x80 and pos + 1 < end:
            pos += 1
            byte = pack[pos]
            size |= (byte & 0x7F) << shift
            shift += 7
        if kind is None:
            return None  # a delta: libgit2 resolves it
        stream = zlib.decompressobj()
        try:
            raw = stream.decompress(body[pos + 1 :], size + 1)
        except zlib.error:
            return None
        if len(raw) != size or not stream.eof:
            return None
        pos = end - len(stream.unused_data)
        digest = hashlib.sha1(b"%s %d\x00" % (kind, size), usedforsecurity=False)
        digest.update(raw)
        found[digest.hexdigest()] = (kind, raw)
    return found if pos == end else None


_ENTRIES = re.compile(rb"([0-7]{5,6}) ([^\x00]+)\x00(.{20})", re.DOTALL)
_TILED = re.compile(rb"(?:[0-7]{5,6} [^\x00]+\x00.{20})*", re.DOTALL)
_MODE = re.compile(rb"[0-7]{5,6}")


def _entry(raw: bytes, name: bytes) -> tuple[bytes, bytes] | None:
    """The ``(mode, 20-byte id)`` of ``name`` in a raw tree, found without parsing the rest (~4 µs against ~19).

    ``name`` between a space and a NUL is looked for as bytes; a hit counts only
    where an entry starts, i.e. where the entries before it tile the tree from
    its start (one ``fullmatch`` in C): the same entry :func:`_parse` finds, and
    none inside a name or an id.
    """
    needle = b" " + name + b"\x00"
    at = raw.find(needle)
    while at >= 0:
        end = at + len(needle)
        if end + 20 <= len(raw):
            for start in (at - 5, at - 6):
                if start >= 0 and _MODE.fullmatch(raw, start, at) and _TILED.fullmatch(raw, 0, start):
                    return raw[start:at], raw[end : end + 20]
        at = raw.find(needle, at + 1)
    return None


def _parse(raw: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw tree's entries, name to ``(mode, 20-byte id)``, parsed by one regular expression.

    The matches must tile the tree exactly (each entry starts where the last one's
    id ended); a tree that does not is parsed entry by entry, as git lays it out.
    """
    found = _ENTRIES.findall(raw)
    if sum(len(mode) + len(name) for mode, name, _ in found) + 22 * len(found) == len(raw):
        return {name: (mode, oid) for mode, name, oid in found}
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    pos, end = 0, len(raw)
    find = raw.find
    while pos < end:
        space = find(b" ", pos)
        nul = find(b"\x00", space)
        if space < 0 or nul < 0 or nul + 21 > end:
            break  # damaged: what parsed so far stands, the rest is libgit2's to refuse
        entries[raw[space + 1 : nul]] = (raw[pos:space], raw[nul + 1 : nul + 21])
        pos = nul + 21
    return entries
