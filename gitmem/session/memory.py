"""``SessionMemory``: session items kept as files in a store, one commit per change.

The store is any synchronous file store (a session mount's ``SyncGitFileStore``,
or the in-memory twin); this class only decides *what* to write, with the pure
rules of :mod:`gitmem.session.hygiene`, and leaves atomicity to the store's
compare-and-swap:

- remembering text that has a fingerprint writes to the path derived from it, so
  two processes remembering the same text at once meet on one path; the loser's
  create fails ``already_exists`` (or its update ``version_mismatch``), and it
  merges into the file it found and retries — one canonical item either way;
- prune deletes every chosen item in one commit, which ``restore`` / ``revert``
  undo like any other commit.

A catalogue of parsed items follows the store through its change cursor, so a
call after one write re-reads one file, not the whole memory.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from gitmem.errors import MemoryStoreError
from gitmem.model import Changes, FileEntry, FileText, FullResync, Origin
from gitmem.recall import RecallDoc, RecallIndex
from gitmem.recall.index import Ranking
from gitmem.session import hygiene
from gitmem.session.binding import ExtractedItem
from gitmem.session.items import (
    MemoryItem,
    check_id,
    clean_tags,
    decode_item,
    encode_item,
    is_item_path,
    make_item,
    path_for_fingerprint,
    path_for_id,
    to_micros,
)
from gitmem.session.stats import AccessStats, MemoryAccessStats

#: How often a write that keeps colliding is re-planned before giving up.
WRITE_ATTEMPTS: Final = 50
#: ``metadata.schema`` of items that extraction wrote.
EXTRACTED_SCHEMA: Final = "a3s.memory.durable.v1"


class ItemFiles(Protocol):
    """What session memory needs of a store (the sync store seam provides it)."""

    def list(self) -> list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str: ...

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None: ...

    def delete_many(self, items: builtins.list[tuple[str, str]], *, origin: Origin | None = None) -> None: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


class MemoryStore(Protocol):
    """What a session needs of its memory; :class:`SessionMemory` is the implementation over
    any file store (a git session mount, or the in-memory twin). A host may pass another."""

    def remember(
        self,
        content: str,
        *,
        importance: float = 0.5,
        tags: Iterable[str] = (),
        memory_type: str = "episodic",
        metadata: dict[str, Any] | None = None,
        item_id: str | None = None,
        origin: Origin | None = None,
    ) -> MemoryItem: ...

    def recall_similar(
        self, query: str, k: int = 5, *, min_score: float = 0.0, ranking: Ranking = "coverage"
    ) -> list[RecallResult]: ...

    def recent(self, n: int = 10, *, include_hidden: bool = False) -> list[MemoryItem]: ...

    def recall_by_tags(self, tags: Sequence[str], n: int = 10) -> list[MemoryItem]: ...

    def remember_extracted(self, extracted: ExtractedItem, *, origin: Origin | None = None) -> MemoryItem: ...


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed (``removed`` ids, newest decision last) and what it spared."""

    removed: tuple[str, ...]
    reasons: dict[str, str]
    kept_protected: int
    remaining: int
    dry_run: bool = False


@dataclass(frozen=True)
class RecallResult:
    """One recalled item, its score, and the items it contradicts (shown with it, not hidden)."""

    item: MemoryItem
    score: float
    conflicts: tuple[MemoryItem, ...] = ()


@dataclass(frozen=True)
class _Entry:
    path: str
    version: str
    item: MemoryItem


