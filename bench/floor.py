"""The commit floor: the file work of one gitmem commit, with every byte computed beforehand.

A gitmem write takes the writer ``flock`` (recording its holder in the lock
file), writes its pack under its final name and its index under a temp name,
renames the index into place, creates ``main.lock`` exclusively, writes the new
id, renames it over ``main`` and marks the lock free. Durable, it fsyncs the
pack and index before the rename, the pack folder after it, the ref lock
before its rename and the ref folder after. :class:`CommitFloor` makes exactly
those system calls on files of the same sizes, with no hashing, encoding,
planning or Python object work: what no implementation of a git commit on this
file system can go below. ``bench/bench_store.py`` reports gitmem's write
against it.
"""

from __future__ import annotations

import fcntl
import os


class CommitFloor:
    """One "commit" per :meth:`write`: the same creates, writes, renames and fsyncs as gitmem's."""

    def __init__(self, folder: str, *, pack_bytes: int = 900, idx_bytes: int = 1300, fold_every: int = 24) -> None:
        self.folder = folder
        self.packs = os.path.join(folder, "objects", "pack")
        self.heads = os.path.join(folder, "refs", "heads")
        os.makedirs(self.packs, exist_ok=True)
        os.makedirs(self.heads, exist_ok=True)
        os.makedirs(os.path.join(folder, "gitmem"), exist_ok=True)
        self.pack = os.urandom(pack_bytes)
        self.idx = os.urandom(idx_bytes)
        self.ref = os.urandom(20).hex().encode() + b"\n"
        self.record = b"%d held write token 0".ljust(63) + b"\n"
        self.fsync = False
        self.fold_every = fold_every
        self._n = 0
        self._made: list[str] = []
        self._lock = os.open(os.path.join(folder, "gitmem", "write.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        with open(os.path.join(self.heads, "main"), "wb") as out:
            out.write(self.ref)

    def _write(self, path: str, data: bytes, flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL) -> None:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o444)
        try:
            os.write(fd, data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _sync_folder(self, folder: str) -> None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write(self) -> None:
        self._n += 1
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        os.pwrite(self._lock, self.record, 0)
        base = os.path.join(self.packs, f"pack-{os.getpid():08d}{self._n:032d}")
        self._made.append(base)
        self._write(base + ".pack", self.pack)
        tmp = os.path.join(self.packs, f"tmp_idx_{os.getpid()}_{self._n}")
        self._write(tmp, self.idx)
        os.rename(tmp, base + ".idx")
        if self.fsync:
            self._sync_folder(self.packs)
        lock = os.path.join(self.heads, "main.lock")
        self._write(lock, self.ref)
        os.rename(lock, os.path.join(self.heads, "main"))
        if self.fsync:
            self._sync_folder(self.heads)
        os.pwrite(self._lock, self.record.replace(b"held", b"free"), 0)
        fcntl.flock(self._lock, fcntl.LOCK_UN)

    def tidy(self) -> None:
        """Untimed: what a fold leaves (this floor's packs deleted every ``fold_every`` writes)."""
        if self._n % self.fold_every == 0:
            for base in self._made:
                for ext in (".pack", ".idx"):
                    os.unlink(base + ext)
            self._made.clear()

    def close(self) -> None:
        os.close(self._lock)
