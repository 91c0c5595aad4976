"""Empty spare files made ahead of time, so a commit renames files into place instead of creating them.

On the benchmark machine (ext4 without a journal, in a VM) allocating an inode
is the most expensive and the most variable file operation a commit makes:
``open(O_CREAT | O_EXCL)`` plus the write of a new file cost 180-1,100 µs of
kernel CPU, against ~40 µs to open an existing empty file, write it and rename
it (``docs/benchmarks.md``, "The write path"). A commit creates three files: its
``.pack``, its ``.idx`` and the ref lock ``refs/heads/main.lock``. PostgreSQL
recycles WAL segment files for the same reason.

Each process keeps, per repository, a pool of *empty* files in
``<repo>/gitmem/spare/`` (same file system as ``objects/`` and ``refs/``, and
outside both, so git never sees them: ``git count-objects`` reports no
garbage, ``fsck``, ``gc`` and ``clone`` ignore them). A background thread (one
per process, started again in a forked child) tops the pools up when they fall
under :data:`LOW` spares, and never holds the writer lock. :func:`claim` hands a
spare to the write path by *renaming it out of the pool first* (to the file's
final or temporary name) and only then is it written:

- A spare is therefore never written while it is in the pool, so every file in
  the pool is empty, whoever made it. Another process may take this process's
  spares (a new process adopts the spares of dead ones, :func:`fill`); the
  ``rename`` decides who has it, the loser sees ``ENOENT`` and takes the next.
- A file a reader could have open or mmapped is never reused: spares are fresh
  files nobody else has opened, and folded packs and old refs are deleted as
  before, never recycled (truncating a file another process has mmapped makes
  its next access ``SIGBUS``). A spare that is not empty or has a second name
  (a power cut on a file system without a journal can leave one, see below)
  is never written into.
- The ref lock is claimed with ``renameat2(RENAME_NOREPLACE)``, which fails
  when ``main.lock`` exists exactly as git's ``O_CREAT | O_EXCL`` lock does, so
  a foreign ``git update-ref`` or push and gitmem still exclude each other.
- Anything unexpected (an empty pool, a file system without
  ``RENAME_NOREPLACE``, ``EXDEV``, any ``OSError``) answers ``None`` and the
  caller creates its file as it did before: the pool never fails a write.

Crash states: a spare taken but not renamed is still an empty spare; one renamed
to its target and not yet written is the same file a kill right after today's
``O_CREAT`` would leave (an empty ``.pack`` without index, an empty ``tmp_``
index, an empty ``main.lock``), cleared by the same recovery. ``rename`` sets the
file's ctime, so a ref lock that came from a spare counts as created by the
writer that renamed it (:func:`gitmem.git.locks.remove_crashed_locks`).
Durability is unchanged: spares are not fsynced (a spare lost to a power cut is
simply not there), a file's data is fsynced before it is published and the
folder it went to after the rename, as before, which makes its new name durable.
``gitmem/spare`` is not fsynced: a journaling file system commits a rename
across folders as one transaction, but one without a journal (the benchmark
machine's ext4 has none) may come back from a power cut with the old name still
there too, a second link to a published pack or ref. Such a file is never
empty, so :func:`claim` skips it and :func:`trim` removes that name (the
published name stays).

Why inode allocation costs so much there: ext4 without a journal does not reuse
an inode freed in the last 5 s (5 minutes while its inode table block is dirty),
and every allocation scans its block group's free inodes from the start, looking
each one's deletion time up; a memory that commits and folds packs frees inodes
all the time, so each allocation pays for all the recent deletions in its group.
The filler allocates too, so by itself the pool would only move that cost off
the write path; it makes its spares in subfolders that ext4 spreads over other
block groups (:func:`_spread`), where nothing has been freeing inodes, and there
an allocation costs ~50 µs. ``docs/benchmarks.md`` has what is moved and what is
removed.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import stat
import struct
import threading
from collections.abc import Callable

from gitmem.git.perms import make_private_dir

SPARE_DIR = os.path.join("gitmem", "spare")
"""Where a repository's spare files live, relative to the repository."""
LOW = 9
"""Spares in a pool under which the filler tops it up (three commits)."""
HIGH = 30
"""Spares the filler keeps in a pool (ten commits; a burst beyond that falls back to creating)."""
KEEP = HIGH
"""Spares ``gc`` leaves in a repository's folder (:func:`trim`)."""

