"""The refs every mount has, and a loose ref read and swapped by hand, without libgit2.

:mod:`gitmem.git.refs` is where a mount's refs move; what is here is the part of it
a process can run before (or without) loading libgit2: the ref names, the read of
a loose ref file, and :func:`swap_loose_ref`, the compare-and-swap of one loose ref
that every store write and a fast-forward pull (:mod:`gitmem.remotepull`) use.
:mod:`gitmem.git.refs` re-exports every name.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from contextlib import suppress
from typing import Final

from gitmem.localfile import open_folder, open_local_stat, open_private
from gitmem.model import CommitId, RefName

MAIN: Final = RefName("refs/heads/main")
"""The ref that holds a memory's live state; every module imports it from here."""
PROPOSALS: Final = "refs/heads/proposals/"
"""Review proposal branches, ``proposals/<run id>`` (here so a push names them without loading review)."""
CONFLICT_PROPOSALS: Final = PROPOSALS + "merge-"
"""Conflict proposals (:mod:`gitmem.git.conflict`): a pull's unfinished merges, never pushed."""


def read_ref_file(path: str) -> CommitId | None:
    """The id the loose ref file at ``path`` holds, read directly; ``None`` when it is not a plain loose ref.

    A loose ref file takes precedence over ``packed-refs``, so a file holding an
    id is the answer. Anything else (no file, a symbolic ref, a damaged file)
    is left to :func:`read_ref`, i.e. libgit2. Saves libgit2's reference
    machinery on the reads of ``main`` that start every store call (~5 µs against ~12 µs).
    """
    return read_ref_file_stat(path)[0]


def read_ref_file_stat(path: str) -> tuple[CommitId | None, os.stat_result | None]:
    """:func:`read_ref_file`, with the stamp (``fstat``) of the very file it read, when it read one."""
    try:
        fd, st = open_local_stat(path)
    except OSError:
        return None, None
    try:
        raw = os.read(fd, 64)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    value = raw.strip()
    if len(value) != 40 or raw[40:] not in (b"\n", b""):
        return None, st
    try:
        int(value, 16)
    except ValueError:
        return None, st
    return CommitId(value.decode("ascii").lower()), st


def swap_loose_ref(repo_path: str, name: str, old: str, new: str, *, durable: bool) -> bool | None:
    """Move the loose ref file ``name`` from ``old`` to ``new`` by hand: :func:`swap_refs`'s common case.

    git's own protocol, as libgit2 follows it: create ``<ref>.lock`` exclusively
    (every git client honours it), read the ref while holding it, write the new
    id, put the lock in the ref's place (the lock fsynced first, and the folder
    after, when ``durable``; see :func:`_put_over`). libgit2 makes the same file changes with more
    bookkeeping around them; this is a third of a write's critical section, which
    bounds a served memory's write throughput. Returns ``False`` when the ref holds
    another id, ``None``, having changed nothing, when this path does not apply:
    the lock is taken (a foreign git, a crash's leftover, something planted), the
    ref is not a plain loose file holding an id (packed, symbolic, a link, a
    FIFO, too large, absent) or it keeps a reflog; the transaction then decides
    (it waits, breaks stale locks, refuses planted files and writes reflogs).
    """
    ref = os.path.join(repo_path, *name.split("/"))
    if os.path.lexists(os.path.join(repo_path, "logs", *name.split("/"))):
        return None
    lock = ref + ".lock"
    try:
        fd = open_private(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # a link there is "exists" too
    except (FileExistsError, FileNotFoundError):
        return None
    try:
        current = read_ref_file(ref)  # under the lock; no link followed, never blocking, 64 bytes at most
        if current != old:
            os.close(fd)
            fd = -1
            os.unlink(lock)
            return None if current is None else False
        os.write(fd, new.encode("ascii") + b"\n")
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        _put_over(lock, ref)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(lock)
        raise
    if durable:
        folder = open_folder(os.path.dirname(ref))
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return True


EXCHANGE = os.environ.get("GITMEM_REF_EXCHANGE", "1").strip() not in ("0", "false", "no")
"""Whether a ref's lock file trades places with the ref (``GITMEM_REF_EXCHANGE=0``: renamed over it, benches)."""
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: list[Callable[[int, bytes, int, bytes, int], int] | None] = []  # libc's, looked up once (None: absent)


def _put_over(lock: str, ref: str) -> None:
    """Put the file ``lock`` at ``ref`` in one step, as ``rename`` does, without waiting for ext4's flush.

    ext4 writes out a file's data before a ``rename`` over another file returns
    (``auto_da_alloc``), and on a busy disk that waits in its queue: 1.2-1.5 ms
    at p50 and 4 ms at p95 for a 41-byte ref on the benchmark machine's root disk,
    at every write, under the memory's writer lock. Trading the two names
    (``renameat2`` with ``RENAME_EXCHANGE``, equally atomic for a reader of the
    ref) asks no flush (0.05 / 0.09 ms); the lock's name, now holding the old
    id, is then deleted. A writer killed between the two leaves that lock
    behind with a change time after its lock record, which the next writer
    removes as any crashed writer's (:func:`gitmem.git.locks.remove_crashed_locks`).
    Where the exchange is not offered (another system or file system, no ref
    file yet) it is a plain ``rename``. What the flush bought without fsync (a
    ref that survives a power cut) a mount that is not durable never had: its
    packs are not flushed either.
    """
    if EXCHANGE and _exchange(lock, ref):
        with suppress(FileNotFoundError):
            os.unlink(lock)
        return
    os.rename(lock, ref)


def _exchange(a: str, b: str) -> bool:
    """Trade the names ``a`` and ``b``; ``False``, having changed nothing, where that cannot be done here."""
    if not _renameat2:
        try:
            import ctypes  # here: only a ref move needs it

            found = ctypes.CDLL(None, use_errno=True).renameat2
            found.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            found.restype = ctypes.c_int
            _renameat2.append(found)
        except (OSError, AttributeError, ImportError):
            _renameat2.append(None)
    call = _renameat2[0]
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOENT, errno.EXDEV, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), a)
