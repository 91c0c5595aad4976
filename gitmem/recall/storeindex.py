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

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gitmem import derived
from gitmem.errors import MemoryStoreError, if_found
from gitmem.model import Changes, FileEntry, FileText, FullResync
from gitmem.recall import snapshot as snapshots
from gitmem.recall.index import Profile, Ranking, RecallDoc, RecallHit, RecallIndex, check_doc
from gitmem.store import FileStore

if TYPE_CHECKING:
    from gitmem.recall.semantic import SemanticBranch


class SyncSource(Protocol):
    """The three reads recall needs of a store: every :class:`~gitmem.store.FileStore` has them.

    Recall asks for no more, so a read-only view or a wrapper that only forwards
    reads can be indexed too.
    """

    def list(self) -> list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


@runtime_checkable
class BulkSource(Protocol):
    """A source that can also read every file under a folder of one commit in one go.

    :class:`~gitmem.gitstore.SyncGitFileStore` can (one walk of the tree instead of
    a lookup per path); a rebuild uses it when the source has it, and reads file
    by file otherwise. It returns what :meth:`SyncSource.read` would for each file.
    """

    def read_under(self, prefix: str = "", rev: str | None = None) -> list[FileText]: ...


def _a_file_store_is_a_source(store: FileStore) -> SyncSource:
    return store  # checked by mypy: the store seam's protocol satisfies SyncSource


ToDoc = Callable[[FileText], RecallDoc | None]


