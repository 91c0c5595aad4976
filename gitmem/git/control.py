"""A mount's control files, checked before libgit2 or git reads them: its ``config`` and its alternates.

libgit2 (and every git command gitmem runs) opens a repository's ``config`` and
``objects/info/alternates`` with a plain blocking read that follows links: a
FIFO planted there hangs every call on the mount, a link sends the read outside
it. These files say how the mount behaves (its limits, its kind, whether writes
are durable, where objects come from), so they pass the rule of every control
file gitmem reads: a regular file, not a link, of bounded size, read without
blocking; anything else makes the mount ``unavailable``, naming the file, instead
of being read as if absent (which would drop a limit or hide borrowed objects).

The check is a ``lstat`` per opened handle, so it costs nothing a call notices.
What is only gitmem's to read (the alternates list) is read here through
:func:`gitmem.localfile.read_control`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from gitmem.errors import MemoryStoreError
from gitmem.localfile import read_control

#: A mount's config holds a few dozen lines; a larger one is not read.
CONFIG_LIMIT: Final = 1 << 20
#: ``objects/info/alternates``: one folder per line.
ALTERNATES_LIMIT: Final = 64 << 10
#: The control files of a mount (relative to its git folder) and their size limits.
CONTROL_FILES: Final = (("config", CONFIG_LIMIT), (os.path.join("objects", "info", "alternates"), ALTERNATES_LIMIT))


def check_control_files(git_dir: str) -> None:
    """``unavailable`` when a control file of the mount at ``git_dir`` is a link, not a regular file, or too
    large, or when its config holds a NUL byte (libgit2 would stop reading there and take the rest for absent).

    A missing file passes: libgit2 and git have their defaults for it. What the
    config says is then parsed by libgit2, which refuses what it cannot parse.
    """
    for name, limit in CONTROL_FILES:
        check_control_file(os.path.join(git_dir, name), limit)
    check_config_text(os.path.join(git_dir, "config"))


def check_config_text(path: str) -> None:
    """``unavailable`` when the config at ``path`` cannot be read as a control file or holds a NUL byte."""
    try:
        raw = read_control(path, CONFIG_LIMIT)
    except MemoryStoreError as exc:
        raise MemoryStoreError("unavailable", exc.message) from None
    if raw is not None and b"\0" in raw:
        raise MemoryStoreError(
            "unavailable", f"{path} holds a NUL byte, which no git config has: the mount is not used until it is fixed"
        )


def check_control_file(path: str, limit: int) -> None:
    """:func:`check_control_files` for one file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link (control files are read without following links)"
    elif not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file (a FIFO, device, socket or folder)"
    elif info.st_size > limit:
        problem = f"is larger than {limit} bytes, more than such a file holds"
    else:
        return
    raise MemoryStoreError("unavailable", f"{path} {problem}: the mount is not used until it is a plain file again")


def read_alternates(objects: str) -> list[str]:
    """The lines of ``<objects>/info/alternates`` (without comments or blanks); none when it is absent.

    ``unavailable`` when the file is there but is not a regular file of bounded
    size: a list of borrowed object folders that cannot be read must not read
    as "borrows nothing".
    """
    path = os.path.join(objects, "info", "alternates")
    try:
        raw = read_control(path, ALTERNATES_LIMIT)
    except MemoryStoreError as exc:
        raise MemoryStoreError("unavailable", exc.message) from None
    if raw is None:
        return []
    try:
        if b"\0" in raw:
            raise ValueError("a NUL byte")
        text = raw.decode("utf-8")
    except ValueError as exc:  # folder names gitmem cannot read as libgit2 does: it must not guess them
        reason = "a NUL byte" if b"\0" in raw else f"text that is not UTF-8 (byte {getattr(exc, 'start', 0)})"
        raise MemoryStoreError(
            "unavailable", f"{path} holds {reason}, not a list of folders: the mount is not used until it is fixed"
        ) from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


class PackFolder:
    """A mount's ``objects/pack``, checked before libgit2 scans it: no pack or index that is not a regular file.

    libgit2 lists the folder when an object is not where it looked and opens every
    index it has not seen, with a blocking open that follows links: a FIFO planted
    as ``pack-*.idx`` would hang that read for good. The folder is listed again only
    when its ``mtime`` moved (every new pack moves it); the listing's entry types
    come with it, so no entry costs a call of its own.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_ino, info.st_mtime_ns)

    @contextmanager
    def adding(self) -> Iterator[None]:
        """Around this process's own pack write (under the writer lock): its change needs no listing after.

        When the folder was checked and unchanged just before the write, the files
        the write adds are this writer's own regular files, so the folder's new
        stamp is taken as checked. Every read after a write listed the folder
        (~0.15 ms at a hundred packs) only to find the two files it had just made.
        Something planted while the write runs (a few hundred microseconds) gets
        past this one check, as it would when planted within the clock tick of a
        listing; the next change to the folder lists it again.
        """
        before = self._stamp()
        yield
        if before is not None and before == self._seen:
            self._seen = self._stamp()

    def check(self) -> None:
        """``unavailable`` naming the first planted entry; nothing when the folder is absent."""
        stamp = self._stamp()
        if stamp is None or stamp == self._seen:
            return
        try:
            with os.scandir(self.path) as entries:
                for entry in entries:
                    if not entry.is_file(follow_symlinks=False) and entry.name.endswith((".idx", ".pack")):
                        raise MemoryStoreError(
                            "unavailable",
                            f"{entry.path} is not a regular file (a link, FIFO or folder), which git would block "
                            "or follow on: remove it",
                        )
        except FileNotFoundError:
            return
        self._seen = stamp
