"""The parsed items of a session memory, kept caught up with the store through its change cursor.

The store is the truth; this is a cache of its item files by path, by id (merged
duplicates' ids too) and by fingerprint, plus the recall engine's index over the
items recall may show. A refresh after one write re-reads one file (after a
``FullResync`` — first use, purge, a rewritten history — it reads them all), and
each blob is parsed once (parses are cached by version). Not thread-safe on its
own: :class:`gitmem.session.memory.SessionMemory` calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from gitmem.errors import MemoryStoreError
from gitmem.model import FileText, FullResync
from gitmem.recall import RecallDoc, RecallHit, RecallIndex
from gitmem.recall.index import Ranking
from gitmem.session import hygiene
from gitmem.session.items import MemoryItem, decode_item, is_item_path
from gitmem.store import FileStore

PARSE_CACHE: Final = 50_000


@dataclass(frozen=True)
class Entry:
    """An item and where it is: its path and the blob version it was read at."""

    path: str
    version: str
    item: MemoryItem


class Catalogue:
    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.cursor: str | None = None
        self.skipped: dict[str, str] = {}  # item files that do not parse, with the reason
        self._by_path: dict[str, Entry] = {}
        self._by_id: dict[str, str] = {}
        self._by_fp: dict[str, str] = {}
        self._parsed: dict[str, MemoryItem] = {}
        self._index = RecallIndex()  # recallable items only: superseded/tombstoned are never found

    def refresh(self) -> None:
        answer = self.store.changes(self.cursor)
        if isinstance(answer, FullResync):
            self._by_path.clear()
            self._by_id.clear()
            self._by_fp.clear()
            self._index.clear()
            self.skipped.clear()
            paths: Iterable[str] = [e.path for e in self.store.list()]
        else:
            paths = answer.paths
        for path in paths:
            if is_item_path(path):
                self._reload(path)
        self.cursor = answer.cursor

    def _reload(self, path: str) -> None:
        self._drop(path)
        try:
            file = self.store.read(path)
        except MemoryStoreError as exc:
            if exc.code != "not_found":
                raise
            return
        try:
            item = self.parse(file)
        except ValueError as exc:
            self.skipped[path] = str(exc)
            return
        self._by_path[path] = Entry(path, file.version, item)
        self._by_id[item.id] = path
        for dup in item.ids_in("duplicate_ids"):
            self._by_id.setdefault(dup, path)
        fp = hygiene.fingerprint(item.content)
        if fp is not None:
            self._by_fp.setdefault(fp, path)
        if item.recallable:
            self._index.upsert(RecallDoc(item.id, item.content, item.timestamp))

    def _drop(self, path: str) -> None:
        self.skipped.pop(path, None)
        old = self._by_path.pop(path, None)
        if old is None:
            return
        self._index.remove(old.item.id)
        for key in (old.item.id, *old.item.ids_in("duplicate_ids")):
            if self._by_id.get(key) == path:
                del self._by_id[key]
        fp = hygiene.fingerprint(old.item.content)
        if fp is not None and self._by_fp.get(fp) == path:
            del self._by_fp[fp]

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
        return self._by_fp.get(fp)

    def search(self, query: str, *, limit: int, min_score: float, ranking: Ranking) -> list[RecallHit]:
        return self._index.search(query, limit=limit, min_score=min_score, ranking=ranking)
