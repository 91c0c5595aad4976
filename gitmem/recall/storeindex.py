"""A recall index kept caught up with a store through its change cursor.

The store stays the source of truth; this is a cache of its files as
:class:`RecallDoc` values. The first refresh (and any the store answers with
``FullResync``) lists and reads every file under the prefix; later ones read
only the paths ``changes(cursor)`` names, so catching up after one write reads
one file. The cursor is taken *before* reading, so anything that lands while a
refresh reads is seen again by the next one: the index can be briefly behind a
concurrent write, never wrong after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from gitmem.errors import MemoryStoreError
from gitmem.model import Changes, FileEntry, FileText, FullResync
from gitmem.recall.index import Ranking, RecallDoc, RecallHit, RecallIndex

if TYPE_CHECKING:
    from gitmem.recall.semantic import SemanticBranch


class SyncSource(Protocol):
    """The synchronous reads recall needs of a store (the sync store seam has them all)."""

    def list(self) -> list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


ToDoc = Callable[[FileText], RecallDoc | None]


class StoreRecall:
    """A :class:`RecallIndex` over the files of ``store`` under ``prefix``, caught up on demand.

    ``to_doc`` turns a file into a document (``None``: not indexed, e.g. a
    tombstone); a file it cannot parse (it raises ``ValueError`` or a
    :class:`MemoryStoreError`) is left out and listed in :attr:`skipped`, so one
    bad file cannot stop recall over the rest.
    """

    def __init__(
        self,
        store: SyncSource,
        to_doc: ToDoc,
        *,
        prefix: str = "",
        semantic: SemanticBranch | None = None,
    ) -> None:
        self.store = store
        self.to_doc = to_doc
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.index = RecallIndex(semantic)
        self.cursor: str | None = None
        self.skipped: dict[str, str] = {}
        self.full_rebuilds = 0
        self._by_path: dict[str, str] = {}  # path -> doc id
        # doc id -> the paths that hold it (more than one only when files disagree, or mid-move)
        self._paths_of: dict[str, set[str]] = {}
        self._refresh_lock = threading.Lock()

    def covers(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def refresh(self) -> str | None:
        """Catch up with the store's head; returns the cursor the index now reflects."""
        with self._refresh_lock:
            answer = self.store.changes(self.cursor)
            if isinstance(answer, FullResync):
                self._rebuild(answer.cursor)
            else:
                for path in answer.paths:
                    if self.covers(path):
                        self._reload(path)
                self.cursor = answer.cursor
            return self.cursor

    def _rebuild(self, cursor: str) -> None:
        entries = [e for e in self.store.list() if self.covers(e.path)]
        self.index.clear()
        self._by_path.clear()
        self._paths_of.clear()
        self.skipped.clear()
        for entry in entries:
            self._reload(entry.path)
        self.cursor = cursor
        self.full_rebuilds += 1

    def _reload(self, path: str) -> None:
        """Re-read ``path`` and put its document in the index (or take its old one out)."""
        try:
            file = self.store.read(path)
        except MemoryStoreError as error:
            if error.code != "not_found":
                raise
            file = None
        doc: RecallDoc | None = None
        self.skipped.pop(path, None)
        if file is not None:
            try:
                doc = self.to_doc(file)
            except (ValueError, MemoryStoreError) as error:
                self.skipped[path] = f"{type(error).__name__}: {error}"
        old = self._by_path.pop(path, None)
        if old is not None and (doc is None or doc.id != old):
            holders = self._paths_of.get(old, set())
            holders.discard(path)
            if holders:
                # Another file holds the same id (a move seen half-way, or two files
                # naming one id): that file's document stands.
                self._reload(min(holders))
            else:
                self._paths_of.pop(old, None)
                self.index.remove(old)
        if doc is not None:
            self.index.upsert(doc)
            self._by_path[path] = doc.id
            self._paths_of.setdefault(doc.id, set()).add(path)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float = 0.0,
        ranking: Ranking = "coverage",
        accept: Callable[[str], bool] | None = None,
    ) -> list[RecallHit]:
        """Refresh, then search the index (see :meth:`RecallIndex.search`)."""
        self.refresh()
        return self.index.search(query, limit=limit, min_score=min_score, ranking=ranking, accept=accept)
