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
call after one write re-reads one file, not the whole memory; it also learns each
item file this handle writes (from the version the store's answer names), so the
same text remembered again merges in one commit without a refused create first.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Protocol

from gitmem.errors import LOST_RACE, MemoryStoreError, whole_number
from gitmem.model import Applied, Edit, FileText, Origin
from gitmem.recall.index import Profile, Ranking
from gitmem.session import hygiene
from gitmem.session.binding import ExtractedItem
from gitmem.session.catalogue import Catalogue
from gitmem.session.items import (
    MemoryItem,
    check_id,
    clean_tags,
    encode_item,
    make_item,
    path_for_fingerprint,
    path_for_id,
    to_micros,
)
from gitmem.session.resume import SessionBindings
from gitmem.session.stats import AccessStats, MemoryAccessStats
from gitmem.store import BatchFileStore

#: How often a write that keeps colliding is re-planned before giving up.
WRITE_ATTEMPTS: Final = 50


#: What session memory needs of a store: the sync seam with atomic batches (both the
#: git store and the in-memory twin provide it).
ItemFiles = BatchFileStore


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

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "removed": list(self.removed)}


@dataclass(frozen=True)
class RecallResult:
    """One recalled item, its score, and the items it contradicts (shown with it, not hidden)."""

    item: MemoryItem
    score: float
    conflicts: tuple[MemoryItem, ...] = ()


