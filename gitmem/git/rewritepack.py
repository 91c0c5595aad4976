"""The objects ``forget`` rewrites, built as raw git objects and written as one delta-compressed pack.

:mod:`gitmem.git.rewrite` decides *what* is rewritten (which commits hold the
erased path, which refs move); this module makes the new bytes (a tree without
one entry, a commit with a new tree and parents, a tag pointing at the new
commit) and serialises them as one pack with its index.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import zlib
from collections.abc import Sequence

import pygit2

from gitmem.git import packfold
from gitmem.git.erasurenames import NameScrub
from gitmem.git.loose import pack_backend
from gitmem.git.packwrite import deflate, entry_header, store_tree

_COMMIT, _TREE, _TAG = 1, 2, 4
_TYPE_NAMES = {_COMMIT: b"commit", _TREE: b"tree", _TAG: b"tag"}


class PackedFirst:
    """Raw object bytes by hex id: from the repository's own packs first, else through its guarded database.

    forget reads every commit and every root tree of the history once or
    twice (300,000 reads at 100k commits). Through the repository's object
    database each read first asks :class:`gitmem.git.loose.LooseGuard` (a
    Python callback and an ``access()`` call) before libgit2 looks in the
    packs, which made a read ~2.5x as slow as asking the packs directly. The
    guard exists for loose files cut short, which a packed object is not.
    """

    def __init__(self, r: pygit2.Repository) -> None:
        self._odb = r.odb
        self._pack = pack_backend(os.path.join(r.path, "objects"))

    def __call__(self, oid: str) -> bytes:
        if self._pack is not None:
            try:
                return bytes(self._pack.read(oid)[1])
            except KeyError:
                pass  # loose, or behind an alternate
        return bytes(self._odb.read(oid)[1])


class RewrittenObjects:
    """Rewritten trees, commits and tags, built as raw git objects and written as one pack.

    Writing thousands of loose objects one file at a time dominated forget's
    cost, and every one of them is repacked by the prune that follows anyway.
    So new objects are serialised here (git's own byte formats, edited in
    place: an entry removed from a tree, the ``tree``/``parent`` lines of a
    commit replaced, every other header and the message kept byte for byte)
    and written as one pack with its index (the ids are known here, so
    ``git index-pack`` would only hash every object again). A commit's
    ``gpgsig`` is dropped: it cannot sign the rewritten content.

    The pack is compressed and each rewritten tree is stored as a delta against
    the tree rewritten before it at the same path (its parent commit's, as
    ``git fast-import`` does), because the prune's repack copies both as they
    are: it reuses a packed object's bytes, and never searches deltas between
    two whole objects of one pack (it takes them as already tried). Stored
    whole and uncompressed, the rewritten trees and commits left a pack 3.5x
    the size of what ``git filter-repo`` leaves at 100k commits.
    """

    def __init__(self, r: pygit2.Repository) -> None:
        self._r = r
        self._read = PackedFirst(r)
        self._new: dict[str, tuple[int, bytes, str | None]] = {}
        """Each new object: its type, its bytes, and the new object it is a delta against (if any)."""
        self._depth: dict[str, int] = {}
        self._last_at: dict[bytes, str] = {}
        """The tree rewritten last at each folder path: the next one's delta base."""
        self._trees: dict[tuple[str, str], str] = {}
        self.made_unreachable = False
        """Whether a tree was cut from a tree made here: the first is then in no commit."""
        self.erased_blobs: set[str] = set()
        self.erased_files: set[str] = set()
        """The paths under an erased folder (its files and folders): scrubbed from messages as well."""

    def _add(self, kind: int, raw: bytes, at: bytes | None = None) -> str:
        """Keep a new object; a tree (``at``: its folder path) is based on the last one there."""
        oid = hashlib.sha1(b"%s %d\x00" % (_TYPE_NAMES[kind], len(raw)) + raw, usedforsecurity=False).hexdigest()
        if oid in self._new:
            return oid
        base = None if at is None else self._last_at.get(at)
        if base is not None and self._depth[base] >= MAX_DEPTH:
            base = None  # a chain as deep as git's own packs allow: start a new one
        self._new[oid] = (kind, raw, base)
        self._depth[oid] = 0 if base is None else self._depth[base] + 1
        if at is not None:
            self._last_at[at] = oid
        return oid

    def _raw(self, oid: str) -> bytes:
        kept = self._new.get(oid)
        return kept[1] if kept is not None else self._read(oid)

    def erase(self, tree: str, path: str) -> str:
        """The tree ``tree`` without ``path``; ``tree`` itself when the path is not in it."""
        key = (tree, path)
        if tree in self._new:
            self.made_unreachable = True
        self.erased_blobs = set()
        if key not in self._trees:
            new = self._erase(tree, path.encode().split(b"/"), b"")
            self._trees[key] = new if new is not None else self._add(_TREE, b"", b"")
        return self._trees[key]

    def _erase(self, tree: str, parts: list[bytes], at: bytes) -> str | None:
        raw = self._raw(tree)
        found = entry_named(parts[0]).match(raw)
        if found is None:
            return tree
        start, end = found.start(1), found.end()
        mode, sha = found.group(1), found.group(2).hex()
        if len(parts) == 1:
            under = (at + parts[0]).decode("utf-8", "surrogateescape")
            self.erased_blobs = (
                blobs_under(self._r, sha, self.erased_files, under)
                if mode == b"40000"
                else set()
                if mode == b"160000"
                else {sha}
            )
            new_raw = raw[:start] + raw[end:]
        elif mode == b"40000":
            sub = self._erase(sha, parts[1:], at + parts[0] + b"/")
            if sub == sha:
                return tree
            new_raw = raw[:start] + raw[end:] if sub is None else raw[: end - 20] + bytes.fromhex(sub) + raw[end:]
        else:
            return tree
        return self._add(_TREE, new_raw, at) if new_raw else None

    def commit(self, old: bytes, tree: str, parents: list[str], scrub: NameScrub | None = None) -> str:
        """A copy of the raw commit ``old`` with a new tree and parents, all else byte for byte
        but the erased names ``scrub`` finds (replaced by :data:`gitmem.git.erasurenames.MARKER`)."""
        header, _, message = old.partition(b"\n\n")
        if scrub is not None:
            message = scrub(message)
        if header.startswith(b"tree ") and header[45:46] == b"\n" and b"\ngpgsig" not in header:
            pos = 46  # git's own order: the tree line, the parent lines, then the rest as it is
            while header.startswith(b"parent ", pos):
                pos += 48
            lines = [b"tree " + tree.encode(), *(b"parent " + p.encode() for p in parents)]
            return self._add(_COMMIT, b"\n".join(lines) + b"\n" + header[pos:] + b"\n\n" + message)
        return self._add(_COMMIT, commit_header(header, tree, parents) + b"\n\n" + message)

    def retarget(self, target: str, mapped: dict[str, str], scrub: NameScrub | None = None) -> str:
        """The new value for a ref: the rewritten commit, or a copy of the tag pointing at it."""
        if target in mapped:
            return mapped[target]
        kind, raw = self._r.odb.read(target)
        if kind != pygit2.enums.ObjectType.TAG:
            return target
        first, _, rest = bytes(raw).partition(b"\n")
        inner = self.retarget(first.split(b" ", 1)[1].decode(), mapped, scrub)
        header, sep, message = rest.partition(b"\n\n")
        if scrub is not None:
            message = scrub(message)
        return self._add(_TAG, b"object " + inner.encode() + b"\n" + header + sep + message)

    def pack(self) -> tuple[str, bytes, bytes] | None:
        """Every new object as ``(pack sha, .pack bytes, .idx bytes)``; ``None`` when there is none.

        Whole objects (commits, the first tree of a chain) are deflated at level
        1 (:func:`gitmem.git.packwrite.deflate`): level 6 cost three times the
        CPU on objects this small. Deltas are stored as they are.
        """
        if not self._new:
            return None
        pack = bytearray(b"PACK" + struct.pack(">II", 2, len(self._new)))
        offsets: dict[str, int] = {}
        index: list[tuple[bytes, int, int]] = []  # binary id, crc32 of the entry, offset
        for oid, (kind, raw, base) in self._new.items():
            start = offsets[oid] = len(pack)
            diff = None if base is None else delta(self._new[base][1], raw)
            if diff is None:
                pack += entry_header(kind, len(raw))
                pack += deflate(raw)
            else:  # a few dozen bytes, mostly copy instructions: stored, not deflated
                pack += entry_header(_OFS_DELTA, len(diff))
                _base_offset(pack, start - offsets[str(base)])
                pack += store_tree(diff)
            index.append((bytes.fromhex(oid), zlib.crc32(memoryview(pack)[start:]), start))
        pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
        pack += pack_sum
        return pack_sum.hex(), bytes(pack), packfold.index_v2(index, pack_sum)


