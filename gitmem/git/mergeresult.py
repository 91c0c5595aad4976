"""How a pull or an approval left ``main``, and why one was refused: kept apart from the merge engine.

:mod:`gitmem.git.merge` lands one history on another with libgit2; a CLI
fast-forward pull (:mod:`gitmem.remotepull`) answers without it, with the same
result. :mod:`gitmem.git.merge` re-exports both names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class MergeResult:
    """How ``main`` moved: ``up_to_date``, ``fast_forward``, ``merged`` (a new merge commit),
    ``joined`` (a new, empty memory took the other history whole) or ``conflict`` (``main``
    did not move; ``proposal`` names the conflict proposal a pull opened to finish it)."""

    kind: str
    before: str
    after: str
    paths: tuple[str, ...]
    closed: tuple[str, ...] = ()  # review proposals main now holds, deleted (runs' ids)
    abandoned: tuple[str, ...] = ()  # proposals pushed to the remote, gone there, not on main
    proposal: str | None = None  # the conflict proposal of a ``conflict`` result


class MergeRefused(MemoryStoreError):
    """The other history cannot land on ``main``; ``main`` was not touched.

    ``paths`` are the conflicting files (code ``version_mismatch``) or the files
    that break a rule (the rule's store code); ``reasons`` one line per problem;
    ``rules`` the rules broken (``identity``, ``secret:private_key``, ...), each once:
    what a caller picks its advice by (a reason's text also names paths, which may
    be spelled like a rule).
    """

    paths: tuple[str, ...]
    reasons: tuple[str, ...]
    rules: tuple[str, ...]

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        paths: Sequence[str] = (),
        reasons: Sequence[str] = (),
        rules: Sequence[str] = (),
    ) -> None:
        super().__init__(code, message)
        self.paths = tuple(paths)
        self.reasons = tuple(reasons)
        self.rules = tuple(rules)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, self.message, self.paths, self.reasons, self.rules))
