"""Compare-and-swap on refs, including creating and deleting them: the only place a mount's refs move.

Every change gitmem makes to a mount's refs (a write to ``main``, a proposal
branch, an approval, a pull, ``purge`` replacing ``main`` and deleting the other
refs, forget's rewrite of every branch, a push through ``gitmem serve``) goes
through :func:`swap_refs`. (A new repository's first commit is made before anyone
can see the repository, and the scratch repositories of a pull or approval set
their own private refs directly.) ``create_reference(force=False)`` checks and
then writes, so two processes can both "create" one ref; the change therefore
runs in a libgit2 ref transaction instead: ``lock_ref`` takes git's own ``<ref>.lock`` file (the lock
every git client honours), each value is read *while its lock is held*, and only
then set or deleted, all refs together or none. One loose ref moved from one commit
to another (every store write) is swapped by hand instead (:func:`swap_loose_ref`):
the same lock file and the same check under it, with less work. A caller also holds the mount's
writer lock, so a lock file that outlives ``stale_after`` seconds was left by a
crashed process and is removed (:func:`gitmem.git.locks.remove_if_stale`).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from typing import Final

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.control import check_ref_folders
from gitmem.git.locks import remove_if_stale
from gitmem.git.looseref import CONFLICT_PROPOSALS as CONFLICT_PROPOSALS
from gitmem.git.looseref import MAIN as MAIN
from gitmem.git.looseref import PROPOSALS as PROPOSALS
from gitmem.git.looseref import read_ref_file as read_ref_file
from gitmem.git.looseref import read_ref_file_stat as read_ref_file_stat
from gitmem.git.looseref import read_ref_file_unstamped as read_ref_file_unstamped
from gitmem.git.looseref import swap_loose_ref as swap_loose_ref
from gitmem.localfile import read_local
from gitmem.model import CommitId

_REF_FILE_LIMIT: Final = 4096  # an id or a "ref: <name>" line; git's own refs are far smaller


class _Moved(Exception):
    """A ref no longer holds the value the caller expected."""


def read_ref(repo: pygit2.Repository, name: str) -> CommitId | None:
    """The commit id ``name`` points at, or ``None`` when it does not exist: the one ref reader."""
    _check_loose_ref(repo.path, name)
    ref = repo.references.get(name)
    if ref is None:
        return None
    if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
        ref = ref.resolve()  # libgit2 looks a direct ref up again to "resolve" it: only for symbolic ones
    return CommitId(str(ref.target))


def _check_loose_ref(git_dir: str, name: str) -> None:
    """``unavailable`` when the loose file of ref ``name`` is there but is no regular file.

    libgit2 opens a loose ref with a blocking read that follows links and reads
    it whole: a FIFO planted as ``refs/heads/proposals/x`` would hang the call for
    good, a 100 MB file be read and parsed.
    """
    path = os.path.join(git_dir, *name.split("/"))
    try:
        info = os.lstat(path)
    except OSError:
        return  # none (packed, or absent): libgit2 answers
    if not stat.S_ISREG(info.st_mode):
        raise MemoryStoreError("unavailable", f"{path} is not a regular file (a link, FIFO or folder); remove it")
    if info.st_size > _REF_FILE_LIMIT:
        raise MemoryStoreError("unavailable", f"{path} is larger than any ref ({info.st_size} bytes); remove it")


def swap_refs(
    repo: pygit2.Repository,
    repo_path: str,
    moves: Mapping[str, tuple[str | None, str | None]],
    *,
    message: str,
    stale_after: float = 30.0,
    timeout: float = 30.0,
    wait: bool = True,
) -> bool:
    """Move each ref in ``moves`` from ``old`` to ``new`` (``None``: absent), all at once.

    Returns ``False``, moving nothing, when any ref does not hold its ``old``
    (someone else moved, created or deleted it first). A lock file held by a
    live git process is waited for until ``timeout`` plus ``stale_after`` (so it
    can turn stale and be broken first), then ``unavailable``; so is any other
    failure to update. ``wait=False`` gives up at once on a live lock instead
    (a push reports it to its client rather than stall other writers). Call
    while holding the mount's writer lock. libgit2's transaction fsyncs as its
    process-wide switch says.
    """
    names = sorted(moves)
    for name in names:
        check_ref_folders(repo_path, name)
    deadline = time.monotonic() + timeout + stale_after
    delay = 0.0005
    while True:
        try:
            with repo.transaction() as txn:
                for name in names:
                    txn.lock_ref(name)
                for name in names:
                    old, new = moves[name]
                    if read_ref(repo, name) != old:
                        raise _Moved(name)
                    if new is None:
                        txn.remove(name)
                    else:
                        txn.set_target(name, pygit2.Oid(hex=new), message=message)
            return True
        except _Moved:
            return False
        except (pygit2.GitError, OSError) as exc:
            if "lock" not in str(exc).lower():
                if not os.path.isdir(os.path.join(repo_path, "objects")):
                    raise MemoryStoreError("memory_deleted", f"the memory at {repo_path} no longer exists") from None
                raise MemoryStoreError("unavailable", f"cannot update {', '.join(names)}: {exc}") from exc
            locks = [os.path.join(repo_path, *name.split("/")) + ".lock" for name in names]
            planted = [lock for lock in locks if not _may_be_gits_lock(lock)]
            if planted:  # no git holds this one, and none will release it: waiting could only time out
                raise MemoryStoreError(
                    "unavailable", f"{planted[0]} is not a lock git made (not a plain file holding a ref); remove it"
                ) from None
            if any([remove_if_stale(lock, stale_after) for lock in locks]):  # a list: try every lock
                continue
            if not wait or time.monotonic() > deadline:
                raise MemoryStoreError("unavailable", f"{', '.join(names)} locked by another git process") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def swap_ref(
    repo: pygit2.Repository,
    repo_path: str,
    name: str,
    old: str | None,
    new: str | None,
    *,
    message: str,
    stale_after: float = 30.0,
    timeout: float = 30.0,
    wait: bool = True,
    durable: bool | None = None,
) -> bool:
    """:func:`swap_refs` for one ref.

    A caller that knows the mount's durability (``durable``: every store write)
    has an existing loose ref moved from one commit to another by
    :func:`swap_loose_ref`, before anything else is set up; a create, a delete, a
    packed or symbolic ref, a ref with a reflog, a taken lock and callers that do
    not say go through :func:`swap_refs`.
    """
    if durable is not None and old is not None and new is not None:
        moved = swap_loose_ref(repo_path, name, old, new, durable=durable)
        if moved is not None:
            return moved
    return swap_refs(
        repo, repo_path, {name: (old, new)}, message=message, stale_after=stale_after, timeout=timeout, wait=wait
    )


_GITS_LOCK = re.compile(rb"([0-9a-f]{40}|ref: refs/[^\0\n]{1,4000})\n?")


def _may_be_gits_lock(path: str) -> bool:
    """Whether the ref lock at ``path`` can be a git's in flight: a regular file, empty (just made) or holding
    the ref's next value. A link, a FIFO or other content is planted: git writes nothing else there."""
    raw = read_local(path, _REF_FILE_LIMIT)
    if raw is None:
        return not os.path.lexists(path)  # gone meanwhile: whatever it was, the next attempt sees
    return not raw or _GITS_LOCK.fullmatch(raw) is not None