_OFS_DELTA = 6
MAX_DEPTH = 50
"""Longest delta chain written: git's default ``pack.depth``, so the repack keeps every one."""


def commit_header(header: bytes, tree: str, parents: Sequence[str]) -> bytes:
    """A raw commit's header with a new tree and parents, and without a signature (it signed the old content)."""
    lines = [b"tree " + tree.encode(), *(b"parent " + p.encode() for p in parents)]
    skipping = False
    for line in header.split(b"\n"):
        if line.startswith(b" ") and skipping:
            continue  # a continuation line of a dropped signature
        key = line.split(b" ", 1)[0]
        skipping = key in (b"gpgsig", b"gpgsig-sha256")
        if not skipping and key not in (b"tree", b"parent"):
            lines.append(line)
    return b"\n".join(lines)


def _base_offset(pack: bytearray, distance: int) -> None:
    """How far back an ``OFS_DELTA``'s base starts, in git's big-endian form (each more byte adds one)."""
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.append(0x80 | (distance & 0x7F))
        distance >>= 7
    pack += bytes(reversed(out))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if not n:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def delta(base: bytes, target: bytes) -> bytes | None:
    """A git delta making ``target`` from ``base``: their common start and end copied, the middle inserted.

    Two versions of one tree differ in a few neighbouring entries (a changed id,
    an added or removed name), so that is almost all of a good delta, found by
    XOR of the two read as integers (in C) rather than byte by byte. None when
    it would save little.
    """
    most = min(len(base), len(target))
    # The longest common start: where the two (as big-endian numbers) first differ.
    differ = int.from_bytes(base[:most], "big") ^ int.from_bytes(target[:most], "big")
    start = most - (differ.bit_length() + 7) // 8
    # The longest common end that does not overlap it, the same way from the other side.
    most -= start
    differ = int.from_bytes(base[len(base) - most :], "little") ^ int.from_bytes(target[len(target) - most :], "little")
    end = most - (differ.bit_length() + 7) // 8
    middle = target[start : len(target) - end]
    if len(middle) + 32 > len(target) // 2:
        return None
    out = bytearray(_varint(len(base)) + _varint(len(target)))
    _copy(out, 0, start)
    for at in range(0, len(middle), 0x7F):
        chunk = middle[at : at + 0x7F]
        out.append(len(chunk))
        out += chunk
    _copy(out, len(base) - end, end)
    return bytes(out)


