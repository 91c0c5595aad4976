"""The refs every mount has, and a loose ref read and swapped by hand, without libgit2.

:mod:`gitmem.git.refs` is where a mount's refs move; what is here is the part of it
a process can run before (or without) loading libgit2: the ref names, the read of
a loose ref file, and :func:`swap_loose_ref`, the compare-and-swap of one loose ref
that every store write and a fast-forward pull (:mod:`gitmem.remotepull`) use.
:mod:`gitmem.git.refs` re-exports every name.
"""

from __future__ import annotations

import os
import re
from contextlib import suppress
from typing import Final

from gitmem.git.control import check_ref_folders
from gitmem.localfile import open_folder, open_local_stat, open_private, read_unstamped
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


def read_ref_file_unstamped(path: str) -> CommitId | None:
    """The id the loose ref file at ``path`` holds, in the form git and gitmem write it; else ``None``.

    Three calls (open, read, close: :func:`~gitmem.localfile.read_unstamped`): no
    ``fstat``, so no stamp and no check that the file is a regular one. Never
    blocking, no link followed; a FIFO or a folder there reads nothing, and
    ``None`` sends the caller to :func:`read_ref_file_stat`, which refuses it.
    For a reader that takes the stamp at most every few milliseconds
    (:meth:`gitmem.git.repo.GitRepo.head`): right after a write the stamp is racy
    and serves nothing, and the ``fstat`` and its result cost about a third of
    the ref read on cold caches.
    """
    raw = read_unstamped(path, 64)
    if raw is not None and len(raw) == 41 and raw[40] == 10 and _HEX.fullmatch(raw, 0, 40):
        return CommitId(raw[:40].decode("ascii"))
    return None


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
    id, ``rename`` the lock over the ref (the lock fsynced first, and the folder
    after, when ``durable``). libgit2 makes the same file changes with more
    bookkeeping around them; this is a third of a write's critical section, which
    bounds a served memory's write throughput. Returns ``False`` when the ref holds
    another id, ``None``, having changed nothing, when this path does not apply:
    the lock is taken (a foreign git, a crash's leftover, something planted), the
    ref is not a plain loose file holding an id (packed, symbolic, a link, a
    FIFO, too large, absent) or it keeps a reflog; the transaction then decides
    (it waits, breaks stale locks, refuses planted files and writes reflogs).
    """
    check_ref_folders(repo_path, name)
    paths = _ref_paths.get((repo_path, name))
    if paths is None:
        if len(_ref_paths) >= 256:
            _ref_paths.clear()
        paths = _ref_paths[(repo_path, name)] = (
            os.path.join(repo_path, *name.split("/")),
            os.path.join(repo_path, "logs", *name.split("/")),
        )
    ref, log = paths
    if os.access(log, os.F_OK, follow_symlinks=False):  # anything there, a link included (one lstat's answer, cheaper)
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
        os.rename(lock, ref)
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


_ref_paths: dict[tuple[str, str], tuple[str, str]] = {}  # a ref's file and its reflog's, joined once
