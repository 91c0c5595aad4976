"""What a pushed ref update would bring to ``main``: the files it changes there, old and new.

A server's access check (:mod:`gitmem.adapters.pushaccess`) judges some files by
what they say, not only by who pushed them: it asks here for the files the
update changes that match a pattern, each as its bytes before and after.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gitmem.errors import MemoryStoreError
from gitmem.git.pushcheck import ZERO, RefUpdate
from gitmem.git.refs import MAIN

Change = tuple[str, bytes | None, bytes | None]
"""A file's path, its bytes before (``None``: it was not there) and after (``None``: it is gone)."""


def landing_changes(path: str, object_dirs: Sequence[str], update: RefUpdate, paths: re.Pattern[str]) -> list[Change]:
    """The files matching ``paths`` that ``update`` changes on ``main`` of the mount at ``path``.

    An update of ``main`` brings its new tree against the old; any other (``refs/for/main``,
    merged into ``main``) brings what its commit changed since it forked from ``main``, as
    the merge does. ``object_dirs``: the push's quarantine. ``unavailable`` when the
    objects cannot be read.
    """
    import pygit2  # a pushed update's files: only the server's access check asks

    from gitmem.git.loose import open_repository

    try:
        repo = open_repository(path, extra_objects=object_dirs)
        new = repo[update.new].peel(pygit2.Tree) if not update.deleting else None
        if update.ref == MAIN:
            base = update.old if update.old != ZERO else None
        else:
            head = repo.references.get(MAIN)
            main = head.resolve().target if head is not None else None
            found = repo.merge_base(main, update.new) if main is not None and new is not None else None
            base = str(found) if found is not None else None
        old = repo[base].peel(pygit2.Tree) if base is not None else None
        if new is None:
            if old is None:
                return []
            diff = old.diff_to_tree()  # main removed: every file goes
        else:
            diff = new.diff_to_tree(swap=True) if old is None else old.diff_to_tree(new)
        absent = pygit2.Oid(hex=ZERO)
        out: list[Change] = []
        for delta in diff.deltas:
            name = delta.new_file.path if delta.new_file.id != absent else delta.old_file.path
            if not paths.fullmatch(name):
                continue
            before, after = (
                None if side.id == absent else bytes(repo.odb.read(side.id)[1])
                for side in (delta.old_file, delta.new_file)
            )
            out.append((name, before, after))
        return out
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the pushed files: {exc}") from exc
