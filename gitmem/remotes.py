"""Remotes of a mount: push it to a hosting service, pull merged work back into ``main``.

A thin facade over :mod:`gitmem.git.remote` and :mod:`gitmem.git.pull` for stores (its push
half is :mod:`gitmem.remotepush`, all that ``gitmem push`` loads)::

    remotes.add(store, "origin", "https://git.example.com/team/user-memory.git")
    remotes.push(store, "origin", proposals=True)   # main, and every review proposal
    result = remotes.pull(store, "origin")          # fast-forward, merge, or MergeRefused
    store, result = remotes.clone(root, "https://git.example.com/team/memory.git")  # a new memory

A memory kept on a forge is joined with :func:`clone` (or ``init`` + :func:`add` +
:func:`pull`: a new memory takes the remote's history whole). A conflict is
finished inside gitmem with ``pull(..., propose=True)``, which opens a conflict
proposal (:mod:`gitmem.git.conflict`) to resolve and approve.

A pull holds what it brings in to the rules of a store write, and lands it with
a compare-and-swap on ``main``: a fast-forward when no agent wrote since, a
merge commit when agents changed other files, and :class:`MergeRefused` naming
the files when both sides changed the same one (``main`` is then untouched).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError
from gitmem.git import pull as engine
from gitmem.git.merge import MergeRefused, MergeResult
from gitmem.git.pull import RemoteErasure
from gitmem.git.remote import DEFAULT_REMOTE, PushedRef, Remote, get_remote
from gitmem.gitstore import as_sync
from gitmem.model import Origin
from gitmem.remotepush import add, list_remotes, push, push_named, remove

if TYPE_CHECKING:
    from gitmem.gitstore import GitFileStore
    from gitmem.remotepush import Store
    from gitmem.root import Root

__all__ = [
    "DEFAULT_REMOTE",
    "MergeRefused",
    "MergeResult",
    "PushedRef",
    "Remote",
    "RemoteErasure",
    "add",
    "clone",
    "erase",
    "list_remotes",
    "pull",
    "push",
    "push_named",
    "remote_holdings",
    "remove",
]


def pull(
    store: Store, remote: str = DEFAULT_REMOTE, *, origin: Origin | None = None, propose: bool = False
) -> MergeResult:
    """Bring the remote's ``main`` into this memory's ``main`` (see the module docstring).

    ``propose``: when both sides changed a file, open conflict proposal
    ``merge-<remote>`` (result kind ``conflict``) instead of raising.
    """
    sync = as_sync(store)
    return engine.pull(sync.repo, sync.format, remote, origin=origin, propose=propose)


def clone_name(url: str) -> str:
    """The memory name a clone of ``url`` gets by default: its last path part, without ``.git``.

    Never a piece of the URL's user part: that ends at its last ``@`` (as
    :func:`gitmem.secrets.scrub_credentials` reads it), and ``https://alice:PASSWORD@host``
    was named ``PASSWORD@host``, which the refusal of that name then printed.
    """
    text = url.split("?", 1)[0]
    scheme, sep, rest = text.partition("://")
    if sep:
        text = scheme + sep + rest.rpartition("@")[2]
    tail = re.split(r"[/:\\]", text.rstrip("/"))[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def clone(
    root: Root, url: str, name: str | None = None, *, remote: str = DEFAULT_REMOTE, origin: Origin | None = None
) -> tuple[GitFileStore, MergeResult]:
    """Make memory ``name`` from the ``main`` of the repository at ``url``, recorded as remote ``remote``.

    The memory is created, the remote added (a password handed to the credential
    helper when there is one, see :func:`add`) and pulled: a new memory takes the
    remote's history whole, commit ids and all, every commit checked by the
    memory's rules in the quarantine. Nothing is left behind when anything
    fails (a refused commit, an unreachable remote): the new memory is removed and
    the error raised, a refusal listing each file and rule. ``already_exists``
    when ``name`` is taken.
    """
    from gitmem.root import check_mount_name

    chosen = check_mount_name(name if name is not None else clone_name(url))
    if chosen in root.mounts():
        raise MemoryStoreError("already_exists", f"memory {chosen!r} already exists; clone into another name")
    store = root.mount(chosen, create=True)
    try:
        add(store, remote, url)
        result = pull(store, remote, origin=origin)
    except BaseException:
        try:
            root.remove(chosen)
        except MemoryStoreError:
            pass  # the error that matters is the clone's
        raise
    return store, result


def erase(store: Store, names: list[str] | None = None) -> list[RemoteErasure]:
    """After a forget or purge: push the rewritten history and the ledger to every remote (or ``names``).

    Each remote is then fetched into a scratch repository and checked: a
    :class:`RemoteErasure` per remote says whether any ref there still reaches
    an erased object (``holding``), or why the push or the check failed.
    """
    return engine.erase_on_remotes(as_sync(store).repo, names)


def remote_holdings(store: Store, remote: str = DEFAULT_REMOTE) -> tuple[str, ...]:
    """The refs of ``remote`` from which a version the erasure ledger names is still reachable."""
    repo = as_sync(store).repo
    return engine.remote_holdings(repo, get_remote(repo, remote))
