"""Remotes of a mount: push it to a hosting service, pull merged work back into ``main``.

A thin facade over :mod:`gitmem.git.remote` for stores::

    remotes.add(store, "origin", "https://git.example.com/team/user-memory.git")
    remotes.push(store, "origin", proposals=True)   # main, and every review proposal
    result = remotes.pull(store, "origin")          # fast-forward, merge, or MergeRefused

A pull holds what it brings in to the rules of a store write, and lands it with
a compare-and-swap on ``main``: a fast-forward when no agent wrote since, a
merge commit when agents changed other files, and :class:`MergeRefused` naming
the files when both sides changed the same one (``main`` is then untouched).
"""

from __future__ import annotations

from gitmem.git import remote as engine
from gitmem.git.merge import MergeRefused, MergeResult
from gitmem.git.remote import DEFAULT_REMOTE, PushedRef, Remote, RemoteErasure
from gitmem.gitstore import GitFileStore, SyncGitFileStore, as_sync
from gitmem.model import Origin

__all__ = [
    "DEFAULT_REMOTE",
    "MergeRefused",
    "MergeResult",
    "PushedRef",
    "Remote",
    "RemoteErasure",
    "add",
    "erase",
    "list_remotes",
    "pull",
    "push",
    "remote_holdings",
    "remove",
]

Store = GitFileStore | SyncGitFileStore


def add(store: Store, name: str, url: str) -> Remote:
    """Record remote ``name`` at ``url`` (a URL or a local path); ``already_exists`` when taken."""
    return engine.add_remote(as_sync(store).repo, name, url)


def remove(store: Store, name: str) -> None:
    engine.remove_remote(as_sync(store).repo, name)


def list_remotes(store: Store) -> list[Remote]:
    return engine.remotes(as_sync(store).repo)


def push(store: Store, remote: str = DEFAULT_REMOTE, *, proposals: bool = False) -> list[PushedRef]:
    """Push ``main`` (and with ``proposals`` every review proposal) to ``remote``; never forced."""
    return engine.push(as_sync(store).repo, remote, proposals=proposals)


def pull(store: Store, remote: str = DEFAULT_REMOTE, *, origin: Origin | None = None) -> MergeResult:
    """Bring the remote's ``main`` into this memory's ``main`` (see the module docstring)."""
    sync = as_sync(store)
    return engine.pull(sync.repo, sync.format, remote, origin=origin)


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
    return engine.remote_holdings(repo, engine.get_remote(repo, remote))
