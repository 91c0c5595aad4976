"""Compare-and-swap on any ref, including creating and deleting one.

``main`` always exists, so its CAS is a plain ``set_target`` that libgit2
re-checks under its lock (see :meth:`gitmem.git.repo.GitRepo.move_main`). Other refs
(proposal branches) are created and deleted too, and SPEC §11 measured that
``create_reference(force=False)`` lets two processes both "create" one ref. Here
every change goes through a libgit2 ref transaction instead: ``lock_ref`` takes
git's own ``<ref>.lock`` file (the lock every git client honours), the value is
read *while that lock is held*, and only then set or deleted. A caller also holds
the mount's writer lock, so a lock file that outlives ``stale_after`` seconds was
left by a crashed process and is removed.
"""

from __future__ import annotations

import os
import time

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.locks import remove_if_stale

MAIN = "refs/heads/main"
"""The ref that holds a memory's live state."""


class _Moved(Exception):
    """The ref no longer holds the value the caller expected."""


def read_ref(repo: pygit2.Repository, name: str) -> str | None:
    """The commit id ``name`` points at, or ``None`` when it does not exist."""
    ref = repo.references.get(name)
    if ref is None:
        return None
    return str(ref.resolve().target)


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
) -> bool:
    """Move ``name`` from ``old`` to ``new`` (``None``: absent) atomically.

    Returns ``False`` when the ref does not hold ``old`` (someone else moved,
    created or deleted it first). Call while holding the mount's writer lock.
    """
    lock_file = os.path.join(repo_path, *name.split("/")) + ".lock"
    deadline = time.monotonic() + timeout + stale_after  # a foreign lock may turn stale first
    delay = 0.0005
    while True:
        try:
            with repo.transaction() as txn:
                txn.lock_ref(name)
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
                raise
            if remove_if_stale(lock_file, stale_after):
                continue
            if time.monotonic() > deadline:
                raise MemoryStoreError("unavailable", f"{lock_file} is held by another git process") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
