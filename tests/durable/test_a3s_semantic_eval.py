"""A3S ``durable-memory-semantic-v1``: cross-language semantic recall through the shared vector index.

English memories, Chinese/Japanese/Korean/Arabic queries sharing no lexical term
with them. Gates (the fixture's thresholds): the lexical baseline misses every
positive query; semantic recall returns the current Active revision at rank 1
(Recall@1 1.0); the context holds one node and the model is called once per
query; candidate, foreign-namespace and stale-index records give zero hits;
four admissions; no model context - of a positive or a negative query - shows
the candidate's, the foreign node's or the stale node's text (``forbidden_visible``)
and no use is recorded; the embedding, index, policy and fusion identity is
persisted in the session's binding record. Each gate is computed from the run
(:func:`run_eval`), and a sabotaged run fails the ones it should.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem.adapters.lance_vectors import lance_index_in
from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.durable.identifiers import canonical
from gitmem.durable.ledger import AccessEvent
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


def forbidden_texts(fx: dict[str, Any]) -> tuple[str, ...]:
    """What must never reach a model context: the candidate, the foreign node, the stale node's texts."""
    stale = fx["stale_node"]
    return (fx["candidate_node"]["content"], fx["foreign_node"]["content"], stale["indexed_content"],
            stale["current_content"])  # fmt: skip


def run_eval(tmp_path: Path, fx: dict[str, Any], repo: DurableRepository) -> dict[str, bool]:
    """Run the fixture through a real session and compute each gate from what happened (True: it holds).

    The positive and the negative queries are both turns of the session, so every
    model context - not only the positive ones - is checked for the forbidden texts.
    """
    rp = fx["recall_policy"]
    lexical = RecallPolicy(rp["max_results"], rp["min_lexical_score"], rp["max_related_lookups"])
    fused = RecallPolicy(rp["max_results"], rp["min_lexical_score"], rp["max_related_lookups"], semantic=True)
    gates = fx["thresholds"]
    lexical_hits = sum(len(repo.recall(NS, q["query"], lexical).hits) for q in fx["queries"])

    binding = DurableBinding.for_session(repo, "semantic-eval", NS, fused)
    expected = {
        q["query"]: next(n["content"] for n in fx["nodes"] if n["id"] == q["relevant_node_id"]) for q in fx["queries"]
    }
    expected.update({q["query"]: "" for q in fx["negative_queries"]})  # nothing is expected; nothing forbidden may show
    model = Model(expected, forbidden=forbidden_texts(fx))
    runner = SessionRunner(
        open_session_memory(tmp_path / "session"),
        model,
        workspace="/w",
        session_id="semantic-eval",
        durable=binding,
        admission=binding,
    )
    at_1 = 0
    widest = 0
    passed = True
    for q in fx["queries"]:
        result = runner.turn(q["query"])
        durable = [m for m in result.recall.memories if m.layer == "durable"]
        widest = max(widest, len(durable))
        node = repo.node(NS, q["relevant_node_id"])
        if durable and (durable[0].id, durable[0].revision) == (node.id, node.revision):
            at_1 += 1
        passed = passed and result.response == "PASS" and result.context_id is not None
    negative_context_nodes = 0
    for q in fx["negative_queries"]:
        result = runner.turn(q["query"])
        negative_context_nodes += sum(m.layer == "durable" for m in result.recall.memories)
    runner.close()
    negative = sum(len(repo.recall(NS, q["query"], fused).hits) for q in fx["negative_queries"])
    stale = repo.recall(NS, fx["negative_queries"][2]["query"], fused)
    every = [*fx["nodes"], fx["candidate_node"], {"id": fx["stale_node"]["id"]}]
    record = repo.sessions.load("semantic-eval")
    semantic = (record or {}).get("semantic") or {}
    turns = len(fx["queries"]) + len(fx["negative_queries"])
    return {
        "lexical_baseline_misses": lexical_hits <= gates["maximum_lexical_positive_hits"],
        "semantic_recall_at_1": at_1 / len(fx["queries"]) >= gates["minimum_semantic_recall_at_1"],
        "context_nodes_per_query": widest <= gates["maximum_context_nodes_per_query"],
        "model_passes": passed,
        "model_calls_per_query": len(model.calls) <= turns * gates["maximum_model_calls_per_query"],
        "admissions": sum(repo.usage(NS, n["id"]).admissions for n in fx["nodes"]) == gates["expected_admissions"],
        "negative_hits": negative + negative_context_nodes <= gates["maximum_negative_hits"],
        "forbidden_visible": model.forbidden_hits() == 0,
        "uses": sum(repo.usage(NS, n["id"]).uses for n in every) == 0,  # no use was reported by anyone
        "stale_dropped": stale.fallback is not None and "revision and content digest" in stale.fallback,
        "identity_persisted": semantic.get("embedding") == fx["embedding"]
        and semantic.get("policy") == {"candidate_limit": 4, "min_score": 0.9}
        and canonical(str(semantic.get("fusion"))) == canonical(fx["fusion_profile"])
        and canonical(str(semantic.get("schema"))) == canonical(fx["semantic_binding_schema"])
        and (record or {}).get("namespace") == NS.as_dict(),
    }


# the fixture's gates hold on every index gitmem ships: the embedded default and the LanceDB adapter
@pytest.mark.parametrize("kind", ["sqlite", "lance"])
def test_semantic_v1_gates(tmp_path: Path, kind: str) -> None:
    fx, repo, _ = build(tmp_path, kind)
    held = run_eval(tmp_path, fx, repo)
    assert all(held.values()), [name for name, ok in held.items() if not ok]
    fsck(tmp_path / "root" / "team.git")


def test_a_sabotaged_run_fails_its_gates(tmp_path: Path) -> None:
    """A run that leaks a forbidden text into a context, and one where a use was recorded, fail the gates.

    The sabotage: the index holds a vector for the stale node's current text (as if a
    refresh had indexed it), so the stale query serves "must never be recalled"; and
    a host records a use. The gates computed from the run catch both.
    """
    fx, repo, _ = build(tmp_path)
    stale = fx["stale_node"]
    semantic = repo.semantic_recall
    assert semantic is not None and semantic.index is not None
    node = repo.node(NS, stale["id"])
    semantic.index.mutate(
        partition_of(NS), generation=semantic.generation(NS), commit=repo.store.head(),
        upsert=[VectorRecord(node.id, node.revision, node.digest, stale["embedding"])],
    )  # fmt: skip
    used = repo.node(NS, fx["nodes"][0]["id"])
    repo.record_use(AccessEvent("host-use", NS, used.id, used.revision, max(repo.clock(), used.updated_at)))
    held = run_eval(tmp_path, fx, repo)
    assert not held["forbidden_visible"] and not held["negative_hits"] and not held["uses"]
    assert held["semantic_recall_at_1"] and held["lexical_baseline_misses"]  # the rest still holds


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
