"""Which wanted commits some ref of a mount still reaches: what a fetch may be served.

Smart HTTP is two requests: the client reads the refs, then asks for the commits
it saw. An agent write can move ``main`` in between, and a server that only takes
wants equal to a ref's current value then refuses a tip it just advertised,
although ``main`` still reaches it. git's own ``http-backend`` serves such a want
(``uploadpack.allowReachableSHA1InWant`` semantics), and so does ``gitmem serve``:
a wanted commit that is an ancestor of (or equal to) any ref's value is served.
A commit no ref reaches any more (a deleted proposal, history rewritten by purge
or forget) is still refused: objects that left history are never handed out.
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from gitmem.git.loose import open_repository


def reachable_wants(path: str, wants: Iterable[str]) -> set[str]:
    """The commits of ``wants`` (hex ids) that some ref under ``refs/`` reaches.

    One walk down from every ref's value, ended as soon as every wanted commit
    was met: at most the history once, however many commits a request wants
    (twice when some ref's history lacks a commit: see :func:`_walk_past_gaps`).
    Asking libgit2 whether each tip descends from each want cost wants x history
    steps, and one request naming every commit of a 6,000-commit memory (300 KB,
    any read token) held a request thread for over two minutes.
    """
    asked = {w for w in wants if len(w) == 40}
    if not asked:
        return set()
    repo = open_repository(path)
    tips: set[str] = set()
    for name in repo.references:
        if not name.startswith("refs/"):
            continue
        try:
            target = repo.references[name].resolve().target
        except (KeyError, pygit2.GitError, ValueError):
            continue
        tips.add(str(target))
    found = asked & tips
    pending: set[str] = set()
    for want in asked - found:
        try:
            obj = repo.get(want)
        except (ValueError, pygit2.GitError):
            continue
        if isinstance(obj, pygit2.Commit):
            pending.add(want)
    if not pending:
        return found
    walker: pygit2.Walker | None = None
    for tip in tips:
        try:
            if walker is None:
                walker = repo.walk(tip, pygit2.enums.SortMode.NONE)
            else:
                walker.push(tip)
        except (KeyError, ValueError, pygit2.GitError):  # a ref to a tree or blob, or to an object the mount lacks
            continue
    if walker is None:
        return found
    try:
        for commit in walker:
            key = str(commit.id)
            if key in pending:
                pending.discard(key)
                found.add(key)
                if not pending:
                    break
    except (KeyError, pygit2.GitError):  # a commit missing from some ref's history: libgit2 ends the whole walk
        found |= _walk_past_gaps(repo, tips, pending)
    return found


def _walk_past_gaps(repo: pygit2.Repository, tips: set[str], pending: set[str]) -> set[str]:
    """The commits of ``pending`` reached from ``tips`` by a walk that steps over missing objects.

    libgit2's walk stops at the first commit it cannot read, wherever it was in
    its order: one ref whose history has a gap left every other ref's wants
    unreached (a want behind an intact ``main`` was refused). Slower per commit,
    so only taken after such a gap.
    """
    found: set[str] = set()
    seen: set[pygit2.Oid] = set()
    stack: list[pygit2.Oid] = []
    for tip in tips:
        try:
            stack.append(pygit2.Oid(hex=tip))
        except ValueError:
            continue
    while stack and pending:
        oid = stack.pop()
        if oid in seen:
            continue
        seen.add(oid)
        try:
            obj = repo.get(oid)
            while isinstance(obj, pygit2.Tag):
                obj = repo.get(obj.target)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        if not isinstance(obj, pygit2.Commit):
            continue
        key = str(oid)
        if key in pending:
            pending.discard(key)
            found.add(key)
        stack.extend(obj.parent_ids)
    return found
