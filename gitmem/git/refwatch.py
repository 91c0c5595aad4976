"""What a ref watcher reads from git: every ref's value, and what a move of one brought.

The watcher (:mod:`gitmem.adapters.watch`) never trusts a file-system event to say
*what* changed: git writes refs in several ways (a lock file renamed over the ref,
``packed-refs`` rewritten by ``pack-refs``/``gc`` while loose refs are deleted). It
only learns *that* something may have changed, and asks this module for the refs as
they are now, then for the commits and paths between the old and new values.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from gitmem.git import refs
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.treediff import file_changes
from gitmem.provenance import parse_message

MAX_COMMITS = 50
"""Commits described per ref move; a longer move reports how many more there were."""


@dataclass(frozen=True, slots=True)
class CommitOrigin:
    """One commit a ref move brought in, and who made it (from its ``Gitmem-*`` trailers)."""

    commit: str
    op: str
    summary: str
    run: str | None
    principal: str | None
    tool_call: str | None
    author: str


@dataclass(frozen=True, slots=True)
class Movement:
    """What lies between a ref's old and new value."""

    paths: tuple[str, ...]
    commits: tuple[CommitOrigin, ...]  # newest first, at most MAX_COMMITS
    more_commits: int
    rewritten: bool  # the new value does not build on the old one (purge, forget, forced push)


def read_refs(git: GitRepo) -> dict[str, str]:
    """Every ref under ``refs/`` and the object id it points at."""
    with translate_errors(git.path):
        r = git.fresh()
        out: dict[str, str] = {}
        for name in r.references:
            value = _lookup(r, name)
            if value is not None:
                out[name] = value
        return out


def read_ref(git: GitRepo, name: str) -> str | None:
    """One ref, read on its own: libgit2 looks for the loose file, then in ``packed-refs``.

    A listing taken while ``pack-refs`` runs can miss a ref that is moving from a
    loose file into ``packed-refs``; a single lookup cannot (git writes the packed
    copy before it deletes the loose one), so a ref missing from a listing is
    confirmed here before it is reported deleted.
    """
    with translate_errors(git.path):
        return _lookup(git.fresh(), name)


def _lookup(r: pygit2.Repository, name: str) -> str | None:
    """:func:`gitmem.git.refs.read_ref`, with a ref that cannot be read counted as absent."""
    try:
        return refs.read_ref(r, name)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def movement(git: GitRepo, old: str | None, new: str | None, *, base: str | None = None) -> Movement:
    """Commits and paths between ``old`` and ``new`` (either ``None``: the ref was created or deleted).

    For a created ref the paths are counted from ``base`` (``main`` for a new
    proposal branch), or from nothing. Objects that are gone (pruned by a
    purge or forget) make the move ``rewritten`` with whatever could be read.
    """
    if new is None:
        return Movement((), (), 0, False)
    with translate_errors(git.path):
        r = git.fresh()
        start = old if old is not None else base
        try:
            new_commit = r[new].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            return Movement((), (), 0, True)
        rewritten = False
        if start is not None:
            try:
                start_commit = r[start].peel(pygit2.Commit)
                rewritten = old is not None and not (new == old or r.descendant_of(new_commit.id, start_commit.id))
                if base is not None and old is None:
                    merge_base = r.merge_base(new_commit.id, start_commit.id)
                    start_commit = r[merge_base].peel(pygit2.Commit) if merge_base is not None else None
            except (KeyError, ValueError, pygit2.GitError):
                start_commit, rewritten = None, old is not None
        else:
            start_commit = None
        paths = tuple(c.path for c in file_changes(r, start_commit and start_commit.tree_id, new_commit.tree_id))
        commits, more = _commits(r, new_commit.id, start_commit.id if start_commit is not None else None)
        return Movement(paths, commits, more, rewritten)


def _commits(r: pygit2.Repository, new: pygit2.Oid, old: pygit2.Oid | None) -> tuple[tuple[CommitOrigin, ...], int]:
    walker = r.walk(new, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    if old is not None:
        try:
            walker.hide(old)
        except (KeyError, ValueError, pygit2.GitError):
            pass
    found: list[CommitOrigin] = []
    more = 0
    for commit in walker:
        if len(found) == MAX_COMMITS:
            more += 1
            if more >= 10_000:  # enough to say "many"; do not walk a whole history
                break
            continue
        info = parse_message(commit.message)
        found.append(
            CommitOrigin(
                str(commit.id),
                info.op,
                info.summary,
                info.origin.run_id,
                info.origin.principal_id,
                info.origin.tool_call_id,
                commit.author.name,
            )
        )
    return tuple(found), more
