"""The optional semantic branch of ``fused`` recall (see :mod:`gitmem.recall.embed`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gitmem.recall.index import RecallIndex


class SemanticBranch(Protocol):
    """What a :class:`~gitmem.recall.index.RecallIndex` asks of a vector side.

    ``note``/``forget`` are told about every document change and must return at
    once (vectors are computed off the write path). ``rank`` returns ids by
    similarity to ``query``, best first, only ids that ``index`` still holds and
    that ``accept`` admits, or ``None`` when the branch cannot answer (no
    provider, a provider failure): the caller then ranks lexically alone.
    """

    def note(self, doc_id: str, text: str) -> None: ...

    def forget(self, doc_id: str) -> None: ...

    def forget_all(self) -> None: ...

    def rebuilt(self) -> None:
        """Every document is noted again after :meth:`forget_all`: keep nothing derived from any other text."""
        ...

    def rank(
        self, query: str, depth: int, accept: Callable[[str], bool] | None, index: RecallIndex
    ) -> list[str] | None: ...
