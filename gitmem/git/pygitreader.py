"""The push rules' object reader over libgit2 (:class:`gitmem.git.objectread.ObjectReader`).

Every check but a CLI fast-forward pull reads through this one: ``gitmem serve``,
the hooks, a merge or approval, a clone, ``gitmem check`` and ``import --history``.
Objects go through the loose-object guard of :func:`gitmem.git.loose.open_repository`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import erasures
from gitmem.git.loose import open_repository


class RepoReader:
    """An :class:`~gitmem.git.objectread.ObjectReader` on a pygit2 repository."""

    errors: tuple[type[Exception], ...] = (pygit2.GitError,)

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._odb = repo.odb

    def body(self, oid: str) -> tuple[int, bytes]:
        kind, data = self._odb.read(oid)
        return int(kind), bytes(data)

    def header(self, oid: str) -> tuple[int, int]:
        try:
            kind, size = self._odb.read_header(oid)
        except KeyError:
            return (0, 0)
        return int(kind), size

    def new_commits(self, tip: str, hide: Sequence[str]) -> Iterator[str]:
        walker = self.repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        for known in hide:
            walker.hide(pygit2.Oid(hex=known))
        for commit in walker:
            yield str(commit.id)

    def descendant_of(self, commit: str, ancestor: str) -> bool:
        return bool(self.repo.descendant_of(pygit2.Oid(hex=commit), pygit2.Oid(hex=ancestor)))

    def ref_commits(self) -> list[str]:
        """The commits every existing ref points at: what the mount already holds."""
        found: list[str] = []
        refs = self.repo.references
        for name in refs:
            try:
                found.append(str(refs[name].peel(pygit2.Commit).id))
            except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
                continue
        return found

    def erased(self) -> frozenset[bytes]:
        return frozenset(bytes.fromhex(b) for b in erasures.erased_blobs(self.repo, self.repo.path))

    def valid_ref_name(self, ref: str) -> bool:
        return bool(pygit2.reference_is_valid_name(ref))

    def ledger_problem(self, old: str | None, new: str) -> str | None:
        return erasures.foreign_ledger(self.repo, old, new)

    def ledger_objects(self, new: str, old: str | None) -> Iterator[bytes]:
        for c in self.repo.walk(pygit2.Oid(hex=new), pygit2.enums.SortMode.TOPOLOGICAL):
            yield from (c.id.raw, c.tree_id.raw, *(e.id.raw for e in c.tree))
            if old is not None and str(c.id) == old:
                break


@contextmanager
def open_reader(repo_path: str, object_dirs: Sequence[str] = ()) -> Iterator[RepoReader]:
    """A :class:`RepoReader` on the repository at ``repo_path`` (``unavailable`` when it cannot be read), freed after."""
    try:
        repo = open_repository(os.path.abspath(repo_path), extra_objects=object_dirs)
    except (pygit2.GitError, OSError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the repository at {repo_path}: {exc}") from exc
    with repo:
        yield RepoReader(repo)
