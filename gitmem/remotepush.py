"""Remotes of a mount and pushing to them: the half of :mod:`gitmem.remotes` a push needs.

``gitmem push`` and ``gitmem remote`` load this module alone, which reaches
:mod:`gitmem.git.remote` and nothing of the pull side (quarantine, the commit
checks, merge, conflict proposals): importing those cost a push more than its
own work. :mod:`gitmem.remotes` re-exports every name here.
"""

from __future__ import annotations

from gitmem.git import remote as engine
from gitmem.git.remote import DEFAULT_REMOTE, PushedRef, Remote
from gitmem.gitstore import GitFileStore, SyncGitFileStore, as_sync

__all__ = ["DEFAULT_REMOTE", "PushedRef", "Remote", "Store", "add", "list_remotes", "push", "remove"]

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
