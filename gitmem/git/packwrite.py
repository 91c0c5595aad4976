"""A commit's new objects as one small pack: two files per commit instead of one per object.

libgit2 writes every object as its own loose file (temp file, ``link``, ``unlink``,
a rescan of ``objects/pack/`` first, and with fsync on two fsyncs each), so a write
of ``a/b/c.md`` creates five object files. Here the blob, the trees on the path
and the commit are built in memory (:class:`PendingObjects`, :func:`set_path`,
:func:`commit_bytes`) and land as one ``pack-<sha>.pack`` with its v2 ``.idx``
(:func:`write_pack`): the pack under its final name, the index under a ``tmp_``
name (which git's own prune cleans up) renamed into place after it (git and
libgit2 find packs by their index), both fsynced when the mount is durable,
before the ref moves. A kill at any point leaves either nothing, a pack without
index (ignored by git, deleted by :func:`remove_orphan_packs`), a ``tmp_`` file,
or a complete pack whose objects nothing references yet: all of which ``git
fsck --strict`` accepts.

The objects are plain git: whole (undeltified) entries, blobs over
:data:`STORED_BLOB_BYTES` compressed at zlib level 1 as libgit2 compresses loose
objects, trees, the commit and smaller blobs stored in zlib's uncompressed blocks
(:func:`store_tree`). The tree encoding is git's: entries
sorted by name with a folder compared as if it ended in ``/``, mode ``40000``
for folders and ``100644`` for files. Packs accumulate one per commit (one per
group-commit round); the count is kept bounded by :func:`compact` (``git
pack-objects --stdin-packs`` by git's geometric rule) under the fold lock, so
reads do not search an ever-growing list of indexes.
"""

from __future__ import annotations

import errno
import hashlib
import math
import os
import re
import struct
import time
import zlib
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING

from gitmem.git import packfold
from gitmem.git.perms import write_private
from gitmem.git.treeedit import PendingObjects
from gitmem.localfile import fsync_folder, open_local, open_private, read_local, read_local_head

if TYPE_CHECKING:  # the pool (and logging, which it loads) comes with the first durable write, not with a read
    from concurrent.futures import ThreadPoolExecutor

_TYPE_CODES = {b"commit": 1, b"tree": 2, b"blob": 3}


def signature_line(name: bytes, email: bytes, seconds: int, offset_minutes: int) -> bytes:
    sign = b"-" if offset_minutes < 0 else b"+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return b"%s <%s> %d %s%02d%02d" % (name, email, seconds, sign, hours, minutes)


def commit_bytes(tree: str, parents: list[str], author: bytes, committer: bytes, message: str) -> bytes:
    """git's encoding of a commit, as libgit2's ``git_commit_create`` writes it."""
    head = [b"tree " + tree.encode()]
    head += [b"parent " + p.encode() for p in parents]
    head += [b"author " + author, b"committer " + committer]
    return b"\n".join(head) + b"\n\n" + message.encode()


# -- packs ---------------------------------------------------------------------------


def entry_header(code: int, size: int) -> bytes:
    """A pack entry's type and size: 3 type bits and 4 size bits, then 7 size bits a byte."""
    header = bytearray([(code << 4) | (size & 0x0F)])
    size >>= 4
    while size:
        header[-1] |= 0x80
        header.append(size & 0x7F)
        size >>= 7
    return bytes(header)


_SMALL = 16 * 1024
STORED_BLOB_BYTES = 4096
"""Largest blob a commit's pack stores rather than deflates (its bytes as they are, in zlib's framing).

Every read of a file from the packs inflates its blob, and for a note of a few
hundred bytes inflating is mostly zlib setting up its decoding tables: ~4.5 µs
warm and ~8.6 µs on cold caches for a 500-byte note deflated at level 1, against
~0.5 / ~3.5 µs stored (one copy and its Adler-32), and libgit2's read of such a
blob from a pack was ~7 µs of which inflating was most. Storing also saves the
write its deflate (~13 µs against ~2 µs). The cost is disk: a stored note takes
about twice its deflated size, and stays so when packs are folded (git reuses an
object's bytes as they are unless it finds a delta for it); over 4 KiB the
difference outweighs the setup, and blobs are deflated as before.
"""


