"""The values record memory hands out: a record and a page of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


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
