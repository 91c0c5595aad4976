"""Build a large memory in one commit, fast, for the benchmarks.

Writing 100k files through the store would take minutes and measure nothing we
care about, so this helper writes the blobs and then the trees bottom-up with
pygit2's ``TreeBuilder`` — one tree per folder — and makes a single commit on
``refs/heads/main`` of a repo created by :meth:`GitFileStore.init`. The layout is
a nested one a memory might grow into: ``topic-NNN/sub-NN/note-NNNNN.md`` with
about 50 files per leaf folder and 20 leaf folders per topic.

The same file set can be written as a plain directory tree for the directory
store baseline (:func:`write_directory`), so both stores hold identical content.
"""

from __future__ import annotations

import hashlib
import os
import random
import struct
import zlib
from collections.abc import Iterable, Iterator

import pygit2

FILES_PER_LEAF = 50
LEAVES_PER_TOPIC = 20
_WORDS = (
    "agent memory prefers concise answers user language project deadline review tests "
    "python git commit branch merge conflict notes meeting customer budget plan retry "
    "schema index search cursor change writer lock version describe folder summary "
    "weekly report travel booking allergy vegetarian timezone morning evening release"
).split()


def layout_path(i: int) -> str:
    leaf = i // FILES_PER_LEAF
    topic = leaf // LEAVES_PER_TOPIC
    return f"topic-{topic:03d}/sub-{leaf % LEAVES_PER_TOPIC:02d}/note-{i:06d}.md"


class Corpus:
    """Deterministic, distinct ~500-byte notes, made by slicing one random word pool."""

    def __init__(self, seed: int = 7, size: int = 500) -> None:
        rng = random.Random(seed)
        self.pool = " ".join(rng.choice(_WORDS) for _ in range(60_000))
        self.size = size
        self.rng = rng

    def text(self, i: int, salt: str = "") -> str:
        head = f"---\ndescription: note {i}{salt} about {_WORDS[i % len(_WORDS)]}\n---\n"
        start = (i * 7919 + len(salt) * 104729) % (len(self.pool) - self.size)
        body = self.pool[start : start + self.size - len(head) - 1]
        return f"{head}{body}\n"

    def fresh(self) -> str:
        """A new text not equal to any earlier one (for edits)."""
        n = self.rng.randrange(1 << 40)
        return self.text(n % 1_000_003, salt=f"#{n:x}")


def files(n: int, corpus: Corpus | None = None) -> Iterator[tuple[str, bytes]]:
    corpus = corpus or Corpus()
    for i in range(n):
        yield layout_path(i), corpus.text(i).encode()


def write_pack(repo_path: str, blobs: Iterable[bytes]) -> list[str]:
    """Store ``blobs`` in one new pack (no deltas) with its v2 index; returns their hex ids.

    One pack file instead of 100k loose objects is what makes a 100k-file memory
    quick to build (~5x faster than ``create_blob``); a packed memory is also what
    ``git gc`` would leave behind.
    """
    body = bytearray()
    entries: dict[bytes, tuple[int, int]] = {}  # binary id -> (offset, crc32)
    ids: list[str] = []
    count = 0
    for data in blobs:
        digest = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
        digest.update(data)
        oid = digest.digest()
        ids.append(oid.hex())
        if oid in entries:
            continue
        size = len(data)
        header = bytearray([(3 << 4) | (size & 0x0F)])  # type 3 = blob
        size >>= 4
        while size:
            header[-1] |= 0x80
            header.append(size & 0x7F)
            size >>= 7
        packed = bytes(header) + zlib.compress(data, 1)
        entries[oid] = (12 + len(body), zlib.crc32(packed))
        body += packed
        count += 1
    pack = b"PACK" + struct.pack(">II", 2, count) + bytes(body)
    pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
    order = sorted(entries)
    fanout = [0] * 256
    for oid in order:
        fanout[oid[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    if len(pack) >= 1 << 31:
        raise ValueError("bench packs stay under 2 GiB")
    idx = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    idx += struct.pack(">256I", *fanout)
    idx += b"".join(order)
    idx += b"".join(struct.pack(">I", entries[o][1]) for o in order)
    idx += b"".join(struct.pack(">I", entries[o][0]) for o in order)
    idx += pack_sum
    idx += hashlib.sha1(bytes(idx), usedforsecurity=False).digest()
    folder = os.path.join(repo_path, "objects", "pack")
    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, f"pack-{pack_sum.hex()}")
    with open(base + ".pack", "wb") as fh:
        fh.write(pack + pack_sum)
    with open(base + ".idx", "wb") as fh:
        fh.write(idx)
    return ids


def import_files(repo_path: str, items: Iterable[tuple[str, bytes]], message: str = "bulk import\n") -> str:
    """Commit ``items`` as the whole tree of ``main`` (parent: the current head). Returns the commit id.

    Blobs go into one pack (:func:`write_pack`); the trees are then written bottom-up,
    one ``TreeBuilder`` per folder, exactly as gitmem itself writes trees.
    """
    paths: list[str] = []
    datas: list[bytes] = []
    for path, data in items:
        paths.append(path)
        datas.append(data)
    ids = write_pack(repo_path, datas)
    del datas
    repo = pygit2.Repository(repo_path)
    root: dict[str, object] = {}
    for path, oid in zip(paths, ids, strict=True):
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})  # type: ignore[assignment]
        node[name] = pygit2.Oid(hex=oid)

    def write(node: dict[str, object]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        for name, value in node.items():
            if isinstance(value, dict):
                builder.insert(name, write(value), pygit2.GIT_FILEMODE_TREE)
            else:
                assert isinstance(value, pygit2.Oid)
                builder.insert(name, value, pygit2.GIT_FILEMODE_BLOB)
        return builder.write()

    # Every entry points at an object we just wrote: skip libgit2's per-entry
    # existence check (process-wide, so it is switched back on right after).
    pygit2.settings.enable_strict_object_creation(False)
    try:
        tree = write(root)
    finally:
        pygit2.settings.enable_strict_object_creation(True)
    head = repo.references["refs/heads/main"].target
    sig = pygit2.Signature("gitmem-bench", "bench@localhost")
    commit = repo.create_commit(None, sig, sig, message, tree, [head])
    repo.references["refs/heads/main"].set_target(commit)
    return str(commit)


def write_directory(root: str, items: Iterable[tuple[str, bytes]]) -> None:
    """Write ``items`` as plain files under ``root`` (the directory store's layout)."""
    made: set[str] = set()
    for path, data in items:
        full = os.path.join(root, path)
        folder = os.path.dirname(full)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(full, "wb") as fh:
            fh.write(data)
