"""Owner-only folders and files: memories are personal data.

Every folder gitmem creates for a memory (a root, a mount, its ``gitmem/``
state folder, the search index, scratch repositories) is made ``0700`` whatever
the process umask says, and every file gitmem writes itself (lock files, the
generation stamp, marks) is ``0600``. Files that libgit2 and the git CLI create
inside a mount (objects, refs, packs) keep their usual modes, but nobody else can
reach them: opening anything inside needs search permission on every folder on
the way, and the mount's own folder grants it to its owner only.
"""

from __future__ import annotations

import errno
import os
import stat

from gitmem.errors import MemoryStoreError

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: str | os.PathLike[str], *, parents: bool = False) -> bool:
    """Create folder ``path`` as ``0700`` (an existing one is left as it is); returns whether it was created.

    ``mkdir`` applies the umask, so the mode is set again afterwards: a umask of
    ``0`` must not widen it, nor an odd one take the owner's own rights away.
    With ``parents``, missing parent folders are created the usual way.
    """
    path = os.fspath(path)
    if parents:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return False
    os.chmod(path, DIR_MODE)
    return True


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` creating the file ``0600`` (the umask can only narrow that); close-on-exec.

    Files under a mount are input from whoever can write its folder, so no link
    is followed (a planted link must not make gitmem write outside the mount),
    nothing but a regular file is opened (a FIFO must not block, a device is
    refused: ``O_NONBLOCK``), and a file with a second name is refused before
    anything is written through it. Each is ``unavailable`` naming the file.
    """
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryStoreError("unavailable", f"{os.fspath(path)} is a symbolic link; gitmem does not follow it") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MemoryStoreError("unavailable", f"{os.fspath(path)} is not a regular file; remove it")
        if info.st_nlink > 1 and flags & (os.O_WRONLY | os.O_RDWR):
            raise MemoryStoreError("unavailable", f"{os.fspath(path)} has another name (a hard link); remove it")
        if flags & os.O_NONBLOCK == 0:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Create or replace ``path`` with ``text``, created ``0600``."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