ENABLED = True
"""Whether :func:`claim` hands out spares (off: every file is created, as before; for A/B benchmarks)."""
BACKGROUND = True
"""Whether the filler thread tops pools up (off: only :func:`fill` does; for tests that count spares)."""

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def _renameat2() -> Callable[..., int] | None:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2  # glibc >= 2.28
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    found: Callable[..., int] = func
    return found


_RENAMEAT2 = _renameat2()


class Unsupported(OSError):
    """The file system (or C library) has no ``RENAME_NOREPLACE``."""


def rename_noreplace(src: str, dst: str) -> None:
    """Rename ``src`` to ``dst`` unless ``dst`` exists (``FileExistsError``), atomically.

    Raises :class:`Unsupported` where ``renameat2`` is missing or refuses the
    flag (``EINVAL``/``ENOSYS``/``ENOTSUP``); other failures as ``OSError``.
    """
    if _RENAMEAT2 is None:
        raise Unsupported(errno.ENOSYS, "renameat2 is not available")
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        raise Unsupported(code, os.strerror(code), src)
    raise OSError(code, os.strerror(code), dst if code == errno.EEXIST else src)


class _Pool:
    """One repository's spares in this process: the names (``<subfolder>/<n>``) this process may take."""

    __slots__ = ("adopted", "count", "filling", "folder", "guard", "in_sub", "names", "noreplace", "retired", "sub", "token")

    def __init__(self, repo_path: str) -> None:
        self.folder = os.path.join(repo_path, SPARE_DIR)
        self.token = os.urandom(5).hex()
        self.count = 0
        self.names: list[str] = []
        self.guard = threading.Lock()  # the names: taken by writers, added by the filler
        self.filling = threading.Lock()  # one fill at a time (the thread, or a direct call)
        self.sub = ""  # the subfolder new spares are made in
        self.in_sub = 0
        self.retired: list[str] = []  # this pool's earlier subfolders, removed once empty
        self.adopted = False
        self.noreplace = True  # cleared once the file system refuses RENAME_NOREPLACE


_pools: dict[str, _Pool] = {}
_wanted: list[_Pool] = []
_wake = threading.Condition()
_filler: list[threading.Thread] = []


def _forked() -> None:
    """A forked child has the parent's pools but not its filler thread: start afresh."""
    global _wake
    _pools.clear()
    _wanted.clear()
    _filler.clear()
    _wake = threading.Condition()


os.register_at_fork(after_in_child=_forked)


def _pool(repo_path: str) -> _Pool:
    pool = _pools.get(repo_path)
    if pool is None:
        pool = _pools.setdefault(repo_path, _Pool(repo_path))
        _want(pool)
    return pool


def _want(pool: _Pool) -> None:
    """Ask the filler thread to top ``pool`` up (starting the thread the first time)."""
    with _wake:
        if pool not in _wanted:
            _wanted.append(pool)
        if not _filler:
            thread = threading.Thread(target=_fill_forever, name="gitmem-spares", daemon=True)
            _filler.append(thread)
            thread.start()
        _wake.notify()


def _fill_forever() -> None:
    wake = _wake
    while True:
        with wake:
            while not _wanted:
                wake.wait()
            pool = _wanted.pop(0)
        try:
            _fill(pool, HIGH, background=True)
        except Exception:  # the memory was deleted, the disk is full...: writes create their files
            pass


def fill(repo_path: str, up_to: int = HIGH) -> int:
    """Top this process's pool for ``repo_path`` up to ``up_to`` spares now; returns how many it holds.

    What the filler thread does (after the thread's own pass, if one is under
    way); callable directly by tests, or by a caller that knows a burst is
    coming. Raises ``OSError`` when the folder is gone.
    """
    return _fill(_pool(os.path.abspath(repo_path)), up_to)


ROTATE = 4 * HIGH
"""Spares a pool makes in one subfolder before it starts another (see :func:`_fill`)."""

_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS, _FS_TOPDIR_FL = 0x80086601, 0x40086602, 0x00020000