def deflate(raw: bytes) -> bytes:
    """``raw`` as one zlib stream at level 1, with a 16 KiB window for small objects.

    ``zlib.compress`` sets up deflate's full state (a 32 KiB window and a 128 KiB
    hash table) for every call, and allocating and clearing it costs more than
    compressing a tree or a note: ~100 µs per object against ~25 µs with the
    window and hash sized for objects of a few KiB (same output size within a
    few bytes; every inflater reads any window size).
    """
    if len(raw) > _SMALL:
        return zlib.compress(raw, 1)
    stream = zlib.compressobj(1, zlib.DEFLATED, 14, 5)
    return stream.compress(raw) + stream.flush()


_STORED_START = b"\x78\x01"  # deflate with a 32 KiB window, "fastest" level, no dictionary: 0x7801 % 31 == 0
_STORED_BLOCK = 0xFFFF
_ADLER = struct.Struct(">I")
_BLOCK_HEAD = struct.Struct("<BHH")


def _stored_header(final: int | bool, size: int) -> bytes:
    return _BLOCK_HEAD.pack(1 if final else 0, size, size ^ 0xFFFF)


def store_tree(raw: bytes) -> bytes:
    """A tree (or a commit) as one zlib stream of stored (uncompressed) blocks.

    A tree is mostly 20-byte ids, which do not compress: level 1 saves about a
    third of a tree's bytes, but deflating a 2 KiB folder costs ~40 µs on the
    benchmark machine against ~2 µs to store it, and a commit packs one tree per
    folder on the path. A commit is a few hundred bytes of ids, names and
    trailers: deflating it saved ~150 bytes for ~86,000 instructions, 7 % of a
    one-file write (~7,000 stored). Packs are folded by ``git pack-objects``,
    which stores trees and commits as deltas against their likes (recompressed)
    from then on.

    The stream is framed here rather than by ``zlib.compressobj(0)``, which sets up
    a compressor (its window and hash table) only to copy: the zlib header for the
    fastest level, the data in blocks of at most 65,535 bytes (a 5-byte header
    each: final flag, length and its complement, RFC 1951 §3.2.4), and the
    Adler-32 of the data (RFC 1950), about half the CPU (1.7 against 2.9 µs for
    a 3 KiB folder, measured in one process). Any inflater reads it.
    """
    size = len(raw)
    if size <= _STORED_BLOCK:
        return b"".join((_STORED_START, _stored_header(1, size), raw, _ADLER.pack(zlib.adler32(raw))))
    parts = [_STORED_START]
    for start in range(0, size, _STORED_BLOCK):
        block = raw[start : start + _STORED_BLOCK]
        parts += (_stored_header(start + _STORED_BLOCK >= size, len(block)), block)
    parts.append(_ADLER.pack(zlib.adler32(raw)))
    return b"".join(parts)


def pack_files(pending: PendingObjects) -> tuple[str, bytes, bytes]:
    """``(pack sha, .pack bytes, .idx bytes)`` for ``pending``: undeltified entries, index v2.

    Blobs over :data:`STORED_BLOB_BYTES` (text, which compresses about 2:1) are
    deflated at level 1 (:func:`deflate`); trees, commits and smaller blobs are
    stored (:func:`store_tree`).
    """
    body = [b"PACK" + struct.pack(">II", 2, len(pending.objects))]
    offset = 12
    index: list[tuple[bytes, int, int]] = []  # binary id, crc32, offset
    ids = pending.ids
    for oid, (kind, raw) in pending.objects.items():
        stored = kind != b"blob" or len(raw) <= STORED_BLOB_BYTES
        entry = entry_header(_TYPE_CODES[kind], len(raw)) + (store_tree(raw) if stored else deflate(raw))
        key = ids.get(oid)
        index.append((bytes.fromhex(oid) if key is None else key, zlib.crc32(entry), offset))
        body.append(entry)
        offset += len(entry)
    pack = b"".join(body)
    pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
    idx = packfold.index_v2(index, pack_sum)
    return pack_sum.hex(), pack + pack_sum, idx


