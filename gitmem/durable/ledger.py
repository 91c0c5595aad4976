"""Admissions and uses of durable nodes: a local ledger, kept off ``main``.

After context assembly a host records an *admission* for each node revision it
put in front of a model, and a *use* when the model actually relied on one.
Both are idempotent by event id (the same event again changes nothing; another
event under a used id is ``idempotency_conflict``) and are counted per node.

They are operational telemetry, not memory: recording them must not create a
commit per recall, and people reviewing ``git log`` should see decisions, not
reads. So they live in an SQLite file next to the repository (for a git mount,
``<mount>.git/gitmem/durable-ledger.sqlite3``), which many processes can write
at once. It is NOT part of the repository: a ``git clone`` or push does not
carry it, and deleting it only resets the counters.

It names namespaces and node ids, so ``purge`` and ``forget`` delete it with the
other derived files, and it follows :mod:`gitmem.derived`: a connection opened
before an erasure is reopened (on the new, empty file) before the next call,
and a write that an erasure overtook removes the file again.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from gitmem import derived
from gitmem.durable.namespace import Namespace, check_identifier
from gitmem.durable.node import format_time, parse_time
from gitmem.errors import MemoryStoreError
from gitmem.localfile import connect_local_sqlite

AccessKind = Literal["admission", "use"]
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS events (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    event_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    occurred_at TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, event_id)
);
CREATE INDEX IF NOT EXISTS events_by_node ON events (namespace, node_id, kind);
"""


@dataclass(frozen=True, slots=True)
class AccessEvent:
    """One admission or use: which exact node revision, when, under which event id."""

    event_id: str
    namespace: Namespace
    node_id: str
    revision: int
    occurred_at: datetime

    def __post_init__(self) -> None:
        check_identifier("event_id", self.event_id)
        check_identifier("node_id", self.node_id)
        if isinstance(self.revision, bool) or not isinstance(self.revision, int) or self.revision < 1:
            raise MemoryStoreError(
                "invalid_change_set", f"revision must be a whole number from 1, got {self.revision!r}"
            )
        object.__setattr__(self, "occurred_at", parse_time("occurred_at", self.occurred_at))


@dataclass(frozen=True, slots=True)
class Usage:
    admissions: int = 0
    uses: int = 0


def _ns_key(namespace: Namespace) -> str:
    return namespace.folder


class Ledger:
    """Admission and use events in one SQLite file (``":memory:"`` for a process-local one)."""

    def __init__(self, path: str | Path, *, stamp: str | None = None, root: str | None = None) -> None:
        self.path = str(path)
        self.stamp = stamp  # the mount's generation stamp (gitmem.derived); None: nothing erases history
        self.root = root  # the mount holding the file: no folder from it down may be a link
        self._local = threading.local()
        self._memory: sqlite3.Connection | None = None
        if self.path == ":memory:":
            self._memory = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self._memory.executescript(_SCHEMA)
            self._memory_lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._memory is not None:
            return self._memory
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        seen: derived.Generation | None = getattr(self._local, "seen", None)
        if db is not None and seen is not None and not seen.current():
            db.close()  # opened before a purge or forget deleted the file: open the new one
            db = self._local.db = None
        if db is None:
            self._local.seen = derived.Generation.read(self.stamp)
            try:
                if self.root is None:
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                # a link, FIFO or hard link planted as the ledger (or its -wal/-shm) is refused, never written through
                db = connect_local_sqlite(self.path, root=self.root, wal=True, timeout=30.0, isolation_level=None)
                try:
                    db.executescript(_SCHEMA)
                except BaseException:
                    db.close()
                    raise
            except (OSError, sqlite3.Error) as exc:
                raise MemoryStoreError("unavailable", f"cannot open the durable ledger {self.path}: {exc}") from exc
            self._local.db = db
        return db

    def record(self, kind: AccessKind, event: AccessEvent, *, seen: derived.Generation | None = None) -> bool:
        """Store ``event`` once; ``False`` when this exact event was already recorded.

        ``seen`` is the history generation at which the caller read the node: a
        purge or forget since then may have erased it, so the event is refused
        (``node_not_found``) rather than naming an erased node again.
        """
        if seen is not None and not seen.current():
            raise MemoryStoreError("node_not_found", f"node {event.node_id!r} was erased while it was being recorded")
        ns = _ns_key(event.namespace)
        when = format_time(event.occurred_at)
        db = self._db()
        lock = getattr(self, "_memory_lock", None)
        try:
            if lock is not None:
                lock.acquire()
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT node_id, revision, occurred_at FROM events WHERE kind=? AND namespace=? AND event_id=?",
                    (kind, ns, event.event_id),
                ).fetchone()
                if row is not None:
                    db.execute("COMMIT")
                    if tuple(row) == (event.node_id, event.revision, when):
                        return False
                    raise MemoryStoreError(
                        "idempotency_conflict",
                        f"{kind} event {event.event_id!r} was already recorded for another node revision or time",
                    )
                db.execute(
                    "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                    (kind, ns, event.event_id, event.node_id, event.revision, when),
                )
                db.execute("COMMIT")
                self._after_write(seen)
                return True
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise MemoryStoreError("unavailable", f"the durable ledger {self.path} failed: {exc}") from exc
        finally:
            if lock is not None:
                lock.release()

    def _after_write(self, seen: derived.Generation | None) -> None:
        """An erasure that overtook this write: the event may name an erased node, so the file goes."""
        if seen is None:
            seen = getattr(self._local, "seen", None)
        if self._memory is not None or seen is None or seen.current():
            return
        self.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + suffix)

    def usage(self, namespace: Namespace, node_id: str) -> Usage:
        try:
            rows = (
                self._db()
                .execute(
                    "SELECT kind, COUNT(*) FROM events WHERE namespace=? AND node_id=? GROUP BY kind",
                    (_ns_key(namespace), node_id),
                )
                .fetchall()
            )
        except sqlite3.Error as exc:
            raise MemoryStoreError("unavailable", f"the durable ledger {self.path} failed: {exc}") from exc
        counts = dict(rows)
        return Usage(int(counts.get("admission", 0)), int(counts.get("use", 0)))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
