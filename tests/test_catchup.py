"""The one catch-up mechanism as each of its caches lives it: recall, the session catalogue, the LangGraph items.

Each cache fills itself from the store, then follows it: one write re-reads one
file, a delete drops the path, a file that does not parse is skipped until it
does, and a rebuild that fails part-way is done again by the next refresh.
"""

from __future__ import annotations

import gc
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gitmem.adapters.langgraph_items import ItemCatalogue, StoredItem, item_path, render
from gitmem.adapters.langgraph_store import GitMemStore
from gitmem.catchup import CatchUp
from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable.nodefile import node_path
from gitmem.durable.recall import NamespaceRecall
from gitmem.errors import MemoryStoreError
from gitmem.model import FileText
from gitmem.recall import StoreRecall
from gitmem.session.catalogue import Catalogue
from gitmem.session.items import encode_item, make_item, path_for_id
from tests.durable.support import NS, change, create
from tests.recall.support import SyncMemStore, item, to_doc

NOW = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Kind:
    make: Callable[[SyncMemStore], CatchUp]
    path: Callable[[int], str]
    text: Callable[[int, str], str]
    held: Callable[[CatchUp], set[str]]  # the paths whose files the cache holds


KINDS = {
    "recall": Kind(
        lambda store: StoreRecall(store, to_doc, prefix="items"),
        lambda n: f"items/{n}.json",
        lambda n, words: item(words, float(n)),
        lambda cache: {f"items/{i}.json" for i in cache.index.ids()},  # type: ignore[attr-defined]
    ),
    "session": Kind(
        Catalogue,
        lambda n: path_for_id(f"item-{n}"),
        lambda n, words: encode_item(make_item(words, now=1_700_000_000.0 + n, item_id=f"item-{n}")),
        lambda cache: {e.path for e in cache.entries()},  # type: ignore[attr-defined]
    ),
    "langgraph": Kind(
        ItemCatalogue,
        lambda n: item_path(("users", "u1"), f"k{n}"),
        lambda n, words: render(StoredItem(("users", "u1"), f"k{n}", {"text": words}, NOW, NOW)),
        lambda cache: set(cache.items),  # type: ignore[attr-defined]
    ),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> Kind:
    return KINDS[request.param]


def put(store: SyncMemStore, kind: Kind, n: int, text: str | None = None) -> None:
    path = kind.path(n)
    try:
        current: str | None = store.inner.read(path).version
    except MemoryStoreError:
        current = None
    store.write(path, text if text is not None else kind.text(n, f"note number {n} about tea"), expected=current)


def test_one_write_rereads_one_file_and_a_delete_drops_its_path(kind: Kind) -> None:
    store = SyncMemStore()
    for n in range(5):
        put(store, kind, n)
    store.write("elsewhere/readme.md", "not anyone's item\n", expected=None)
    cache = kind.make(store)
    cache.refresh()
    assert kind.held(cache) == {kind.path(n) for n in range(5)} and cache.full_rebuilds == 1
    before = store.reads
    put(store, kind, 5)
    cache.refresh()
    assert store.reads - before == 1 and kind.path(5) in kind.held(cache)
    store.delete(kind.path(0), expected=store.inner.read(kind.path(0)).version)
    cache.refresh()
    assert kind.held(cache) == {kind.path(n) for n in range(1, 6)} and cache.full_rebuilds == 1


def test_a_file_that_does_not_parse_is_skipped_until_it_does(kind: Kind) -> None:
    store = SyncMemStore()
    put(store, kind, 0)
    put(store, kind, 1, "{not json")
    cache = kind.make(store)
    cache.refresh()
    assert kind.held(cache) == {kind.path(0)} and list(cache.skipped) == [kind.path(1)]
    put(store, kind, 1)
    cache.refresh()
    assert kind.held(cache) == {kind.path(0), kind.path(1)} and cache.skipped == {}


def test_a_rebuild_that_fails_part_way_is_done_again(kind: Kind) -> None:
    store = SyncMemStore()
    put(store, kind, 0)
    cache = kind.make(store)
    cache.refresh()
    store.purge()  # the next refresh must rebuild
    for n in range(6):
        put(store, kind, n)
    failing = kind.path(3)

    class FailsOnce(SyncMemStore):
        failed = False

        def read(self, path: str) -> FileText:
            if path == failing and not FailsOnce.failed:
                FailsOnce.failed = True
                raise MemoryStoreError("unavailable", "a passing fault")
            return super().read(path)

    cache.store = FailsOnce(store.inner)
    with pytest.raises(MemoryStoreError):
        cache.refresh()
    assert cache.cursor is None  # nothing half-filled is caught up from
    cache.refresh()
    assert kind.held(cache) == {kind.path(n) for n in range(6)} and cache.full_rebuilds == 2


def reachable_text(root: object, word: str, *, skip: tuple[object, ...] = ()) -> list[str]:
    """Every string holding ``word`` reachable from ``root`` (not through code, classes, modules or ``skip``)."""
    found: list[str] = []
    seen = {id(x) for x in skip}
    todo: list[object] = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            if word in obj:
                found.append(obj)
        elif not isinstance(obj, type | types.ModuleType | int | float | bytes) and not callable(obj):
            todo.extend(gc.get_referents(obj))
    return found


def test_a_rebuild_keeps_nothing_of_what_a_purge_erased(kind: Kind) -> None:
    store = SyncMemStore()
    put(store, kind, 0, kind.text(0, "the zanzibarquokka password"))
    put(store, kind, 1)
    cache = kind.make(store)
    cache.refresh()
    assert reachable_text(cache, "zanzibarquokka", skip=(store,))  # the walk does find what is held
    store.purge()
    put(store, kind, 1)
    cache.refresh()
    assert kind.held(cache) == {kind.path(1)}
    assert reachable_text(cache, "zanzibarquokka", skip=(store,)) == []


Search = tuple[CatchUp, Callable[[], list[float]], Any, str]


def recall_search(store: SyncMemStore) -> Search:
    recall = StoreRecall(store, to_doc, prefix="items")
    return recall, lambda: [h.score for h in recall.search("tea", limit=50)], recall.index, "search"


def langgraph_search(store: SyncMemStore) -> Search:
    items = GitMemStore(store)

    def found() -> list[float]:
        return [h.score or 0.0 for h in items.search(("users",), query="tea", limit=50)]

    return items.catalogue, found, items.catalogue, "under"


# A cache, a search over it (the scores it answers), and what the search reads first (the
# search pauses there, after catching up, to let a rebuild start beside it).
SEARCHES: dict[str, Callable[[SyncMemStore], Search]] = {"recall": recall_search, "langgraph": langgraph_search}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_a_search_beside_a_rebuild_answers_from_a_whole_index(name: str) -> None:
    kind = KINDS[name]
    store = SyncMemStore()
    for n in range(5):
        put(store, kind, n)
    cache, search, reader, method = SEARCHES[name](store)
    assert len([s for s in search() if s > 0]) == 5
    searching, rebuilding, release = threading.Event(), threading.Event(), threading.Event()
    real = getattr(reader, method)

    def paused(*args: Any, **kwargs: Any) -> Any:  # the search has caught up: let a rebuild start now
        searching.set()
        rebuilding.wait(1.0)  # a search holding the cache still never sees it start
        return real(*args, **kwargs)

    setattr(reader, method, paused)

    class SlowRebuild(SyncMemStore):
        def read(self, path: str) -> FileText:
            if path == kind.path(3):
                rebuilding.set()
                release.wait(10)
            return super().read(path)

    answers: list[list[float]] = []
    searcher = threading.Thread(target=lambda: answers.append(search()))
    searcher.start()
    assert searching.wait(10)
    store.purge()  # the next refresh rebuilds; the same notes come back
    for n in range(5):
        put(store, kind, n)
    cache.store = SlowRebuild(store.inner)
    rebuilder = threading.Thread(target=cache.refresh)
    rebuilder.start()
    searcher.join(10)
    release.set()
    rebuilder.join(10)
    setattr(reader, method, real)
    assert len(answers) == 1 and len([s for s in answers[0] if s > 0]) == 5  # every note, none missing
    assert cache.full_rebuilds == 2 and len([s for s in search() if s > 0]) == 5


def test_durable_recall_keeps_no_node_a_forget_erased(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    secret = create("a", "the zanzibarquokka password", status="active")
    repo.apply(change("seed", secret, create("b", "beta rollbacks keep the audit", status="active")))
    recall = NamespaceRecall(repo.store, NS)
    policy = RecallPolicy(3, 0.0, 0)
    assert [h.node.id for h in recall.search("zanzibarquokka", policy).hits] == ["a"]
    repo.store.forget(node_path(NS, "a"))  # type: ignore[attr-defined]  # history rewritten: erased everywhere
    assert [h.node.id for h in recall.search("beta", policy).hits] == ["b"]
    assert reachable_text(recall, "zanzibarquokka", skip=(repo.store,)) == []


class SlowQueries:
    """An embedding provider that answers a query only when released (one that takes seconds)."""

    name = "slow-queries"

    def __init__(self) -> None:
        self.asked, self.release = threading.Event(), threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t))] for t in texts]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        self.asked.set()
        self.release.wait(10)
        return [[1.0, 1.0] for _ in texts]