def _write_file(path: str, data: bytes) -> None:
    """A new read-only file holding ``data`` (not synced: a durable write syncs its files together)."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


_syncer: list[tuple[int, ThreadPoolExecutor]] = []


def fsync_together(paths: list[str]) -> None:
    """fsync every file in ``paths``, all at once; returns when all are on disk (raises the first failure).

    Sequential fsyncs each wait for their own journal commit; issued together,
    ext4 and xfs commit them in one.
    """
    if not _syncer or _syncer[0][0] != os.getpid():  # a forked child has no pool threads
        from concurrent.futures import ThreadPoolExecutor

        _syncer[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="gitmem-fsync"))]
    pool = _syncer[0][1]
    others = [pool.submit(_fsync_path, path) for path in paths[1:]]
    try:
        _fsync_path(paths[0])
    finally:
        for done in others:
            done.result()


def _fsync_path(path: str) -> None:
    fd = open_local(path)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_pack(repo_path: str, pending: PendingObjects, *, durable: bool) -> str:
    """Put ``pending`` into ``objects/pack`` as one pack; returns its sha. Nothing is written for no objects.

    The ``.pack`` is written under its final name and only the ``.idx`` goes
    through a temp name and a ``rename``: git and libgit2 find a pack only
    through its index (a ``.pack`` alone is never opened, and git's own
    ``index-pack`` leaves one the same way between its two renames), so a
    reader that sees the index finds its whole pack, and one rename per commit
    is saved. A kill before the index lands leaves a ``.pack`` without index,
    which git ignores and :func:`remove_orphan_packs` deletes later. With
    ``durable`` both files are fsynced (at the same time: the file system can
    flush them in one journal commit) before the index is renamed, and the
    folder after, so the pack survives a power cut before the ref that will
    name its commit is written.
    """
    if not pending.objects:
        return ""
    sha, pack, idx = pack_files(pending)
    return write_pack_files(repo_path, sha, pack, idx, durable=durable)


def write_pack_files(repo_path: str, sha: str, pack: bytes, idx: bytes, *, durable: bool) -> str:
    """Put a pack and its ``.idx`` (as :func:`pack_files` makes them) into ``objects/pack``; as :func:`write_pack`."""
    folder = _pack_folders.get(repo_path)
    if folder is None:
        if len(_pack_folders) >= 64:
            _pack_folders.clear()
        folder = _pack_folders[repo_path] = os.path.join(repo_path, "objects", "pack")
    base = f"{folder}{os.sep}pack-{sha}"
    tmp_idx = ""
    try:
        try:
            _write_file(base + ".pack", pack)
        except FileExistsError:
            if os.path.exists(base + ".idx"):
                return sha  # the very same objects were packed before (a retried plan)
            os.unlink(base + ".pack")  # a crash's leftover without index: nobody reads it
            _write_file(base + ".pack", pack)
        tmp_idx = f"{folder}{os.sep}tmp_idx_gitmem_{os.urandom(6).hex()}"
        _write_file(tmp_idx, idx)
        if durable:
            fsync_together([base + ".pack", tmp_idx])
        os.rename(tmp_idx, base + ".idx")
    except BaseException:
        for leftover in (tmp_idx, base + ".pack"):
            try:
                if leftover:
                    os.unlink(leftover)
            except OSError:
                pass
        raise
    if durable:
        fsync_folder(folder)
    return sha


_pack_folders: dict[str, str] = {}  # objects/pack, by the repository's path (joined once)

ORPHAN_SECONDS = 60.0
"""Age after which a ``.pack`` without its ``.idx`` is taken for a killed writer's leftover."""


def remove_orphan_packs(repo_path: str, older_than: float = ORPHAN_SECONDS) -> list[str]:
    """Delete ``pack-*.pack`` files that have no ``.idx`` and are older than ``older_than`` seconds.

    A writer killed between writing its pack and renaming the index into place
    leaves such a file (:func:`write_pack`). No reader ever opens it, but it
    takes disk space. Call with the writer lock held (gitmem's ``gc``), so no
    gitmem writer is between its two steps; the age also spares a foreign git
    in the middle of its own ``index-pack``. Returns the names deleted.
    """
    folder = os.path.join(repo_path, "objects", "pack")
    try:
        with os.scandir(folder) as found:
            names = {e.name for e in found}
    except FileNotFoundError:
        return []
    now = time.time()
    deleted: list[str] = []
    for name in sorted(names):
        if not (name.startswith("pack-") and name.endswith(".pack")) or name[:-5] + ".idx" in names:
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.stat(path).st_mtime < older_than or os.path.exists(path[:-5] + ".idx"):
                continue
            os.unlink(path)
        except FileNotFoundError:
            continue
        deleted.append(name)
    return deleted


