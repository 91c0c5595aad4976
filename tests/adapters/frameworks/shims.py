"""Stand-ins that let the frameworks' own test files run, unchanged in their bodies, against gitmem.

The copied files construct ``SqliteStore`` / ``AsyncSqliteStore`` / ``InMemoryStore``
and ``SQLiteSession``; in the copies those names come from here and build a
:class:`~gitmem.adapters.langgraph_store.GitMemStore` or a
:class:`~gitmem.adapters.openai_session.GitMemSession` on a fresh gitmem root in a
temporary folder (one per database file name, so a test that opens one file twice
sees the same data). ``FakeClock`` stands in for waiting out a TTL.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gitmem.adapters.langgraph_store import GitMemStore
from gitmem.adapters.openai_session import GitMemSession

_ROOTS: dict[str, str] = {}  # database name -> gitmem root folder
_LOCK = threading.Lock()


def root_for(conn_string: object) -> str:
    """A gitmem root for a connection string: a new one for ``:memory:``, one per file name otherwise."""
    name = str(conn_string)
    with _LOCK:
        if name == ":memory:" or name not in _ROOTS:
            folder = tempfile.mkdtemp(prefix="gitmem-fw-")
            if name == ":memory:":
                _ROOTS[folder] = folder
            else:
                _ROOTS[name] = folder
            return folder
        return _ROOTS[name]


def remove_roots() -> None:
    with _LOCK:
        for folder in set(_ROOTS.values()):
            shutil.rmtree(folder, ignore_errors=True)
        _ROOTS.clear()


class FakeClock:
    """A clock the copied TTL tests advance instead of sleeping (the tests' sleeps become ``clock.sleep``)."""

    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def now(self) -> datetime:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        await asyncio.sleep(0)


class _TestStore(GitMemStore):
    """GitMemStore plus the ``setup()`` the SQLite store's tests call (gitmem needs none)."""

    def setup(self) -> None:
        return None


class _AsyncTestStore(GitMemStore):
    """The async SQLite store's spelling: its setup and TTL calls are coroutines (GitMemStore's ``a*`` ones)."""

    async def setup(self) -> None:
        return None

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await self.asweep_ttl()

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:  # type: ignore[override]
        return GitMemStore.start_ttl_sweeper(self, sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return GitMemStore.stop_ttl_sweeper(self, timeout)


class SqliteStore:
    """``SqliteStore.from_conn_string(...)`` of the copies: a GitMemStore on a fresh root."""

    clock: FakeClock | None = None  # set by the TTL copies

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: Any = None
    ) -> Iterator[GitMemStore]:
        store = _TestStore.open(root_for(conn_string), index=index, ttl=ttl, clock=cls.clock.now if cls.clock else None)
        try:
            yield store
        finally:
            store.close()


class AsyncSqliteStore:
    clock: FakeClock | None = None

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: Any = None
    ) -> AsyncIterator[GitMemStore]:
        store = _AsyncTestStore.open(
            root_for(conn_string), index=index, ttl=ttl, clock=cls.clock.now if cls.clock else None
        )
        try:
            yield store
        finally:
            store.close()


def InMemoryStore(**options: Any) -> GitMemStore:
    """``InMemoryStore(...)`` of the copies: a GitMemStore on a fresh root (removed after the test)."""
    return GitMemStore.open(root_for(":memory:"), **options)


class SQLiteSession(GitMemSession):
    """``SQLiteSession(id, db_path)`` of the copies: a GitMemSession in a root named after the database file.

    Two sessions on one database file share one mount, as they share one SQLite file.
    A class (not a factory) so the copies' own subclasses of ``SQLiteSession`` subclass
    GitMemSession, and get what a subclass of it gets.
    """

    def __init__(
        self, session_id: str, db_path: str | os.PathLike[str] = ":memory:", session_settings: Any = None
    ) -> None:
        from gitmem.root import Root

        self.db_path = db_path
        root = root_for(":memory:") if str(db_path) == ":memory:" else str(Path(db_path)) + ".gitmem"
        store = Root(root).mount("session", create=True, kind="session").sync
        super().__init__(session_id, store, session_settings=session_settings)


class AsyncSQLiteSession:
    """Never built: the copies' ``isinstance(backend, AsyncSQLiteSession)`` branches are for the SDK's second SQLite store."""
