"""The push rules' object reader over :mod:`gitmem.git.peek`: a fast-forward pull checked without libgit2.

A CLI pull is a whole process, and loading libgit2 cost it more than the pull's
own work (docs/benchmarks.md, "Teams on a plain forge"). The rules of
:mod:`gitmem.git.pushcheck` read objects through an
:class:`~gitmem.git.objectread.ObjectReader`; this one reads the mount's objects
and a pull's quarantine with :class:`~gitmem.git.peek.Peek` (every object checked
against its id). It answers only the question a fast-forward asks: which commits
are new above the one commit ``main`` points at. Anything else (another ref to
hide, a history that leaves the new commits' line, an erasure ledger's rules, any
object the peek leaves to libgit2) raises :class:`~gitmem.git.peek.CannotPeek`,
and the caller runs the whole pull through libgit2 instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from gitmem.git.looseref import MAIN
from gitmem.git.objectread import COMMIT, commit_parts
from gitmem.git.peek import CannotPeek, Peek

_NUMBERS: Final = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
#: New commits one pull checks here; a longer history goes to libgit2's walk.
MAX_NEW: Final = 5000


class PeekReader:
    """An :class:`~gitmem.git.objectread.ObjectReader` over a :class:`Peek` whose only ref is ``main`` at ``ours``.

    The caller has seen that the mount has no erasure ledger (so nothing is erased)
    and no other ref the check would have to hide.
    """

    errors: tuple[type[Exception], ...] = ()

    def __init__(self, peek: Peek, ours: str) -> None:
        self.peek = peek
        self.ours = ours

    def body(self, oid: str) -> tuple[int, bytes]:
        kind, body = self.peek.object(oid)
        return _NUMBERS[kind], body

    def header(self, oid: str) -> tuple[int, int]:
        kind, size = self.peek.header(oid)
        return _NUMBERS[kind], size

    def new_commits(self, tip: str, hide: Sequence[str]) -> Iterator[str]:
        if len(hide) != 1:
            raise CannotPeek("more than one ref to hide")
        return iter(self.above(tip, hide[0])[0])

    def descendant_of(self, commit: str, ancestor: str) -> bool:
        return commit != ancestor and self.above(commit, ancestor)[1]

    def above(self, tip: str, base: str) -> tuple[list[str], bool]:
        """The commits ``tip`` reaches without passing ``base``, parents first, and whether it reaches ``base``.

        Walked from ``tip`` down, never below ``base``. When every line down ends
        at ``base``, each commit met builds on it, so none is reachable from it:
        they are exactly the new ones. A line that ends at a root commit instead
        (history that forks below ``base``, or an unrelated one) is not for this
        reader: :class:`CannotPeek`, and libgit2's walk decides.
        """
        parents_of: dict[str, tuple[str, ...]] = {}
        pending = [tip]
        while pending:
            commit = pending.pop()
            if commit == base or commit in parents_of:
                continue
            if len(parents_of) >= MAX_NEW:
                raise CannotPeek("too many new commits for a quick walk")
            kind, body = self.body(commit)
            if kind != COMMIT:
                raise CannotPeek(f"{commit} is not a commit")
            parents = commit_parts(body)[1]
            if not parents:
                raise CannotPeek("a line of the new history ends at a root commit")
            parents_of[commit] = parents
            pending.extend(parents)
        order: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(tip, False)]
        while stack:
            commit, done = stack.pop()
            if done:
                order.append(commit)
                continue
            if commit in seen or commit not in parents_of:
                continue
            seen.add(commit)
            stack.append((commit, True))
            stack.extend((p, False) for p in reversed(parents_of[commit]) if p not in seen)
        return order, tip == base or any(base in parents for parents in parents_of.values())

    def ref_commits(self) -> list[str]:
        return [self.ours]

    def erased(self) -> frozenset[bytes]:
        return frozenset()

    def valid_ref_name(self, ref: str) -> bool:
        if ref != MAIN:
            raise CannotPeek(f"a check of {ref}")
        return True

    def ledger_problem(self, old: str | None, new: str) -> str | None:
        raise CannotPeek("the erasure ledger's rules read it through libgit2")

    def ledger_objects(self, new: str, old: str | None) -> Iterator[bytes]:
        raise CannotPeek("the erasure ledger's rules read it through libgit2")