FOLDED = "gitmem/folded-packs"
"""Packs a compaction copied into a bigger one, each with when: deleted by a later compaction (see :func:`compact`)."""
GRACE_SECONDS = 0.25
"""How long a folded pack stays at least (and until a later compaction): see :func:`compact`."""


_PACK_NAME = re.compile(r"pack-(?:[0-9a-f]{40}|[0-9a-f]{64})")
_FOLDED_LIMIT = 1 << 20  # bytes of the folded list read at most (a few thousand lines)


def _folded(repo_path: str) -> dict[str, float]:
    """The packs waiting to be deleted, each with when it was folded."""
    return {name: when for name, (when, _) in _folded_into(repo_path).items()}


def _folded_into(repo_path: str) -> dict[str, tuple[float, str | None]]:
    """The packs waiting to be deleted, each with when it was folded and the pack it was folded into.

    The list is input like any file under the mount: only lines of exactly the
    form a fold writes (a pack's name, a finite time, optionally the name of the
    pack it went into) count; anything else is dropped, and a name is never
    joined to a path before it passed that check.
    """
    raw = read_local(os.path.join(repo_path, FOLDED), _FOLDED_LIMIT)
    if raw is None:
        return {}
    folded: dict[str, tuple[float, str | None]] = {}
    for line in raw.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) not in (2, 3) or not all(_PACK_NAME.fullmatch(p) for p in parts[:1] + parts[2:]):
            continue
        try:
            when = float(parts[1])
        except ValueError:
            continue
        if math.isfinite(when):
            folded[parts[0]] = (when, parts[2] if len(parts) == 3 else None)
    return folded


def _index_names(idx_path: str) -> tuple[bytes, int] | None:
    """A v2 pack index's bytes and object count, or ``None`` when the file is no such index."""
    raw = read_local(idx_path, 1 << 31)
    if raw is None or len(raw) < _NAMES or raw[:8] != b"\xfftOc\x00\x00\x00\x02":
        return None
    count = int.from_bytes(raw[_NAMES - 4 : _NAMES], "big")
    return (raw, count) if len(raw) >= _NAMES + 20 * count else None


_NAMES = 8 + 256 * 4  # where a v2 index's sorted object names start


def _lists(index: tuple[bytes, int], oid: bytes) -> bool:
    """Whether the index lists ``oid`` (a binary search within its fan-out bucket)."""
    raw, _ = index
    first = oid[0]
    lo = int.from_bytes(raw[8 + 4 * (first - 1) : 8 + 4 * first], "big") if first else 0
    hi = int.from_bytes(raw[8 + 4 * first : 12 + 4 * first], "big")
    while lo < hi:
        mid = (lo + hi) // 2
        name = raw[_NAMES + 20 * mid : _NAMES + 20 * mid + 20]
        if name == oid:
            return True
        if name < oid:
            lo = mid + 1
        else:
            hi = mid
    return False


def _held_elsewhere(folder: str, name: str, keep: list[str], loaded: dict[str, tuple[bytes, int] | None]) -> bool:
    """Whether every object of pack ``name`` is also in one of the ``keep`` packs (so deleting it loses nothing).

    ``keep`` is searched in order (the newest first: the fold's own pack holds
    what it folded) and each index is read once per compaction (``loaded``).
    """
    mine = _index_names(os.path.join(folder, name + ".idx"))
    if mine is None:
        return not os.path.lexists(os.path.join(folder, name + ".idx"))  # already gone: nothing to lose
    raw, count = mine
    missing = [raw[_NAMES + 20 * i : _NAMES + 20 * i + 20] for i in range(count)]
    for other in keep:
        if not missing:
            break
        if other not in loaded:
            loaded[other] = _index_names(os.path.join(folder, other + ".idx"))
        index = loaded[other]
        if index is not None:
            missing = [oid for oid in missing if not _lists(index, oid)]
    return not missing


