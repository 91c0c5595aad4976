"""Where an index lives, what it reads from git, git's path order and its own failures: nothing here loads whoosh.

A search without an index folder (a fresh clone) never imports whoosh at all, so
the names it must know before deciding that live here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol


def warn(message: str, *args: object, exc_info: bool = False) -> None:
    """Logged as ``gitmem.index``; ``logging`` (and its regexes) loads only when there is something to say:
    a first grep without an index imports the index modules and usually says nothing."""
    import logging

    logging.getLogger("gitmem.index").warning(message, *args, exc_info=exc_info)


INLINE_DOCS = 64
"""Documents of index work a request may do itself (about a millisecond each); more is handed off."""


def index_folder(repo_path: str) -> str:
    """Where the index of the mount at ``repo_path`` lives; no folder means no index (a fresh clone)."""
    return os.path.join(repo_path, "gitmem", "index")


def lock_file(repo_path: str) -> str:
    """The index writers' lock of the mount at ``repo_path``."""
    return os.path.join(repo_path, "gitmem", "index.lock")


class FileSource(Protocol):
    """What a search without the index reads (:mod:`gitmem.index.fallback`): one commit's files.

    Satisfied by :class:`gitmem.git.repo.GitRepo`.
    """

    path: str

    def files_at(self, commit: str, prefix: str = "") -> Iterator[tuple[str, str]]: ...
    def blob(self, oid: str) -> bytes: ...
    def file_id_at(self, commit: str, path: str) -> str | None: ...


class GitSource(FileSource, Protocol):
    """What the index reads from git (satisfied by :class:`gitmem.git.repo.GitRepo`)."""

    def head(self) -> str: ...
    def read_at(self, commit: str, path: str) -> tuple[str, bytes] | None: ...
    def is_commit(self, rev: str) -> bool: ...
    def changes_since(self, since: str, head: str) -> tuple[str, ...] | None: ...


def git_order(path: str) -> bytes:
    """Sort key giving git's tree-walk order (paths from pygit2 use surrogateescape)."""
    return path.encode("utf-8", "surrogateescape")


class Broken(Exception):
    """The index files cannot be read; the fix is a rebuild."""


class Busy(Exception):
    """Another writer holds Whoosh's own lock (only possible outside gitmem's flock)."""


def regular_files(repo: FileSource, head: str, prefix: str, paths: set[str]) -> list[tuple[str, str]]:
    """The regular files among ``paths`` at ``head``, with their blob ids, in git order.

    Looked up one by one, never by walking the whole tree: each folder on a path is
    read once, so even every file of the memory costs about one walk.
    """
    out: list[tuple[str, str]] = []
    for path in paths:
        if path.startswith(prefix):
            oid = repo.file_id_at(head, path)
            if oid is not None:
                out.append((path, oid))
    out.sort(key=lambda hit: git_order(hit[0]))
    return out
