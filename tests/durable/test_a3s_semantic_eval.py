"""A3S ``durable-memory-semantic-v1``: cross-language semantic recall through the shared vector index.

English memories, Chinese/Japanese/Korean/Arabic queries sharing no lexical term
with them. Gates (the fixture's thresholds): the lexical baseline misses every
positive query; semantic recall returns the current Active revision at rank 1
(Recall@1 1.0); the context holds one node and the model is called once per
query; candidate, foreign-namespace and stale-index records give zero hits;
four admissions; the embedding, index, policy and fusion identity is persisted
in the session's binding record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem.adapters.lance_vectors import lance_index_in
from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.durable.identifiers import same_profile
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticPolicy, SemanticRecall, partition_of
from gitmem.recall.vectors import VectorRecord
from gitmem.session.location import open_session_memory
from gitmem.session.runner import SessionRunner

from .a3s_evals import Model, create, fixture, seed, sha
from .support import fsck

NAME = "durable-memory-semantic-v1"
NS = Namespace("semantic-tenant", "semantic-principal", "semantic-scope")
FOREIGN = Namespace("semantic-tenant", "foreign-principal", "semantic-scope")


def build(tmp_path: Path, kind: str = "sqlite") -> tuple[dict[str, Any], DurableRepository, FixtureEmbedder]:
    fx = fixture(NAME)
    vectors: dict[str, list[float]] = {}
    for node in [*fx["nodes"], fx["candidate_node"], fx["foreign_node"]]:
        vectors[node["content"]] = node["embedding"]
    stale = fx["stale_node"]
    vectors[stale["indexed_content"]] = vectors[stale["current_content"]] = stale["embedding"]
    for q in [*fx["queries"], *fx["negative_queries"]]:
        vectors[q["query"]] = q["embedding"]
    identity = EmbeddingIdentity(**fx["embedding"])
    embedder = FixtureEmbedder(vectors, identity)
    policy = SemanticPolicy(fx["semantic_policy"]["candidate_limit"], fx["semantic_policy"]["min_score"])
    repo = DurableRepository.open(
        tmp_path / "root",
        "team",
        create=True,
        semantic_recall=SemanticRecall(
            embedder, policy=policy, index_factory=lance_index_in if kind == "lance" else None
        ),
    )
    ops = [create(n["id"], n["content"], n["status"], kind=n["kind"], fixture_name=NAME) for n in fx["nodes"]]
    c = fx["candidate_node"]
    ops.append(create(c["id"], c["content"], c["status"], kind=c["kind"], fixture_name=NAME))
    ops.append(create(stale["id"], stale["indexed_content"], "active", kind=stale["kind"], fixture_name=NAME))
    seed(repo, NS, "seed-semantic", *ops)
    f = fx["foreign_node"]
    seed(repo, FOREIGN, "seed-foreign", create(f["id"], f["content"], f["status"], kind=f["kind"], fixture_name=NAME))
    # The index is refreshed, then the stale node is revised: its vector is of the old text.
    assert (
        repo.refresh_semantic_recall(NS, consistency="index_revision_cas").embedded == 5
    )  # four active and the stale one; never the candidate
    repo.refresh_semantic_recall(FOREIGN)
    revise = {
        "op": "revise",
        "node_id": stale["id"],
        "expected_revision": 1,
        "content": stale["current_content"],
        "mode": "correction",
        "evidence": [
            {"uri": "a3s://fixture/stale/revision", "digest": sha(stale["current_content"]), "kind": "manual"}
        ],
    }
    seed(repo, NS, "revise-stale", revise)
    return fx, repo, embedder


# the fixture's gates hold on every index gitmem ships: the embedded default and the LanceDB adapter
@pytest.mark.parametrize("kind", ["sqlite", "lance"])
def test_semantic_v1_gates(tmp_path: Path, kind: str) -> None:
    fx, repo, _ = build(tmp_path, kind)
    rp = fx["recall_policy"]
    lexical = RecallPolicy(rp["max_results"], rp["min_lexical_score"], rp["max_related_lookups"])
    fused = RecallPolicy(rp["max_results"], rp["min_lexical_score"], rp["max_related_lookups"], semantic=True)
    gates = fx["thresholds"]

    # the lexical baseline misses every positive query
    lexical_hits = sum(len(repo.recall(NS, q["query"], lexical).hits) for q in fx["queries"])
    assert lexical_hits == gates["maximum_lexical_positive_hits"] == 0

    # a real session: recall, admission just before the model call, one model call per query
    binding = repo.bind_session("semantic-eval", NS, fused)
    model = Model(
        {q["query"]: next(n["content"] for n in fx["nodes"] if n["id"] == q["relevant_node_id"]) for q in fx["queries"]}
    )
    runner = SessionRunner(
        open_session_memory(tmp_path / "session"),
        model,
        workspace="/w",
        session_id="semantic-eval",
        durable=binding,
        admission=binding,
    )
    at_1 = 0
    for q in fx["queries"]:
        result = runner.turn(q["query"])
        durable = [m for m in result.recall.memories if m.layer == "durable"]
        assert len(durable) <= gates["maximum_context_nodes_per_query"]
        node = repo.node(NS, q["relevant_node_id"])
        if durable and (durable[0].id, durable[0].revision) == (node.id, node.revision):
            at_1 += 1
        assert result.response == "PASS"
        assert result.context_id is not None
    assert runner.close() == 0
    assert at_1 / len(fx["queries"]) >= gates["minimum_semantic_recall_at_1"] == 1.0
    assert len(model.calls) == len(fx["queries"]) * gates["maximum_model_calls_per_query"]
    admissions = sum(repo.usage(NS, n["id"]).admissions for n in fx["nodes"])
    assert admissions == gates["expected_admissions"] == 4

    # candidate, foreign and stale records: zero hits
    negative = 0
    for q in fx["negative_queries"]:
        answer = repo.recall(NS, q["query"], fused)
        negative += len(answer.hits)
    assert negative == gates["maximum_negative_hits"] == 0
    stale = repo.recall(NS, fx["negative_queries"][2]["query"], fused)
    assert stale.fallback is not None and "revision and content digest" in stale.fallback

    # the identity is persisted in the binding record, secret-free
    record = repo.sessions.load("semantic-eval")
    assert record is not None and record["semantic"] is not None
    assert record["semantic"]["embedding"] == fx["embedding"]
    assert record["semantic"]["policy"] == {"candidate_limit": 4, "min_score": 0.9}
    # the fixture names the fusion and the binding schema A3S's way; gitmem writes its own (identifiers.py)
    assert same_profile(record["semantic"]["fusion"], fx["fusion_profile"])
    assert same_profile(record["semantic"]["schema"], fx["semantic_binding_schema"])
    assert record["namespace"] == NS.as_dict()
    fsck(tmp_path / "root" / "team.git")


@pytest.mark.parametrize("kind", ["sqlite", "lance"])
def test_a_candidate_vector_forced_into_the_index_is_still_never_served(tmp_path: Path, kind: str) -> None:
    """Even when the index holds a candidate's vector (a damaged or foreign writer), the re-read refuses it."""
    fx, repo, embedder = build(tmp_path, kind)
    semantic = repo.semantic_recall
    assert semantic is not None and semantic.index is not None
    c = fx["candidate_node"]
    node = repo.node(NS, c["id"])
    semantic.index.mutate(
        partition_of(NS),
        generation=semantic.generation(NS),
        commit=repo.store.head(),
        upsert=[VectorRecord(node.id, node.revision, node.digest, c["embedding"])],
    )
    rp = fx["recall_policy"]
    fused = RecallPolicy(rp["max_results"], rp["min_lexical_score"], 0, semantic=True)
    answer = repo.recall(NS, fx["negative_queries"][0]["query"], fused)
    assert answer.hits == () and answer.fallback is not None and "not an active node" in answer.fallback
    assert embedder.calls > 0
