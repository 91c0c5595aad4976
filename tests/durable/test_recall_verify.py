"""A fused durable recall verifies semantic hits without re-reading nodes the index already holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.memstore import InMemoryFileStore
from gitmem.model import FileText
from gitmem.recall.index import RecallIndex

from .support import MANUAL, NS, TURN, change, memory_store


class Branch:
    def __init__(self, answer: list[str]) -> None:
        self.answer = answer

    def note(self, doc_id: str, text: str) -> None: ...

    def forget(self, doc_id: str) -> None: ...

    def forget_all(self) -> None: ...

    def rebuilt(self) -> None: ...

    def rank(self, query: str, depth: int, accept: Callable[[str], bool] | None, index: RecallIndex) -> list[str]:
        return self.answer


class CountingStore(InMemoryFileStore):
    reads = 0

    def read(self, path: str) -> FileText:
        self.reads += 1
        return super().read(path)


def active(node_id: str, content: str) -> dict[str, Any]:
    node = {"id": node_id, "kind": "semantic", "status": "active", "content": content, "evidence": [TURN, MANUAL]}
    return {"op": "create", "node": node}


def test_a_repeated_fused_recall_reads_no_node_and_still_refuses_a_revised_one() -> None:
    store = CountingStore(memory_store().format)
    branch = Branch(["sem", "lex"])
    repo = DurableRepository(store, semantic=lambda ns: branch)
    repo.apply(change("seed", active("lex", "Blue green deploy guide"), active("sem", "Shift traffic slowly")))
    fused = RecallPolicy(max_results=5, semantic=True)
    first = repo.recall(NS, "blue green deploy", fused)
    assert first.fused and [h.node.id for h in first.hits] == ["lex", "sem"]
    before = store.reads
    again = repo.recall(NS, "blue green deploy", fused)
    assert again.fused and [h.node.id for h in again.hits] == ["lex", "sem"]
    assert store.reads == before  # both hits checked against the nodes the index caught up to
    # a vector made from an older revision is still refused
    repo._recalls[NS].indexed["sem"] = (99, "sha256:stale")
    stale = repo.recall(NS, "blue green deploy", fused)
    assert not stale.fused and "revision" in (stale.fallback or "")