class SessionMemory:
    """Remember, recall and prune the items of one session memory.

    ``stats`` holds access counts off the store (see :mod:`gitmem.session.stats`);
    ``clock`` gives "now" in seconds (tests pass a fixed one); ``origin`` is used
    for every commit unless a call passes its own. ``catalogue_file`` (optional) is
    where the parsed items are cached between processes (see
    :mod:`gitmem.session.catalogue`). ``bindings`` records what each session run
    over this memory was bound to (:mod:`gitmem.session.resume`), beside the
    store's repository when it has one.
    """

    def __init__(
        self,
        store: ItemFiles,
        *,
        stats: AccessStats | None = None,
        clock: Callable[[], float] = time.time,
        origin: Origin | None = None,
        catalogue_file: str | os.PathLike[str] | None = None,
        profile: Profile = "word-cjk-bigram",
    ) -> None:
        self.store = store
        self.stats: AccessStats = stats if stats is not None else MemoryAccessStats()
        self.clock = clock
        self.origin = origin
        self._lock = threading.RLock()
        self.catalogue = Catalogue(store, snapshot=catalogue_file, profile=profile)
        # "conversation": each item this handle remembers names the one it remembered before
        # (``metadata.follows``), and recall uses the conversation profile (gitmem.recall.convo).
        self.profile: Profile = profile
        self._last_remembered: str | None = None
        self.bindings = SessionBindings.of_store(store)

    # -- the catalogue -----------------------------------------------------------------

    def refresh(self) -> None:
        """Catch the catalogue up with the store (one file read per changed item)."""
        with self._lock:
            self.catalogue.refresh()

    @property
    def skipped(self) -> dict[str, str]:
        """Item files that do not parse, with the reason (recall leaves them out)."""
        return self.catalogue.skipped

    def parse(self, file: FileText) -> MemoryItem:
        return self.catalogue.parse(file)

    def _with_stats(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        items = list(items)
        counts = self.stats.lookup(i.id for i in items)
        out = []
        for item in items:
            seen = counts.get(item.id)
            out.append(item.with_access(seen[0], seen[1]) if seen else item)
        return out

    # -- reads -------------------------------------------------------------------------

    def get(self, item_id: str) -> MemoryItem:
        """The item with this id; a merged duplicate's id answers with its canonical item."""
        check_id(item_id)
        with self._lock:
            self.refresh()
            return self._with_stats([self.catalogue.entry(item_id).item])[0]

    def items(self, *, include_hidden: bool = True) -> list[MemoryItem]:
        """Every item, newest first (``include_hidden=False`` drops superseded/tombstoned ones)."""
        with self._lock:
            self.refresh()
            found = [e.item for e in self.catalogue.entries() if include_hidden or e.item.recallable]
        found.sort(key=lambda i: (-i.timestamp, i.id))
        return self._with_stats(found)

    def __len__(self) -> int:
        with self._lock:
            self.refresh()
            return len(self.catalogue)

    def recent(self, n: int = 10, *, include_hidden: bool = False) -> list[MemoryItem]:
        """The ``n`` newest items (recall's filter applies unless ``include_hidden``)."""
        return self.items(include_hidden=include_hidden)[: whole_number("n", n, 1000, "invalid_query")]

    def recall_by_tags(self, tags: Sequence[str], n: int = 10) -> list[MemoryItem]:
        """Items carrying any of ``tags``, newest first; counted as an access."""
        wanted = set(clean_tags(tags))
        if not wanted:
            raise MemoryStoreError("invalid_query", "give at least one tag")
        n = whole_number("n", n, 1000, "invalid_query")
        with self._lock:
            self.refresh()
            found = [e.item for e in self.catalogue.entries() if e.item.recallable and wanted & set(e.item.tags)]
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
            hits = self.catalogue.search(query, limit=k, min_score=min_score, ranking=ranking)
            found = [(self.catalogue.entry(h.id).item, h.score) for h in hits]
            conflicts = {
                item.id: tuple(e.item for c in item.conflicts_with if (e := self.catalogue.find(c)) is not None)
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
        if self.profile == "conversation" and self._last_remembered and "follows" not in (metadata or {}):
            metadata = {**(metadata or {}), "follows": self._last_remembered}
        item = make_item(
            content,
            now=self.clock(),
            importance=importance,
            tags=tags,
            memory_type=memory_type,
            metadata=metadata,
            item_id=item_id,
        )
        stored = self.store_item(item, origin=origin)
        self._last_remembered = stored.id
        return stored

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
        compare-and-swap finds any duplicate (``version_mismatch`` / ``already_exists``
        carry the file there now), and one commit is the whole cost when there is none.
        """
        origin = origin or self.origin
        fp = hygiene.fingerprint(item.content)
        if fp is None:  # too short to merge: its own path, a clash means a reused id
            self._write_item(path_for_id(item.id), item, None, "session-remember", origin)
            return item
        with self._lock:
            path = self.catalogue.path_of_fingerprint(fp) or path_for_fingerprint(fp)
            entry = self.catalogue.at(path)
            known = (entry.version, entry.item) if entry is not None else None
        for _ in range(WRITE_ATTEMPTS):
            try:
                if known is None:
                    self._write_item(path, item, None, "session-remember", origin, fp=fp)
                    return item
                merged = hygiene.merge_duplicate(known[1], item, now=self.clock())
                self._write_item(path, merged, known[0], "session-merge", origin)
                return self._with_stats([merged])[0]
            except MemoryStoreError as exc:
                if exc.code not in LOST_RACE:
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

    def _write_item(
        self,
        path: str,
        item: MemoryItem,
        expected: str | None,
        op: str,
        origin: Origin | None,
        *,
        fp: str | None = None,
    ) -> None:
        """One item file in one commit; the catalogue learns it, so remembering the same text
        again merges with one commit instead of being refused first (the store's answer names
        the version it wrote: nothing is read back). ``fp``: the item's fingerprint, if known."""
        text = encode_item(item)
        applied = self._commit([Edit(path, text, expected)], op, item, origin)
        version = applied.versions[0] if applied.commit is not None and len(applied.versions) == 1 else None
        if version is not None:
            with self._lock:
                self.catalogue.learn(FileText(path, text, version), item, fp=fp)

    def _commit(
        self,
        edits: list[Edit],
        op: str,
        subject: MemoryItem | None,
        origin: Origin | None,
        *,
        summary: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> Applied:
        """One commit whose summary says what happened to which item (``git log`` reads as a story).

        Summaries name items by id and never quote their text: ``forget`` erases an
        item's file from every commit but keeps commit messages, so text copied
        into a message would outlive the erasure.
        """
        if subject is not None:
            verb = {"session-remember": "remember", "session-merge": "merge duplicate into"}.get(op, op)
            summary = summary or f"{verb} {subject.id}"
            trailers = (("Gitmem-Item", subject.id), *trailers)
        return self.store.apply(edits, origin=origin, op=op, summary=summary, trailers=trailers)

    def delete(self, item_id: str, *, origin: Origin | None = None) -> None:
        """Remove an item (one commit; git history keeps it for ``restore``)."""
        check_id(item_id)
        with self._lock:
            self.refresh()
            entry = self.catalogue.entry(item_id)
            self._commit(
                [Edit(entry.path, None, entry.version)],
                "session-delete",
                None,
                origin or self.origin,
                summary=f"delete {entry.item.id}",
                trailers=(("Gitmem-Item", entry.item.id),),
            )
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
            entries = self.catalogue.entries()
            items = self._with_stats(e.item for e in entries)
            plan = hygiene.select_prune(
                items,
                now=self.clock(),
                max_age_days=max_age_days,
                min_importance=min_importance,
                max_items=max_items,
            )
            gone = {i.id for i in plan.remove}
            doomed = [Edit(e.path, None, e.version) for e in entries if e.item.id in gone]
            if doomed and not dry_run:
                self._commit(
                    doomed,
                    "session-prune",
                    None,
                    origin or self.origin,
                    summary=f"prune {len(doomed)} session items",
                    trailers=(("Gitmem-Prune-Rule", _rule(max_age_days, min_importance, max_items)),),
                )
                self.stats.forget(gone)
            removed = tuple(i.id for i in plan.remove)
            return PruneReport(removed, plan.reasons, plan.kept_protected, len(entries) - len(removed), dry_run)

    # -- relations ---------------------------------------------------------------------

    def _relate(
        self,
        changes: Callable[[], list[tuple[str, Callable[[MemoryItem], MemoryItem]]]],
        summary: str,
        origin: Origin | None,
    ) -> None:
        """Apply item changes in ONE commit, each expecting the version read; re-plan on a race."""
        for _ in range(WRITE_ATTEMPTS):
            self.refresh()
            edits = []
            for item_id, change in changes():
                entry = self.catalogue.entry(item_id)
                updated = change(entry.item)
                if updated != entry.item:
                    edits.append(Edit(entry.path, encode_item(updated), entry.version))
            if not edits:
                return
            try:
                self._commit(edits, "session-relate", None, origin, summary=summary)
                return
            except MemoryStoreError as exc:
                if exc.code not in LOST_RACE:
                    raise
        raise MemoryStoreError("unavailable", f"gave up after {WRITE_ATTEMPTS} colliding writes ({summary})")

    def supersede(self, old_id: str, new_id: str, *, origin: Origin | None = None) -> None:
        """Mark ``old_id`` replaced by ``new_id`` in one commit: both ends carry the relation.

        ``old`` is kept in git, out of recall (``superseded_by``); ``new`` names what it
        replaced (``supersedes``, tagged ``consolidated``). Both are protected from prune.
        """
        now = self.clock()
        check_id(old_id)
        check_id(new_id)
        with self._lock:
            self.refresh()
            old, new = self.catalogue.entry(old_id).item.id, self.catalogue.entry(new_id).item.id
            if old == new:
                raise MemoryStoreError("invalid_query", "an item cannot supersede itself")
            self._relate(
                lambda: [
                    (old, lambda i: hygiene.mark_superseded(i, new, now=now)),
                    (new, lambda i: hygiene.mark_supersedes(i, old)),
                ],
                f"{old} superseded by {new}",
                origin or self.origin,
            )

    def mark_conflict(self, a: str, b: str, *, origin: Origin | None = None) -> None:
        """Record that two items contradict each other; both stay visible, annotated in recall."""
        check_id(a)
        check_id(b)
        with self._lock:
            self.refresh()
            first, second = self.catalogue.entry(a).item.id, self.catalogue.entry(b).item.id
            if first == second:
                raise MemoryStoreError("invalid_query", "an item cannot conflict with itself")
            self._relate(
                lambda: [
                    (first, lambda i: hygiene.mark_conflict(i, second)),
                    (second, lambda i: hygiene.mark_conflict(i, first)),
                ],
                f"{first} conflicts with {second}",
                origin or self.origin,
            )

    def remember_extracted(self, extracted: ExtractedItem, *, origin: Origin | None = None) -> MemoryItem:
        """Store one validated extraction result and mark the items it supersedes or contradicts.

        The new item and every mark go in ONE commit, planned on a fresh catalogue and
        re-planned if another writer moved any of those files meanwhile.
        """
        origin = origin or self.origin
        meta = dict(extracted.metadata)
        meta.update(
            source=extracted.source, scope=extracted.scope, reason=extracted.reason, confidence=extracted.confidence
        )
        tags = list(extracted.tags)
        if extracted.supersedes:
            meta["supersedes"] = list(extracted.supersedes)
            tags.append("consolidated")
        if extracted.conflicts_with:
            meta["conflicts_with"] = list(extracted.conflicts_with)
            tags.append("conflict")
        item = make_item(
            extracted.content,
            now=self.clock(),
            importance=extracted.importance,
            tags=tags,
            memory_type=extracted.memory_type,
            metadata=meta,
        )
        fp = hygiene.fingerprint(item.content)
        with self._lock:
            for _ in range(WRITE_ATTEMPTS):
                self.refresh()
                path = (self.catalogue.path_of_fingerprint(fp) if fp else None) or (
                    path_for_fingerprint(fp) if fp else path_for_id(item.id)
                )
                entry = self.catalogue.at(path)
                stored = item if entry is None else hygiene.merge_duplicate(entry.item, item, now=self.clock())
                edits = [Edit(path, encode_item(stored), None if entry is None else entry.version)]
                now = self.clock()
                for old in extracted.supersedes:
                    other = self.catalogue.find(old)
                    if other is not None and other.path != path:
                        marked = hygiene.mark_superseded(other.item, stored.id, now=now)
                        edits.append(Edit(other.path, encode_item(marked), other.version))
                for old in extracted.conflicts_with:
                    other = self.catalogue.find(old)
                    if other is not None and other.path != path:
                        marked = hygiene.mark_conflict(other.item, stored.id)
                        edits.append(Edit(other.path, encode_item(marked), other.version))
                try:
                    self._commit(edits, "session-remember" if entry is None else "session-merge", stored, origin)
                    return self._with_stats([stored])[0]
                except MemoryStoreError as exc:
                    if exc.code not in LOST_RACE:
                        raise
        raise MemoryStoreError("unavailable", f"gave up after {WRITE_ATTEMPTS} colliding writes of an extracted item")


def _rule(max_age_days: float, min_importance: float, max_items: int | None) -> str:
    cap = "" if max_items is None else f", max_items={max_items}"
    return f"older than {max_age_days:g} days and importance < {min_importance:g}{cap}"


def _tool_names(tools: Sequence[str]) -> list[str]:
    if isinstance(tools, str):
        raise MemoryStoreError("invalid_text", "tools must be a list of tool names, not one string")
    names = [t.strip() for t in tools if isinstance(t, str) and t.strip()]
    return list(dict.fromkeys(names))
