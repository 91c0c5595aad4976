"""The reference for gitmem's in-memory tree edits: the same path edits made with libgit2's tree builder.

:func:`set_path` (one path at a time, each new tree written as a loose object
by libgit2) is the rule that :func:`gitmem.git.treeedit.set_paths` must match;
:func:`set_paths` is the same rule applied folder by folder. The tests compare
gitmem's raw tree encoding with what libgit2 builds.
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from gitmem.git.treeedit import mixes_file_and_folder
from gitmem.store import file_dir_conflict

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_TREE_MODE = pygit2.GIT_FILEMODE_TREE


def set_paths(repo: pygit2.Repository, tree: pygit2.Tree, edits: Sequence[tuple[str, str | None]]) -> pygit2.Oid:
    """The id of ``tree`` with every ``(path, blob or None)`` edit applied, as one batch.

    Each changed folder's tree is written once, however many of its files change
    (a prune of 10k files writes a few hundred trees, not 30k). The result equals
    applying the edits one by one with :func:`set_path`, which remains the rule;
    a batch that both replaces a file by a folder and edits inside it (order
    matters there) is applied that way.
    """
    if len(edits) == 1:
        path, oid = edits[0]
        return set_path(repo, tree, path.split("/"), oid, path)
    split = [(path.split("/"), oid, path) for path, oid in edits]
    if mixes_file_and_folder(split):
        tree_id = tree.id
        for path, oid in edits:
            tree_id = set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
        return tree_id
    return set_group(repo, tree, split)


def set_group(
    repo: pygit2.Repository, tree: pygit2.Tree | None, edits: list[tuple[list[str], str | None, str]]
) -> pygit2.Oid:
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    below: dict[str, list[tuple[list[str], str | None, str]]] = {}
    for parts, oid, full in edits:
        name = parts[0]
        if len(parts) > 1:
            below.setdefault(name, []).append((parts[1:], oid, full))
            continue
        existing = builder.get(name)
        if existing is not None and existing.filemode == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    for name, group in below.items():
        existing = builder.get(name)
        sub: pygit2.Tree | None = None
        if existing is not None:
            if existing.filemode != _TREE_MODE:
                creating = [full for _, oid, full in group if oid is not None]
                if creating:
                    raise file_dir_conflict(creating[0], is_file=True)
                continue  # deletes under a file: nothing there to delete
            sub = repo[existing.id].peel(pygit2.Tree)
        elif all(oid is None for _, oid, _ in group):
            continue
        new_sub = set_group(repo, sub, group)
        if str(new_sub) == EMPTY_TREE:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, new_sub, _TREE_MODE)
    return builder.write()


def set_path(
    repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], oid: str | None, full: str
) -> pygit2.Oid:
    """Return the id of ``tree`` with ``parts`` set to blob ``oid`` (or removed when ``None``).

    Only the trees on the path are rebuilt; a folder left empty disappears.
    """
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    existing = builder.get(name)
    if len(parts) == 1:
        if existing is not None and existing.filemode == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    else:
        sub: pygit2.Tree | None = None
        if existing is not None:
            if existing.filemode != _TREE_MODE:
                if oid is None:
                    return builder.write()
                raise file_dir_conflict(full, is_file=True)
            sub = repo[existing.id].peel(pygit2.Tree)
        elif oid is None:
            return builder.write()
        new_sub = set_path(repo, sub, parts[1:], oid, full)
        if str(new_sub) == EMPTY_TREE:
            builder.remove(name)
        else:
            builder.insert(name, new_sub, _TREE_MODE)
    return builder.write()
