"""A recall index kept caught up with a store through its change cursor (:mod:`gitmem.catchup`).

The store stays the source of truth; this is a cache of its files as
:class:`RecallDoc` values, read again only where ``changes(cursor)`` says.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from gitmem.catchup import CatchUp, SyncSource
from gitmem.errors import MemoryStoreError
from gitmem.model import FileText
from gitmem.recall import snapshot as snapshots
from gitmem.recall.index import Profile, Ranking, RecallDoc, RecallHit, RecallIndex, check_doc

if TYPE_CHECKING:
    from gitmem.recall.semantic import SemanticBranch


ToDoc = Callable[[FileText], RecallDoc | None]


class StoreRecall(CatchUp):
    """A :class:`RecallIndex` over the files of ``store`` under ``prefix``, caught up on demand (:mod:`gitmem.catchup`).

    ``to_doc`` turns a file into a document (``None``: not indexed, e.g. a
    tombstone); a file it cannot parse (it raises ``ValueError``, ``TypeError``,
    ``KeyError``, ``ArithmeticError`` (a JSON number no float holds) or a :class:`MemoryStoreError`,
    or makes a malformed document) is left out and listed in :attr:`skipped`, so one
    bad file cannot stop recall over the rest.

    ``snapshot`` (optional) is a file the index is saved to after a full rebuild
    and after every ``snapshot_every`` re-read files, and resumed from by a new
    process; ``snapshot_key`` names what ``to_doc`` makes of files (change it
    when ``to_doc`` changes, and old snapshots are ignored). ``stamp`` is the
    mount's history generation stamp (:func:`gitmem.derived.stamp_of`): a snapshot is loaded only under
    the stamp it was made under and published only when the stamp did not move
    meanwhile (purge and forget erase texts). See :mod:`gitmem.recall.snapshot`.
    ``on_forget`` is called when the index is emptied before a rebuild: a ``to_doc``
    that keeps what it parsed drops it there.
    """

    SNAPSHOT_FSYNC = True

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
        on_forget: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(store, prefix=prefix, snapshot=snapshot, stamp=stamp, save_every=snapshot_every)
        self.to_doc = to_doc
        self.on_forget = on_forget
        self.index = RecallIndex(semantic, profile=profile)
        self.snapshot_key = snapshot_key
        self._by_path: dict[str, str] = {}  # path -> doc id
        # doc id -> the paths that hold it (more than one only when files disagree, or mid-move)
        self._paths_of: dict[str, set[str]] = {}

    def _snapshot_header(self) -> dict[str, object]:
        return snapshots.header(self.snapshot_key, self.prefix)

    def _snapshot_fields(self) -> dict[str, object]:
        held = ((path, self.index.get(doc_id)) for path, doc_id in sorted(self._by_path.items()))
        return {"docs": snapshots.rows((p, d) for p, d in held if d is not None), "tokens": self.index.export_tokens()}

    def _restore(self, body: dict[str, Any]) -> None:
        found = snapshots.docs_of(body["docs"])
        for path, doc in found:
            self._by_path[path] = doc.id
            self._paths_of.setdefault(doc.id, set()).add(path)
        docs = [doc for _, doc in found]
        tokens = body.get("tokens")
        if tokens is None or not self.index.restore(docs, tokens):
            self.index.upsert_many(docs)

    def save_snapshot(self) -> None:
        """Write the snapshot now (e.g. before a process exits); nothing without a ``snapshot`` path."""
        with self._lock:
            self._save()

    def _forget(self) -> None:
        self.index.clear()
        self._by_path.clear()
        self._paths_of.clear()
        if self.on_forget is not None:
            self.on_forget()

    def _fill(self, files: Iterable[FileText]) -> None:
        docs = []
        for file in files:
            doc = self._doc_of(file)
            if doc is not None:
                docs.append(doc)
                self._by_path[file.path] = doc.id
                self._paths_of.setdefault(doc.id, set()).add(file.path)
        self.index.upsert_many(docs)  # of two files naming one id, the later one stands, as in _put
        self.index.rebuilt()

    def _doc_of(self, file: FileText) -> RecallDoc | None:
        """``to_doc`` of ``file``, or ``None`` with the reason in :attr:`skipped` when it cannot be parsed."""
        try:
            doc = self.to_doc(file)
            if doc is not None:
                check_doc(doc)
        except (ValueError, TypeError, KeyError, ArithmeticError, MemoryStoreError) as error:
            self.skipped[file.path] = f"{type(error).__name__}: {error}"
            return None
        return doc

    def _put(self, path: str, file: FileText | None) -> None:
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
        """Catch up, then search the whole index (see :meth:`RecallIndex.search`), never one a rebuild is filling."""
        with self.caught_up():
            return self.index.search(query, limit=limit, min_score=min_score, ranking=ranking, accept=accept)
