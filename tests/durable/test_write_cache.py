"""The write cache: a change set stages on what this handle wrote, without reading it back.

The cache is a guess that the store's compare-and-swap checks, so every test here
pairs "no read was needed" with "a stale guess still ends right".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem.durable.nodefile import node_path
from gitmem.durable.repository import DurableRepository
from gitmem.durable.staging import Known, WriteCache
from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.model import FileText

from .support import NS, activate, change, create, memory_store


class CountingStore(InMemoryFileStore):
    """The in-memory twin counting reads of node and idempotency files."""

    def __init__(self) -> None:
        super().__init__(memory_store().format)
        self.reads: list[str] = []

    def read(self, path: str) -> FileText:
        self.reads.append(path)
        return super().read(path)


@pytest.fixture(params=["memory", "git"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> DurableRepository:
    if request.param == "memory":
        return DurableRepository(CountingStore())
    return DurableRepository.open(tmp_path, "durable", create=True)


def reads_of(repo: DurableRepository) -> list[str]:
    return getattr(repo.store, "reads", [])


def corroborate(node_id: str, revision: int, uri: str) -> dict[str, Any]:
    evidence = [{"uri": uri, "digest": "sha256:dd", "kind": "manual"}]
    return {"op": "corroborate", "node_id": node_id, "expected_revision": revision, "evidence": evidence}


def test_activating_what_this_handle_created_reads_no_file() -> None:
    repo = DurableRepository(CountingStore())
    repo.apply(change("made", *[create(f"n{i}", f"Fact number {i}.") for i in range(20)]))
    repo.apply(change("on", *[activate(f"n{i}", 1) for i in range(20)]))
    assert reads_of(repo) == []  # no node file, no idempotency record
    assert {repo.node(NS, f"n{i}").status for i in range(20)} == {"active"}


def test_a_one_operation_create_reads_nothing() -> None:
    repo = DurableRepository(CountingStore())
    for i in range(3):
        repo.apply(change(f"k{i}", create(f"n{i}", "A fact.")))
    assert reads_of(repo) == []


def test_another_handle_changing_a_node_is_seen_before_staging(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha."), create("b", "Beta.")))
    other = DurableRepository(repo.store)  # another process, as far as this handle can tell
    other.apply(change("theirs", corroborate("a", 1, "review://other")))
    # The head moved: this handle drops what it knew of "a" and decides on the file as it is.
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(change("stale", activate("a", 1)))
    assert info.value.code == "revision_mismatch"
    assert repo.apply(change("fresh", activate("a", 2))).refs == ("a@3",)
    assert repo.apply(change("untouched", activate("b", 1))).refs == ("b@2",)


def stale(repo: DurableRepository, ops: dict[str, Any]) -> None:
    """Another handle applies ``ops``; this one is left believing the head is still its own
    (as after a commit of its own that the store rebased on that change)."""
    DurableRepository(repo.store).apply(ops)
    repo._cache.cursor = repo.store.head()


def test_a_stale_entry_costs_a_retry_never_a_wrong_write(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha."), create("b", "Beta.")))
    stale(repo, change("theirs-a", corroborate("a", 1, "review://other")))
    assert repo._cache.get(node_path(NS, "a")) is not None  # still says revision 1
    result = repo.apply(change("right", activate("a", 2)))  # refused on the guess, then staged on the file
    assert result.refs == ("a@3",)
    node = repo.node(NS, "a")
    assert (node.status, [e.uri for e in node.evidence]) == ("active", ["review://other", "review://pr/8", "turn://42"])
    stale(repo, change("theirs-b", corroborate("b", 1, "review://other")))
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(change("stale", activate("b", 1)))  # the guess passes staging; the store's check does not
    assert info.value.code == "revision_mismatch"  # decided on the real file, not the guess
    assert repo.node(NS, "b").revision == 2 and repo.node(NS, "b").status == "candidate"


def test_a_replay_from_the_same_handle_is_a_replay(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha.")))
    first = repo.apply(change("on", activate("a", 1)))
    again = repo.apply(change("on", activate("a", 1)))  # the guess says revision 2: staging refuses, then the record
    assert again.replayed and again.refs == first.refs == ("a@2",)
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(change("on", activate("a", 1, uri="review://other")))
    assert info.value.code == "idempotency_conflict"


def test_the_cache_is_bounded_and_skips_large_files() -> None:
    from gitmem.durable.node import Node

    cache = WriteCache(limit=3)
    node: Any = object.__new__(Node)
    for i in range(5):
        cache.put(Known(FileText(f"p{i}", "x", f"v{i}"), node))
    assert len(cache) == 3 and cache.get("p0") is None and cache.get("p4") is not None
    cache.put(Known(FileText("big", "x" * 20_000, "v"), node))
    assert cache.get("big") is None


def test_relation_neighbours_from_the_cache_are_still_checked(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha."), create("b", "Beta.")))
    stale(repo, change("tomb", {"op": "set_status", "node_id": "b", "expected_revision": 1, "status": "tombstoned"}))
    link = change(
        "link",
        {
            "op": "add_relation",
            "node_id": "a",
            "expected_revision": 1,
            "relation": {"kind": "related_to", "target": "b"},
        },
        {
            "op": "add_relation",
            "node_id": "b",
            "expected_revision": 1,
            "relation": {"kind": "related_to", "target": "a"},
        },
    )
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(link)
    assert info.value.code == "revision_mismatch"
    assert repo.node(NS, "a").relations == () and repo.node(NS, "b").status == "tombstoned"
