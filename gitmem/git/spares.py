"""Empty spare files made ahead of time, so a commit renames files into place instead of creating them.

On the benchmark machine (ext4 mounted with ``discard``, in a VM) allocating an
inode is the most expensive and the most variable file operation a commit makes:
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
  (which only a file system that broke a journaled rename could produce) is
  left alone.
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
simply not there), a file's data is fsynced before it is published and its
folder after the rename, as before. A journaling file system (ext4, xfs) commits
a rename across folders as one transaction, so fsyncing the folder the file
went to makes the move durable without fsyncing ``gitmem/spare``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
import time
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
    """One repository's spares in this process: the names this process may take."""

    __slots__ = ("adopted", "count", "folder", "guard", "making", "names", "noreplace", "token")

    def __init__(self, repo_path: str) -> None:
        self.folder = os.path.join(repo_path, SPARE_DIR)
        self.token = os.urandom(5).hex()
        self.count = 0
        self.making = 0
        self.names: list[str] = []
        self.guard = threading.Lock()
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
            _fill(pool, HIGH)
        except OSError:
            pass  # the memory was deleted, the disk is full...: writes create their files meanwhile


def fill(repo_path: str, up_to: int = HIGH) -> int:
    """Top this process's pool for ``repo_path`` up to ``up_to`` spares now; returns how many it holds.

    What the filler thread does; callable directly (tests, or a caller that
    knows a burst is coming). Raises ``OSError`` when the folder is gone.
    Returns once the filler thread has finished the spare it was making too.
    """
    pool = _pool(os.path.abspath(repo_path))
    _fill(pool, up_to)
    while pool.making:
        time.sleep(0.001)
    return len(pool.names)


def _fill(pool: _Pool, up_to: int) -> int:
    folder = pool.folder
    try:
        os.mkdir(folder, 0o700)  # only inside an existing gitmem/: never re-create a deleted memory
    except FileExistsError:
        pass
    else:
        make_private_dir(folder)
    if not pool.adopted:
        pool.adopted = True
        _adopt(pool, up_to)
    while True:
        with pool.guard:
            if len(pool.names) + pool.making >= up_to:
                return len(pool.names)
            pool.count += 1
            pool.making += 1  # two fillers (the thread and a direct call) never overshoot
            name = f"{pool.token}-{pool.count}"
        try:
            os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        finally:
            with pool.guard:
                pool.making -= 1
        with pool.guard:
            pool.names.append(name)


def _adopt(pool: _Pool, up_to: int) -> None:
    """Take over spares other processes left (each a ``rename`` to this pool's name: exclusive)."""
    with os.scandir(pool.folder) as found:
        others = [e.name for e in found if not e.name.startswith(pool.token)]
    for other in others:
        with pool.guard:
            if len(pool.names) >= up_to:
                return
            pool.count += 1
            name = f"{pool.token}-{pool.count}"
        try:
            os.rename(os.path.join(pool.folder, other), os.path.join(pool.folder, name))
        except FileNotFoundError:
            continue  # its owner (or another adopter) took it first
        with pool.guard:
            pool.names.append(name)


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
    packs and their indexes (the descriptor stays writable). ``None`` when there is no spare to use or renaming one failed
    otherwise: the caller creates ``target`` itself.
    """
    if not ENABLED:
        return None
    pool = _pools.get(repo_path) or _pool(repo_path)
    if exclusive and not pool.noreplace:
        return None
    while True:
        with pool.guard:
            name = pool.names.pop() if pool.names else None
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
        pool.names.append(name)


def trim(repo_path: str, keep: int = KEEP) -> int:
    """Delete spares of ``repo_path`` beyond ``keep`` (``gc``); returns how many were deleted.

    Spares are harmless empty files, but every process that ever filled a pool
    may have left up to :data:`HIGH`. Deleting one another process is taking is
    safe: its ``rename`` fails and it takes the next or creates its file.
    """
    folder = os.path.join(os.path.abspath(repo_path), SPARE_DIR)
    try:
        with os.scandir(folder) as found:
            names = sorted(e.name for e in found)
    except FileNotFoundError:
        return 0
    deleted = 0
    for name in names[keep:]:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            continue
        deleted += 1
    return deleted
