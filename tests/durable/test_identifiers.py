"""A3S's profile names are understood where gitmem's differ: in persisted bindings and in evaluation reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.durable.identifiers import (
    A3S_ALIASES,
    FUSION_PROFILE,
    LEXICAL_PROFILE,
    SEMANTIC_BINDING_SCHEMA,
    canonical,
    canonical_record,
)
from gitmem.durable.recall import RecallAnswer
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall
from gitmem.errors import MemoryStoreError

from .a3s_evals import fixture
from .support import NS


def test_each_a3s_name_maps_to_gitmems_and_back() -> None:
    assert canonical("a3s.code.memory.hybrid.rrf-k60.v1") == FUSION_PROFILE
    assert canonical("a3s.memory.lexical.word-cjk-bigram.v1") == LEXICAL_PROFILE
    assert canonical("a3s.code.memory.semantic-recall-binding.v1") == SEMANTIC_BINDING_SCHEMA
    for a3s, ours in A3S_ALIASES.items():
        assert canonical(a3s) == canonical(ours) == ours
    # only the same thing is aliased: another fusion or an unknown name is itself
    assert canonical("a3s.code.memory.hybrid.rrf-k30.v1") == "a3s.code.memory.hybrid.rrf-k30.v1"
    assert canonical("a3s.code.memory.hybrid.rrf-k30.v1") != canonical(FUSION_PROFILE)
    assert canonical("a3s.memory.lexical.word-cjk-bigram.v1") != canonical(FUSION_PROFILE)


def test_the_evaluation_fixtures_name_what_gitmem_runs() -> None:
    """The A3S reports' declared profiles are gitmem's, read through the aliases."""
    semantic = fixture("durable-memory-semantic-v1")
    recall = SemanticRecall(FixtureEmbedder({}, EmbeddingIdentity(**semantic["embedding"])))
    identity = recall.identity()
    assert canonical(identity["schema"]) == canonical(semantic["semantic_binding_schema"])
    assert canonical(identity["fusion"]) == canonical(semantic["fusion_profile"])
    multilingual = fixture("durable-memory-multilingual-v1")
    assert canonical(RecallAnswer(()).profile) == canonical(multilingual["retrieval_profile"])


def _semantic() -> SemanticRecall:
    return SemanticRecall(FixtureEmbedder({}, EmbeddingIdentity("fixture", "unit", "r1", 2)))


def test_a_binding_an_a3s_host_wrote_with_its_names_resumes(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True, semantic_recall=_semantic())
    policy = RecallPolicy(3, 0.2, 0, semantic=True)
    DurableBinding.for_session(repo, "s-1", NS, policy)
    (path,) = (tmp_path / "root" / "team.git" / "gitmem" / "durable-sessions").glob("*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["binding"]["semantic"]["schema"] = "a3s.code.memory.semantic-recall-binding.v1"
    data["binding"]["semantic"]["fusion"] = "a3s.code.memory.hybrid.rrf-k60.v1"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert DurableBinding.for_session(repo, "s-1", NS, policy).session_id == "s-1"  # equivalent: resumed
    # a record naming another fusion is not the same binding: resume fails closed, the record unchanged
    data["binding"]["semantic"]["fusion"] = "a3s.code.memory.hybrid.rrf-k30.v1"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MemoryStoreError) as raised:
        DurableBinding.for_session(repo, "s-1", NS, policy)
    assert raised.value.code == "forbidden" and "semantic" in raised.value.message
    assert json.loads(path.read_text(encoding="utf-8")) == data


def test_canonical_record_changes_only_profile_fields() -> None:
    record = {"schema": "gitmem.durable.binding.v1", "semantic": {"fusion": "a3s.code.memory.hybrid.rrf-k60.v1"},
              "note": "a3s.code.memory.hybrid.rrf-k60.v1"}  # fmt: skip
    assert canonical_record(record) == {
        "schema": "gitmem.durable.binding.v1",
        "semantic": {"fusion": FUSION_PROFILE},
        "note": "a3s.code.memory.hybrid.rrf-k60.v1",
    }
