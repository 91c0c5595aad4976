"""Reading the files gitmem keeps inside a mount's folder, as input from whoever can write that folder.

Lock records, lists, recall snapshots, derived caches, refs read by hand: a
mount's folder may be shared, synced or tampered with, so none of it is
trusted. Every such read here follows no symbolic link (a planted link must not
make gitmem read or write outside the mount), opens nothing but a regular file
without blocking (a FIFO planted in place of a cache must not hang a call),
reads at most a stated number of bytes (a sparse 6 GiB file is refused, not
loaded), and parses JSON with its nesting bounded by the parser's recursion
guard. A file that breaks any rule reads as *missing*: every caller treats its
file as disposable derived state and rebuilds it, or reports it.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

MB = 1 << 20


def open_local(path: str | os.PathLike[str], *, follow: bool = False) -> int:
    """A read descriptor for the regular file at ``path``: never blocking, no link followed unless ``follow``.

    ``OSError`` otherwise (``FileNotFoundError`` when there is nothing; ``ELOOP``
    for a link; ``EINVAL`` for a FIFO, socket, device or folder), so a caller
    can tell a missing file from a planted one.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{os.fspath(path)} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str]) -> int | None:
    """:func:`open_local`, or ``None`` for anything it refuses."""
    try:
        return open_local(path)
    except OSError:
        return None


def read_local(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the file at ``path`` if it is a regular file of at most ``limit`` bytes; else ``None``."""
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_size > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(MB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_local_text(path: str | os.PathLike[str], limit: int) -> str | None:
    """:func:`read_local` decoded as UTF-8 (newlines kept as they are); ``None`` when it is not UTF-8."""
    raw = read_local(path, limit)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def load_local_json(path: str | os.PathLike[str], limit: int) -> Any:
    """The JSON value in the file at ``path``; ``None`` when missing, unusable, not JSON or nested too deep."""
    import json  # only callers that parse JSON pay for it (the quick `ls` path imports this module)

    text = read_local_text(path, limit)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


# -- SQLite databases and lock files under a mount: opened for writing, still no planted link followed --


def local_folder(path: str | os.PathLike[str], *, root: str | os.PathLike[str]) -> str:
    """Folder ``path`` below ``root``, its missing folders created ``0700``; ``OSError`` when one is a link.

    Every folder from ``root`` down must be a real folder: a link planted as
    ``gitmem/derived`` would otherwise put whatever is written "in the mount"
    somewhere else. ``root`` itself may be reached through links (the user chose it).
    """
    path, top = os.path.abspath(path), os.path.abspath(root)
    rel = os.path.relpath(path, top)
    if rel == os.curdir:
        return path
    if rel.split(os.sep)[0] == os.pardir:
        raise OSError(errno.EINVAL, f"{path} is not inside {top}")
    here = top
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        try:
            os.mkdir(here, 0o700)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(here).st_mode):
            raise OSError(errno.ELOOP, f"{here} is a link or not a folder; gitmem does not follow it")
    return path


def open_local_lock(path: str | os.PathLike[str]) -> int:
    """A read-write descriptor of the lock file at ``path`` (created ``0600``), for ``flock``.

    No link followed, never blocking (a FIFO planted as a lock must not hang its
    taker), nothing but a regular file: ``OSError`` otherwise, as :func:`open_local`.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{os.fspath(path)} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _plain_file_or_none(path: str) -> None:
    """``OSError`` unless ``path`` is missing or a regular file with one name (a hard link writes elsewhere too)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, f"{path} is a symbolic link; gitmem does not follow it")
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    if info.st_nlink > 1:
        raise OSError(errno.EMLINK, f"{path} has another name (a hard link)")


def connect_local_sqlite(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, **options: Any
) -> sqlite3.Connection:
    """``sqlite3.connect(path, **options)`` for a database gitmem keeps in a mount; ``OSError`` when planted.

    SQLite follows a link at the database or its ``-wal``, ``-shm`` and
    ``-journal`` files and would write its tables (and switch the journal mode)
    of a database elsewhere, and it blocks on a FIFO: each of the four must be
    missing or a regular file with one name. With ``root``, the folders from
    ``root`` down to the database are created as by :func:`local_folder`.
    The file is checked again once SQLite has opened it, so a swap in between is
    refused too (the database is returned only when it is still the plain file).
    """
    import sqlite3  # the quick `ls` path imports this module without SQLite

    name = os.path.abspath(path)
    if root is not None:
        local_folder(os.path.dirname(name), root=root)
    for suffix in ("", "-wal", "-shm", "-journal"):
        _plain_file_or_none(name + suffix)
    db: sqlite3.Connection = sqlite3.connect(name, **options)
    try:
        _plain_file_or_none(name)
    except BaseException:
        db.close()
        raise
    return db
