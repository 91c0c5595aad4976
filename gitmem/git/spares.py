"""Recycled files: a commit writes its pack, index and ref lock into files that already exist.

Why. On a file system without a journal (ext4 mounted that way, as on the
machines gitmem is benchmarked on), the kernel will not hand out an inode the
same block group freed in the last minute (six while its inode table block is
unwritten): every *create* looks each such inode up and skips it. A commit
created three files (its pack, its index, the ref's lock) and, counting the
ref file it replaces and the packs a later fold deletes, freed three; under
steady writing a create then cost 0.2-0.6 ms, several times the rest of the
commit's file work, and the same toll fell on every other program creating
files in that block group (``docs/benchmarks.md``, "Recycled files").

How. Files gitmem would delete (the packs and indexes a fold has folded, once
their grace is over, and the ref file a commit replaces) go into the pool
``gitmem/spares/`` instead: renamed there, or for the ref hard-linked there
before the lock is renamed over it. A commit takes a spare, overwrites it and
renames it into place; the ref lock is made by ``link`` (exclusive, as
``O_EXCL`` is). No inode is created or freed in the steady state.

Why it is safe to overwrite:

- A spare is reused only when nobody has it open or mapped. A write lease
  (``F_SETLEASE``, ``F_WRLCK``) is granted only to the one open description of a
  file: a reader that still maps a folded pack (libgit2 does until its handle
  is dropped), a ``git`` process reading it or a backup tool holding it keeps
  it from being reused. The lease-break signal is set to ``SIGURG``, which is
  ignored by default, so a stray ``open`` of a spare meanwhile (a backup, a
  ``grep -r``) waits microseconds instead of killing the writer with ``SIGIO``.
- Only the holder of the mount's writer lock takes spares (:func:`fill`,
  :func:`take`), so two takers never race for one; folds only give
  (:func:`give`). A file taken out of the pool is renamed or linked into place
  only after it was written, closed and released.
- A spare with a second name (a crash between the two steps that hand a ref's
  old file over) is never overwritten: its pool name is dropped instead.
- Erasure drains the pool (:func:`drain`, called by ``forget``, ``purge`` and
  ``gc``): a folded pack waiting there may hold what was erased.
- Where leases are refused (NFS, another operating system, files of another
  user) or any step fails, the commit creates its files as before.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import threading
import time
from collections import deque
from collections.abc import Callable

from gitmem.git.perms import make_private_dir

POOL = os.path.join("gitmem", "spares")
"""The pool's folder inside a mount."""
CAP = 96
"""Most spares a process keeps in a mount's pool; more are deleted."""
MAX_SIZE = 256 * 1024
"""Files bigger than this are deleted, not pooled: a spare is meant for a commit's pack, index or ref."""
TRIES = 3
"""Spares a take tries (each refused one is one that is still open or mapped) before creating a file."""

_SETLEASE = getattr(fcntl, "F_SETLEASE", None)
_SETSIG = getattr(fcntl, "F_SETSIG", None)
_enabled = [_SETLEASE is not None and _SETSIG is not None and hasattr(signal, "SIGURG")]
_known: dict[str, _Spares] = {}
"""Per pool folder: the spares this process believes are there."""
_listed: dict[str, int] = {}
"""Per pool folder: its mtime when this process last listed it (an empty, unchanged pool is not listed again)."""
_seq = [0]


BLOCK = 4096


def _blocks(size: int) -> int:
    return (size + BLOCK - 1) // BLOCK


class _Spares:
    """The spares of one pool this process knows of, by size in blocks, oldest first in each size.

    Sizes matter: a spare cut shorter frees blocks, and freeing a block that
    reached the disk costs as much as a create on a file system mounted with
    ``discard`` (0.1-0.3 ms), so a take prefers a spare of the same number of
    blocks, then a smaller one (growing a file only reserves blocks). A lock:
    one thread folds (and gives) after its write while another writes (and takes).
    """

    def __init__(self) -> None:
        self.by_blocks: dict[int, deque[str]] = {}
        self.count = 0
        self._lock = threading.Lock()

    def add(self, path: str, size: int) -> None:
        with self._lock:
            self.by_blocks.setdefault(_blocks(size), deque()).append(path)
            self.count += 1

    def candidates(self, size: int) -> list[int]:
        """Block counts to try for a file of ``size`` bytes, best first."""
        want = _blocks(size)
        with self._lock:
            sizes = [n for n, paths in self.by_blocks.items() if paths]
        smaller = sorted((n for n in sizes if n < want), reverse=True)
        bigger = sorted(n for n in sizes if n > want)
        return ([want] if want in sizes else []) + smaller + bigger

    def pop(self, blocks: int) -> str | None:
        with self._lock:
            paths = self.by_blocks.get(blocks)
            if not paths:
                return None
            self.count -= 1
            return paths.popleft()


