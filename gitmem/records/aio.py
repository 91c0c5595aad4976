"""The async face of a record store: every call runs the sync store on a worker thread.

Record stores are synchronous (the store seam is); async callers (agent
harnesses, the MCP server) wrap one in :class:`AsyncRecordStore`, declared with
the seam's :class:`~gitmem.aio.threaded`, so a commit or a first index build
never blocks their event loop.
"""

from __future__ import annotations

from typing import Any

from gitmem.aio import AsyncFace, call, threaded
from gitmem.records.store import RecordStore


class AsyncRecordStore(AsyncFace[RecordStore]):
    """``await``-able twins of :class:`RecordStore`'s calls; ``sync`` is the store underneath."""

    __slots__ = ()

    search = threaded(RecordStore.search)
    list = threaded(RecordStore.list)
    get = threaded(RecordStore.get)
    add = threaded(RecordStore.add)
    update = threaded(RecordStore.update)
    delete = threaded(RecordStore.delete)
    purge = threaded(RecordStore.purge)
    log = threaded(RecordStore.log)
    restore = threaded(RecordStore.restore)
    forget = threaded(RecordStore.forget)

    @property
    def kind(self) -> str:
        return self.sync.kind

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Any other call of the sync store on a worker thread."""
        return await call(getattr(self.sync, name), *args, **kwargs)
