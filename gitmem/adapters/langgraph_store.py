"""``GitMemStore``: LangGraph's ``BaseStore`` on a gitmem file mount (the ``langgraph`` extra).

A graph that took ``store=InMemoryStore()`` takes ``store=GitMemStore.open("memories")``
and its long-term memory becomes a git repository: every put or delete is one
commit naming who made it, each item a JSON file a person can review, restore or
erase with gitmem's history commands. Layout and file rules:
:mod:`gitmem.adapters.langgraph_items`.

Semantics, where LangGraph leaves a choice to the store:

- A batch answers its gets, searches and listings from the state *before* its
  puts, and applies its puts afterwards, last put per item winning (as
  ``InMemoryStore`` does); each put that remains is its own commit.
- A put keeps the item's ``created_at``: it reads the file, writes expecting the
  version read and, when another writer got in between, reads again and retries.
- Expired items are never returned (by ``get``, ``search`` or
  ``list_namespaces``) even before a sweep deletes them; ``sweep_ttl()``, the
  sweeper thread and ``gitmem sweep NAME`` delete them in one commit.
- A read restarts a TTL only when ``ttl={"refresh_on_read": True}`` (as in
  LangGraph's SQLite and Postgres stores); the new expiry is written in one commit
  per batch, and none for reads within 1% of the TTL of the last restart.
- ``search(query=...)`` ranks with gitmem's recall engine (BM25 over the item's
  strings, or the ``index`` fields); with an embedder (``index={"embed": ...}``
  or ``embedder=``, which need the ``recall-embed`` extra) lexical and semantic
  rankings are fused. Scores are the engine's, not cosine similarities. A query
  ranks, it does not filter: after the ranked items come the others (score 0).
- Errors: a namespace label LangGraph forbids raises LangGraph's own
  ``InvalidNamespaceError`` (its callers catch that); everything gitmem refuses
  raises :class:`~gitmem.errors.MemoryStoreError` with its code, and a batch is
  checked whole before its first commit, so a refused batch writes nothing.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from gitmem import aio
from gitmem.adapters import langgraph_items as rules
from gitmem.adapters.langgraph_items import ItemCatalogue, StoredItem
from gitmem.errors import MemoryStoreError, if_found
from gitmem.fileformat import encode_text, validate_path
from gitmem.model import Edit, FileText, Origin
from gitmem.recall.index import MAX_LIMIT
from gitmem.store import FileStore

if TYPE_CHECKING:
    from gitmem.aio import AsyncFace
    from gitmem.recall.embed import EmbeddingBranch


class _FrameworkEmbedder:
    """LangChain ``Embeddings`` seen as a gitmem ``Embedder`` (plain lists; the recall layer makes arrays)."""

    def __init__(self, embeddings: Any) -> None:
        self.embeddings = embeddings
        self.name = f"langchain:{type(embeddings).__name__}"

    def embed(self, texts: list[str]) -> Any:
        return self.embeddings.embed_documents(texts)

    def embed_queries(self, texts: list[str]) -> Any:
        return [self.embeddings.embed_query(t) for t in texts]


def _run_origin(base: Origin) -> Origin:
    """The store's origin, with the LangGraph run (thread id or run id) when called inside a graph."""
    if base.run_id is not None:
        return base
    try:
        from langgraph.config import get_config

        config = get_config()
    except (ImportError, RuntimeError, KeyError):
        return base
    configurable = config.get("configurable") or {}
    run = configurable.get("thread_id") or config.get("run_id")
    return Origin(str(run), base.principal_id, base.tool_call_id) if run else base


