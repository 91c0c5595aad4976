"""Durable recall against A3S's own fixtures, the semantic branch, the session binding and the agent tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bench.recall_eval import A3S, Query, load_a3s_multilingual, load_a3s_retrieval, score
from gitmem.durable.binding import DurableBinding, candidate_id
from gitmem.durable.namespace import Namespace
from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.recall.index import RecallIndex
from gitmem.session.binding import CandidateSink, DurableRecall, ExtractedItem
from gitmem.tools.durable import DurableTools

from .support import MANUAL, NS, OTHER, TURN, activate, change, memory_store

FIXED = "2026-01-01T00:00:00Z"


def load_nodes(repo: DurableRepository, nodes: list[dict[str, Any]], ns: Namespace = NS) -> None:
    """Fixture nodes as one change set each batch: same time for all (ties fall to the id, as in A3S)."""
    ops: list[dict[str, Any]] = []
    for n in nodes:
        relations = [{"kind": "related_to", "target": t} for t in n.get("related_to", [])]
        relations += [{"kind": "conflicts_with", "target": t} for t in n.get("conflicts_with", [])]
        node = {
            "id": n["id"],
            "kind": n["kind"],
            "status": n["status"],
            "content": n["content"],
            "relations": relations,
            "evidence": [TURN, MANUAL] if n["status"] == "active" else [TURN],
        }
        ops.append({"op": "create", "node": node})
    repo.apply({"namespace": ns.as_dict(), "idempotency_key": "fixture", "occurred_at": FIXED, "operations": ops})


def memory_repo() -> DurableRepository:
    return DurableRepository(memory_store())


def test_a3s_retrieval_fixture_figures_are_reproduced() -> None:
    data, raw = load_a3s_retrieval()
    repo = memory_repo()
    load_nodes(repo, raw["nodes"])  # type: ignore[arg-type]
    policy = raw["policy"]
    assert isinstance(policy, dict)
    expected = raw["expected_summary"]
    assert isinstance(expected, dict)
    graded = [q for q in data.queries if q.category != "negative"]
    negatives = [q for q in data.queries if q.category == "negative"]
    for mode, related in (("lexical", 0), ("relation", policy["max_related_lookups"])):
        chosen = RecallPolicy(policy["max_results"], policy["min_lexical_score"], related)

        def system(q: Query, chosen: RecallPolicy = chosen) -> list[str]:
            return [h.node.id for h in repo.recall(NS, q.text, chosen).hits]

        scores = score(data, system, graded, 5)
        assert round(scores.recall_any, 4) == expected[mode]["recall_at_5"]
        assert round(scores.mrr, 4) == expected[mode]["mean_reciprocal_rank"]
        assert scores.forbidden_hits == 0 and score(data, system, negatives, 5).forbidden_hits == 0
        for q in raw["queries"]:  # type: ignore[union-attr]
            assert system(Query(q["id"], q["query"], ())) == q[f"expected_{mode}_ids"], q["id"]


def test_a3s_multilingual_fixture_with_the_foreign_node_in_another_namespace() -> None:
    data, raw = load_a3s_multilingual()
    repo = memory_repo()
    load_nodes(repo, raw["nodes"])  # type: ignore[arg-type]
    load_nodes(repo, [raw["foreign_node"]], ns=OTHER)  # type: ignore[list-item]
    policy = raw["policy"]
    thresholds = raw["thresholds"]
    assert isinstance(policy, dict) and isinstance(thresholds, dict)
    chosen = RecallPolicy(policy["max_results"], policy["min_lexical_score"], policy["max_related_lookups"])

    def system(q: Query) -> list[str]:
        return [h.node.id for h in repo.recall(NS, q.text, chosen).hits]

    graded = [q for q in data.queries if q.relevant]
    s = score(data, system, graded, 3)
    assert s.recall_any >= thresholds["minimum_recall_at_3"] and s.mrr >= thresholds["minimum_mean_reciprocal_rank"]
    assert s.forbidden_hits == 0 and score(data, system, data.queries, 3).forbidden_hits == 0
    assert max(len(system(q)) for q in graded) <= thresholds["maximum_context_nodes_per_query"]
    assert json.dumps(raw["foreign_node"]["id"]) not in json.dumps([system(q) for q in data.queries])  # type: ignore[index]
    # what a host admits into context over the whole fixture: one node per answered query
    binding = DurableBinding(repo, NS, chosen)
    admitted = [binding.admit(binding.recall_active(q.text, chosen.max_results), turn_id=q.id) for q in data.queries]
    assert sum(len(a) for a in admitted) == thresholds["expected_admissions"]


class FakeBranch:
    """A semantic branch whose answer the test sets: ids, ``None`` (provider down) or an exception."""

    def __init__(self) -> None:
        self.answer: list[str] | Exception | None = []

    def note(self, doc_id: str, text: str) -> None: ...

    def forget(self, doc_id: str) -> None: ...

    def forget_all(self) -> None: ...

    def rebuilt(self) -> None: ...

    def rank(
        self, query: str, depth: int, accept: Callable[[str], bool] | None, index: RecallIndex
    ) -> list[str] | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_semantic_hits_are_verified_and_fused_or_dropped() -> None:
    branch = FakeBranch()
    repo = DurableRepository(memory_store(), semantic=lambda ns: branch)
    repo.apply(
        change(
            "seed",
            {
                "op": "create",
                "node": {
                    "id": "lex",
                    "kind": "semantic",
                    "status": "active",
                    "content": "Blue green deploy guide",
                    "evidence": [TURN, MANUAL],
                },
            },
            {
                "op": "create",
                "node": {
                    "id": "sem",
                    "kind": "semantic",
                    "status": "active",
                    "content": "Shift traffic slowly between fleets",
                    "evidence": [TURN, MANUAL],
                },
            },
            {
                "op": "create",
                "node": {"id": "cand", "kind": "semantic", "content": "Unreviewed deploy shortcut", "evidence": [TURN]},
            },
        )
    )
    semantic = RecallPolicy(max_results=5, semantic=True)
    branch.answer = ["sem", "lex"]
    answer = repo.recall(NS, "blue green deploy", semantic)
    assert answer.fused and answer.fallback is None
    assert [h.node.id for h in answer.hits] == ["lex", "sem"]  # lex is in both rankings
    assert answer.hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    # a hit that is not an active node (a candidate the index never held) drops the whole branch
    for bad in (["cand", "sem"], ["ghost"], None, RuntimeError("embedding service down")):
        branch.answer = bad
        answer = repo.recall(NS, "blue green deploy", semantic)
        assert not answer.fused and answer.fallback
        assert [h.node.id for h in answer.hits] == ["lex"]
    # a hit at a revision the index does not hold (changed since) is refused too
    branch.answer = ["sem"]
    engine = repo._recalls[NS]
    engine.indexed["sem"] = (99, "sha256:stale")
    answer = repo.recall(NS, "blue green deploy", semantic)
    assert not answer.fused and "revision" in (answer.fallback or "")


def extracted(content: str, **kw: Any) -> ExtractedItem:
    base: dict[str, Any] = dict(
        memory_type="semantic",
        source="preference",
        scope="user",
        reason="Future replies should follow this preference.",
        tags=("style",),
        importance=0.9,
        confidence=0.95,
        metadata={"session_id": "s-1", "workspace": "/repo", "schema": "a3s.memory.durable.v1"},
    )
    base.update(kw)
    return ExtractedItem(content=content, **base)


def test_a_bound_session_proposes_candidates_and_recalls_only_active_nodes() -> None:
    repo = memory_repo()
    binding = DurableBinding(repo, NS, RecallPolicy(max_results=5, min_score=0.3))
    recall: DurableRecall = binding
    sink: CandidateSink = binding
    text = "The user prefers answers in British English spelling."
    ids = sink.propose_candidates([extracted(text), extracted(text)], origin=Origin(run_id="run-1"))
    assert ids == [candidate_id(NS, text)]
    node = repo.node(NS, ids[0])
    assert (node.status, node.kind, node.confidence) == ("candidate", "semantic", 0.95)
    assert dict(node.labels)["source"] == "preference" and node.evidence[0].kind == "session_turn"
    # proposing again changes nothing; candidates are never recalled, even when certain
    assert sink.propose_candidates([extracted(text)], origin=None) == []
    assert recall.recall_active("British English spelling", 5) == []
    repo.apply(change("review", activate(ids[0], 1)))
    (got,) = recall.recall_active("British English spelling", 5)
    assert (got.node_id, got.revision, got.content) == (ids[0], 2, text)
    assert recall.recall_active("?!", 5) == []  # no token: nothing, not an error
    # admission re-reads: a node revised since recall is dropped before the model call
    assert binding.admit([got], turn_id="t1") == [got]
    repo.apply(
        change(
            "fix",
            {
                "op": "corroborate",
                "node_id": ids[0],
                "expected_revision": 2,
                "evidence": [{"uri": "ci://1", "digest": "d", "kind": "verification"}],
            },
        )
    )
    assert binding.admit([got], turn_id="t2") == []
    assert repo.usage(NS, ids[0]).admissions == 1
    used = datetime.now(UTC) + timedelta(seconds=1)
    assert binding.record_use(ids[0], 3, event_id="use-1", at=used)
    assert not binding.record_use(ids[0], 3, event_id="use-1", at=used)
    assert repo.usage(NS, ids[0]).uses == 1


def test_extraction_can_never_write_an_active_node() -> None:
    repo = memory_repo()
    binding = DurableBinding(repo, NS)
    binding.propose_candidates(
        [extracted("Deploys go out on Tuesdays after the freeze.", importance=1.0, confidence=1.0)], origin=None
    )
    assert {n.status for n in repo.nodes(NS)} == {"candidate"}


def test_agent_tools_recall_and_propose_within_their_namespace() -> None:
    repo = memory_repo()
    tools = DurableTools(DurableBinding(repo, NS))
    item = {
        "content": "Run the integration suite with make itest before tagging.",
        "memory_type": "procedural",
        "source": "workflow",
        "scope": "workspace",
        "reason": "Tagging without it shipped a broken release once.",
        "importance": 0.8,
        "confidence": 0.9,
    }
    out = tools.call("durable_propose", {"items": [item]}, origin=Origin(run_id="run-2"))
    assert out["new"] == out["candidates"] and out["status"] == "candidate"
    assert tools.call("durable_recall", {"query": "integration suite tagging"}) == {"memories": []}
    repo.apply(change("ok", activate(out["candidates"][0], 1)))
    (memory,) = tools.call("durable_recall", {"query": "integration suite tagging"})["memories"]
    assert memory["revision"] == 2
    # What the tool's schema refuses is invalid_arguments (naming the field); the proposal rules beyond it
    # are the change set's.
    refusals: Sequence[tuple[dict[str, Any], str]] = [
        ({**item, "memory_type": "episodic"}, "invalid_arguments"),
        ({**item, "source": "preference"}, "invalid_change_set"),  # not a procedural source
        ({**item, "importance": 0.5}, "invalid_arguments"),
        ({**item, "confidence": 0.7}, "invalid_arguments"),
        ({**item, "content": "too short"}, "invalid_arguments"),
        ({**item, "reason": "because"}, "invalid_arguments"),
        ({**item, "tags": [f"t{i}" for i in range(9)]}, "invalid_arguments"),
        ({**item, "status": "active"}, "invalid_arguments"),
    ]
    for bad, code in refusals:
        answer = tools.call("durable_propose", {"items": [bad]})
        assert answer["error"] == code, bad
    assert tools.call("durable_recall", {"query": "   "})["error"] == "invalid_query"
    assert tools.call("durable_recall", {"query": "x", "limit": 0})["error"] == "invalid_arguments"
    assert tools.call("durable_delete", {})["error"] == "forbidden"


def test_admission_time_and_status_rules() -> None:
    from gitmem.durable.ledger import AccessEvent

    repo = memory_repo()
    repo.apply(
        change(
            "seed",
            {"op": "create", "node": {"id": "c", "kind": "semantic", "content": "Candidate.", "evidence": [TURN]}},
        )
    )
    soon = datetime.now(UTC) + timedelta(seconds=5)
    with pytest.raises(MemoryStoreError) as info:
        repo.record_admission(AccessEvent("e1", NS, "c", 1, soon))
    assert info.value.code == "invalid_transition"
    with pytest.raises(MemoryStoreError) as missing:
        repo.record_admission(AccessEvent("e2", NS, "nope", 1, soon))
    assert missing.value.code == "node_not_found"
    assert A3S.exists()


class TopicEmbedder:
    """A toy provider: one dimension per topic word, so 'ship' finds 'release' with no shared token."""

    name = "topics-v1"
    TOPICS = (("release", "ship", "deploy"), ("database", "schema", "migration"))

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(any(w in t.lower() for w in topic)) for topic in self.TOPICS] + [0.01] for t in texts]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self.embed(texts)  # a symmetric model


def test_the_recall_engines_embedding_branch_is_fused_per_namespace() -> None:
    from gitmem.recall.embed import EmbeddingBranch

    branches: dict[Namespace, EmbeddingBranch] = {}

    def branch_for(ns: Namespace) -> EmbeddingBranch:
        branches[ns] = EmbeddingBranch(TopicEmbedder(), min_similarity=0.5, background=False)
        return branches[ns]

    repo = DurableRepository(memory_store(), semantic=branch_for)
    repo.apply(
        change(
            "seed",
            {
                "op": "create",
                "node": {
                    "id": "rel",
                    "kind": "procedural",
                    "status": "active",
                    "content": "Deploy only from a tagged commit",
                    "evidence": [TURN, MANUAL],
                },
            },
            {
                "op": "create",
                "node": {
                    "id": "db",
                    "kind": "procedural",
                    "status": "active",
                    "content": "Run schema migration before code",
                    "evidence": [TURN, MANUAL],
                },
            },
            {
                "op": "create",
                "node": {"id": "cand", "kind": "procedural", "content": "Deploy on Fridays freely", "evidence": [TURN]},
            },
        )
    )
    policy = RecallPolicy(max_results=3, semantic=True)
    assert [h.node.id for h in repo.recall(NS, "how do we ship code", policy).hits] == ["db"]  # lexical: 'code'
    branches[NS].drain()
    answer = repo.recall(NS, "how do we ship code", policy)
    assert answer.fused and answer.fallback is None
    assert {h.node.id for h in answer.hits} == {"rel", "db"}  # the candidate never, though it says deploy
    assert repo.recall(OTHER, "how do we ship code", policy).hits == ()
