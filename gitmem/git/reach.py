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
    """The commits of ``wants`` (hex ids) that some ref under ``refs/`` reaches."""
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
    for want in asked - found:
        try:
            obj = repo.get(want)
        except (ValueError, pygit2.GitError):
            continue
        if not isinstance(obj, pygit2.Commit):
            continue
        oid = obj.id
        for tip in tips:
            try:
                if repo.descendant_of(tip, oid):
                    found.add(want)
                    break
            except (ValueError, pygit2.GitError):
                continue
    return found
