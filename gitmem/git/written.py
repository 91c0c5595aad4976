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
- **In another process**, the writer leaves a copy of its commit's objects in
  :data:`LAST_PACK` before the ref moves (:func:`publish`), not deflated, and a
  reader of a head it did not make reads that one file (:meth:`Written.adopt`):
  each object is kept under the id its bytes hash to, and the copy is used only
  while the store still holds the pack it copies. A torn copy, one of another
  commit (a writer outside gitmem), a big commit: libgit2 reads as before.

A purge or forget deletes objects and changes the history mark: everything kept
under an older mark is dropped before it could be served.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
from collections.abc import Mapping
from contextlib import suppress

from gitmem.errors import MemoryStoreError
from gitmem.localfile import open_local_stat, open_private

LIMIT_OBJECTS = 4096
"""Objects kept at most (a commit of one file in a 3-deep folder adds five); past it the older half goes."""
LIMIT_BYTES = 8 << 20
"""Bytes of object content kept at most; past it the older half goes."""
ADOPT_BYTES = 1 << 16
"""Largest copy of a commit's objects another process wrote that is read here (a commit's is a few KiB)."""
_GLANCES = 4
"""Names looked up one by one in a kept tree (each answer kept); the next new name parses it whole."""
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
        """Keep the objects of the latest commit's copy, if it holds commit ``want``; whether it did.

        A commit another process made is in a pack this process has not seen.
        libgit2 finds it by listing ``objects/pack`` (~0.15 ms for a folder of a
        few hundred names on the benchmark machine), then opening and mapping its
        index and pack. Here the copy of that commit's objects its writer left in
        :data:`LAST_PACK` is read instead (one small read), every object kept
        under the id its bytes hash to. A copy that is torn, damaged or of
        another commit (a writer outside gitmem moved the head) is left alone,
        and libgit2 reads as before.
        """
        held = _read_copy(os.path.join(repo_path, LAST_PACK))
        if held is None or len(held) < _LENGTH.size + _HEAD:
            return False
        body = held[_LENGTH.size : _LENGTH.size + _LENGTH.unpack_from(held)[0]]
        if len(body) < _HEAD or body[:4] != _MAGIC or body[4:_HEAD] in self._seen:
            return False
        # Only a copy of a pack the store still holds (a pack is named by its trailer): one that a
        # fold, gc or unpack removed since, or a copy of no pack at all, is not served from here.
        if not os.access(os.path.join(repo_path, "objects", "pack", f"pack-{body[4:_HEAD].hex()}.idx"), os.F_OK):
            return False
        found = _copied_objects(body)
        if not found:
            return False
        if len(self._seen) > LIMIT_OBJECTS:
            self._seen = set()
        self._seen.add(body[4:_HEAD])
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

    def find(self, tree: str, path: str, mark: Mark | None, known: Mapping[str, Entries] | None = None) -> Found | None:
        """Walk ``path`` from root ``tree`` through the kept objects; ``None``: the root is not kept, ask libgit2.

        ``known``: trees already parsed by id (the writer's tree cache holds every
        tree it made and every folder it edited), looked in before any kept tree
        is searched and walked through even when not kept here.

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
            entries = parsed.get(oid) if known is None else known.get(oid) or parsed.get(oid)
            key = name.encode()
            if entries is not None:
                entry = entries.get(key)
            else:  # a new tree (the head's root after every write) is walked a few times: one entry looked up
                found = objects.get(oid)
                if found is None:
                    return ("tree", oid, "/".join(names[depth:]))
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
Entries = dict[bytes, tuple[bytes, bytes]]
"""A parsed tree: name to ``(mode, 20-byte id)``."""
_GONE: Found = ("gone", "", None)


def publish(repo_path: str, pack: bytes, objects: Mapping[str, tuple[bytes, bytes]]) -> None:
    """Put the latest commit's ``objects`` (of ``pack``) in :data:`LAST_PACK` (rewritten in place; never fails a write).

    Another process reading the new head reads this one file instead of listing
    the pack folder and opening the new pack (:meth:`Written.adopt`). The file is
    the length of what follows (4 bytes), a tag, the pack's name (its trailer)
    and each object as its type, length and bytes, not deflated: the reader
    hashes each one (it must, to know its id) and inflates none. It is
    overwritten in place (what lies past the length is an older copy's tail); a
    commit over :data:`ADOPT_BYTES` is published as length 0. A reader that meets
    the file mid-rewrite finds the commit it wants missing (or an object under
    another id) and reads through libgit2.
    """
    parts = [_MAGIC, pack[-20:]]
    for kind, raw in objects.values():
        parts.append(_OBJECT.pack(_CODES[kind], len(raw)))
        parts.append(raw)
    body = b"".join(parts)
    data = _LENGTH.pack(len(body)) + body if len(body) <= ADOPT_BYTES else _LENGTH.pack(0)
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


def withdraw(repo_path: str) -> None:
    """Delete :data:`LAST_PACK`: objects were erased (a purge or forget), and the copy may hold them.

    A reader never serves a copy whose pack is gone, but the bytes would stay
    on disk beside a store that no longer holds them; the next commit writes a new one.
    """
    with suppress(FileNotFoundError):
        os.unlink(os.path.join(repo_path, LAST_PACK))


_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_CODES = {kind: code for code, kind in _TYPES.items()}
_MAGIC = b"GMO1"
_HEAD = 24  # the tag and the pack's name
_OBJECT = struct.Struct(">BI")


def _read_copy(path: str) -> bytes | None:
    """The copy's bytes (at most what :data:`ADOPT_BYTES` allows), in one read; ``None`` if it is no regular file."""
    try:
        fd, st = open_local_stat(path)
    except OSError:
        return None
    try:
        return os.read(fd, min(st.st_size, ADOPT_BYTES + _LENGTH.size))
    except OSError:
        return None
    finally:
        os.close(fd)


def _copied_objects(body: bytes) -> dict[str, tuple[bytes, bytes]] | None:
    """Every object of a copy's ``body`` (id to type and bytes), each id the hash of its bytes; ``None`` if malformed.

    No id is taken from the file: an object stands under the id its bytes hash
    to, so a damaged or planted copy can add no object that lies about its id.
    """
    found: dict[str, tuple[bytes, bytes]] = {}
    pos, end = _HEAD, len(body)
    unpack = _OBJECT.unpack_from
    while pos < end:
        if pos + _OBJECT.size > end:
            return None
        code, size = unpack(body, pos)
        kind = _TYPES.get(code)
        pos += _OBJECT.size
        if kind is None or pos + size > end:
            return None
        raw = body[pos : pos + size]
        pos += size
        digest = hashlib.sha1(b"%s %d\x00" % (kind, size), usedforsecurity=False)
        digest.update(raw)
        found[digest.hexdigest()] = (kind, raw)
    return found


_ENTRIES = re.compile(rb"([0-7]{5,6}) ([^\x00]+)\x00(.{20})", re.DOTALL)
_TILED = re.compile(rb"(?:[0-7]{5,6}+ [^\x00]++\x00.{20})*+", re.DOTALL)  # possessive: a miss fails fast
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
            starts = (at - 6, at - 5) if raw[at - 6 : at - 5] == b"1" else (at - 5, at - 6)  # a file's mode: 6 digits
            for start in starts:
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
