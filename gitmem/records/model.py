"""The values record memory hands out: a record and a page of them."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from gitmem.model import Origin


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One record: its id, its text, the search score (searches only) and when it last changed."""

    id: str
    text: str
    score: float | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecordPage:
    """Records in id (creation) order; pass ``next_cursor`` to get the ones after them.

    ``next_cursor`` is ``None`` when the page reached the end of the namespace.
    """

    records: tuple[MemoryRecord, ...]
    next_cursor: str | None = None


@runtime_checkable
class RecordStoreProtocol(Protocol):
    """What the record tools and recall need of a record store bound to one namespace.

    :class:`~gitmem.records.store.RecordStore` implements it over any file store;
    another backend (a mem0 server, say) can implement it directly. Calls are
    synchronous; adapters run them on worker threads.
    """

    @property
    def kind(self) -> str: ...

    def search(self, query: str, *, limit: int = 5) -> builtins.list[MemoryRecord]: ...

    def list(self, *, limit: int = 20, cursor: str | None = None) -> RecordPage: ...

    def add(self, text: str, *, origin: Origin | None = None) -> MemoryRecord: ...

    def update(self, record_id: str, text: str, *, origin: Origin | None = None) -> MemoryRecord: ...

    def delete(self, record_id: str, *, origin: Origin | None = None) -> None: ...

    def purge(self, *, origin: Origin | None = None) -> None: ...