def pack_count(repo_path: str) -> int:
    """Packs in ``objects/pack``, not counting folded ones waiting for deletion."""
    try:
        with os.scandir(os.path.join(repo_path, "objects", "pack")) as found:
            names = [e.name[:-4] for e in found if e.name.endswith(".idx")]
    except FileNotFoundError:
        return 0
    folded = _folded(repo_path) if len(names) > 1 else {}
    return len([n for n in names if n not in folded])


def _objects_in(idx_path: str) -> int:
    raw = read_local_head(idx_path, 4, offset=8 + 255 * 4)
    if raw is None or len(raw) != 4:  # gone meanwhile, or a link or FIFO in its place: not a pack to count
        raise FileNotFoundError(errno.ENOENT, f"{idx_path} is not a pack index gitmem reads")
    return int.from_bytes(raw, "big")


def geometric_rollup(sizes: dict[str, int], factor: int = 2) -> list[str]:
    """Which packs to fold together so every pack left holds ``factor`` times all smaller ones (git's rule).

    From the largest pack down, a pack stays while it is at least ``factor``
    times the objects of all packs smaller than it; the first that is not, and
    every smaller pack, are rolled up into one.
    """
    order = sorted(sizes, key=lambda n: (sizes[n], n))
    below = [0]
    for name in order:
        below.append(below[-1] + sizes[name])
    split = 0
    for i in range(len(order) - 1, 0, -1):
        if sizes[order[i]] < factor * below[i]:
            split = i + 1
            break
    return order[:split] if split > 1 else []


