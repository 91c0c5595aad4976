"""The baseline: a memory kept as plain files in a directory.

This is the simplest store that keeps the same promises as gitmem for one
machine — compare-and-swap writes, atomic file replacement, many writers — and
so it is the yardstick a git store is measured against:

- a write takes an exclusive ``flock`` on ``<root>/write.lock``, reads the current
  file, checks its sha256 against ``expected`` (the CAS, under the lock), writes
  the new content to a temp file in ``<root>/tmp`` and renames it over the file
  with ``os.replace``; with ``fsync=True`` the temp file and the target folder are
  fsynced, the same durability as libgit2 with ``enable_fsync_gitdir``;
- a read is one ``open``/``read`` plus a sha256 (no lock: ``os.replace`` is atomic);
- ``list`` walks the folders and keeps ``(version, size, description)`` per file,
  keyed by ``(inode, mtime, size)``, so a warm listing does not re-read content;
- ``changes`` can only ever answer :class:`FullResync`: a directory has no history.

Paths and content go through the same gitmem validation (``validate_path``,
``encode_text`` with its frontmatter and secret checks) so the benchmark compares
storage engines, not validation.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitmem.aio import AsyncFace, threaded
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import DEFAULT_FORMAT, FileFormat, decode_stored, describe_stored, encode_text, validate_path
from gitmem.model import Changes, FileEntry, FileText, FullResync

if TYPE_CHECKING:
    from gitmem.errors import StoreErrorCode


def _version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DirStore:
    """A CAS file store over ``<root>/files``; safe for many threads and processes."""

    def __init__(self, root: str, *, fsync: bool = False, fmt: FileFormat = DEFAULT_FORMAT) -> None:
        self.root = os.path.abspath(root)
        self.files = os.path.join(self.root, "files")
        self.tmp = os.path.join(self.root, "tmp")
        self.fsync = fsync
        self.format = fmt
        os.makedirs(self.files, exist_ok=True)
        os.makedirs(self.tmp, exist_ok=True)
        self._lock_path = os.path.join(self.root, "write.lock")
        self._local = threading.local()
        self._seq = 0
        self._listing: dict[str, tuple[tuple[int, int, int], FileEntry]] = {}

    # -- locking: one descriptor per thread, as flock locks belong to the open file --

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd: int | None = getattr(self._local, "fd", None)
        if fd is None:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._local.fd = fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _full(self, path: str) -> str:
        return os.path.join(self.files, path)

    def _load(self, path: str) -> bytes | None:
        try:
            with open(self._full(path), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    # -- the contract --

    def read(self, path: str) -> FileText:
        path = validate_path(path, self.format)
        data = self._load(path)
        if data is None:
            raise MemoryStoreError("not_found", f"{path} does not exist")
        return FileText(path, decode_stored(data), _version(data))

    def write(self, path: str, text: str, *, expected: str | None) -> str:
        path = validate_path(path, self.format)
        data = encode_text(text, self.format)
        version = _version(data)
        with self._locked():
            old = self._load(path)
            have = _version(old) if old is not None else None
            if have != expected:
                current = FileText(path, decode_stored(old), have) if old is not None and have else None
                code: StoreErrorCode = "already_exists" if expected is None else "version_mismatch"
                raise MemoryStoreError(code, f"{path} is at {have}, not {expected}", current=current)
            if old == data:
                return version
            target = self._full(path)
            folder = os.path.dirname(target)
            os.makedirs(folder, exist_ok=True)
            self._seq += 1
            tmp = os.path.join(self.tmp, f"{os.getpid()}.{threading.get_ident()}.{self._seq}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, data)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, target)
            if self.fsync:
                dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        return version

    def delete(self, path: str, *, expected: str) -> None:
        path = validate_path(path, self.format)
        with self._locked():
            old = self._load(path)
            have = _version(old) if old is not None else None
            if old is None or have != expected:
                current = FileText(path, decode_stored(old), have) if old is not None and have else None
                raise MemoryStoreError("version_mismatch", f"{path} is at {have}, not {expected}", current=current)
            os.unlink(self._full(path))
            folder = os.path.dirname(self._full(path))
            while folder != self.files:  # empty folders do not exist
                try:
                    os.rmdir(folder)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        break
                    raise
                folder = os.path.dirname(folder)

    def list(self) -> list[FileEntry]:
        cache = self._listing
        seen: dict[str, tuple[tuple[int, int, int], FileEntry]] = {}
        stack = [(self.files, "")]
        while stack:
            folder, prefix = stack.pop()
            with os.scandir(folder) as it:
                for item in it:
                    if item.is_dir(follow_symlinks=False):
                        stack.append((item.path, f"{prefix}{item.name}/"))
                        continue
                    path = prefix + item.name
                    st = item.stat(follow_symlinks=False)
                    key = (st.st_ino, st.st_mtime_ns, st.st_size)
                    hit = cache.get(path)
                    if hit is None or hit[0] != key:
                        data = self._load(path)
                        if data is None:  # replaced or deleted while we walked
                            continue
                        entry = FileEntry(
                            path, _version(data), len(data), describe_stored(decode_stored(data), self.format)
                        )
                        hit = (key, entry)
                    seen[path] = hit
        self._listing = seen
        return [seen[p][1] for p in sorted(seen)]

    def changes(self, since: str | None) -> Changes | FullResync:
        """A directory keeps no history: every cursor answers "everything changed"."""
        return FullResync("dir")


class AsyncDirStore(AsyncFace[DirStore]):
    """The directory store behind the same wrapper as GitFileStore (:mod:`gitmem.aio`)."""

    read = threaded(DirStore.read)
    write = threaded(DirStore.write)
    list = threaded(DirStore.list)
