"""The parsed items of a session memory, kept caught up with the store through its change cursor.

The store is the truth; this is a cache of its item files by path, by id (merged
duplicates' ids too) and by fingerprint, plus the recall engine's index over the
items recall may show, caught up as :mod:`gitmem.catchup` does it. Each blob is
parsed once (parses are cached by version). Its lookups are not thread-safe on
their own: :class:`gitmem.session.memory.SessionMemory` calls it under its lock.

With a ``snapshot`` file (the git session mount keeps one at
``<repo>/gitmem/session-catalogue.json``), a new process starts from the items
saved there and catches up with ``changes(cursor)`` instead of reading every
file. The snapshot is JSON (loading never runs code), holding each item's
decoded fields (not its file text: a resume parses one JSON file and checks each
row, instead of parsing and validating 10,000 files), with the recall index's
tokenised form (so a resume need not tokenise every text again:
:meth:`gitmem.recall.RecallIndex.restore`), written to a temporary file and
renamed; anything odd about it (missing, torn, another format or item schema, a
cursor the store no longer knows) means a normal rebuild.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from gitmem import derived
from gitmem.catchup import CatchUp
from gitmem.errors import MemoryStoreError
from gitmem.model import FileText
from gitmem.recall import RecallDoc, RecallHit, RecallIndex
from gitmem.recall.index import Profile, Ranking
from gitmem.session import hygiene
from gitmem.session.items import (
    ITEM_SCHEMA,
    ITEMS_DIR,
    MemoryItem,
    decode_item,
    is_item_path,
    item_from_row,
    item_row,
)
from gitmem.store import FileStore

PARSE_CACHE: Final = 50_000
SNAPSHOT_FORMAT: Final = "gitmem-session-catalogue/3"  # /2: rows of item fields; /3: and the recall tokens


@dataclass(frozen=True)
class Entry:
    """An item and where it is: its path and the blob version it was read at."""

    path: str
    version: str
    item: MemoryItem


class Catalogue(CatchUp):
    def __init__(
        self,
        store: FileStore,
        *,
        snapshot: str | os.PathLike[str] | None = None,
        save_every: int = 256,
        profile: Profile = "word-cjk-bigram",
    ) -> None:
        stamp = derived.stamp_of(store) if snapshot is not None else None
        super().__init__(store, prefix=ITEMS_DIR, snapshot=snapshot, stamp=stamp, save_every=save_every)
        self._by_path: dict[str, Entry] = {}
        self._by_id: dict[str, str] = {}
        # fingerprint -> path, made on first use (writes use it, recall never does: a resume need
        # not normalise every text); ``None`` until then.
        self._by_fp: dict[str, str] | None = None
        self._parsed: dict[str, MemoryItem] = {}
        self._learned: set[str] = set()  # paths known from this process's writes, re-read on refresh
        self._index = RecallIndex(profile=profile)  # recallable items only: superseded/tombstoned are never found

    def covers(self, path: str) -> bool:
        return is_item_path(path)

    def _to_read(self, paths: tuple[str, ...]) -> list[str]:
        learned, self._learned = self._learned, set()
        return sorted({*paths, *learned})  # learned files are always re-read

    def _fill(self, files: Iterable[FileText]) -> None:
        docs: list[RecallDoc] = []
        for file in files:
            item = self._add(file, index=False)
            if item is not None and item.recallable:
                docs.append(_doc(item))
        self._index.upsert_many(docs)

    def _forget(self) -> None:
        self._by_path.clear()
        self._by_id.clear()
        self._by_fp = None
        self._learned.clear()
        self._parsed.clear()  # parses by blob id: a purge or forget erased some of those texts
        self._index.clear()

    def _snapshot_header(self) -> dict[str, object]:
        return {"format": SNAPSHOT_FORMAT, "item_schema": ITEM_SCHEMA}

    def _snapshot_fields(self) -> dict[str, object]:
        rows = [[e.path, e.version, *item_row(e.item)] for e in self._by_path.values()]
        return {"items": rows, "recall": self._index.export_tokens()}

    def _restore(self, body: dict[str, Any]) -> None:
        docs: list[RecallDoc] = []
        for path, version, *fields in body["items"]:
            if not (isinstance(path, str) and isinstance(version, str) and is_item_path(path)):
                raise ValueError("a snapshot row does not start with an item path and a version")
            if path in self._by_path:
                raise ValueError(f"the snapshot lists {path} twice")
            item = item_from_row(fields)
            self._hold(Entry(path, version, item), index=False)
            if item.recallable:
                docs.append(_doc(item))
        if not self._index.restore(docs, body.get("recall")):
            self._index.upsert_many(docs)

    def _put(self, path: str, file: FileText | None) -> None:
        self._drop(path)
        if file is not None:
            self._add(file)

    def _add(self, file: FileText, *, index: bool = True, fp: str | None = None) -> MemoryItem | None:
        """Parse ``file`` and index it; ``fp``: its item's fingerprint when the caller knows it (else computed)."""
        try:
            item = self.parse(file)
        except ValueError as exc:
            self.skipped[file.path] = str(exc)
            return None
        self._hold(Entry(file.path, file.version, item), index=index, fp=fp)
        return item

    def _hold(self, entry: Entry, *, index: bool, fp: str | None = None) -> None:
        """Know ``entry`` by path, id (and the ids a merge absorbed) and fingerprint; ``index``: recall it too."""
        path, item = entry.path, entry.item
        self._by_path[path] = entry
        self._by_id[item.id] = path
        if item.metadata:  # where a merge lists the ids it absorbed
            for dup in item.ids_in("duplicate_ids"):
                self._by_id.setdefault(dup, path)
        if self._by_fp is not None:
            if fp is None:
                fp = hygiene.fingerprint(item.content)
            if fp is not None:
                self._by_fp.setdefault(fp, path)
        if index and item.recallable:
            self._index.upsert(_doc(item))

    def _drop(self, path: str) -> None:
        self.skipped.pop(path, None)
        old = self._by_path.pop(path, None)
        if old is None:
            return
        self._index.remove(old.item.id)
        for key in (old.item.id, *old.item.ids_in("duplicate_ids")):
            if self._by_id.get(key) == path:
                del self._by_id[key]
        if self._by_fp is not None:
            fp = hygiene.fingerprint(old.item.content)
            if fp is not None and self._by_fp.get(fp) == path:
                del self._by_fp[fp]

    def learn(self, file: FileText, item: MemoryItem, *, fp: str | None = None) -> None:
        """``file`` (holding ``item``) was just written by this process: know it without reading it.

        Only the lookups a write uses (by path, id and fingerprint) learn it; the
        recall index does not, and the next refresh re-reads the path whatever the
        change cursor says (so a later change by another writer wins, even one that
        put back the content the cursor saw). Before the first refresh nothing is
        learned: that refresh reads everything anyway. ``fp``: the item's
        fingerprint when the caller computed it already.
        """
        if self.cursor is None:
            return
        if len(self._parsed) >= PARSE_CACHE:
            self._parsed.clear()
        self._parsed[file.version] = item  # the refresh re-reads the file but need not parse it
        self._drop(file.path)
        self._add(file, index=False, fp=fp)
        self._learned.add(file.path)

    def parse(self, file: FileText) -> MemoryItem:
        """The item in ``file`` (cached by blob version); ``ValueError`` when it is not one."""
        item = self._parsed.get(file.version)
        if item is None:
            item = decode_item(file.text)
            if len(self._parsed) >= PARSE_CACHE:
                self._parsed.clear()
            self._parsed[file.version] = item
        return item

    # -- lookups (as of the last refresh) --

    def __len__(self) -> int:
        return len(self._by_path)

    def entries(self) -> list[Entry]:
        return list(self._by_path.values())

    def at(self, path: str) -> Entry | None:
        return self._by_path.get(path)

    def find(self, item_id: str) -> Entry | None:
        """The entry of an item id, or of the canonical item a merged duplicate's id went into."""
        path = self._by_id.get(item_id)
        return self._by_path.get(path) if path is not None else None

    def entry(self, item_id: str) -> Entry:
        found = self.find(item_id)
        if found is None:
            raise MemoryStoreError("not_found", f"no session memory item {item_id!r}")
        return found

    def path_of_fingerprint(self, fp: str) -> str | None:
        if self._by_fp is None:
            by_fp: dict[str, str] = {}
            for entry in self._by_path.values():
                known = hygiene.fingerprint(entry.item.content)
                if known is not None:
                    by_fp.setdefault(known, entry.path)
            self._by_fp = by_fp
        return self._by_fp.get(fp)

    def search(self, query: str, *, limit: int, min_score: float, ranking: Ranking) -> list[RecallHit]:
        return self._index.search(query, limit=limit, min_score=min_score, ranking=ranking)


def _doc(item: MemoryItem) -> RecallDoc:
    """An item as recall indexes it; ``metadata.follows`` names the item it came after in its run."""
    follows = item.ids_in("follows")
    return RecallDoc(item.id, item.content, item.timestamp, follows[0] if follows else None)