def test_a_search_waiting_on_its_query_embedding_holds_up_no_other_reader() -> None:
    kind = KINDS["langgraph"]
    store = SyncMemStore()
    for n in range(3):
        put(store, kind, n)
    slow = SlowQueries()
    items = GitMemStore(store, embedder=slow)
    try:
        assert len(items.search(("users",))) == 3
        answers: list[int] = []
        searcher = threading.Thread(target=lambda: answers.append(len(items.search(("users",), query="tea"))))
        searcher.start()
        assert slow.asked.wait(10)
        listed: list[list[tuple[str, ...]]] = []
        lister = threading.Thread(target=lambda: listed.append(items.list_namespaces()))
        lister.start()
        lister.join(5)
        answered_meanwhile = bool(listed)  # while the provider was still embedding the query
        slow.release.set()
        searcher.join(10)
        lister.join(10)
    finally:
        slow.release.set()
        items.close()
    assert answered_meanwhile and listed == [[("users", "u1")]]
    assert answers == [3]


class NoVectors:
    """A shared vector index that finds nothing (the semantic branch asked, the lexical ranking fused alone)."""

    def search(self, namespace: object, query: str, depth: int) -> list[Any]:
        return []


def test_a_semantic_recall_beside_a_rebuild_answers_from_a_whole_index(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    nodes = [create(f"n{n}", f"tea note number {n}", status="active") for n in range(5)]
    repo.apply(change("seed", *nodes, create("x", "the zanzibarquokka password", status="active")))
    recall = NamespaceRecall(repo.store, NS, vectors=NoVectors())
    policy = RecallPolicy(10, 0.0, 0, semantic=True)
    assert len(recall.search("tea", policy).hits) == 5
    searching, rebuilding, release = threading.Event(), threading.Event(), threading.Event()
    real = recall.recall.index.search

    def paused(*args: Any, **kwargs: Any) -> Any:  # the search has caught up: let a rebuild start now
        searching.set()
        rebuilding.wait(1.0)  # a search holding the index still never sees it start
        return real(*args, **kwargs)

    recall.recall.index.search = paused  # type: ignore[method-assign]
    source = repo.store

    class SlowRebuild:
        def list(self) -> Any:
            return source.list()

        def changes(self, since: str | None) -> Any:
            return source.changes(since)

        def read(self, path: str) -> FileText:
            if path == node_path(NS, "n3"):
                rebuilding.set()
                release.wait(10)
            return source.read(path)

    answers: list[int] = []
    searcher = threading.Thread(target=lambda: answers.append(len(recall.search("tea", policy).hits)))
    searcher.start()
    assert searching.wait(10)
    repo.store.forget(node_path(NS, "x"))  # type: ignore[attr-defined]  # history rewritten: the next refresh rebuilds
    recall.recall.store = SlowRebuild()
    rebuilder = threading.Thread(target=recall.recall.refresh)
    rebuilder.start()
    searcher.join(10)
    release.set()
    rebuilder.join(10)
    recall.recall.index.search = real  # type: ignore[method-assign]
    assert answers == [5]  # every active node, none missing
    assert recall.recall.full_rebuilds == 2 and len(recall.search("tea", policy).hits) == 5