_umask: list[int] = []


def created_mode(mode: int) -> int:
    """The permission bits a file created with ``mode`` gets under this process's umask."""
    if not _umask:
        found = 0o022
        try:
            with open("/proc/self/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Umask:"):
                        found = int(line.split()[1], 8)
                        break
        except (OSError, ValueError, IndexError):
            pass
        _umask.append(found)
    return mode & ~_umask[0]


def _pool(repo_path: str) -> str:
    return os.path.join(repo_path, POOL)


def _new_name(pool: str, size: int) -> str:
    """A unique pool name that carries the file's size in blocks, so a listing needs no ``stat``."""
    _seq[0] += 1
    return os.path.join(pool, f"b{_blocks(size)}-{os.getpid()}-{_seq[0]}-{time.monotonic_ns()}")


def _blocks_in_name(name: str) -> int | None:
    head = name.split("-", 1)[0]
    return int(head[1:]) if head[:1] == "b" and head[1:].isdigit() else None


def _spares(pool: str) -> _Spares:
    """This process's list of the pool's spares, listed again when empty and the folder changed since."""
    known = _known.get(pool)
    if known is None:
        known = _known[pool] = _Spares()
    if known.count:
        return known
    try:
        mtime = os.stat(pool).st_mtime_ns
    except OSError:
        return known
    if _listed.get(pool) == mtime:
        return known
    _listed[pool] = mtime
    try:
        _list_into(pool, known)
    except OSError:  # not a folder, not readable: no spares, files are created as before
        pass
    return known


def _list_into(pool: str, known: _Spares) -> None:
    with os.scandir(pool) as found:
        for entry in found:
            if entry.name.startswith("."):
                continue
            blocks = _blocks_in_name(entry.name)
            try:
                size = blocks * BLOCK if blocks is not None else entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
            known.add(entry.path, size)


def take(repo_path: str, size: int) -> tuple[str, int, os.stat_result] | None:
    """A spare for ``size`` bytes, opened for writing, leased (nobody else has it open), with one name.

    Returns ``(path, fd, stat)``, or ``None`` when the pool has none to give;
    the caller writes through ``fd`` and ends with :func:`release`. Writer lock
    held. When the spares this process knew of were gone (another process's
    writer took them), the pool is listed again once.
    """
    if not _enabled[0]:
        return None
    pool = _pool(repo_path)
    known = _spares(pool)
    taken, gone = _take_known(known, size)
    if taken is None and gone and _enabled[0]:
        known = _known[pool] = _Spares()
        _listed.pop(pool, None)
        taken, _ = _take_known(_spares(pool), size)
    return taken


def _take_known(known: _Spares, size: int) -> tuple[tuple[str, int, os.stat_result] | None, bool]:
    """The first of at most :data:`TRIES` known spares that can be leased; and whether any was gone."""
    tries = 0
    gone = False
    for blocks in known.candidates(size):
        while tries < TRIES:
            path = known.pop(blocks)
            if path is None:
                break
            tries += 1
            taken = _open_leased(path, known)
            if taken is not None and not isinstance(taken, bool):
                return taken, gone
            if not _enabled[0]:
                return None, gone
            gone = gone or taken is False
        if tries >= TRIES:
            break
    return None, gone