def compact(repo_path: str, run_git: Callable[[list[str], bytes], tuple[int, str]]) -> bool:
    """Fold small packs into one by git's geometric rule; delete the packs earlier folds folded.

    The objects of the chosen packs (and nothing loose: a loose object another
    git wrote stays where that git may look for it) are copied into a new pack:
    in-process when they are small packs of whole objects
    (:mod:`gitmem.git.packfold`), else by ``git pack-objects --stdin-packs``,
    which also finds deltas. The chosen packs are not deleted at once but
    listed in :data:`FOLDED`; a later compaction deletes them once
    :data:`GRACE_SECONDS` (a quarter second) have passed, so they outlive at
    least one fold interval (:data:`gitmem.git.engine.MAX_PACKS` commits) and
    that quarter second. Under a burst the folder then holds the live packs
    and those folded in the last quarter second (79-149 index files in a
    1,208-command burst on tmpfs, against 1,033 with 60 s).

    Why any wait: a reader lists ``objects/pack`` and opens a pack's index only
    when it searches it. One that listed the packs before a fold and searches
    after the folded packs are gone finds the objects in neither: git's *quick*
    look-ups never list again (``git mktree`` checks its entries that way), and
    libgit2 and git's normal reads list again once per missing object, so a
    reader stalled between that listing and its search misses too
    (``tests/races/test_pack_readers.py`` shows both: a raw pygit2 reader
    missed an object when folds came a few ms apart and deleted at the next
    fold). The quarter second is a judgement: a reader would have to stall that
    long at exactly that point while two folds complete. A pack a reader already
    opened stays readable after it is unlinked. git's own ``repack -d`` deletes
    at once. Why not longer: the first design waited 60 s, which under a burst
    kept about two files per commit of the last minute in ``objects/pack``
    (2,072 files after 1,208 memory-tool commands), every one listed by each
    rescan and opened by each fresh handle. Until deleted, folded packs are
    left out of the count and of the next fold. Returns whether packs were
    deleted (handles must then reopen). Fold lock held (see
    :meth:`gitmem.git.repo.GitRepo.compact`).

    Folded packs left waiting are dated to be searched last
    (:func:`search_last`) and deleted by the next fold after their grace. No
    timer deletes them sooner: nothing of gitmem's may change a memory's files
    after the call that wrote it returned (a caller may delete the memory's
    folder then; ``docs/benchmarks.md``, "Many writes").
    """
    folder = os.path.join(repo_path, "objects", "pack")
    folded = _folded_into(repo_path)
    now = time.time()
    deleted = False
    due = [name for name, (when, _) in sorted(folded.items()) if now - when >= GRACE_SECONDS]
    if due:
        with os.scandir(folder) as found:
            live = [e.name[:-4] for e in found if e.name.endswith(".idx") and _PACK_NAME.fullmatch(e.name[:-4])]
        counts: dict[str, int] = {}
        for name in live:
            with suppress(OSError, ValueError):
                counts[name] = _objects_in(os.path.join(folder, name + ".idx"))
        keep = sorted((n for n in counts if n not in folded), key=lambda n: -counts[n])  # the biggest holds most
        loaded: dict[str, tuple[bytes, int] | None] = {}
        for name in due:
            packfold.pause()
            into = folded.pop(name)[1]
            # A listed pack is deleted only once another live pack holds each of its objects
            # (the pack it was folded into first): the list can be edited by anyone who can
            # write the folder, and a live pack's name in it must not delete history.
            order = [into, *(n for n in keep if n != into)] if into in keep else keep
            if not _held_elsewhere(folder, name, order, loaded):
                keep.append(name)
                continue
            for ext in (".idx", ".pack", ".rev"):  # the index first: readers find packs by it
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name + ext))
            deleted = True
    sizes: dict[str, int] = {}
    with os.scandir(folder) as found:
        for entry in found:
            if entry.name.startswith("pack-") and entry.name.endswith(".idx"):
                base = entry.name[:-4]
                if base in folded or os.path.exists(os.path.join(folder, base + ".keep")):
                    continue
                try:
                    sizes[base] = _objects_in(entry.path)
                except FileNotFoundError:  # a foreign git gc or repack deleted it meanwhile
                    continue
    chosen = geometric_rollup(sizes)
    made: str | None = None
    if chosen:
        try:
            made = packfold.fold(folder, chosen)  # small packs of whole objects: copied in-process
        except FileNotFoundError:  # a foreign git gc or repack deleted one meanwhile
            made = None
        if made is None:
            listing = "".join(f"{name}.pack\n" for name in chosen).encode()
            code, out = run_git(["pack-objects", "--stdin-packs", "-q", os.path.join(folder, "pack")], listing)
            made = f"pack-{out.strip()}" if code == 0 and out.strip() else None
        if made is not None:
            done = time.time()
            folded.update((name, (done, made)) for name in chosen if name != made)
    if chosen or deleted:
        tmp = os.path.join(repo_path, FOLDED + ".tmp")
        lines = (f"{name} {when} {into}\n" if into else f"{name} {when}\n" for name, (when, into) in sorted(folded.items()))
        write_private(tmp, "".join(lines))
        os.replace(tmp, os.path.join(repo_path, FOLDED))
        if made is not None:
            search_last(folder, [name for name in chosen if name != made], [*(set(sizes) - set(chosen)), made])
    return deleted


def search_last(folder: str, folded: list[str], live: list[str]) -> None:
    """Date the ``.pack`` of each ``folded`` pack a second before the oldest ``live`` one, so readers search it last.

    git and libgit2 search packs newest first (by the ``.pack``'s mtime, in
    whole seconds), and a reader that does not find an object in a pack opens
    the next one's index. A folded pack is as new as the packs a fold just
    wrote, so until deleted it was searched among the first, and for nothing:
    each of its objects is in the fold's pack too. A new reader process took
    1.29x a ``git gc``'d copy's time for its first read with 78 folded packs
    waiting, 1.01x with them dated back (measured with ``bench/bench_packs.py``). Only the order changes: git decides nothing else by a
    live pack's mtime, and the folded pack is deleted after its grace. A pack
    this process may not date (another user's) keeps its time.
    """
    oldest = time.time()
    for name in live:
        try:
            oldest = min(oldest, os.stat(os.path.join(folder, name + ".pack")).st_mtime)
        except OSError:
            continue
    when = float(int(oldest) - 1)
    for name in folded:
        path = os.path.join(folder, name + ".pack")
        try:
            os.utime(path, (when, when))
        except OSError:
            continue