class GitMemStore(BaseStore):
    """LangGraph's ``BaseStore`` over a gitmem store: items as files, every put one commit.

    ``store`` is a mount (``Root(path).mount(name)``) or its ``.sync`` store, or
    any sync store of the seam (the in-memory twin in tests). ``origin`` names who
    writes (``principal_id``, ``run_id``; inside a graph the run defaults to the
    thread id). ``ttl`` is LangGraph's ``TTLConfig``; ``index`` its ``IndexConfig``
    (``fields`` pick what a query matches; ``embed`` adds semantic ranking).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: FileStore | AsyncFace[Any],
        *,
        origin: Origin | None = None,
        ttl: TTLConfig | None = None,
        index: dict[str, Any] | None = None,
        embedder: Any = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = aio.seam_of(store)
        self.origin = origin or Origin(principal_id="langgraph")
        self.ttl_config = ttl
        self.index_config = index
        self._clock = clock or (lambda: datetime.now(UTC))
        self._fields = [tokenize_path(f) for f in (index or {}).get("fields") or ["$"]]
        self._semantic: EmbeddingBranch | None = None
        self.embeddings: Any = None  # the LangChain embeddings of ``index["embed"]``, as LangGraph's stores expose
        if index and index.get("embed") is not None and embedder is None:
            from langgraph.store.base import ensure_embeddings

            self.embeddings = ensure_embeddings(index["embed"])
            embedder = _FrameworkEmbedder(self.embeddings)
        if embedder is not None:
            from gitmem.recall.embed import EmbeddingBranch

            self._semantic = EmbeddingBranch(embedder)
        self.catalogue = ItemCatalogue(self.store, text_of=self._text_of, semantic=self._semantic)
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def open(
        cls, root: str | os.PathLike[str], name: str = "langgraph", *, create: bool = True, **options: Any
    ) -> GitMemStore:
        """The store on mount ``name`` (a file mount) of the gitmem root folder ``root``."""
        from gitmem.root import Root

        return cls(Root(root).mount(name, create=create, kind="file").sync, **options)

    def close(self) -> None:
        """Stop the sweeper thread and the embedding worker (if any); the store stays readable."""
        self._stop_sweeper(timeout=5)
        if self._semantic is not None:
            self._semantic.close()

    # -- the one entry point LangGraph calls ------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        now = self._clock()
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        touched: dict[str, StoredItem] = {}  # items whose TTL a read restarts
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[i] = self._get(op, now, touched)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op, now, touched)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op, now)
            elif isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
            else:
                raise MemoryStoreError("invalid_query", f"unknown store operation {type(op).__name__}")
        if not puts and not touched:
            return results  # reads only: no origin to look up (outside a graph that costs an exception)
        origin = _run_origin(self.origin)
        planned = [self._plan(put, now) for put in puts.values()]  # every put checked before the first commits
        if touched:
            self._restart_ttls(list(touched.values()), origin)
        for put, item in zip(puts.values(), planned, strict=True):
            self._put(put, item, now, origin)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await aio.call(self.batch, list(ops))

    # -- reads --------------------------------------------------------------------------------

    def _get(self, op: GetOp, now: datetime, touched: dict[str, StoredItem]) -> Item | None:
        path = rules.item_path(op.namespace, op.key)
        file = if_found(self.store.read, path)
        if file is None:
            return None
        try:
            item = self.catalogue.item(file)
        except ValueError as error:
            raise MemoryStoreError("invalid_file", f"item {op.namespace}/{op.key}: {error}") from None
        if item.expired(now):
            return None
        if self._restarts(op.refresh_ttl):
            self._touch(item, now, touched)
        return _item(item)

    def _search(self, op: SearchOp, now: datetime, touched: dict[str, StoredItem]) -> list[SearchItem]:
        wanted = rules.check_filter(op.filter)
        limit, offset = _page(op.limit, op.offset)
        page: list[tuple[StoredItem, float | None]]
        query = op.query if isinstance(op.query, str) and op.query.strip() else None
        if query is not None and self._semantic is not None:
            # What the catch-up queued, and the query, are embedded first, outside the cache's lock:
            # a provider may take seconds, and every other reader and writer of the cache would wait for it.
            self.catalogue.refresh()
            self._semantic.drain(timeout=10)
            self._semantic.warm_query(query)
        with self.catalogue.caught_up():  # the items and their index as one whole, never a rebuild half-way
            items = self.catalogue.under(tuple(op.namespace_prefix))
            if wanted:
                items = [item for item in items if rules.matches(item.value, wanted)]
            found = {item.path: item for item in items if item.expires_at is None or item.expires_at > now}
            if query is None:
                page = [(item, None) for item in _newest(found.values(), offset + limit)[offset:]]
            else:
                page = self._ranked(query, found, limit, offset)
        if self._restarts(op.refresh_ttl):
            for item, _ in page:
                self._touch(item, now, touched)
        return [
            SearchItem(i.namespace, i.key, rules.copy_value(i.value), i.created_at, i.updated_at, score)
            for i, score in page
        ]

    def _ranked(
        self, query: str, found: dict[str, StoredItem], limit: int, offset: int
    ) -> list[tuple[StoredItem, float | None]]:
        depth = min(offset + limit, MAX_LIMIT)
        try:
            hits = self.catalogue.index.search(
                query, limit=depth, ranking="fused" if self._semantic else "bm25", accept=found.__contains__
            )
        except MemoryStoreError as error:
            if error.code != "invalid_query":
                raise
            hits = []  # a query with no word in it ranks nothing
        # A query ranks, it does not filter (as in LangGraph's vector stores): after the ranked
        # items come the others, newest first, with score 0.
        ranked: list[tuple[StoredItem, float | None]] = [(found[h.id], h.score) for h in hits if h.id in found]
        wanted = offset + limit - len(ranked)
        if wanted > 0:
            seen = {item.path for item, _ in ranked}
            ranked.extend((item, 0.0) for item in _newest((i for p, i in found.items() if p not in seen), wanted))
        return ranked[offset : offset + limit]

    def _list_namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        limit, offset = _page(op.limit, op.offset)
        if op.max_depth is not None and (not isinstance(op.max_depth, int) or op.max_depth < 1):
            raise MemoryStoreError("invalid_query", f"max_depth is a positive number, not {op.max_depth!r}")
        with self.catalogue.caught_up():
            namespaces = {item.namespace for item in self.catalogue.under(()) if not item.expired(now)}
        for condition in op.match_conditions or ():
            namespaces = {
                ns for ns in namespaces if rules.namespace_matches(ns, condition.match_type, tuple(condition.path))
            }
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[offset : offset + limit]

    def _text_of(self, item: StoredItem) -> str | None:
        if item.index is False:
            return None
        paths = [tokenize_path(f) for f in item.index] if isinstance(item.index, tuple) else self._fields
        texts: list[str] = []
        for path in paths:
            if path == ["$"]:
                texts.extend(rules.string_leaves(item.value))
            else:
                texts.extend(str(t) for t in get_text_at_path(item.value, path))
        return "\n".join(texts) or None

    # -- writes -------------------------------------------------------------------------------

    def _plan(self, op: PutOp, now: datetime) -> StoredItem | None:
        """The item a put would write (``None``: a delete), checked as the store will check its file.

        A batch plans all its puts first, so a bad one (a value that is not JSON, a
        credential, a file too large) fails the batch before any of it is committed.
        """
        path = rules.item_path(op.namespace, op.key)
        if op.value is None:
            return None
        index = op.index
        if index is not None and index is not False and not isinstance(index, list):
            raise MemoryStoreError("invalid_query", f"index is False or a list of fields, not {index!r}")
        item = StoredItem(
            tuple(op.namespace),
            op.key,
            rules.check_value(op.value),
            now,
            now,
            op.ttl,
            rules.expiry(now, op.ttl),
            tuple(index) if isinstance(index, list) else index,
            path,
        )
        validate_path(path, self.store.format)
        encode_text(rules.render(item), self.store.format)
        return item

    def _put(self, op: PutOp, planned: StoredItem | None, now: datetime, origin: Origin) -> None:
        """Write ``planned`` (or delete), keeping ``created_at``; read again and retry when another writer won."""
        path = rules.item_path(op.namespace, op.key)
        for _ in range(rules.RETRIES):
            current = self._current(path)
            if planned is None:
                if current is None or rules.try_commit(
                    self.store, [Edit(path, None, current.version)], "langgraph-delete", origin
                ):
                    return
                continue
            kept = current is not None and current.key and not current.expired(now)
            item = replace(planned, created_at=current.created_at) if kept and current else planned
            expected = current.version if current is not None else None
            text = rules.render(item)
            landed = rules.try_commit(self.store, [Edit(path, text, expected)], "langgraph-put", origin)
            if landed is None:
                continue
            (version,) = landed
            if version:
                self.catalogue.note(FileText(path, text, version))
            return
        raise MemoryStoreError("version_mismatch", f"item {op.namespace}/{op.key} kept changing under this put")

    def _current(self, path: str) -> StoredItem | None:
        """The item at ``path`` as a put sees it; a file that is not an item is overwritten (at its version)."""
        file = if_found(self.store.read, path)
        if file is None:
            return None
        try:
            return self.catalogue.item(file)
        except ValueError:
            epoch = datetime.fromtimestamp(0, UTC)
            return StoredItem((), "", {}, epoch, epoch, path=path, version=file.version)

    def _restarts(self, asked: bool) -> bool:
        """Whether a read restarts TTLs: when asked and the store's TTL config says ``refresh_on_read``.

        As in LangGraph's SQLite and Postgres stores, a store without that setting never
        restarts on read (here each restart is a commit, so it is opt-in).
        """
        return bool(asked and self.ttl_config and self.ttl_config.get("refresh_on_read", False))

    def _touch(self, item: StoredItem, now: datetime, touched: dict[str, StoredItem]) -> None:
        restarted = rules.refreshed(item, now)
        if restarted is not None:
            touched[item.path] = restarted

    def _restart_ttls(self, items: Sequence[StoredItem], origin: Origin) -> None:
        """Write the restarted expiries in one commit; an item changed meanwhile keeps its new state."""
        edits = [Edit(i.path, rules.render(i), i.version) for i in items]
        rules.try_commit(self.store, edits, "ttl-refresh", origin)  # an item changed meanwhile keeps its new state

    # -- TTL sweeps ---------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item in one commit; the number deleted."""
        return self._sweep()

    async def asweep_ttl(self) -> int:
        return await aio.call(self._sweep)

    def _sweep(self) -> int:
        return rules.sweep(self.catalogue, now=self._clock(), origin=_run_origin(self.origin))

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's) in a daemon thread until stopped."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not interval:
            done.set_result(None)
            return done
        if self._sweeper is not None and self._sweeper.is_alive():
            raise MemoryStoreError("already_exists", "a TTL sweeper is already running on this store")
        self._stop.clear()

        def run() -> None:
            try:
                while not self._stop.wait(float(interval) * 60):
                    self._sweep()
            except BaseException as error:  # the future carries it to whoever waits
                done.set_exception(error)
            else:
                done.set_result(None)

        self._sweeper = threading.Thread(target=run, name="gitmem-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` when it was still running after ``timeout`` seconds."""
        return self._stop_sweeper(timeout)

    def _stop_sweeper(self, timeout: float | None) -> bool:
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._stop.set()
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()


def _newest(items: Iterable[StoredItem], count: int) -> list[StoredItem]:
    """The ``count`` most recently updated items, newest first (ties by path): a heap, not a full sort."""
    return heapq.nsmallest(count, items, key=lambda i: (-i.updated_at.timestamp(), i.path))


def _page(limit: object, offset: object) -> tuple[int, int]:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise MemoryStoreError("invalid_query", f"limit is a number >= 0, not {limit!r}")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise MemoryStoreError("invalid_query", f"offset is a number >= 0, not {offset!r}")
    return limit, offset


def _item(item: StoredItem) -> Item:
    # a copy: the catalogue's value must not change when a caller edits what it got
    return Item(
        value=rules.copy_value(item.value),
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )
