"""Who the commits of a push say made them, checked against who pushed them.

``gitmem log`` shows a commit's ``Gitmem-Principal`` trailer as who made it, or,
without one, its git author's name. A push through a token that names a
principal may only bring commits that show that principal: otherwise anyone with
a token could make their change look like someone else's. Commits already in the
mount (an agent's, merged by the person pushing) are not the pusher's claim and
are not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.loose import open_repository
from gitmem.provenance import parse_message


@dataclass(frozen=True)
class Claim:
    """A new commit of a push that shows someone other than the pusher."""

    commit: str
    shown: str


def foreign_claims(path: str, object_dirs: Sequence[str], new: str, principal: str) -> list[Claim]:
    """The commits ``new`` brings (beyond every ref of the mount) that do not show ``principal``."""
    try:
        repo = open_repository(path, extra_objects=object_dirs)
        walker = repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
        for name in repo.references:
            if name.startswith("refs/"):
                try:
                    walker.hide(repo.references[name].resolve().target)
                except (KeyError, pygit2.GitError, ValueError):
                    continue
        out: list[Claim] = []
        for commit in walker:
            origin = parse_message(commit.message).origin
            shown = origin.principal_id or commit.author.name
            if shown != principal:
                out.append(Claim(str(commit.id), shown))
        return out
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the pushed commits: {exc}") from exc
