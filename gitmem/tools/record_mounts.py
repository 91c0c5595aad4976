"""How a record store is offered to an agent: a named mount, its access, and each run's recall limits.

The record capability (:mod:`gitmem.tools.records`) and its recall blocks
(:mod:`gitmem.tools.recall_blocks`) both build on these values, so neither needs the other's module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem.errors import MemoryStoreError
from gitmem.records import MemoryRecord, RecordStoreProtocol
from gitmem.records.rules import RECORD_CHARS
from gitmem.tools.mounts import Access, check_mount
from gitmem.tools.record_schemas import RECORD_READ_TOOLS, RECORD_TOOLS, SEARCH_MAX
from gitmem.tools.registry import shorten


@dataclass(frozen=True, slots=True)
class RecordMemoryLimits:
    """The record size and each run's recall.

    ``recall_limit`` records at most per memory and block, ``recall_bytes`` per
    block (UTF-8, wrapper included), ``recall_seconds`` for all mounts together.
    """

    record_chars: int = RECORD_CHARS
    recall_limit: int = 5
    recall_bytes: int = 8192
    recall_seconds: float = 2.0

    def __post_init__(self) -> None:
        for name in ("record_chars", "recall_limit", "recall_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer")
        if self.recall_limit > SEARCH_MAX:
            raise ValueError(f"recall_limit must be at most {SEARCH_MAX}")
        if not isinstance(self.recall_seconds, int | float) or not self.recall_seconds > 0:
            raise ValueError("recall_seconds must be a positive number")


@dataclass(frozen=True, slots=True)
class RecordMount:
    """One record store as the model sees it: ``name``, ``access``, an optional guide, and recall on/off.

    ``guide=None`` shows :data:`DEFAULT_RECORD_GUIDE`, ``""`` none; ``recall=False``
    leaves the mount out of the recall blocks (its tools stay). ``granted``: the
    stores of other namespaces a tool call may name (``namespace``), beside
    ``store``'s own, which a call without one uses; any other is ``forbidden``.
    """

    name: str
    store: RecordStoreProtocol
    access: Access = "write"
    guide: str | None = None
    recall: bool = True
    granted: tuple[tuple[str, RecordStoreProtocol], ...] = ()

    def __post_init__(self) -> None:
        check_mount(self.name, self.access, self.guide)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces a call may name: the store's own (when it says it), then the granted ones."""
        own = getattr(self.store, "namespace", None)
        return tuple(dict.fromkeys([*([own] if isinstance(own, str) else []), *(n for n, _ in self.granted)]))

    def store_for(self, namespace: str | None) -> RecordStoreProtocol:
        """The store of ``namespace`` (``None``: the mount's own); ``forbidden`` for one not offered here."""
        if namespace is None or namespace == getattr(self.store, "namespace", None):
            return self.store
        for name, store in self.granted:
            if name == namespace:
                return store
        raise MemoryStoreError(
            "forbidden",
            f"record namespace {shorten(namespace, 80)!r} is not granted on memory {self.name!r}; "
            f"its namespaces are {', '.join(map(repr, self.namespaces)) or 'its own only'}",
        )

    def allows(self, tool: str) -> bool:
        if tool == "history" and not _keeps_history(self.store):
            return False  # a record store without history offers no memory_record_history
        return tool in RECORD_READ_TOOLS or (self.access == "write" and tool in RECORD_TOOLS)


def _keeps_history(store: object) -> bool:
    """Whether a record store can list a record's changes: it has ``log``, and so does the store under it."""
    inner = getattr(store, "store", store)
    return callable(getattr(store, "log", None)) and callable(getattr(inner, "log", None))


def record_payload(record: MemoryRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"id": record.id, "text": record.text}
    if record.score is not None:
        out["score"] = round(record.score, 4)
    out["updated_at"] = record.updated_at.isoformat().replace("+00:00", "Z") if record.updated_at else None
    return out