class StoreRecall:
    """A :class:`RecallIndex` over the files of ``store`` under ``prefix``, caught up on demand.

    ``to_doc`` turns a file into a document (``None``: not indexed, e.g. a
    tombstone); a file it cannot parse (it raises ``ValueError``, ``TypeError``,
    ``KeyError`` or a :class:`MemoryStoreError`, or makes a malformed document) is left out and listed in :attr:`skipped`, so one
    bad file cannot stop recall over the rest.

    ``snapshot`` (optional) is a file the index is saved to after a full rebuild
    and after every ``snapshot_every`` re-read files, and resumed from by a new
    process; ``snapshot_key`` names what ``to_doc`` makes of files (change it
    when ``to_doc`` changes, and old snapshots are ignored). ``stamp`` is the
    mount's history generation stamp (:func:`gitmem.derived.stamp_of`): a snapshot is loaded only under
    the stamp it was made under and published only when the stamp did not move
    meanwhile (purge and forget erase texts). See :mod:`gitmem.recall.snapshot`.
    """

    def __init__(
        self,
        store: SyncSource,
        to_doc: ToDoc,
        *,
        prefix: str = "",
        semantic: SemanticBranch | None = None,
        snapshot: str | os.PathLike[str] | None = None,
        snapshot_key: str = "",
        snapshot_every: int = 256,
        stamp: str | None = None,
        profile: Profile = "word-cjk-bigram",
    ) -> None:
        self.store = store
        self.to_doc = to_doc
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.index = RecallIndex(semantic, profile=profile)
        self.cursor: str | None = None
        self.skipped: dict[str, str] = {}
        self.full_rebuilds = 0
        self._by_path: dict[str, str] = {}  # path -> doc id
        # doc id -> the paths that hold it (more than one only when files disagree, or mid-move)
        self._paths_of: dict[str, set[str]] = {}
        self._refresh_lock = threading.Lock()
        self.snapshot = snapshot
        self.snapshot_key = snapshot_key
        self.snapshot_every = snapshot_every
        self.resumed_from_snapshot = False
        self.snapshot_error: str | None = None
        self._unsaved = 0
        self._tried_snapshot = snapshot is None
        self.stamp = stamp
        self._seen = derived.UNGUARDED  # the history generation read before the documents held were

    def covers(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def refresh(self) -> str | None:
        """Catch up with the store's head; returns the cursor the index now reflects."""
        with self._refresh_lock:
            seen = derived.Generation.read(self.stamp)
            if not self._tried_snapshot:
                self._tried_snapshot = True
                self._resume(seen.value)
            answer = self.store.changes(self.cursor)
            self._seen = seen
            if isinstance(answer, FullResync):
                self._rebuild(answer.cursor)
                self._save()
            else:
                for path in answer.paths:
                    if self.covers(path):
                        self._reload(path)
                        self._unsaved += 1
                self.cursor = answer.cursor
                if self._unsaved >= self.snapshot_every:
                    self._save()
            return self.cursor

    def _resume(self, stamp: str | None) -> None:
        assert self.snapshot is not None
        found = snapshots.load(self.snapshot, key=self.snapshot_key, prefix=self.prefix, generation=stamp)
        if found is None:
            return
        for path, doc in found.docs:
            self._by_path[path] = doc.id
            self._paths_of.setdefault(doc.id, set()).add(path)
        docs = [doc for _, doc in found.docs]
        if found.tokens is None or not self.index.restore(docs, found.tokens):
            self.index.upsert_many(docs)
        self.skipped.update(found.skipped)
        self.cursor = found.cursor
        self.resumed_from_snapshot = True

    def _save(self) -> None:
        """Save the snapshot; a failure to write (disk full, read-only) is noted, never raised: it is a cache."""
        try:
            self._write_snapshot()
        except OSError as error:
            self.snapshot_error = f"{type(error).__name__}: {error}"
        else:
            self.snapshot_error = None

    def _write_snapshot(self) -> None:
        self._unsaved = 0
        if self.snapshot is None or self.cursor is None:
            return
        docs = []
        for path, doc_id in sorted(self._by_path.items()):
            doc = self.index.get(doc_id)
            if doc is not None:
                docs.append((path, doc))
        state = snapshots.Snapshot(
            self.cursor, tuple(docs), tuple(sorted(self.skipped.items())), self.index.export_tokens()
        )
        snapshots.save(
            self.snapshot,
            state,
            key=self.snapshot_key,
            prefix=self.prefix,
            seen=self._seen,
        )

    def save_snapshot(self) -> None:
        """Write the snapshot now (e.g. before a process exits); nothing without a ``snapshot`` path."""
        with self._refresh_lock:
            self._write_snapshot()

    def _rebuild(self, cursor: str) -> None:
        files: list[FileText] = []
        entries: list[FileEntry] = []
        if isinstance(self.store, BulkSource):
            files = self.store.read_under(self.prefix, cursor)
        else:
            entries = [e for e in self.store.list() if self.covers(e.path)]
        # Until the rebuild completes the index reflects no cursor: a failure part-way makes
        # the next refresh rebuild again rather than catch up a half-filled index.
        self.cursor = None
        self.index.clear()
        self._by_path.clear()
        self._paths_of.clear()
        self.skipped.clear()
        self._load(files)
        for entry in entries:
            self._reload(entry.path)
        self.cursor = cursor
        self.full_rebuilds += 1

    def _load(self, files: list[FileText]) -> None:
        """Fill the empty index from ``files`` (path order), as reloading each path in turn would."""
        docs = []
        for file in files:
            if not self.covers(file.path):
                continue
            doc = self._doc_of(file)
            if doc is not None:
                docs.append(doc)
                self._by_path[file.path] = doc.id
                self._paths_of.setdefault(doc.id, set()).add(file.path)
        self.index.upsert_many(docs)  # of two files naming one id, the later one stands, as in _reload

    def _doc_of(self, file: FileText) -> RecallDoc | None:
        """``to_doc`` of ``file``, or ``None`` with the reason in :attr:`skipped` when it cannot be parsed."""
        try:
            doc = self.to_doc(file)
            if doc is not None:
                check_doc(doc)
        except (ValueError, TypeError, KeyError, MemoryStoreError) as error:
            self.skipped[file.path] = f"{type(error).__name__}: {error}"
            return None
        return doc

    def _reload(self, path: str) -> None:
        """Re-read ``path`` and put its document in the index (or take its old one out)."""
        file = if_found(self.store.read, path)
        self.skipped.pop(path, None)
        doc = None if file is None else self._doc_of(file)
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