def _copy(out: bytearray, offset: int, size: int) -> None:
    """Delta instructions copying ``size`` bytes of the base from ``offset``."""
    while size > 0:
        step = min(size, 0xFFFFFF)
        command, args = 0x80, bytearray()
        for i in range(4):
            if (offset >> (8 * i)) & 0xFF:
                command |= 1 << i
                args.append((offset >> (8 * i)) & 0xFF)
        for i in range(3):
            if (step >> (8 * i)) & 0xFF:
                command |= 0x10 << i
                args.append((step >> (8 * i)) & 0xFF)
        out.append(command)
        out += args
        offset += step
        size -= step


# Whole tree entries (``<mode> <name>\0<20-byte id>``) from the start, then the one named.
_ENTRY = rb"(?:[0-7]+ [^\x00]+\x00.{20})*?([0-7]+) %s\x00(.{20})"
_NAMED: dict[bytes, re.Pattern[bytes]] = {}


def entry_named(name: bytes) -> re.Pattern[bytes]:
    """A pattern matching a raw tree from its first byte up to the end of entry ``name``.

    Every repetition consumes exactly one entry (a mode cannot hold a space, a
    name cannot hold a NUL, an id is 20 bytes), so a match can only start the
    named entry at a real entry boundary, never inside a binary id.
    """
    pattern = _NAMED.get(name)
    if pattern is None:
        pattern = _NAMED[name] = re.compile(_ENTRY % re.escape(name), re.DOTALL)
    return pattern


def blobs_under(r: pygit2.Repository, oid: str, paths: set[str], at: str) -> set[str]:
    """The blobs of tree or blob ``oid`` (the folder ``at``); every path below it goes into ``paths``."""
    obj = r[oid]
    if obj.type == pygit2.enums.ObjectType.BLOB:
        return {oid}
    out: set[str] = set()
    for entry in obj.peel(pygit2.Tree):
        below = f"{at}/{entry.name}"
        paths.add(below)
        if entry.filemode != pygit2.enums.FileMode.COMMIT:  # a submodule's commit is not here
            out.update(blobs_under(r, str(entry.id), paths, below))
    return out
