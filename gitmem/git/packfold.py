"""Folding small packs of whole objects in-process: their entries copied byte for byte into one pack.

Every commit's pack holds whole (undeltified) objects (:mod:`gitmem.git.packwrite`),
and a fold of a few dozen of them with ``git pack-objects --stdin-packs`` cost
~10 ms of CPU in the git child, nearly all of it start-up and bookkeeping: about
0.5 ms per write on top of the write's own ~1-1.5 ms. A pack entry of a whole
object is self-contained (type, size, zlib stream), so packs of such entries fold
by concatenation: each entry copied as it is (its CRC-32 from the source index
checked against the bytes), a new header, trailer and v2 index around them.

Only small folds go this way (:data:`MAX_BYTES` of packs in all): the copies are
not delta-compressed, so once the packs to fold add up to more, git folds them
and finds deltas as before. Packs with delta entries, a 64-bit offset table or
anything unexpected are left to git too (:func:`fold` answers ``None``).

The new pack is written under ``tmp_`` names, fsynced with its folder whatever
the mount's durability (the packs it replaces are deleted by the next fold, and
a pack lost to a power cut after that would lose history, not just a recent
write), then renamed pack before index.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import zlib

from gitmem.localfile import fsync_folder, open_private, read_local

MAX_BYTES = 1 << 20
"""Largest total size of the packs folded in-process; bigger folds go to ``git pack-objects`` (deltas)."""
_READ_LIMIT = 1 << 31  # a pack or index file read whole (the fold's own size check comes before)

_WHOLE = (1, 2, 3, 4)  # commit, tree, blob, tag: entries that need no other object


def _entries(folder: str, name: str) -> list[tuple[bytes, int, bytes]] | None:
    """``(binary id, crc32, entry bytes)`` of every object in pack ``name``; ``None`` when not foldable here."""
    idx = read_local(os.path.join(folder, name + ".idx"), _READ_LIMIT)
    pack = read_local(os.path.join(folder, name + ".pack"), _READ_LIMIT)
    if idx is None or pack is None:
        return None  # a link, FIFO or huge file in place of a pack: git decides
    if idx[:8] != b"\xfftOc\x00\x00\x00\x02" or pack[:8] != b"PACK\x00\x00\x00\x02":
        return None
    count = struct.unpack_from(">I", idx, 8 + 255 * 4)[0]
    if struct.unpack_from(">I", pack, 8)[0] != count or len(idx) != 8 + 1024 + count * 28 + 40:
        return None  # a 64-bit offset table (a pack over 2 GiB), or not what the header says
    ids_at, crcs_at, offs_at = 8 + 1024, 8 + 1024 + count * 20, 8 + 1024 + count * 24
    crcs = struct.unpack_from(f">{count}I", idx, crcs_at)
    offsets = struct.unpack_from(f">{count}I", idx, offs_at)
    if idx[-40:-20] != pack[-20:]:
        return None  # the index is not this pack's
    ends = dict(zip(sorted(offsets), [*sorted(offsets)[1:], len(pack) - 20], strict=True))
    found: list[tuple[bytes, int, bytes]] = []
    for i in range(count):
        start = offsets[i]
        entry = pack[start : ends[start]]
        if not entry or (entry[0] >> 4) & 7 not in _WHOLE or zlib.crc32(entry) != crcs[i]:
            return None  # a delta (needs its base in the same pack), or damage: git decides
        found.append((idx[ids_at + i * 20 : ids_at + i * 20 + 20], crcs[i], entry))
    return found


def index_v2(index: list[tuple[bytes, int, int]], pack_sum: bytes) -> bytes:
    """A version-2 ``.idx``: ``index`` is ``(binary id, crc32, offset)`` per object (sorted here).

    An offset from 2 GiB up does not fit the 31 bits of the offset table; its
    entry there is the high bit plus its place in the 64-bit table that follows,
    as git writes it (a rewrite of a long history can pass that size).
    """
    index.sort()
    small: list[int] = []
    large: list[int] = []
    for _, _, off in index:
        if off < _LARGE:
            small.append(off)
        else:
            small.append(_LARGE | len(large))
            large.append(off)
    idx = b"".join(
        (
            b"\xfftOc" + struct.pack(">I", 2),
            _fanout(index),
            *(oid for oid, _, _ in index),
            struct.pack(f">{len(index)}I", *(crc for _, crc, _ in index)),
            struct.pack(f">{len(index)}I", *small),
            struct.pack(f">{len(large)}Q", *large),
            pack_sum,
        )
    )
    return idx + hashlib.sha1(idx, usedforsecurity=False).digest()


_LARGE = 1 << 31  # offsets from here on go to the 64-bit table


def _fanout(index: list[tuple[bytes, int, int]]) -> bytes:
    """The index's fan-out table: entry ``i`` counts the objects whose id starts with a byte up to ``i``.

    Built as runs of one count each (the table steps up only at the first bytes
    the sorted ids start with), not 256 entries summed one by one: a commit's
    pack holds about five objects.
    """
    parts: list[bytes] = []
    filled = 0  # entries written so far
    for count, (oid, _, _) in enumerate(index):
        first = oid[0]
        if first > filled:
            parts.append(_BE32.pack(count) * (first - filled))
            filled = first
    parts.append(_BE32.pack(len(index)) * (256 - filled))
    return b"".join(parts)


_BE32 = struct.Struct(">I")


def pause() -> None:
    """Let the process's other threads run now: between the packs of a fold (``time.sleep(0)``).

    A fold is ~10 ms of mostly Python, and ``gitmem serve`` runs it on a thread of
    its own after a write's reply. A request thread wanting the interpreter meanwhile
    got it only when the fold blocked or the switch interval (5 ms) ran out, so the
    requests after a fold were a server's slowest. Giving the interpreter up between
    packs lets them in at once: one MCP writer's p95 8-28 % lower on and off in the
    same runs, on root and ext4 (``docs/benchmarks.md``, "gitmem serve against a
    bare MCP server"); a fold in a writer's own call pays ~1 µs a pack.
    """
    time.sleep(0)


def fold(folder: str, names: list[str]) -> str | None:
    """Fold packs ``names`` of ``folder`` into one new pack; its name (``pack-<sha>``), or ``None`` to leave it to git.

    Packs are read whole, so only folds of up to :data:`MAX_BYTES` are taken.
    """
    total = 0
    for name in names:
        total += os.path.getsize(os.path.join(folder, name + ".pack"))
        if total > MAX_BYTES:
            return None
    objects: dict[bytes, tuple[int, bytes]] = {}
    for name in names:
        pause()
        entries = _entries(folder, name)
        if entries is None:
            return None
        for oid, crc, entry in entries:
            objects.setdefault(oid, (crc, entry))
    body = [b"PACK" + struct.pack(">II", 2, len(objects))]
    offset = 12
    index: list[tuple[bytes, int, int]] = []
    for oid, (crc, entry) in objects.items():
        index.append((oid, crc, offset))
        body.append(entry)
        offset += len(entry)
    if offset >= 1 << 31:
        return None
    pack = b"".join(body)
    pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
    idx = index_v2(index, pack_sum)
    new = f"pack-{pack_sum.hex()}"
    base = os.path.join(folder, new)
    if os.path.exists(base + ".idx"):
        return new  # the same objects were folded before
    tag = os.urandom(6).hex()
    tmp_pack, tmp_idx = os.path.join(folder, f"tmp_pack_fold_{tag}"), os.path.join(folder, f"tmp_idx_fold_{tag}")
    try:
        for path, data in ((tmp_pack, pack + pack_sum), (tmp_idx, idx)):
            with os.fdopen(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(path, 0o444)
        os.rename(tmp_pack, base + ".pack")
        os.rename(tmp_idx, base + ".idx")
    except BaseException:
        for leftover in (tmp_pack, tmp_idx):
            try:
                os.unlink(leftover)
            except OSError:
                pass
        raise
    fsync_folder(folder)
    return new
