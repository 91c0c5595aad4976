"""The small contract between session memory and durable memory.

Session memory (this package) recalls from a durable namespace and sends what extraction
finds to it as *candidates*; durable memory implements these Protocols on its repository.
The dependency runs durable → session: this module imports nothing of ``gitmem.durable``,
so the session layer stays usable (and testable) without a durable store bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gitmem.model import Origin

ExtractedType = Literal["semantic", "procedural"]


@dataclass(frozen=True)
class RecalledNode:
    """One active durable node recalled for a turn, at the revision that was read."""

    node_id: str
    revision: int
    content: str
    score: float


@dataclass(frozen=True)
class ExtractedItem:
    """One memory a model proposed from a finished turn, after validation.

    ``supersedes`` / ``conflicts_with`` hold only ids of the related memories that were
    shown to the model; ``metadata`` records workspace, session id and the schema name.
    """

    content: str
    memory_type: ExtractedType
    source: str
    scope: str
    reason: str
    tags: tuple[str, ...]
    importance: float
    confidence: float
    supersedes: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


class DurableRecall(Protocol):
    """A session bound to one durable namespace: its active nodes similar to a query."""

    def recall_active(self, query: str, limit: int) -> Sequence[RecalledNode]: ...


class CandidateSink(Protocol):
    """Where extraction sends items as durable candidates (never active: a model's
    confidence does not authorise activation). Returns the new node ids."""

    def propose_candidates(self, items: Sequence[ExtractedItem], *, origin: Origin | None) -> Sequence[str]: ...


class DurableAdmission(Protocol):
    """Admission just before the model call: the recalled durable nodes still current and
    active, recorded under a new model-context id (returned with them)."""

    def admit_context(self, recalled: Sequence[RecalledNode]) -> tuple[str, Sequence[RecalledNode]]: ...