def _open_leased(path: str, known: _Spares) -> tuple[str, int, os.stat_result] | bool | None:
    """The spare at ``path`` opened and leased; ``False`` when it is gone, ``None`` when it cannot be used now."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        _drop(path)
        return None
    try:
        fcntl.fcntl(fd, _SETSIG, signal.SIGURG)  # type: ignore[arg-type]
        fcntl.fcntl(fd, _SETLEASE, fcntl.F_WRLCK)  # type: ignore[arg-type]
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EBUSY):
            known.add(path, os.fstat(fd).st_size)  # still open or mapped somewhere: tried again later
        elif error.errno in (errno.EACCES, errno.EPERM):
            _drop(path)  # not ours to lease (another user's file)
        else:
            _enabled[0] = False  # leases unsupported here: create files as before
        os.close(fd)
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        release(fd)
        return None
    if info.st_nlink != 1 or not stat.S_ISREG(info.st_mode):
        release(fd)
        _drop(path)  # a second name (a crash mid-hand-over) or not a file: never overwritten
        return None
    return path, fd, info


def release(fd: int) -> None:
    """End a take: ``fd`` closed, which lets the lease go with it (a lease belongs to its open description)."""
    os.close(fd)


def put_back(repo_path: str, path: str, fd: int, info: os.stat_result) -> None:
    """A spare taken but not used (still under its pool name): released and listed again."""
    release(fd)
    _known.setdefault(_pool(repo_path), _Spares()).add(path, info.st_size)


def overwrite(fd: int, info: os.stat_result, data: bytes, mode: int) -> None:
    """Make the taken file hold exactly ``data`` with permission bits ``mode``."""
    view = memoryview(data)
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], done)
    if info.st_size > len(data):
        os.ftruncate(fd, len(data))
    if stat.S_IMODE(info.st_mode) != mode:
        os.fchmod(fd, mode)


def fill(repo_path: str, data: bytes, mode: int) -> str | None:
    """A spare holding exactly ``data`` (mode ``mode``), closed, still under its pool name; ``None`` if none.

    The caller renames it into place (or, if it cannot, leaves it: it is a
    spare like any other). Writer lock held.
    """
    taken = take(repo_path, len(data))
    if taken is None:
        return None
    path, fd, info = taken
    try:
        overwrite(fd, info, data, mode)
    except OSError:
        release(fd)
        _drop(path)
        return None
    release(fd)
    return path


def give(repo_path: str, path: str) -> None:
    """Put ``path``, a file gitmem is done with, into the pool (renamed), or delete it. A missing file is skipped.

    Files that are big, or that would take the pool past :data:`CAP`, are
    deleted as before.
    """
    pool = _pool(repo_path)
    known = _known.setdefault(pool, _Spares())
    try:
        size = os.lstat(path).st_size
        if not _enabled[0] or known.count >= CAP or size > MAX_SIZE:
            os.unlink(path)
            return
        spare = _into_pool(os.rename, path, pool, size)
    except FileNotFoundError:
        return
    except OSError:  # the pool cannot take it (another file system, permissions): deleted as before
        _drop(path)
        return
    if spare:
        known.add(spare, size)


def keep(repo_path: str, path: str, size: int) -> None:
    """Link ``path`` (a ref file of ``size`` bytes about to be replaced by a rename) into the pool.

    So the rename frees nothing. Best effort: any failure only means the old
    file is freed as before. Writer lock held.
    """
    pool = _pool(repo_path)
    known = _known.setdefault(pool, _Spares())
    if not _enabled[0] or known.count >= CAP:
        return
    try:
        spare = _into_pool(os.link, path, pool, size)
    except OSError:
        return
    if spare:
        known.add(spare, size)


def _into_pool(move: Callable[[str, str], None], path: str, pool: str, size: int) -> str:
    """``move`` (rename or link) ``path`` to a new pool name, making the pool folder on first use; ``""`` if gone."""
    spare = _new_name(pool, size)
    try:
        move(path, spare)
    except FileNotFoundError:
        if not os.path.exists(path):
            return ""
        make_private_dir(pool)
        move(path, spare)
    return spare


def refresh(repo_path: str) -> None:
    """List the pool again, so :func:`give` counts every process's spares against :data:`CAP`. Fold lock held.

    Nothing is deleted here: a writer may be filling a spare right now (only
    the writer lock's holder deletes spares, and :func:`drain`).
    """
    pool = _pool(repo_path)
    known = _Spares()
    try:
        _list_into(pool, known)
    except OSError:
        return
    _known[pool] = known


def drain(repo_path: str) -> int:
    """Delete every spare (erasure: a folded pack may hold what was erased); returns how many. Writer and fold locks held."""
    pool = _pool(repo_path)
    _known.pop(pool, None)
    _listed.pop(pool, None)
    count = 0
    try:
        with os.scandir(pool) as found:
            names = [entry.path for entry in found]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for path in names:
        if _drop(path):
            count += 1
    return count


def _drop(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True
