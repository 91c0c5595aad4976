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
import re
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
_HEX = re.compile(rb"[0-9a-f]{40}")


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
    if len(raw) == 41 and raw[40] == 10 and _HEX.fullmatch(raw, 0, 40):  # what git and gitmem write
        return CommitId(raw[:40].decode("ascii")), st
    value = raw.strip()
    if len(value) != 40 or raw[40:] not in (b"\n", b""):
        return None, st
    try:
        if len(bytes.fromhex(value.decode("ascii"))) != 20:  # int(x, 16) would also take "0x", "_", a sign
            return None, st
    except ValueError:
        return None, st
    return CommitId(value.decode("ascii").lower()), st


def swap_loose_ref(repo_path: str, name: str, old: str, new: str, *, durable: bool) -> bool | None:
    """Move the loose ref file ``name`` from ``old`` to ``new`` by hand: :func:`swap_refs`'s common case.

    git's own protocol, as libgit2 follows it: create ``<ref>.lock`` exclusively
    (every git client honours it), read the ref while holding it, write the new
    id (fsynced when ``durable``), put the lock in the ref's place, and sync the
    folder (``durable``). The lock takes the ref's place by trading names with it
    (:func:`exchange`), then goes with the ref's old file; where the system
    cannot trade, it is renamed over the ref as git does. libgit2 makes the same
    file changes with more bookkeeping around them; this is a third of a write's
    critical section, which bounds a served memory's write throughput. Returns
    ``False`` when the ref holds another id, ``None``, having changed nothing,
    when this path does not apply: the lock is taken (a foreign git, a crash's
    leftover, something planted), the ref is not a plain loose file holding an
    id (packed, symbolic, a link, a FIFO, too large, absent) or it keeps a
    reflog; the transaction then decides (it waits, breaks stale locks, refuses
    planted files and writes reflogs).
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
        traded = exchange(lock, ref)
        if not traded:
            os.rename(lock, ref)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(lock)
        raise
    if traded:
        with suppress(OSError):  # the move is made: a lock left here is a crash's leftover, cleared as one
            os.unlink(lock)  # the ref's old file, never written again
    if durable:
        folder = open_folder(os.path.dirname(ref))
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return True


def exchange(lock: str, ref: str) -> bool:
    """Give ``ref`` the file ``lock`` (its next value) and ``lock`` the ref's old one, in one atomic step.

    ``renameat2(RENAME_EXCHANGE)``: every reader sees the old or the new ref, as
    with git's ``rename`` of the lock over the ref, and the caller then removes
    the lock, which holds the ref's old value. What differs is what ext4 does: a
    ``rename`` over an existing file first pushes the new file's data towards the
    disk (its ``auto_da_alloc`` rule for programs that replace files without
    ``fsync``), and a store write waited for it; a trade does not. A store
    write's wall time with it, same run, separate memories: see
    ``docs/benchmarks.md``, "What it buys, measured". The ref's old file is never
    written again, only removed: a reader that opened the ref before the move
    (git, libgit2, dulwich and :func:`read_ref_file` open, then read) reads a
    value the ref held, whenever it reads.

    ``False``, nothing changed, where the system cannot (not Linux, a file system
    without ``RENAME_EXCHANGE``: asked once per process) or the call failed: the
    caller renames the lock over the ref.
    """
    if not _renameat2:
        _renameat2.append(_load_renameat2())
    return _renameat2[0](lock, ref)


_renameat2: list[Callable[[str, str], bool]] = []  # loaded at the first exchange


def _load_renameat2() -> Callable[[str, str], bool]:
    """``renameat2(a, b, RENAME_EXCHANGE)`` through libc, or :func:`_cannot`."""
    try:
        import ctypes  # ~2 ms to import: only in a process that moves a ref

        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (ImportError, OSError, AttributeError):
        return _cannot
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    renameat2.restype = ctypes.c_int

    def trade(a: str, b: str) -> bool:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return True
        if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            _renameat2[0] = _cannot  # the file system (or kernel) cannot: not asked again
        return False

    return trade


def _cannot(a: str, b: str) -> bool:
    """The stand-in where the system cannot trade names: the caller renames."""
    return False


_AT_FDCWD: Final = -100
_RENAME_EXCHANGE: Final = 2
