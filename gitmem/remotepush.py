"""Remotes of a mount and pushing to them: the half of :mod:`gitmem.remotes` a push needs.

``gitmem push`` and ``gitmem remote`` load this module alone, which reaches
:mod:`gitmem.git.remote` and nothing of the pull side (quarantine, the commit
checks, merge, conflict proposals): importing those cost a push more than its
own work. :mod:`gitmem.remotes` re-exports every name here.

Most pushes send ``main`` and nothing else: :func:`push_named`, what the CLI
runs, sends those without opening the store (see there).
"""

from __future__ import annotations

import os

from gitmem.errors import MemoryStoreError
from gitmem.git.transport import DEFAULT_REMOTE, LEDGER_REF, MAIN_SPEC, PushedRef, Remote, check_remote_name, send

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    from gitmem.gitstore import GitFileStore, SyncGitFileStore
    from gitmem.root import Root

    Store: TypeAlias = GitFileStore | SyncGitFileStore

__all__ = [
    "DEFAULT_REMOTE",
    "PushedRef",
    "Remote",
    "add",
    "list_remotes",
    "load_libgit2_for_cli",
    "push",
    "push_named",
    "remove",
]


def load_libgit2_for_cli() -> None:
    """What a CLI process runs before a pull loads libgit2: see :mod:`gitmem.git.libgit2`."""
    from gitmem.git.libgit2 import import_without_ca_file

    import_without_ca_file()


def add(store: Store, name: str, url: str) -> Remote:
    """Record remote ``name`` at ``url`` (a URL or a local path); ``already_exists`` when taken."""
    from gitmem.git import remote as engine
    from gitmem.gitstore import as_sync

    return engine.add_remote(as_sync(store).repo, name, url)


def remove(store: Store, name: str) -> None:
    from gitmem.git import remote as engine
    from gitmem.gitstore import as_sync

    engine.remove_remote(as_sync(store).repo, name)


def list_remotes(store: Store) -> list[Remote]:
    from gitmem.git import remote as engine
    from gitmem.gitstore import as_sync

    return engine.remotes(as_sync(store).repo)


def push(store: Store, remote: str = DEFAULT_REMOTE, *, proposals: bool = False) -> list[PushedRef]:
    """Push ``main`` (and with ``proposals`` every review proposal) to ``remote``; never forced."""
    from gitmem.git import remote as engine
    from gitmem.gitstore import as_sync

    return engine.push(as_sync(store).repo, remote, proposals=proposals)


def push_named(root: Root, name: str, remote: str = DEFAULT_REMOTE, *, proposals: bool = False) -> list[PushedRef]:
    """:func:`push` of memory ``name`` of ``root``: what ``gitmem push`` runs.

    A CLI push is a whole process, and opening the store (libgit2 and gitmem's
    git modules) cost it more than ``git push`` itself. A push that sends ``main``
    alone needs none of it: when the mount holds no erasure ledger (whose push
    needs leases computed from its entries) and no proposals are asked for
    (whose push is recorded in the config), the remote's URL, the ledger's absence
    and everything opening the store checks (the control files, ``main``, the
    limits' values) are read with :class:`gitmem.git.peek.Peek`, and git pushes
    ``main`` as :func:`push` has it push. Anything else, and anything the peek
    declines or finds wrong, goes to :func:`push` through the store, whose
    answers and errors are the reference.
    """
    if not proposals:
        plain = _plain_push(root, name, remote)
        if plain is not None:
            return send(plain[0], plain[1], [MAIN_SPEC])
    return push(root.mount(name), remote, proposals=proposals)


def _plain_push(root: Root, name: str, remote: str) -> tuple[str, Remote] | None:
    """The mount's folder and the remote, when pushing ``main`` alone is the whole push; else ``None``."""
    from gitmem.git.peek import CannotPeek

    try:
        looked = look(root, name, remote)
    except (CannotPeek, MemoryStoreError):
        return None
    return None if looked is None else (looked[0], Remote(remote, looked[2]))


def look(root: Root, name: str, remote: str) -> tuple[str, dict[str, object], str] | None:
    """The mount's folder, its limits and the remote's URL, read as opening the store would check
    them (the control files, ``main``, the limits' values) but with :class:`gitmem.git.peek.Peek`,
    without libgit2, for a quick push or pull; ``None`` when the store must answer
    (no ``gitmem`` folder yet, no such remote, an erasure ledger to push or adopt).

    Raises what the checks raise (a store error, or ``CannotPeek``: ask libgit2).
    """
    from gitmem.git.control import check_control_files
    from gitmem.git.mountconfig import limit_values
    from gitmem.git.peek import Peek

    folder = root.existing_folder(name)
    check_control_files(folder)
    if not os.path.isdir(os.path.join(folder, "gitmem")):
        return None  # opening the store makes it
    peek = Peek(folder)
    peek.head()
    limits = limit_values(peek)
    url = peek.remote_url(check_remote_name(remote))
    if url is None or peek.ref(LEDGER_REF) is not None:
        return None
    return folder, limits, url
