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
from typing import Any

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


def read_control(
    path: str | os.PathLike[str], limit: int, *, follow: bool = False, name: str | None = None
) -> bytes | None:
    """The bytes of a control file (a token file, a config), or ``None`` when nothing is at ``path``.

    Control files say who may do what, so unlike the derived files above a bad
    one is never read as missing: it raises ``MemoryStoreError`` saying why (a
    link, a FIFO or device, more than ``limit`` bytes, unreadable), and the
    caller grants nothing until it is fixed. Opened as :func:`open_local` opens
    (no link followed unless ``follow``, never blocking), read bounded; messages
    call the file ``name`` (default: its path).
    """
    from gitmem.errors import MemoryStoreError

    shown = name or os.fspath(path)
    try:
        fd = open_local(path, follow=follow)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryStoreError(
                "invalid_file", f"{shown} is a symbolic link: control files are read without following links"
            ) from None
        if exc.errno == errno.EINVAL:
            raise MemoryStoreError(
                "invalid_file", f"{shown} is not a regular file ({_kind(path, follow)})"
            ) from None
        raise MemoryStoreError("unavailable", f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        if os.fstat(fd).st_size > limit:
            raise MemoryStoreError("too_large", f"{shown} is larger than {limit} bytes, more than a control file holds")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(MB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot read {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise MemoryStoreError("too_large", f"{shown} grew past {limit} bytes while it was read")
    return b"".join(chunks)


def _kind(path: str | os.PathLike[str], follow: bool) -> str:
    """What stands at ``path`` instead of a regular file, in words (for a refusal)."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except OSError:
        return "gone"
    for test, word in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISLNK, "a link")):  # fmt: skip
        if test(mode):
            return word
    return "not a plain file"
