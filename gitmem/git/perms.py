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

import os

from gitmem.localfile import FILE_MODE, open_private, write_private

__all__ = ["DIR_MODE", "FILE_MODE", "make_private_dir", "open_private", "write_private"]

DIR_MODE = 0o700


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


