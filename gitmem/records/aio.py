"""The async face of a record store: every call runs the sync store on a worker thread.

Record stores are synchronous (the store seam is); async callers (agent
harnesses, the MCP server) wrap one in :class:`AsyncRecordStore` so a commit or
a first index build never blocks their event loop.
"""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

from gitmem.model import Origin
from gitmem.records.model import MemoryRecord, RecordPage, RecordStoreProtocol


class AsyncRecordStore:
    """``await``-able twins of a record store's calls; ``sync`` is the store underneath."""

    def __init__(self, sync: RecordStoreProtocol) -> None:
        self.sync = sync

    def __repr__(self) -> str:
        return f"AsyncRecordStore({self.sync!r})"

    @property
    def kind(self) -> str:
        return self.sync.kind

    async def search(self, query: str, *, limit: int = 5) -> builtins.list[MemoryRecord]:
        return await asyncio.to_thread(self.sync.search, query, limit=limit)

    async def list(self, *, limit: int = 20, cursor: str | None = None) -> RecordPage:
        return await asyncio.to_thread(self.sync.list, limit=limit, cursor=cursor)

    async def add(self, text: str, *, origin: Origin | None = None) -> MemoryRecord:
        return await asyncio.to_thread(self.sync.add, text, origin=origin)

    async def update(self, record_id: str, text: str, *, origin: Origin | None = None) -> MemoryRecord:
        return await asyncio.to_thread(self.sync.update, record_id, text, origin=origin)

    async def delete(self, record_id: str, *, origin: Origin | None = None) -> None:
        await asyncio.to_thread(self.sync.delete, record_id, origin=origin)

    async def purge(self, *, origin: Origin | None = None) -> None:
        await asyncio.to_thread(self.sync.purge, origin=origin)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Any other call of the sync store (``get``, ``log``, ``restore``, ``forget``) on a worker thread."""
        return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)
