"""One rule for every file gitmem derives from a mount: never publish a result built before a forget.

Search indexes, recall snapshots, the session catalogue and statistics, the
quick listing, semantic vectors: each is a cache of text or names read from the
mount, written beside it, and each can race an erasure. A writer in another
process reads the records, ``forget`` erases one of them and deletes the
derived files, then the writer saves what it read: the erased text is back on
disk after ``forget`` returned. So every writer of derived state does this::

    seen = derived.Generation.read(stamp)   # before reading the store
    ... read the store, build the result ...
    derived.publish(seen, target, write)    # write(folder_fd, name), then re-reads the stamp

``stamp`` is the mount's ``gitmem/generation`` file, which ``purge`` and
``forget`` rewrite *before* deleting the derived files. :func:`publish` gives
up before writing when the stamp moved since it was read, and after writing
(an atomic rename) reads it again and deletes the file when it moved
meanwhile. Either the erasure's deletion comes after the write (and removes
it), or the writer sees the new stamp (and removes its own file): no order of
the two leaves a pre-erasure result on disk.

A store without such a stamp (the in-memory twin, a plain folder) never
erases history, so there is nothing to guard: :data:`UNGUARDED`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from gitmem.localfile import local_folder_fd, open_folder, open_local
from gitmem.model import Value

_STAMP_BYTES = 4096


class Generation(Value):
    """The history generation a derived writer read: the stamp's path and what it held then."""

    __match_args__ = __slots__ = ("stamp", "value")
    stamp: str | None
    value: str | None

    def __init__(self, stamp: str | None, value: str | None) -> None:
        object.__setattr__(self, "stamp", stamp)
        object.__setattr__(self, "value", value)

    @classmethod
    def read(cls, stamp: str | os.PathLike[str] | None) -> Generation:
        if stamp is None:
            return UNGUARDED
        path = os.fspath(stamp)
        return cls(path, _read(path))

    def current(self) -> bool:
        """Whether no purge or forget happened since this was read."""
        return self.stamp is None or _read(self.stamp) == self.value


UNGUARDED = Generation(None, None)


def _read(path: str) -> str | None:
    """The stamp's text (``None`` before the first erasure); unreadable: a new random text, so never current."""
    try:
        fd = open_local(path)  # a FIFO planted as the stamp must not block a publish
    except FileNotFoundError:
        return None
    except OSError:
        return f"unreadable {os.urandom(8).hex()}"
    try:
        return os.read(fd, _STAMP_BYTES).decode("utf-8", "replace")
    except OSError:
        return f"unreadable {os.urandom(8).hex()}"
    finally:
        os.close(fd)


def stamp_of(store: object) -> str | None:
    """The generation stamp of the mount ``store`` reads (``None``: a store that never erases history)."""
    found = getattr(store, "generation_file", None)
    return found if isinstance(found, str) else None


def publish(seen: Generation, target: str | os.PathLike[str], write: Callable[[int, str], object]) -> bool:
    """Run ``write`` (which replaces ``target`` atomically) unless history was erased since ``seen``.

    ``write`` gets a descriptor of ``target``'s folder and ``target``'s name in it, and
    writes through them (``dir_fd=``). Returns whether the result stands. After a forget
    or purge, ``target`` is deleted instead (whichever writer put it there: it holds
    pre-erasure text or is rebuilt cheaply). Nothing is written (``False``) when a folder
    between the mount and ``target`` is a link (:func:`_folder`).
    """
    if not seen.current():
        return False
    folder = _folder(seen, target)
    if folder is None:
        return False
    name = os.path.basename(os.fspath(target))
    try:
        write(folder, name)
        if seen.current():
            return True
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            pass
        return False
    finally:
        os.close(folder)


def _folder(seen: Generation, target: str | os.PathLike[str]) -> int | None:
    """A descriptor of ``target``'s folder, made when missing; ``None`` when it is in the mount ``seen`` guards and
    a folder from the mount down to it is a link.

    Derived files hold the mount's texts and names; a folder of them planted as a
    link (``gitmem/recall`` made to point elsewhere) would have them written
    outside the mount, since the opener refuses a link only in place of the file
    itself. Inside the mount every folder is entered through the one above, no
    link followed (:func:`gitmem.localfile.local_folder_fd`), and the file written
    through the descriptor: a folder swapped for a link after that is not followed
    either. A target outside the mount (a caller's own folder) is the caller's.
    """
    folder = os.path.dirname(os.path.abspath(target))
    if seen.stamp is not None:
        mount = os.path.dirname(os.path.dirname(os.path.abspath(seen.stamp)))  # <mount>/gitmem/generation
        if os.path.commonpath([folder, mount]) == mount:
            try:
                return local_folder_fd(folder, root=mount)
            except OSError:  # a link (or no folder can be made): a cache not saved costs only speed
                return None
    os.makedirs(folder, exist_ok=True)
    return open_folder(folder, follow=True)