def _spread(folder: str) -> None:
    """Mark ``folder`` a "top directory" for ext2/3/4's Orlov allocator (``chattr +T``); elsewhere nothing.

    ext4 then places each new subfolder of it in a block group with many free
    inodes and few folders, rather than next to its parent, and the files made
    in a subfolder get inodes from that subfolder's group. A group's allocation
    cost grows with the inodes recently freed in it (module docstring); the
    pool's subfolders put new spares in groups nothing has been freeing in.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0\0\0\0"))[0]
        if not flags & _FS_TOPDIR_FL:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags | _FS_TOPDIR_FL))
    except OSError:
        pass  # not ext2/3/4, or not allowed: subfolders are placed as usual
    finally:
        os.close(fd)


def _fill(pool: _Pool, up_to: int, *, background: bool = False) -> int:
    """Make (or adopt) spares until ``pool`` holds ``up_to``; each new one is an empty ``0644`` file.

    Spares are made in a subfolder of the pool's own, a new one every
    :data:`ROTATE` spares: by then the inodes this pool's earlier spares became
    (packs, refs) are being freed in the old subfolder's block group, and a
    new subfolder lands in another group (:func:`_spread`).
    """
    folder = pool.folder
    with pool.filling:
        if background and not BACKGROUND:
            return len(pool.names)
        if not pool.adopted:
            try:
                os.mkdir(folder, 0o700)  # only inside an existing gitmem/: never re-create a deleted memory
            except FileExistsError:
                pass
            else:
                make_private_dir(folder)
            _spread(folder)
            pool.adopted = True
            _adopt(pool, up_to)
        for sub in pool.retired[:]:
            try:
                os.rmdir(os.path.join(folder, sub))
            except FileNotFoundError:
                pass
            except OSError:
                continue  # still holds spares
            pool.retired.remove(sub)
        misses = 0
        while True:
            with pool.guard:
                if len(pool.names) >= up_to:
                    return len(pool.names)
            if not pool.sub or pool.in_sub >= ROTATE:
                _new_sub(pool)
            pool.count += 1
            name = f"{pool.sub}/{pool.count}"
            try:
                os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
            except FileNotFoundError:
                misses += 1
                if misses > 2:
                    raise
                pool.sub = ""  # another process emptied and removed our subfolder (adoption, gc): a new one
                continue
            pool.in_sub += 1
            with pool.guard:
                pool.names.append(name)


def _new_sub(pool: _Pool) -> None:
    if pool.sub:
        pool.retired.append(pool.sub)
    pool.count += 1
    sub = f"{pool.token}-{pool.count}"
    os.mkdir(os.path.join(pool.folder, sub), 0o700)
    pool.sub, pool.in_sub = sub, 0


def _listing(folder: str) -> list[tuple[str, os.stat_result]]:
    """Every regular file in ``folder`` and its subfolders, as ``(relative name, stat)``."""
    found: list[tuple[str, os.stat_result]] = []
    try:
        with os.scandir(folder) as top:
            entries = list(top)
    except FileNotFoundError:
        return found
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                with os.scandir(entry.path) as inner:
                    for item in inner:
                        st = item.stat(follow_symlinks=False)
                        if stat.S_ISREG(st.st_mode):
                            found.append((f"{entry.name}/{item.name}", st))
            else:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    found.append((entry.name, st))
        except FileNotFoundError:
            continue
    return found


def _adopt(pool: _Pool, up_to: int) -> None:
    """Take over spares other processes left (each a ``rename`` into this pool's subfolder: exclusive).

    Their subfolders are removed once empty; a live owner whose subfolder goes
    starts another (:func:`_fill`), and its names that are gone are skipped.
    """
    others = [name for name, st in _listing(pool.folder) if not name.startswith(pool.token) and st.st_size == 0]
    try:
        with os.scandir(pool.folder) as found:  # other pools' subfolders, removed below once empty
            emptied = {e.name for e in found if e.is_dir(follow_symlinks=False) and not e.name.startswith(pool.token)}
    except FileNotFoundError:
        emptied = set()
    for other in others:
        with pool.guard:
            if len(pool.names) >= up_to:
                break
        if not pool.sub or pool.in_sub >= ROTATE:
            _new_sub(pool)
        pool.count += 1
        name = f"{pool.sub}/{pool.count}"
        try:
            os.rename(os.path.join(pool.folder, other), os.path.join(pool.folder, name))
        except FileNotFoundError:
            continue  # its owner (or another adopter) took it first
        pool.in_sub += 1
        with pool.guard:
            pool.names.append(name)
    for sub in emptied:
        try:
            os.rmdir(os.path.join(pool.folder, sub))
        except OSError:
            pass


def available(repo_path: str) -> int:
    """Spares this process's pool for ``repo_path`` holds now (no filling started)."""
    pool = _pools.get(os.path.abspath(repo_path))
    return 0 if pool is None else len(pool.names)


def claim(repo_path: str, target: str, *, exclusive: bool = False, read_only: bool = False) -> int | None:
    """Rename a spare of ``repo_path``'s pool to ``target``; a descriptor open for writing it, or ``None``.

    ``repo_path`` must be absolute. With ``exclusive``, ``target`` must not
    exist: ``FileExistsError`` when it does, as ``O_CREAT | O_EXCL`` would, and
    the spare stays in the pool. ``FileNotFoundError`` when ``target``'s folder
    is missing. Spares are made ``0644`` less the umask, as git makes its lock
    files; ``read_only`` makes the file ``0444`` less the umask, as git makes
    packs and their indexes (the descriptor stays writable). ``None`` when
    there is no spare to use or renaming one failed otherwise: the caller
    creates ``target`` itself.
    """
    if not ENABLED:
        return None
    pool = _pools.get(repo_path) or _pool(repo_path)
    if exclusive and not pool.noreplace:
        return None
    while True:
        with pool.guard:
            name = pool.names.pop(0) if pool.names else None  # oldest first: old subfolders empty and go
            short = len(pool.names) < LOW
        if short:
            _want(pool)
        if name is None:
            return None
        path = os.path.join(pool.folder, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # another process adopted it
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if st.st_size or st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
                os.close(fd)
                continue  # not a fresh empty spare: never write into it
            if exclusive:
                rename_noreplace(path, target)
            else:
                os.rename(path, target)
            if read_only:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o444)
        except FileExistsError:
            _give_back(pool, fd, name)
            raise
        except FileNotFoundError:
            if os.path.exists(path):  # the spare is there: target's folder is not
                _give_back(pool, fd, name)
                raise
            os.close(fd)
            continue  # another process took it between open and rename
        except Unsupported:
            pool.noreplace = False
            _give_back(pool, fd, name)
            return None
        except OSError:
            os.close(fd)
            if os.path.exists(path):  # EXDEV, EACCES...: not renamed
                with pool.guard:
                    pool.names.append(name)
            else:  # renamed, then fchmod failed: undo, the caller creates target itself
                try:
                    os.unlink(target)
                except OSError:
                    pass
            return None
        return fd


def _give_back(pool: _Pool, fd: int, name: str) -> None:
    os.close(fd)
    with pool.guard:
        pool.names.insert(0, name)


def trim(repo_path: str, keep: int = KEEP) -> int:
    """Delete spares of ``repo_path`` beyond ``keep``, any that is not empty, and empty subfolders (``gc``).

    Returns how many files were deleted. Spares are harmless empty files, but
    every process that ever filled a pool may have left up to :data:`HIGH`.
    Deleting one another process is taking is safe: its ``rename`` fails and it
    takes the next or creates its file; a live pool whose subfolder goes makes
    another. A file that is not empty or has a second name (a power cut's
    leftover, module docstring) loses only this name.
    """
    folder = os.path.join(os.path.abspath(repo_path), SPARE_DIR)
    good: list[str] = []
    names: list[str] = []
    for name, st in sorted(_listing(folder)):
        (good if st.st_size == 0 and st.st_nlink == 1 else names).append(name)
    names += good[keep:]
    deleted = 0
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            continue
        deleted += 1
    try:
        with os.scandir(folder) as found:
            subs = [e.path for e in found if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        subs = []
    for sub in subs:
        try:
            os.rmdir(sub)
        except OSError:
            pass  # still holds spares
    return deleted