class SessionMemory:
    """Remember, recall and prune the items of one session memory.

    ``stats`` holds access counts off the store (see :mod:`gitmem.session.stats`);
    ``clock`` gives "now" in seconds (tests pass a fixed one); ``origin`` is used
    for every commit unless a call passes its own.
    """

    def __init__(
        self,
        store: ItemFiles,
        *,
        stats: AccessStats | None = None,
        clock: Callable[[], float] = time.time,
        origin: Origin | None = None,
    ) -> None:
        self.store = store
        self.stats: AccessStats = stats if stats is not None else MemoryAccessStats()
        self.clock = clock
        self.origin = origin
        self._lock = threading.RLock()
        self._cursor: str | None = None
        self._by_path: dict[str, _Entry] = {}
        self._by_id: dict[str, str] = {}  # item id (and each merged duplicate id) -> path
        self._by_fp: dict[str, str] = {}  # fingerprint -> path of the item holding it
        self._parsed: dict[str, MemoryItem] = {}  # blob version -> item, so refreshes parse once
        self.skipped: dict[str, str] = {}  # item files that do not parse, with the reason
        # The recall engine's index over the recallable items, kept by the catalogue's
        # own refresh (one read per changed item feeds both).
        self._recall = RecallIndex()

    # -- the catalogue -----------------------------------------------------------------

    def refresh(self) -> None:
        """Catch the catalogue up with the store (one file read per changed item)."""
        with self._lock:
            answer = self.store.changes(self._cursor)
            if isinstance(answer, FullResync):
                self._by_path.clear()
                self._by_id.clear()
                self._by_fp.clear()
                self._recall.clear()
                self.skipped.clear()
                paths: Iterable[str] = [e.path for e in self.store.list()]
            else:
                paths = answer.paths
            for path in paths:
                if is_item_path(path):
                    self._reload(path)
            self._cursor = answer.cursor

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
        self._by_path[path] = _Entry(path, file.version, item)
        self._by_id[item.id] = path
        for dup in item.ids_in("duplicate_ids"):
            self._by_id.setdefault(dup, path)
        fp = hygiene.fingerprint(item.content)
        if fp is not None:
            self._by_fp.setdefault(fp, path)
        if item.recallable:
            self._recall.upsert(RecallDoc(item.id, item.content, item.timestamp))

    def _drop(self, path: str) -> None:
        self.skipped.pop(path, None)
        old = self._by_path.pop(path, None)
        if old is None:
            return
        self._recall.remove(old.item.id)
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
            if len(self._parsed) > 50_000:
                self._parsed.clear()
            self._parsed[file.version] = item
        return item

    def _with_stats(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        items = list(items)
        counts = self.stats.lookup(i.id for i in items)
        out = []
        for item in items:
            seen = counts.get(item.id)
            out.append(item.with_access(seen[0], seen[1]) if seen else item)
        return out

    def _entry(self, item_id: str) -> _Entry:
        path = self._by_id.get(item_id)
        entry = self._by_path.get(path) if path else None
        if entry is None:
            raise MemoryStoreError("not_found", f"no session memory item {item_id!r}")
        return entry

    # -- reads -------------------------------------------------------------------------

    def get(self, item_id: str) -> MemoryItem:
        """The item with this id; a merged duplicate's id answers with its canonical item."""
        check_id(item_id)
        with self._lock:
            self.refresh()
            return self._with_stats([self._entry(item_id).item])[0]

    def items(self, *, include_hidden: bool = True) -> list[MemoryItem]:
        """Every item, newest first (``include_hidden=False`` drops superseded/tombstoned ones)."""
        with self._lock:
            self.refresh()
            found = [e.item for e in self._by_path.values() if include_hidden or e.item.recallable]
        found.sort(key=lambda i: (-i.timestamp, i.id))
        return self._with_stats(found)

    def __len__(self) -> int:
        with self._lock:
            self.refresh()
            return len(self._by_path)

    def recent(self, n: int = 10, *, include_hidden: bool = False) -> list[MemoryItem]:
        """The ``n`` newest items (recall's filter applies unless ``include_hidden``)."""
        return self.items(include_hidden=include_hidden)[: _check_n(n)]

    def recall_by_tags(self, tags: Sequence[str], n: int = 10) -> list[MemoryItem]:
        """Items carrying any of ``tags``, newest first; counted as an access."""
        wanted = set(clean_tags(tags))
        if not wanted:
            raise MemoryStoreError("invalid_query", "give at least one tag")
        n = _check_n(n)
        with self._lock:
            self.refresh()
            found = [e.item for e in self._by_path.values() if e.item.recallable and wanted & set(e.item.tags)]
        found.sort(key=lambda i: (-i.timestamp, i.id))
        chosen = found[:n]
        self._touch(chosen)
        return self._with_stats(chosen)

    def recall_similar(
        self, query: str, k: int = 5, *, min_score: float = 0.0, ranking: Ranking = "coverage"
    ) -> list[RecallResult]:
        """The ``k`` items closest to ``query`` by the recall engine (word-cjk-bigram coverage
        by default); superseded and tombstoned items are not in its index, and each answer
        carries the items it conflicts with. Counted as an access.
        """
        with self._lock:
            self.refresh()
            hits = self._recall.search(query, limit=k, min_score=min_score, ranking=ranking)
            found = [(self._entry(h.id).item, h.score) for h in hits]
            conflicts = {
                item.id: tuple(self._entry(c).item for c in item.conflicts_with if c in self._by_id)
                for item, _ in found
            }
        chosen = [item for item, _ in found]
        self._touch(chosen)
        with_stats = self._with_stats(chosen)
        return [
            RecallResult(item, score, conflicts[item.id]) for item, (_, score) in zip(with_stats, found, strict=True)
        ]

    def tag_counts(self) -> dict[str, int]:
        """How many recallable items carry each tag, most used first."""
        counts: dict[str, int] = {}
        for item in self.items(include_hidden=False):
            for tag in item.tags:
                counts[tag] = counts.get(tag, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def _touch(self, items: Sequence[MemoryItem]) -> None:
        if items:
            self.stats.record([i.id for i in items], to_micros(self.clock()))

    # -- writes ------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        importance: float = 0.5,
        tags: Iterable[str] = (),
        memory_type: str = "episodic",
        metadata: dict[str, Any] | None = None,
        item_id: str | None = None,
        origin: Origin | None = None,
    ) -> MemoryItem:
        """Store one item and return the canonical one (an exact duplicate merges into it)."""
        item = make_item(
            content,
            now=self.clock(),
            importance=importance,
            tags=tags,
            memory_type=memory_type,
            metadata=metadata,
            item_id=item_id,
        )
        return self.store_item(item, origin=origin)

    def remember_success(self, prompt: str, tools: Sequence[str], result: str) -> MemoryItem:
        """A host's record of what worked: procedural, importance 0.8, tagged success + each tool."""
        tools = _tool_names(tools)
        content = f"Success: {prompt}\nTools: {', '.join(tools)}\nResult: {result}"
        return self.remember(content, importance=0.8, tags=("success", *tools), memory_type="procedural")

    def remember_failure(self, prompt: str, error: str, tools: Sequence[str]) -> MemoryItem:
        """A host's record of what failed: episodic, importance 0.9, tagged failure + each tool."""
        tools = _tool_names(tools)
        content = f"Failure: {prompt}\nError: {error}\nAttempted tools: {', '.join(tools)}"
        return self.remember(content, importance=0.9, tags=("failure", *tools), memory_type="episodic")

    def store_item(self, item: MemoryItem, *, origin: Origin | None = None) -> MemoryItem:
        """Write a checked item, merging it into an exact duplicate when one exists.

        No refresh first: the fingerprint decides the path, so the store's
        compare-and-swap finds any duplicate (``already_exists`` / ``version_mismatch``
        carry the file there now), and one write is the whole cost when there is none.
        """
        origin = origin or self.origin
        fp = hygiene.fingerprint(item.content)
        if fp is None:  # too short to merge: its own path, a clash means a reused id
            self.store.write(path_for_id(item.id), encode_item(item), expected=None, origin=origin)
            return item
        with self._lock:
            path = self._by_fp.get(fp) or path_for_fingerprint(fp)
            entry = self._by_path.get(path)
            known = (entry.version, entry.item) if entry is not None else None
        for _ in range(WRITE_ATTEMPTS):
            try:
                if known is None:
                    self.store.write(path, encode_item(item), expected=None, origin=origin)
                    return item
                merged = hygiene.merge_duplicate(known[1], item, now=self.clock())
                self.store.write(path, encode_item(merged), expected=known[0], origin=origin)
                return self._with_stats([merged])[0]
            except MemoryStoreError as exc:
                if exc.code not in ("already_exists", "version_mismatch"):
                    raise
                # Another writer got there first (or the catalogue was behind): merge into what is there.
                current = exc.current
                if current is None:
                    path, known = path_for_fingerprint(fp), None
                    continue
                try:
                    known = (current.version, self.parse(current))
                except ValueError as bad:
                    raise MemoryStoreError(
                        "unavailable", f"{path} holds no readable item ({bad}); repair or delete it"
                    ) from None
        raise MemoryStoreError("unavailable", f"gave up after {WRITE_ATTEMPTS} colliding writes to {path}")

    def delete(self, item_id: str, *, origin: Origin | None = None) -> None:
        """Remove an item (one commit; git history keeps it for ``restore``)."""
        check_id(item_id)
        with self._lock:
            self.refresh()
            entry = self._entry(item_id)
            self.store.delete(entry.path, expected=entry.version, origin=origin or self.origin)
            self.stats.forget([entry.item.id])

    def prune(
        self,
        *,
        max_age_days: float = hygiene.DEFAULT_MAX_AGE_DAYS,
        min_importance: float = hygiene.DEFAULT_MIN_IMPORTANCE,
        max_items: int | None = None,
        dry_run: bool = False,
        origin: Origin | None = None,
    ) -> PruneReport:
        """Delete stale, unimportant, unprotected items in ONE commit (see :func:`hygiene.select_prune`)."""
        if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0):
            raise MemoryStoreError("invalid_query", f"max_items must be 0 or more, got {max_items!r}")
        with self._lock:
            self.refresh()
            entries = list(self._by_path.values())
            items = self._with_stats(e.item for e in entries)
            plan = hygiene.select_prune(
                items,
                now=self.clock(),
                max_age_days=max_age_days,
                min_importance=min_importance,
                max_items=max_items,
            )
            gone = {i.id for i in plan.remove}
            doomed = [(e.path, e.version) for e in entries if e.item.id in gone]
            if doomed and not dry_run:
                self.store.delete_many(doomed, origin=origin or self.origin)
                self.stats.forget(gone)
            removed = tuple(i.id for i in plan.remove)
            return PruneReport(removed, plan.reasons, plan.kept_protected, len(entries) - len(removed), dry_run)

    # -- relations ---------------------------------------------------------------------

    def _update(self, item_id: str, change: Callable[[MemoryItem], MemoryItem], origin: Origin | None) -> None:
        for _ in range(WRITE_ATTEMPTS):
            self.refresh()
            entry = self._entry(item_id)
            updated = change(entry.item)
            if updated == entry.item:
                return
            try:
                self.store.write(entry.path, encode_item(updated), expected=entry.version, origin=origin)
                return
            except MemoryStoreError as exc:
                if exc.code != "version_mismatch":
                    raise
        raise MemoryStoreError("unavailable", f"gave up after {WRITE_ATTEMPTS} colliding writes to {item_id}")

    def supersede(self, old_id: str, new_id: str, *, origin: Origin | None = None) -> None:
        """Mark ``old_id`` replaced by ``new_id``: kept in git, out of recall, protected from prune."""
        now = self.clock()
        with self._lock:
            self._entry_exists(new_id)
            self._update(old_id, lambda i: hygiene.mark_superseded(i, new_id, now=now), origin or self.origin)

    def mark_conflict(self, a: str, b: str, *, origin: Origin | None = None) -> None:
        """Record that two items contradict each other; both stay visible, annotated in recall."""
        with self._lock:
            self._entry_exists(a)
            self._entry_exists(b)
            self._update(a, lambda i: hygiene.mark_conflict(i, b), origin or self.origin)
            self._update(b, lambda i: hygiene.mark_conflict(i, a), origin or self.origin)

    def _entry_exists(self, item_id: str) -> None:
        self.refresh()
        self._entry(check_id(item_id))

    def remember_extracted(
        self,
        extracted: ExtractedItem,
        *,
        origin: Origin | None = None,
    ) -> MemoryItem:
        """Store one validated extraction result and apply its relations to the items it names."""
        meta = dict(extracted.metadata)
        meta.update(
            source=extracted.source,
            scope=extracted.scope,
            reason=extracted.reason,
            confidence=extracted.confidence,
        )
        if extracted.supersedes:
            meta["supersedes"] = list(extracted.supersedes)
        if extracted.conflicts_with:
            meta["conflicts_with"] = list(extracted.conflicts_with)
        tags = list(extracted.tags)
        if extracted.supersedes:
            tags.append("consolidated")
        if extracted.conflicts_with:
            tags.append("conflict")
        with self._lock:
            stored = self.remember(
                extracted.content,
                importance=extracted.importance,
                tags=tags,
                memory_type=extracted.memory_type,
                metadata=meta,
                origin=origin,
            )
            now = self.clock()
            self.refresh()
            for old in extracted.supersedes:
                if old != stored.id and old in self._by_id:
                    self._update(old, lambda i: hygiene.mark_superseded(i, stored.id, now=now), origin or self.origin)
            for other in extracted.conflicts_with:
                if other != stored.id and other in self._by_id:
                    self._update(other, lambda i: hygiene.mark_conflict(i, stored.id), origin or self.origin)
            return self.get(stored.id)


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1000:
        raise MemoryStoreError("invalid_query", f"n must be a whole number from 1 to 1000, got {n!r}")
    return n


def _tool_names(tools: Sequence[str]) -> list[str]:
    if isinstance(tools, str):
        raise MemoryStoreError("invalid_text", "tools must be a list of tool names, not one string")
    names = [t.strip() for t in tools if isinstance(t, str) and t.strip()]
    return list(dict.fromkeys(names))
